"""The order_fulfillment example, end to end, with the official SDK against a real server.

Everything goes through ``conductor-python`` as a user would use it: ``@worker_task``
workers in ``TaskHandler`` processes, ``ConductorWorkflow.register``/``start_workflow_with_input``/
``execute``, ``WorkflowExecutor.start_workflow``/``execute``/``get_workflow``. Waiting is
a bounded polling loop (``wait_for_workflow``), never a fixed sleep.
"""
import ast
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conductor.client.http.models.start_workflow_request import StartWorkflowRequest
from conductor.client.http.models.task_def import TaskDef
from conductor.client.orkes_clients import OrkesClients
from conductor.client.workflow.conductor_workflow import ConductorWorkflow

from examples import order_fulfillment as example
from tests.e2e import failure_workers as fw
from tests.e2e.conftest import stop_session
from tests.e2e.sdk_helpers import running_workers, tasks_by_ref, wait_for_workflow

pytestmark = [
    pytest.mark.e2e,
    # the SDK's own TaskDef serialisation reads its deprecated ``owner_app`` property
    pytest.mark.filterwarnings("ignore:Call to deprecated function:DeprecationWarning"),
]

REPO_ROOT = Path(__file__).resolve().parents[2]
EXPECTED_OUTPUT = {"tracking": "TRACK-456", "transaction_id": "txn_abc123"}
# Only this module's workers: with no task types, ``running_workers`` would spawn one process
# for every ``@worker_task`` that any imported test module registered.
ORDER_TASK_TYPES = ("fetch_order", "process_payment", "ship_order")
FAILURE_TASK_TYPES = (fw.FLAKY_TASK, fw.TERMINAL_TASK, fw.LONG_TASK)


def assert_order_tasks(tasks: list, order_id: str) -> None:
    """The three tasks ran once each, in order, COMPLETED, with their inputs wired from
    the workflow input and the previous tasks' outputs."""
    by_ref = tasks_by_ref(tasks)
    assert list(by_ref) == ["fetch", "pay", "ship"], by_ref
    assert all(len(runs) == 1 for runs in by_ref.values()), {r: len(v) for r, v in by_ref.items()}
    fetch, pay, ship = by_ref["fetch"][0], by_ref["pay"][0], by_ref["ship"][0]
    assert [t.status for t in (fetch, pay, ship)] == ["COMPLETED"] * 3
    assert [t.task_def_name for t in (fetch, pay, ship)] == ["fetch_order", "process_payment", "ship_order"]
    assert fetch.input_data == {"order_id": order_id}
    assert fetch.output_data == {"order_id": order_id, "amount": 99.99, "item": "Widget"}
    assert pay.input_data == {"order_id": order_id, "amount": 99.99}
    assert pay.output_data == {"transaction_id": "txn_abc123", "status": "charged"}
    assert ship.input_data == {"order_id": order_id, "transaction_id": "txn_abc123"}
    assert ship.output_data == {"tracking": "TRACK-456", "carrier": "FedEx"}


def test_order_fulfillment_with_the_sdk(sdk_config):
    clients = OrkesClients(configuration=sdk_config)
    executor = clients.get_workflow_executor()
    with running_workers(sdk_config, ORDER_TASK_TYPES):
        workflow = example.order_fulfillment_workflow(executor)  # registered unless present
        registered = clients.get_metadata_client().get_workflow_def("order_fulfillment", version=1)
        assert [t.task_reference_name for t in registered.tasks] == ["fetch", "pay", "ship"]
        assert registered.output_parameters == {"tracking": "${ship.output.tracking}",
                                                "transaction_id": "${pay.output.transaction_id}"}
        # a second run leaves the registered definition as it is
        example.order_fulfillment_workflow(executor)

        # Asynchronous start from the ConductorWorkflow (it embeds the definition).
        workflow_id = workflow.start_workflow_with_input(workflow_input={"order_id": "ORD-123"})
        assert isinstance(workflow_id, str) and workflow_id
        done = wait_for_workflow(executor, sdk_config, workflow_id)
        assert done.status == "COMPLETED", done.reason_for_incompletion
        assert done.workflow_id == workflow_id
        assert done.workflow_name == "order_fulfillment" and done.workflow_version == 1
        assert done.input == {"order_id": "ORD-123"}
        assert done.output == EXPECTED_OUTPUT
        assert_order_tasks(done.tasks, "ORD-123")

        # Asynchronous start of the registered definition by name and version.
        workflow_id = executor.start_workflow(StartWorkflowRequest(
            name="order_fulfillment", version=1, input={"order_id": "ORD-456"}, correlation_id="e2e-ORD-456"))
        done = wait_for_workflow(executor, sdk_config, workflow_id)
        assert done.status == "COMPLETED", done.reason_for_incompletion
        assert done.correlation_id == "e2e-ORD-456"
        assert done.output == EXPECTED_OUTPUT
        assert_order_tasks(done.tasks, "ORD-456")
        status = executor.get_workflow_status(workflow_id, include_output=True)
        assert (status.status, status.output) == ("COMPLETED", EXPECTED_OUTPUT)

        # Synchronous: POST /workflow/execute/order_fulfillment/1 (registered definition).
        run = executor.execute(name="order_fulfillment", version=1, workflow_input={"order_id": "ORD-789"})
        assert run.status == "COMPLETED"
        assert run.output == EXPECTED_OUTPUT
        assert run.input == {"order_id": "ORD-789"}
        assert run.workflow_id
        assert_order_tasks(run.tasks, "ORD-789")
        persisted = executor.get_workflow(run.workflow_id, include_tasks=True)
        assert (persisted.status, persisted.output) == ("COMPLETED", EXPECTED_OUTPUT)

        # Synchronous from the ConductorWorkflow (inline workflowDef in the request).
        run = workflow.execute(workflow_input={"order_id": "ORD-790"})
        assert run.status == "COMPLETED"
        assert run.output == EXPECTED_OUTPUT
        assert_order_tasks(run.tasks, "ORD-790")


