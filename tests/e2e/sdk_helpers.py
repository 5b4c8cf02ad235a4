"""What e2e tests do with the SDK besides calling it: run the ``@worker_task`` workers in
their own processes for the length of a ``with`` block, and wait for an execution with
a bounded polling loop (never a fixed sleep)."""
import json
import time
from pathlib import Path
from contextlib import contextmanager

import httpx
from conductor.client.automator.task_handler import TaskHandler, get_registered_workers
from conductor.client.configuration.configuration import Configuration

WORKFLOW_TERMINAL = ("COMPLETED", "FAILED", "TIMED_OUT", "TERMINATED")
DEFAULT_WAIT_SECONDS = 60
POLL_INTERVAL_SECONDS = 0.2
WORKER_READY_SECONDS = 300


@contextmanager
def running_workers(configuration: Configuration, task_types=None):
    """Start one process per ``@worker_task`` function (``spawn``), as
    ``TaskHandler(scan_for_annotated_workers=True)`` does for a user, or only the workers of
    ``task_types`` (an iterable of task definition names) when given; always stop them.

    The block is entered only once every started worker has polled the server (its task
    type's ``PollData.lastPollTime`` is at or after the start), waiting at most
    ``WORKER_READY_SECONDS``: spawning and importing a worker process takes tens of seconds
    on a loaded machine, and a test's own wait must count from a working worker.
    Raises AssertionError naming the task types that never polled."""
    if task_types is None:
        handler = TaskHandler(workers=[], configuration=configuration, scan_for_annotated_workers=True)
    else:
        wanted = set(task_types)
        workers = [w for w in get_registered_workers() if w.get_task_definition_name() in wanted]
        missing = wanted - {w.get_task_definition_name() for w in workers}
        assert not missing, f"no @worker_task for {sorted(missing)}"
        handler = TaskHandler(workers=workers, configuration=configuration, scan_for_annotated_workers=False)
    started_ms = int(time.time() * 1000)
    handler.start_processes()
    try:
        _wait_until_polling(configuration, {w.get_task_definition_name() for w in handler.workers}, started_ms)
        yield handler
    finally:
        handler.stop_processes()


def _wait_until_polling(configuration: Configuration, task_types: set, since_ms: int) -> None:
    """Until each of ``task_types`` has a poll recorded at or after ``since_ms`` (epoch ms;
    ``GET /tasks/queue/polldata/all``), bounded by ``WORKER_READY_SECONDS``."""
    waiting = set(task_types)
    deadline = time.monotonic() + WORKER_READY_SECONDS
    with httpx.Client(timeout=10) as client:  # one client (and SSL context) for the whole wait
        while waiting and time.monotonic() < deadline:
            resp = client.get(f"{configuration.host}/tasks/queue/polldata/all",
                              headers=auth_headers(configuration, client))  # a fresh token: some live only seconds
            if resp.status_code == 200:
                waiting -= {p["queueName"] for p in resp.json() if (p.get("lastPollTime") or 0) >= since_ms}
            if waiting:
                time.sleep(POLL_INTERVAL_SECONDS)
    assert not waiting, f"SDK workers for {sorted(waiting)} did not poll within {WORKER_READY_SECONDS}s"


def auth_headers(configuration: Configuration, client: httpx.Client | None = None) -> dict:
    """``{"X-Authorization": token}`` for a raw HTTP call with the configuration's access
    key (``{}`` when it has none); ``client``, when given, makes the ``POST /token`` call."""
    settings = configuration.authentication_settings
    if settings is None:
        return {}
    resp = (client or httpx).post(f"{configuration.host}/token", timeout=10,
                                  json={"keyId": settings.key_id, "keySecret": settings.key_secret})
    resp.raise_for_status()
    return {"X-Authorization": resp.json()["token"]}


def raw_workflow(configuration: Configuration, workflow_id: str) -> str:
    """The server's JSON for an execution, for failure messages (bypasses the SDK's
    model, which turns a response it cannot deserialize into None)."""
    try:
        r = httpx.get(f"{configuration.host}/workflow/{workflow_id}", params={"includeTasks": "true"},
                      headers=auth_headers(configuration), timeout=10)
        return f"HTTP {r.status_code}: {json.dumps(r.json(), indent=1)[:6000]}"
    except (httpx.HTTPError, ValueError) as exc:
        return f"(could not read the workflow: {exc!r})"


def wait_for_workflow(executor, configuration: Configuration, workflow_id: str, *,
                      statuses=WORKFLOW_TERMINAL, timeout: float = DEFAULT_WAIT_SECONDS):
    """Poll ``executor.get_workflow(id, include_tasks=True)`` until its status is one of
    ``statuses``; return that Workflow. Fails after ``timeout`` seconds with the last
    status and the server's raw JSON."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = executor.get_workflow(workflow_id=workflow_id, include_tasks=True)
        if last is not None and last.status in statuses:
            return last
        time.sleep(POLL_INTERVAL_SECONDS)
    raise AssertionError(
        f"workflow {workflow_id} not in {statuses} after {timeout}s; SDK saw "
        f"{getattr(last, 'status', last)!r}; server has:\n{raw_workflow(configuration, workflow_id)}")


def tasks_by_ref(tasks) -> dict[str, list]:
    """``{referenceTaskName: [Task, ...]}`` of a Workflow's or WorkflowRun's ``tasks``,
    each list in execution order (``seq``)."""
    out: dict[str, list] = {}
    for task in sorted(tasks or [], key=lambda t: t.seq or 0):
        out.setdefault(task.reference_task_name, []).append(task)
    return out


ORDER_FULFILLMENT_TASKS = ("fetch_order", "process_payment", "ship_order")


def load_order_fulfillment(conductor_server) -> dict:
    """Register ``examples/definitions/order_fulfillment.json`` as ``make run`` loads it (its
    TaskDefs and WorkflowDef v1, replacing what is there) and answer what the API then shows:
    ``{name: definition}``, the three TaskDefs and ``order_fulfillment``. The README's SDK
    examples must leave exactly this in place (issue #32: examples never replace what
    ``make run`` registered)."""
    repo = Path(__file__).resolve().parents[2]
    bundle = json.loads((repo / "examples" / "definitions" / "order_fulfillment.json").read_text())
    with httpx.Client(base_url=conductor_server.url, headers=conductor_server.auth_headers(), timeout=30) as api:
        api.post("/metadata/taskdefs", json=bundle["taskDefs"]).raise_for_status()
        api.put("/metadata/workflow", json=bundle["workflowDefs"]).raise_for_status()
    before = order_fulfillment_definitions(conductor_server)
    assert before["fetch_order"]["timeoutSeconds"] == 120 and before["fetch_order"]["description"]
    return before


def order_fulfillment_definitions(conductor_server) -> dict:
    """The order_fulfillment TaskDefs and WorkflowDef v1 as the API answers them
    (``{name: definition}``)."""
    with httpx.Client(base_url=conductor_server.url, headers=conductor_server.auth_headers(), timeout=30) as api:
        out = {n: api.get(f"/metadata/taskdefs/{n}").raise_for_status().json() for n in ORDER_FULFILLMENT_TASKS}
        out["order_fulfillment"] = api.get("/metadata/workflow/order_fulfillment", params={"version": 1}) \
            .raise_for_status().json()
    return out
