"""The official TypeScript SDK (``@io-orkes/conductor-javascript``, pinned in
``tests/ts/package-lock.json``) against a real server.

Each scenario under ``tests/ts/scenarios/`` is a TypeScript program written as the SDK's
users write one (``OrkesClients.from()`` reading ``CONDUCTOR_SERVER_URL``, the workflow
builders, ``TaskManager`` workers, ``WorkflowExecutor``/``TaskClient``/``MetadataClient``
calls) that checks what it sees with ``node:assert`` and exits non-zero on the first
mismatch. ``tests/ts/order_fulfillment.ts`` is the README's worker example, run as is.
Node runs them through ``tsx`` (a dev dependency of the same lockfile); ``make test``
installs ``tests/ts/node_modules`` with ``npm ci --legacy-peer-deps``.

A failing script fails its test with node's stdout and stderr (and the server's log tail,
from the e2e conftest).
"""
import os
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

from tests.e2e.sdk_helpers import load_order_fulfillment, order_fulfillment_definitions

pytestmark = pytest.mark.e2e

REPO_ROOT = Path(__file__).resolve().parents[2]
TS_DIR = REPO_ROOT / "tests" / "ts"
SCENARIOS = sorted((TS_DIR / "scenarios").glob("*.ts"))
SCRIPT_TIMEOUT_SECONDS = 240
OUTPUT_TAIL_CHARS = 12_000


@pytest.fixture(scope="module")
def node() -> str:
    """The ``node`` binary, with the SDK installed in ``tests/ts/node_modules``."""
    binary = shutil.which("node")
    if binary is None:
        pytest.fail("node is not installed: the TypeScript SDK suite needs Node.js 18+ and npm")
    installed = TS_DIR / "node_modules" / "@io-orkes" / "conductor-javascript" / "package.json"
    if not installed.exists() or not (TS_DIR / "node_modules" / "tsx").exists():
        pytest.fail("the TypeScript SDK is not installed: run `make test` (or "
                    "`cd tests/ts && npm ci --legacy-peer-deps`)")
    return binary


def run_ts(node: str, server, script: Path, *args: str) -> str:
    """Run ``script`` with node + tsx against ``server``; return its stdout. Fails with
    node's whole output when it exits non-zero or runs past SCRIPT_TIMEOUT_SECONDS."""
    server.assert_alive()
    # the variables a user sets for the SDK: server URL and access key
    env = {**os.environ, **server.sdk_env(), "NODE_NO_WARNINGS": "1"}
    # One process (node itself loads tsx), in its own session: on timeout we kill
    # exactly it and anything it started.
    proc = subprocess.Popen([node, "--import", "tsx", str(script), *args], cwd=TS_DIR, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        stdout, stderr = proc.communicate(timeout=SCRIPT_TIMEOUT_SECONDS)
        outcome = f"exited with {proc.returncode}"
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        stdout, stderr = proc.communicate()
        outcome = f"did not finish within {SCRIPT_TIMEOUT_SECONDS}s (killed)"
    if proc.returncode != 0:
        pytest.fail(f"{script.relative_to(REPO_ROOT)} {outcome}\n"
                    f"--- node stdout\n{stdout[-OUTPUT_TAIL_CHARS:]}\n"
                    f"--- node stderr\n{stderr[-OUTPUT_TAIL_CHARS:]}", pytrace=False)
    return stdout


@pytest.mark.parametrize("script", SCENARIOS, ids=[s.stem for s in SCENARIOS])
def test_scenario(node, conductor_server, script):
    run_ts(node, conductor_server, script)


def test_readme_worker_example(node, conductor_server):
    """The README shows ``tests/ts/order_fulfillment.ts`` (checked by
    tests/architecture/test_readme.py), and it runs; the definitions that were there
    before (as ``make run`` loads them) are left exactly as they were."""
    before = load_order_fulfillment(conductor_server)
    out = run_ts(node, conductor_server, TS_DIR / "order_fulfillment.ts")
    assert out.count("Status: COMPLETED") == 2, out
    assert "TRACK-456" in out and "txn_abc123" in out, out
    assert order_fulfillment_definitions(conductor_server) == before
