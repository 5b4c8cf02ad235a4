"""The Python SDK workers of the scale-out test (tests/crash/test_scale_out.py): the
official ``conductor-python`` ``TaskHandler`` with one ``Worker`` per task type of the
chain (``crash_a``, ``crash_b``, ``crash_c``), configured as a user configures it, from
``CONDUCTOR_SERVER_URL``, ``CONDUCTOR_AUTH_KEY`` and ``CONDUCTOR_AUTH_SECRET``.

    python -m tests.crash.sdk_workers

``SCALE_WORKER_LABEL`` names this fleet (the workers' ``workerId`` is
``<label>-<taskType>``); every task a poll hands to a worker is recorded, before the
work, as one JSON line ``{"taskId", "workflowId", "ref", "worker", "pid", "at"}`` (``at``:
epoch ms) in ``$SCALE_LEDGER_DIR/<label>-<pid>.jsonl``. The work is
``tests.crash.harness.work``, a pure function of the task input, and the output carries
the taskId it was computed for (``delivery``). SIGTERM stops the handler and exits 0.
The test runs it with ``CONDUCTOR_WORKER_ISOLATION=thread`` (an SDK option: the workers
are threads of one process, not one process each), to keep its load on a shared machine
small.
"""
# No ``from __future__ import annotations``: the SDK hands the Task itself to a function
# whose parameter is annotated with the Task class (a string annotation would not match).
import json
import os
import random
import signal
import threading
import time

from conductor.client.automator.task_handler import TaskHandler
from conductor.client.configuration.configuration import Configuration
from conductor.client.http.models.task import Task
from conductor.client.worker.worker import Worker

from tests.crash.harness import WORKER_TYPES, work

LABEL = os.environ.get("SCALE_WORKER_LABEL", "py")
POLL_INTERVAL_MS = 200  # the SDK's poll asks the server to wait 100 ms at most (fixed)
THREADS_PER_WORKER = 2
_lock = threading.Lock()


def _record(task: Task) -> None:
    line = json.dumps({"taskId": task.task_id, "workflowId": task.workflow_instance_id,
                       "ref": task.reference_task_name, "worker": f"{LABEL}-{task.task_def_name}",
                       "pid": os.getpid(), "at": int(time.time() * 1000)})
    path = os.path.join(os.environ["SCALE_LEDGER_DIR"], f"{LABEL}-{os.getpid()}.jsonl")
    with _lock, open(path, "a") as out:
        out.write(line + "\n")


def _execute(task: Task) -> dict:
    _record(task)
    value = work(task.reference_task_name, task.input_data or {})
    time.sleep(random.uniform(0.005, 0.05))  # the work takes a moment: kills land mid-way
    return {"value": value, "delivery": task.task_id}


def crash_a(task: Task) -> dict:
    return _execute(task)


def crash_b(task: Task) -> dict:
    return _execute(task)


def crash_c(task: Task) -> dict:
    return _execute(task)


FUNCTIONS = {"crash_a": crash_a, "crash_b": crash_b, "crash_c": crash_c}


def main() -> None:
    assert set(FUNCTIONS) == set(WORKER_TYPES)
    workers = [Worker(name, fn, poll_interval=POLL_INTERVAL_MS, worker_id=f"{LABEL}-{name}",
                      thread_count=THREADS_PER_WORKER) for name, fn in FUNCTIONS.items()]
    handler = TaskHandler(workers=workers, configuration=Configuration(), scan_for_annotated_workers=False)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    handler.start_processes()
    try:
        stop.wait()
    finally:
        handler.stop_processes()
    if os.environ.get("CONDUCTOR_WORKER_ISOLATION", "").strip().lower() == "thread":
        # the SDK's thread mode stops cooperatively, and its poll loops do not end:
        # the handler has stopped, the process ends here
        os._exit(0)


if __name__ == "__main__":
    main()
