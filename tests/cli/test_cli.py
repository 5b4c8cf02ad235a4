"""The ``conductor`` command (``apps.cli.main``) against this server's REST API: in process
through httpx's WSGI transport, and once over real HTTP with ``live_server``."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from django.core.handlers.wsgi import WSGIHandler
from django.core.signals import request_finished, request_started
from django.db import close_old_connections

from apps.cli import main as cli_main
from tests.factories import simple_task, task_def, unique, workflow_def
from tests.support.http_stub import Reply

ROOT = Path(__file__).resolve().parents[2]

SERVER = "http://testserver/api"


class Cli:
    """Runs ``main([...])`` and captures its exit status, stdout and stderr."""

    def __init__(self, capsys, transport, server=SERVER):
        self.capsys, self.transport, self.server = capsys, transport, server

    def __call__(self, *args: str) -> tuple[int, str, str]:
        self.capsys.readouterr()
        code = cli_main.main(["--server", self.server, *args], transport=self.transport)
        out, err = self.capsys.readouterr()
        return code, out, err

    def ok(self, *args: str) -> str:
        code, out, err = self(*args)
        assert code == 0, (code, out, err)
        return out

    def json(self, *args: str):
        return json.loads(self.ok(*args))


@pytest.fixture
def cli(db, capsys):
    """In-process: Django's WSGI handler behind httpx.WSGITransport, inside the test's
    transaction (the per-request connection closing is switched off, as Django's test
    client does)."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        yield Cli(capsys, httpx.WSGITransport(app=WSGIHandler()))
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)


@pytest.fixture
def wf_file(tmp_path):
    name = unique("cli_flow")
    task = f"{name}_t"
    definition = workflow_def(name, [simple_task(task, "t", {"orderId": "${workflow.input.orderId}"})])
    path = tmp_path / "workflow.json"
    path.write_text(json.dumps(definition))
    return {"name": name, "task": task, "path": str(path), "definition": definition}


def test_create_start_inspect_search(cli, wf_file, tmp_path):
    out = cli.json("workflow", "create", wf_file["path"])
    assert out == {"name": wf_file["name"], "version": 1, "result": "registered"}
    code, _, err = cli("workflow", "create", wf_file["path"])
    assert code == 1
    assert f"Workflow with {wf_file['name']}.1 already exists!" in err
    cli.ok("workflow", "create", wf_file["path"], "--force")

    wid = cli.ok("workflow", "start", "-w", wf_file["name"], "--version", "1", "--correlation", "order-test-001",
                 "-i", '{"orderId": "order-001"}').strip()
    assert len(wid) == 36

    wf = cli.json("workflow", "get-execution", wid)
    assert wf["workflowId"] == wid and wf["status"] == "RUNNING"
    assert wf["correlationId"] == "order-test-001" and wf["input"] == {"orderId": "order-001"}
    assert "workflowDefinition" not in wf and "tasks" not in wf
    full = cli.json("workflow", "get-execution", wid, "-c")
    assert [t["referenceTaskName"] for t in full["tasks"]] == ["t"]
    assert full["tasks"][0]["inputData"] == {"orderId": "order-001"}

    status = cli.json("workflow", "status", wid)
    assert status["status"] == "RUNNING" and status["workflowId"] == wid

    found = cli.json("workflow", "search", "-w", wf_file["name"], "-s", "running", "-c", "20",
                     "--start-time-after", "2020-01-01")
    assert found["totalHits"] == 1 and found["results"][0]["workflowId"] == wid
    assert cli.json("workflow", "search", "-w", wf_file["name"], "-s", "FAILED")["totalHits"] == 0
    assert cli.json("workflow", "search", "order-001")["totalHits"] == 1  # free text
    assert cli.json("workflow", "search", "-w", wf_file["name"], "--end-time", "2020-01-01")["totalHits"] == 0

    # an input file works like -i
    input_file = tmp_path / "input.json"
    input_file.write_text('{"orderId": "from-file"}')
    wid2 = cli.ok("workflow", "start", wf_file["name"], "-f", str(input_file)).strip()
    assert cli.json("workflow", "get-execution", wid2)["input"] == {"orderId": "from-file"}


