"""The jq helper process runs this checkout's code whatever the server's working directory
(issue #14): ``python -m`` looks in the working directory first, so a server started from
another checkout once had its helpers import that checkout's ``apps``. Here the working
directory holds a decoy ``apps.engine.jq_sandbox`` that answers every request with
``["decoy"]``; a JSON_JQ_TRANSFORM task must still get jq's real answer."""
from __future__ import annotations

import pytest

from apps.engine import jq_sandbox
from tests.factories import unique, workflow_def

DECOY = """import sys
for line in sys.stdin:
    sys.stdout.write('{"ok": ["decoy"]}\\n')
    sys.stdout.flush()
"""


@pytest.fixture
def fresh_helpers(monkeypatch):
    """No idle helper to reuse: the next evaluation starts a new one (killed afterwards)."""
    helpers: list = []
    monkeypatch.setattr(jq_sandbox, "_idle", helpers)
    yield
    for helper in helpers:
        helper.kill()


def test_a_server_started_in_another_directory_evaluates_jq_with_its_own_helper(api, tmp_path, monkeypatch,
                                                                                  fresh_helpers):
    (tmp_path / "apps" / "engine").mkdir(parents=True)
    (tmp_path / "apps" / "__init__.py").write_text("")
    (tmp_path / "apps" / "engine" / "__init__.py").write_text("")
    (tmp_path / "apps" / "engine" / "jq_sandbox.py").write_text(DECOY)
    monkeypatch.chdir(tmp_path)

    name = unique("jq_cwd")
    api.register_workflow(workflow_def(name, [{
        "name": "jq", "taskReferenceName": "jq", "type": "JSON_JQ_TRANSFORM",
        "inputParameters": {"queryExpression": ".x + 1", "x": "${workflow.input.x}"}}],
        outputParameters={"y": "${jq.output.result}"}))
    wf = api.workflow(api.start(name, {"x": 41}))
    assert wf["status"] == "COMPLETED" and wf["output"] == {"y": 42}
