"""A server process for tests/api/test_group_commit.py's crash test: it sends the first
TaskResult (argv[1], a JSON list of two) through the fast path's group commit and prints
``acknowledged <taskId> <status>`` once answered, then puts the second one and a call
that never returns into one batch and prints ``mid-batch`` from inside it (the second
update executed, the batch not committed); the test then kills it."""
from __future__ import annotations

import asyncio
import json
import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import django  # noqa: E402

django.setup()

from apps.api import fastpath  # noqa: E402
from apps.engine import groupcommit  # noqa: E402


def _stop_here() -> None:
    print("mid-batch", flush=True)
    threading.Event().wait(120)


async def main(results: list[dict]) -> None:
    status, _type, _body = await fastpath.update_grouped(json.dumps(results[0]).encode(), "/api/tasks")
    print(f"acknowledged {results[0]['taskId']} {status}", flush=True)
    gate, holding = threading.Event(), threading.Event()
    held = groupcommit.submit(lambda: (holding.set(), gate.wait(60)))
    await asyncio.to_thread(holding.wait, 60)
    second = asyncio.ensure_future(fastpath.update_grouped(json.dumps(results[1]).encode(), "/api/tasks"))
    while groupcommit.waiting() < 1:
        await asyncio.sleep(0.01)
    groupcommit.submit(_stop_here)
    gate.set()
    await held
    await asyncio.wait_for(second, 120)  # never: the process is killed first


if __name__ == "__main__":
    asyncio.run(main(json.loads(sys.argv[1])))
