"""``examples/agent_demo.py`` as the README's AI page runs it: a server whose ``openai``
provider and MCP allow-list point at the demo's port (the variables the docs give
``make run``), the example definitions loaded, then the one command. The demo's own MCP
shop and planner answer; no test stub is involved."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.conftest import ConductorServer, PostgresDatabase, _is_postgres, free_port

pytestmark = pytest.mark.e2e
REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def demo_server(tmp_path_factory):
    """A server configured for the demo on a free port: ``(server, port)``."""
    port = free_port()
    workdir = tmp_path_factory.mktemp("conductor-agent-demo")
    session_url = os.environ.get("DATABASE_URL", "")
    pg = PostgresDatabase(session_url) if _is_postgres(session_url) else None
    server = ConductorServer(workdir, pg.url if pg else f"sqlite:///{workdir / 'conductor.sqlite3'}")
    server.env.update({"CONDUCTOR_AI_OPENAI_BASE_URL": f"http://127.0.0.1:{port}/v1",
                       "CONDUCTOR_AI_ALLOWED_ORIGINS": f"http://127.0.0.1:{port}", "CONDUCTOR_AI_TIMEOUT_SECONDS": "20"})
    try:
        server.start()
        server._run_manage("load_examples")
        yield server, port
    finally:
        server.stop()
        if pg is not None:
            pg.drop()


def test_the_demo_runs_the_governed_agent_end_to_end_with_its_shipped_stubs(demo_server):
    server, port = demo_server
    env = dict(os.environ, **server.sdk_env())
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), os.environ.get("PYTHONPATH")) if p)
    proc = subprocess.run([sys.executable, "examples/agent_demo.py", "--port", str(port)], cwd=REPO_ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    detail = f"stdout:\n{proc.stdout}\nstderr (tail):\n{proc.stderr[-3000:]}"
    assert proc.returncode == 0, detail
    lines = proc.stdout.splitlines()
    assert f"Demo MCP shop: http://127.0.0.1:{port}/mcp; planner (OpenAI-compatible): http://127.0.0.1:{port}/v1" \
        in lines, detail
    assert "Approving the proposed refund: {'amount': 80, 'reason': 'damaged on delivery'}" in lines, detail
    assert "Status: COMPLETED" in lines, detail
    output = next(line for line in lines if line.startswith("Output: "))
    assert "'refundId': 'rf-1'" in output and "'iterations': 2" in output, detail
