"""Helpers of the concurrency tests: run callables in real threads (each with its own
database connection, closed at the end) released together by a barrier."""
from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection


def run_in_threads(fns: list[Callable[[], Any]], timeout: float = 120) -> list[Any]:
    """Run every callable in its own thread, all starting at once; return their results in
    order. Re-raises the first exception of any thread; fails if a thread hangs."""
    barrier = threading.Barrier(len(fns))
    results: list[Any] = [None] * len(fns)
    errors: list[BaseException] = []

    def body(i: int, fn: Callable[[], Any]) -> None:
        try:
            barrier.wait(timeout=30)
            results[i] = fn()
        except BaseException as exc:  # noqa: BLE001 - reported to the test thread
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=body, args=(i, fn), daemon=True) for i, fn in enumerate(fns)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)
    assert not any(t.is_alive() for t in threads), "a thread did not finish"
    if errors:
        raise errors[0]
    return results


@pytest.fixture
def threads():
    return run_in_threads


@pytest.fixture
def postgres_only():
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL (DATABASE_URL=postgres://...)")