def test_tasks_and_task_defs(cli, wf_file, tmp_path):
    cli.ok("workflow", "create", wf_file["path"])
    defs = tmp_path / "taskdefs.json"
    defs.write_text(json.dumps([task_def(wf_file["task"], description="cli made")]))
    assert cli.json("taskDef", "create", str(defs)) == {"name": wf_file["task"], "result": "registered"}
    assert wf_file["task"] in [d["name"] for d in cli.json("taskDef", "list", "--json")]
    assert cli.json("taskDef", "get", wf_file["task"])["description"] == "cli made"

    wid = cli.ok("workflow", "start", "-w", wf_file["name"], "-i", '{"orderId": "x"}').strip()
    tasks = cli.json("task", "list", "-w", wid, "--json")
    assert [(t["referenceTaskName"], t["status"]) for t in tasks] == [("t", "SCHEDULED")]
    assert cli.json("task", "list", "-w", wid, "-s", "COMPLETED", "--json") == []
    task = cli.json("task", "get", tasks[0]["taskId"])
    assert task["taskId"] == tasks[0]["taskId"] and task["workflowInstanceId"] == wid
    searched = cli.json("task", "list", "-t", wf_file["task"], "-s", "scheduled", "--json")
    assert [t["taskId"] for t in searched["results"]] == [task["taskId"]]
    assert cli.json("task", "queues")[wf_file["task"]] == 1


def test_lifecycle_actions(cli, wf_file):
    cli.ok("workflow", "create", wf_file["path"])
    a = cli.ok("workflow", "start", "-w", wf_file["name"]).strip()
    b = cli.ok("workflow", "start", "-w", wf_file["name"]).strip()

    out = cli.ok("workflow", "pause", a, b)
    assert [json.loads(line) for line in out.splitlines()] == [
        {"workflowId": a, "result": "paused"}, {"workflowId": b, "result": "paused"}]
    assert cli.json("workflow", "status", a)["status"] == "PAUSED"
    cli.ok("workflow", "resume", a)
    assert cli.json("workflow", "status", a)["status"] == "RUNNING"

    # one failure among several ids: the others still run, exit status 1
    code, out, err = cli("workflow", "resume", b, a)
    assert code == 1
    assert json.loads(out) == {"workflowId": b, "result": "resumed"}
    assert f"The workflow {a} is not PAUSED so cannot resume. Current status is RUNNING" in err

    cli.ok("workflow", "terminate", a, "--reason", "operator stop")
    wf = cli.json("workflow", "get-execution", a)
    assert wf["status"] == "TERMINATED" and wf["reasonForIncompletion"] == "operator stop"


def test_recovery_commands(cli, wf_file):
    cli.ok("workflow", "create", wf_file["path"])
    wid = cli.ok("workflow", "start", "-w", wf_file["name"], "-i", '{"orderId": "r-1"}').strip()
    cli.ok("workflow", "terminate", wid)

    assert json.loads(cli.ok("workflow", "retry", wid)) == {"workflowId": wid, "result": "retried"}
    assert cli.json("workflow", "status", wid)["status"] == "RUNNING"
    cli.ok("workflow", "terminate", wid)

    assert json.loads(cli.ok("workflow", "restart", wid, "--use-latest")) == {"workflowId": wid, "result": "restarted"}
    tasks = cli.json("task", "list", "-w", wid, "--json")
    assert [t["status"] for t in tasks] == ["SCHEDULED"]
    cli.ok("workflow", "terminate", wid)

    first = cli.json("task", "list", "-w", wid, "--json")[0]
    out = cli.ok("workflow", "rerun", wid, "--task-id", first["taskId"], "-i", '{"orderId": "patched"}')
    assert out.strip() == wid
    wf = cli.json("workflow", "get-execution", wid, "-c")
    assert wf["status"] == "RUNNING"
    assert wf["tasks"][-1]["inputData"] == {"orderId": "patched"}

    code, _, err = cli("workflow", "retry", wid)
    assert code == 1 and "Workflow is still running.  status=RUNNING" in err


def test_errors_print_conductors_message_and_exit_non_zero(cli, wf_file):
    code, out, err = cli("workflow", "get-execution", "nope")
    assert (code, out) == (1, "")
    assert "No such workflow found by id: nope" in err
    code, _, err = cli("workflow", "start", "-w", "never_registered")
    assert code == 1 and "No such workflow found by name: never_registered" in err
    code, _, err = cli("workflow", "start", "-w", wf_file["name"], "-i", "{not json")
    assert code == 1 and "Invalid JSON in --input" in err
    code, _, err = cli("workflow", "search", "-q", "workflowType")
    assert code == 1 and "Incorrectly formatted query string: workflowType" in err
    code, _, err = cli("workflow", "search", "-c", "6000")
    assert code == 1 and "Cannot return more than 5000 workflows. Please use pagination." in err
    code, _, err = cli("workflow", "search", "--start-time-after", "last tuesday")
    assert code == 2 and "Unable to parse time" in err


