"""Group commit on and off, interleaved in one process: update-v2 through the ASGI app.

    .venv/bin/python bench/group_commit.py [--db sqlite|postgres] [--pg-url URL] [-n 120]
                                           [--concurrency 6] [--rounds 2]

Creates a throwaway database (as ``profile_paths.py``), registers a workflow of three
SIMPLE tasks of one type and, per round, runs a phase with ``GROUP_COMMIT`` off (each
update in a pool thread, its own transaction) and one with it on (the committer thread,
``apps.engine.groupcommit``), each on ``n`` fresh workflows: ``--concurrency`` workers
(coroutines on one event loop, as the server's) each send ``POST /api/tasks/update-v2`` to
the application (``conductor_web.asgi.application``, the fast path) and run the task it
answers until it answers 204. Prints per phase the process's CPU ms per update
(``time.process_time``, engine + driver, not the database server) and the wall ms per
update, and for the on phases the batches the committer ran (calls per COMMIT).
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

TASK = "gc_bench_task"
WORKFLOW = "gc_bench_wf"


async def _post(body: dict) -> tuple[int, bytes]:
    """One ``update-v2`` to the application, its body in one message."""
    from tests.asgi_client import asgi_call

    return await asgi_call("POST", "/api/tasks/update-v2", body, chunk_size=1 << 20)


def phase(mode: str, n: int, concurrency: int) -> dict:
    from django.conf import settings

    from apps.engine import executor, groupcommit, queue

    settings.CONDUCTOR["GROUP_COMMIT"] = mode
    for i in range(n):
        executor.workflow_start(name=WORKFLOW, input={"i": i})
    first = queue.task_poll(task_type=TASK, worker_id="w", count=concurrency)

    async def worker(task: dict) -> int:
        done = 0
        while task is not None:
            status, body = await _post({"workflowInstanceId": task["workflowInstanceId"], "taskId": task["taskId"],
                                        "status": "COMPLETED", "workerId": "w", "outputData": {"x": done}})
            assert status in (200, 204), (status, body)
            done += 1
            task = json.loads(body) if status == 200 else None
        return done

    async def run() -> int:
        return sum(await asyncio.gather(*[worker({"workflowInstanceId": t.workflow_id, "taskId": t.task_id})
                                          for t in first]))

    before = groupcommit.stats()
    cpu, wall = time.process_time(), time.perf_counter()
    updates = asyncio.run(run())
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    after = groupcommit.stats()
    batches = after["batches"] - before["batches"]
    return {"mode": mode, "updates": updates, "cpu_ms_per_update": round(cpu * 1000 / updates, 2),
            "wall_ms_per_update": round(wall * 1000 / updates, 2), "batches": batches,
            "calls_per_batch": round((after["calls"] - before["calls"]) / batches, 2) if batches else None,
            "load": round(os.getloadavg()[0], 1)}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--db", choices=("sqlite", "postgres"), default="sqlite")
    p.add_argument("--pg-url", default=os.environ.get("PG_URL"))
    p.add_argument("-n", type=int, default=120, help="workflows per phase (3 updates each)")
    p.add_argument("--concurrency", type=int, default=6)
    p.add_argument("--rounds", type=int, default=2)
    a = p.parse_args()
    os.environ["CONDUCTOR_API_AUTH"] = "off"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "conductor_web.settings")

    from inprocess_db import throwaway_database
    with throwaway_database(a.db, a.pg_url, "gc"):
        import django
        django.setup()
        from django.core.management import call_command

        from apps.engine import groupcommit
        from apps.metadata import services

        call_command("migrate", verbosity=0)
        services.task_defs_register(task_defs=[{"name": TASK, "retryCount": 0, "timeoutSeconds": 0,
                                                "responseTimeoutSeconds": 600, "ownerEmail": "bench@example.com"}])
        services.workflow_defs_update(workflow_defs=[{
            "name": WORKFLOW, "version": 1, "schemaVersion": 2, "ownerEmail": "bench@example.com",
            "tasks": [{"name": TASK, "taskReferenceName": ref, "type": "SIMPLE"} for ref in ("a", "b", "c")]}])
        phase("off", 5, 1)  # warm-up: definitions cached, statements prepared
        phase("on", 5, 1)
        for _ in range(a.rounds):
            for mode in ("off", "on"):
                print(json.dumps({"db": a.db, "concurrency": a.concurrency, **phase(mode, a.n, a.concurrency)}),
                      flush=True)
        groupcommit.stop()


if __name__ == "__main__":
    main()