def test_example_script_runs_as_is(conductor_server):
    """``python examples/order_fulfillment.py`` with CONDUCTOR_SERVER_URL (and the access
    key's CONDUCTOR_AUTH_KEY / CONDUCTOR_AUTH_SECRET), as the README says."""
    env = dict(os.environ, **conductor_server.sdk_env())
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), os.environ.get("PYTHONPATH")) if p)
    proc = subprocess.run([sys.executable, "examples/order_fulfillment.py"], cwd=REPO_ROOT, env=env,
                          capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, f"stdout:\n{proc.stdout}\nstderr (tail):\n{proc.stderr[-4000:]}"
    lines = proc.stdout.splitlines()
    assert [line for line in lines if line.startswith("Status: ")] == ["Status: COMPLETED"] * 2, proc.stdout
    outputs = [ast.literal_eval(line.removeprefix("Output: ")) for line in lines if line.startswith("Output: ")]
    assert outputs == [EXPECTED_OUTPUT] * 2, proc.stdout


def _example(args: list[str], env: dict, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "examples/order_fulfillment.py", *args], cwd=REPO_ROOT, env=env,
                          capture_output=True, text=True, timeout=180, **kwargs)


def test_the_documented_key_path_deploy_with_an_admin_key_then_workers_with_a_worker_key(conductor_server):
    """docs/security.md's path: an admin key registers the definitions (the deploy step,
    ``--register``), the workers run with a worker key (``--workers``), an operator key
    starts the workflow (here with ``conductor workflow start --sync``). A worker key
    running the example all in one is refused with a message naming the role to use."""
    base = dict(os.environ, CONDUCTOR_SERVER_URL=conductor_server.url,
                PYTHONPATH=os.pathsep.join(p for p in (str(REPO_ROOT), os.environ.get("PYTHONPATH")) if p))
    admin = base | conductor_server.create_key("deploy", "admin")
    worker = base | conductor_server.create_key("billing-workers", "worker")
    operator = base | conductor_server.create_key("ops", "operator")

    refused = _example([], worker)
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert re.search(r"may not (PUT|POST) /api/\S+: it needs the (admin|operator) role", refused.stderr), refused.stderr
    assert "--register" in refused.stderr and "--workers" in refused.stderr
    assert "Traceback" not in refused.stderr

    deploy = _example(["--register"], admin)
    assert deploy.returncode == 0, deploy.stdout + deploy.stderr
    assert re.fullmatch(r"order_fulfillment v1: (registered|already there, left as it is)\n", deploy.stdout)
    again = _example(["--register"], worker)  # present now: a worker key's read is enough
    assert again.stdout == "order_fulfillment v1: already there, left as it is\n", again.stdout + again.stderr

    workers = subprocess.Popen([sys.executable, "examples/order_fulfillment.py", "--workers"], cwd=REPO_ROOT,
                               env=worker, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               start_new_session=True)
    try:
        assert workers.stdout.readline().startswith("Workers polling"), workers.stderr.read()[-3000:]
        run = subprocess.run([sys.executable, "-m", "apps.cli.main", "workflow", "start", "-w", "order_fulfillment",
                              "-i", '{"order_id": "ORD-KEY"}', "--sync", "--wait-seconds", "30"],
                             cwd=REPO_ROOT, env=operator, capture_output=True, text=True, timeout=120)
        assert run.returncode == 0, run.stderr
        result = json.loads(run.stdout)
        assert (result["status"], result["output"]) == ("COMPLETED", EXPECTED_OUTPUT), result
    finally:
        status = stop_session(workers)
    assert status == 0, workers.stderr.read()[-3000:]