def test_usage_errors_exit_2(cli):
    assert cli("workflow")[0] == 2
    assert cli("workflow", "start")[0] == 2
    assert cli("bogus")[0] == 2
    code, out, _ = cli("--help")
    assert code == 0 and "workflow" in out


def test_server_from_environment_and_unreachable_server(monkeypatch, capsys):
    seen = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(str(request.url))
        return httpx.Response(200, json=[])

    monkeypatch.setenv("CONDUCTOR_SERVER_URL", "http://conductor.example:9999/api/")
    assert cli_main.main(["taskDef", "list"], transport=httpx.MockTransport(handler)) == 0
    assert seen == ["http://conductor.example:9999/api/metadata/taskdefs"]

    def down(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    assert cli_main.main(["task", "get", "t-1"], transport=httpx.MockTransport(down)) == 1
    assert "Cannot reach the Conductor server at http://conductor.example:9999/api" in capsys.readouterr().err


def test_a_reader_that_goes_away_ends_the_command_quietly(http_stub):
    """``conductor taskDef list | head -1``: no BrokenPipeError traceback, status 141."""
    defs = [{"name": f"task_{i}", "description": "x" * 200} for i in range(2000)]  # about 0.5 MB of JSON
    stub = http_stub(lambda request: Reply(200, defs))
    proc = subprocess.Popen([sys.executable, "-m", "apps.cli.main", "--server", stub.url + "/api", "taskDef", "list",
                             "--json"],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout.readline().strip() == b"["
    proc.stdout.close()  # as head does after its first line
    _, err = proc.communicate(timeout=60)
    assert err == b"" and proc.returncode == cli_main.EXIT_BROKEN_PIPE
    assert stub.requests[0].path == "/api/metadata/taskdefs"


def test_parse_time():
    assert cli_main.parse_time("1700000000000") == 1_700_000_000_000
    assert cli_main.parse_time("2023-11-14") == 1_699_920_000_000
    assert cli_main.parse_time("2023-11-14 22:13:20") == 1_700_000_000_000
    assert cli_main.parse_time("2023-11-14T23:13:20+01:00") == 1_700_000_000_000
    assert cli_main.build_search_query(workflow="a,b", status="failed", start_after=1, start_before=2) == \
        "workflowType IN (a,b) AND status IN (FAILED) AND startTime>1 AND startTime<2"


def test_over_real_http(live_server, capsys, tmp_path):
    cli = Cli(capsys, transport=None, server=live_server.url + "/api")
    name = unique("cli_live")
    path = tmp_path / "wf.json"
    path.write_text(json.dumps(workflow_def(name, [simple_task(f"{name}_t", "t")])))
    cli.ok("workflow", "create", str(path))
    wid = cli.ok("workflow", "start", "-w", name, "--correlation", "live-1").strip()
    assert cli.json("workflow", "get-execution", wid, "--complete")["tasks"][0]["status"] == "SCHEDULED"
    assert cli.json("workflow", "search", "-w", name)["results"][0]["correlationId"] == "live-1"
    code, _, err = cli("task", "get", "missing-task")
    assert code == 1 and "Task not found for taskId: missing-task" in err


def test_schedule_commands(cli, wf_file, tmp_path, monkeypatch):
    from apps.scheduler import firing
    from tests.factories import FakeClock

    clock = FakeClock(1_772_798_400_000).install(monkeypatch)  # Friday 2026-03-06 12:00 UTC
    cli.ok("workflow", "create", wf_file["path"])
    name = unique("cli_sched")
    path = tmp_path / "schedule.json"
    path.write_text(json.dumps({"name": name, "cronExpression": "0 0 * * * *",
                                "startWorkflowRequest": {"name": wf_file["name"]}}))
    assert cli.json("schedule", "create", str(path)) == {"name": name, "nextRunTime": clock.ms + 3600_000,
                                                          "result": "saved"}
    assert [s["name"] for s in cli.json("schedule", "list", "-w", wf_file["name"])] == [name]
    assert cli.json("schedule", "get", name)["cronExpression"] == "0 0 * * * *"
    nxt = [json.loads(line) for line in cli.ok("schedule", "next", "0 0 9 * * MON-FRI", "-n", "2").splitlines()]
    assert [n["utc"] for n in nxt] == ["2026-03-09T09:00:00+00:00", "2026-03-10T09:00:00+00:00"]
    clock.advance(3600)
    firing.fire_due()
    runs = cli.json("schedule", "executions", name, "-s", "EXECUTED")
    assert runs["totalHits"] == 1 and runs["results"][0]["workflowName"] == wf_file["name"]
    assert json.loads(cli.ok("schedule", "pause", name, "--reason", "audit")) == {"name": name, "result": "paused"}
    assert cli.json("schedule", "get", name)["pausedReason"] == "audit"
    cli.ok("schedule", "resume", name)
    code, out, err = cli("schedule", "resume", name)
    assert code == 1 and f"Schedule '{name}' not found" in err
    cli.ok("schedule", "delete", name)
    code, _out, err = cli("schedule", "get", name)
    assert code == 1 and f"Schedule '{name}' not found" in err


def test_schedule_next_of_a_cron_that_never_fires_says_so(cli):
    """February 30 matches no date: the command printed nothing and exited 0."""
    code, out, err = cli("schedule", "next", "0 0 0 30 2 *")
    assert (code, out) == (1, "")
    assert "never fires" in err and "0 0 0 30 2 *" in err


# --- the recovery drill's task commands, tables, server URL forms, the key hint ----------------

@pytest.fixture
def two_step_file(tmp_path):
    """A WorkflowDef ``a`` then ``b`` (TaskDef ``retryCount`` 1 for ``b``'s task)."""
    name = unique("cli_drill")
    definition = workflow_def(name, [simple_task(f"{name}_a", "a"), simple_task(f"{name}_b", "b")])
    path = tmp_path / "drill.json"
    path.write_text(json.dumps(definition))
    defs = tmp_path / "drill_tasks.json"
    defs.write_text(json.dumps([task_def(f"{name}_a"), task_def(f"{name}_b", retryCount=1)]))
    return {"name": name, "path": str(path), "defs": str(defs)}


def test_task_complete_and_fail_by_reference(cli, two_step_file):
    cli.ok("taskDef", "create", two_step_file["defs"])
    cli.ok("workflow", "create", two_step_file["path"])
    wid = cli.ok("workflow", "start", "-w", two_step_file["name"]).strip()

    done = json.loads(cli.ok("task", "complete", wid, "a", "-o", '{"amount": 10}'))
    assert (done["workflowId"], done["taskReferenceName"], done["result"]) == (wid, "a", "completed")
    tasks = cli.json("task", "list", "-w", wid, "--json")
    assert [(t["referenceTaskName"], t["status"]) for t in tasks] == [("a", "COMPLETED"), ("b", "SCHEDULED")]
    assert tasks[0]["taskId"] == done["taskId"] and tasks[0]["outputData"] == {"amount": 10}

    # b retries once (retryCount 1): the first failure schedules attempt 1, --terminal ends it
    assert json.loads(cli.ok("task", "fail", wid, "b", "--reason", "card declined"))["result"] == "failed"
    tasks = cli.json("task", "list", "-w", wid, "--json")
    assert [(t["referenceTaskName"], t["status"], t["retryCount"]) for t in tasks] == [
        ("a", "COMPLETED", 0), ("b", "FAILED", 0), ("b", "SCHEDULED", 1)]
    assert tasks[1]["reasonForIncompletion"] == "card declined"
    cli.ok("task", "fail", wid, "b", "--terminal", "--reason", "no retry")
    wf = cli.json("workflow", "status", wid)
    assert wf["status"] == "FAILED"

    code, _, err = cli("task", "complete", wid, "b")
    assert code == 1
    assert f"Workflow {wid} has no SCHEDULED or IN_PROGRESS task with reference 'b'" in err
    assert "a COMPLETED, b FAILED, b FAILED_WITH_TERMINAL_ERROR" in err
    code, _, err = cli("task", "complete", wid, "a", "-o", "[1]")
    assert code == 1 and "--output must be a JSON object" in err


def test_task_list_prints_one_line_per_task_by_default(cli, two_step_file):
    cli.ok("workflow", "create", two_step_file["path"])
    wid = cli.ok("workflow", "start", "-w", two_step_file["name"]).strip()
    cli.ok("task", "fail", wid, "a", "--terminal", "--reason", "boom\nwith  spaces")
    lines = cli.ok("task", "list", "-w", wid).splitlines()
    assert lines[0].split() == ["REF", "TASK_TYPE", "STATUS", "ATTEMPT", "TASK_ID", "REASON"]
    assert len(lines) == 2
    ref, task_type, status, attempt, task_id, *reason = lines[1].split()
    assert (ref, task_type, status, attempt) == ("a", f"{two_step_file['name']}_a", "FAILED_WITH_TERMINAL_ERROR", "0")
    assert reason == ["boom", "with", "spaces"]
    assert cli.json("task", "get", task_id)["referenceTaskName"] == "a"
    # the search form: the same columns and the workflow id
    lines = cli.ok("task", "list", "-t", f"{two_step_file['name']}_a").splitlines()
    assert lines[0].split()[-1] == "WORKFLOW_ID" and lines[1].split()[-1] == wid


def test_taskdef_list_prints_names_in_a_table_and_json_on_request(cli, tmp_path):
    name = unique("cli_td")
    defs = tmp_path / "defs.json"
    defs.write_text(json.dumps([task_def(f"{name}_x", description="x " * 50, retryCount=2, timeoutSeconds=30)]))
    cli.ok("taskDef", "create", str(defs))
    lines = cli.ok("taskDef", "list").splitlines()
    assert lines[0].split() == ["NAME", "RETRIES", "TIMEOUT_S", "DESCRIPTION"]
    row = next(line for line in lines if line.startswith(f"{name}_x "))
    assert row.split()[:3] == [f"{name}_x", "2", "30"] and row.endswith("…") and len(row) < 140
    assert any(d["name"] == f"{name}_x" for d in cli.json("taskDef", "list", "--json"))


@pytest.mark.parametrize("server", ["http://conductor.example:9999", "http://conductor.example:9999/",
                                    "http://conductor.example:9999/api", "http://conductor.example:9999/api/"])
def test_the_server_url_works_with_or_without_api(server, capsys):
    seen = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(str(request.url))
        return httpx.Response(200, json=[])

    assert cli_main.main(["--server", server, "taskDef", "list"], transport=httpx.MockTransport(handler)) == 0
    assert seen == ["http://conductor.example:9999/api/metadata/taskdefs"]


def test_a_server_that_wants_a_key_gets_told_which_variables_to_set(monkeypatch, capsys):
    monkeypatch.delenv("CONDUCTOR_AUTH_KEY", raising=False)
    monkeypatch.delenv("CONDUCTOR_AUTH_SECRET", raising=False)

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(401, json={"error": "INVALID_TOKEN", "message": "Missing X-Authorization header"})

    assert cli_main.main(["--server", "http://h:1/api", "task", "get", "t"], transport=httpx.MockTransport(handler)) == 1
    err = capsys.readouterr().err
    assert "set CONDUCTOR_AUTH_KEY and CONDUCTOR_AUTH_SECRET" in err and "create_access_key" in err
    assert "Missing X-Authorization header" in err


def _drill_commands() -> list[str]:
    """The ``conductor`` lines of docs/production-path.md's recovery drill, in order."""
    text = (ROOT / "docs" / "production-path.md").read_text()
    block = text[text.index("A recovery drill"):]
    block = block[block.index("```sh\n") + 6:block.index("\n```", block.index("```sh\n"))]
    return [line.split("  #")[0].strip() for line in block.splitlines() if "conductor " in line]


def test_the_documented_recovery_drill_runs_as_written(cli, tmp_path):
    """Each ``conductor`` command of the drill, on ``order_saga`` as ``make run`` loads it,
    exits 0; the failure fails the run and the retry plus the completion complete it."""
    import shlex

    bundle = json.loads((ROOT / "examples" / "definitions" / "order_saga.json").read_text())
    (tmp_path / "defs.json").write_text(json.dumps(bundle["taskDefs"]))
    (tmp_path / "wfs.json").write_text(json.dumps(bundle["workflowDefs"]))
    cli.ok("taskDef", "create", str(tmp_path / "defs.json"))
    cli.ok("workflow", "create", str(tmp_path / "wfs.json"), "--force")
    commands = _drill_commands()
    assert len(commands) >= 12 and commands[0].startswith("wid=$(.venv/bin/conductor workflow start -w order_saga")
    wid = None
    for command in commands:
        if command.startswith("wid=$("):
            wid = cli.ok(*shlex.split(command[len("wid=$("):-1])[1:]).strip()
            continue
        args = shlex.split(command.replace("$wid", wid))[1:]
        if "<taskId>" in args:
            args[args.index("<taskId>")] = cli.json("task", "list", "-w", wid, "--json")[0]["taskId"]
        cli.ok(*args)
        status = cli.json("workflow", "status", wid)["status"] if args[0] != "taskDef" else None
        if args[:2] == ["task", "fail"]:
            assert status == "FAILED", command
        if args[:2] == ["task", "complete"] and args[3] == "confirm":
            assert status == "COMPLETED", command
    assert status is None and wid
    assert cli.json("workflow", "status", wid)["status"] == "RUNNING"  # the restarted run