def _single_task_workflow(executor, name: str, task) -> ConductorWorkflow:
    workflow = ConductorWorkflow(name=name, version=1, executor=executor)
    workflow >> task
    workflow.output_parameters({"result": task.output("progress")})
    workflow.register(overwrite=True)
    return workflow


def test_worker_failure_semantics(sdk_config):
    clients = OrkesClients(configuration=sdk_config)
    executor = clients.get_workflow_executor()
    metadata = clients.get_metadata_client()
    metadata.register_task_def(TaskDef(name=fw.FLAKY_TASK, retry_count=1, retry_logic="FIXED",
                                       retry_delay_seconds=0, timeout_seconds=120, response_timeout_seconds=60))
    # Retries allowed: only the terminal error may stop them.
    metadata.register_task_def(TaskDef(name=fw.TERMINAL_TASK, retry_count=3, retry_logic="FIXED",
                                       retry_delay_seconds=0, timeout_seconds=120, response_timeout_seconds=60))
    metadata.register_task_def(TaskDef(name=fw.LONG_TASK, retry_count=0, timeout_seconds=120,
                                       response_timeout_seconds=60))
    assert metadata.get_task_def(fw.FLAKY_TASK).retry_count == 1

    retry_wf = _single_task_workflow(executor, "e2e_retry_once",
                                     fw.flaky_charge(task_ref_name="charge", order_id="ORD-RETRY"))
    terminal_wf = _single_task_workflow(executor, "e2e_terminal_error",
                                        fw.blocked_order(task_ref_name="blocked", order_id="ORD-BLOCKED"))
    long_wf = _single_task_workflow(executor, "e2e_in_progress_callback",
                                    fw.long_running_job(task_ref_name="long_job", job_id="JOB-1"))

    with running_workers(sdk_config, FAILURE_TASK_TYPES):
        retry_id = retry_wf.start_workflow_with_input(workflow_input={})
        terminal_id = terminal_wf.start_workflow_with_input(workflow_input={})
        long_id = long_wf.start_workflow_with_input(workflow_input={})

        # 1. An exception fails the attempt; the TaskDef's one retry (no delay) completes it.
        done = wait_for_workflow(executor, sdk_config, retry_id)
        runs = tasks_by_ref(done.tasks)["charge"]
        assert [(t.status, t.retry_count) for t in runs] == [("FAILED", 0), ("COMPLETED", 1)], \
            [(t.status, t.retry_count, t.reason_for_incompletion) for t in runs]
        first, second = runs
        assert first.reason_for_incompletion == fw.flaky_reason("ORD-RETRY")
        assert second.task_id != first.task_id
        assert second.retried_task_id == first.task_id
        assert second.output_data == {"charged": True, "attempt": 1}
        assert done.status == "COMPLETED", done.reason_for_incompletion
        # the traceback the SDK sent with the failure is the first attempt's log
        logs = clients.get_task_client().get_task_logs(first.task_id) or []
        assert any(fw.flaky_reason("ORD-RETRY") in (entry.log or "") for entry in logs), logs

        # 2. NonRetryableException: FAILED_WITH_TERMINAL_ERROR, no retry, workflow FAILED.
        done = wait_for_workflow(executor, sdk_config, terminal_id)
        runs = tasks_by_ref(done.tasks)["blocked"]
        assert [(t.status, t.retry_count) for t in runs] == [("FAILED_WITH_TERMINAL_ERROR", 0)]
        assert runs[0].reason_for_incompletion == fw.TERMINAL_REASON
        assert done.status == "FAILED"
        assert "why" in (done.reason_for_incompletion or ""), done.reason_for_incompletion
        assert fw.TERMINAL_REASON in done.reason_for_incompletion

        # 3. TaskInProgress(callback_after_seconds=1): the same task comes back after 1 s.
        done = wait_for_workflow(executor, sdk_config, long_id)
        assert done.status == "COMPLETED", done.reason_for_incompletion
        runs = tasks_by_ref(done.tasks)["long_job"]
        assert len(runs) == 1, [(t.task_id, t.status) for t in runs]
        task = runs[0]
        assert task.status == "COMPLETED"
        assert task.poll_count >= 2
        assert task.output_data["task_id"] == task.task_id
        assert task.output_data["poll_count"] >= 2
        # what the IN_PROGRESS update reported is kept and handed back with the task
        assert task.output_data["previous_output"] == {"progress": 50, "job_id": "JOB-1", "task_id": task.task_id}
        assert task.end_time - task.start_time >= 1000
        assert done.output == {"result": 100}
