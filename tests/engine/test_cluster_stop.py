"""ClusterSupervisor's last resort without a cluster: processes that ignore SIGTERM (a
Sentinel and a process it forked) are killed and reaped once the grace period is over,
and ``run(run_once=True)`` answers 1 when the cluster never came up (apps/engine/cluster.py;
tests/crash/test_stop_rounds.py stops real clusters)."""
import multiprocessing
import os
import signal
import time

import psutil

from apps.engine.cluster import ClusterSupervisor, alive, descendants


def _stubborn(ready) -> None:
    """Ignores SIGTERM, forks a grandchild that does the same, and sleeps."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if os.fork() == 0:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        while True:
            time.sleep(1)
    ready.set()
    while True:
        time.sleep(1)


def _supervise(report) -> None:
    """A supervisor process of its own (its descendants are only what it starts): a
    stand-in Sentinel that ignores SIGTERM, then ``stop()``; sends the pids it saw."""
    context = multiprocessing.get_context("fork")
    ready = context.Event()
    supervisor = ClusterSupervisor(grace_seconds=0.5)
    supervisor.sentinel = context.Process(target=_stubborn, args=(ready,))
    supervisor.sentinel.start()
    ready.wait(10)
    seen = [p.pid for p in descendants(os.getpid())]
    started = time.monotonic()
    supervisor.stop()
    report.send((seen, supervisor.sentinel.exitcode, time.monotonic() - started,
                 [p.pid for p in descendants(os.getpid())]))
    os._exit(0)


def test_stop_kills_and_reaps_what_ignores_sigterm():
    context = multiprocessing.get_context("fork")
    receive, send = context.Pipe(duplex=False)
    supervisor = context.Process(target=_supervise, args=(send,))
    supervisor.start()
    assert receive.poll(30)
    seen, sentinel_exit, _took, left = receive.recv()
    supervisor.join(10)
    assert len(seen) >= 2  # the stand-in Sentinel and the process it forked
    assert sentinel_exit == -signal.SIGKILL  # reaped by its Process object, not behind its back
    assert left == []
    assert not any(psutil.pid_exists(pid) and alive(psutil.Process(pid)) for pid in seen)


def _dies_at_once(*_args) -> None:
    os._exit(3)


def test_run_once_answers_1_when_the_cluster_never_came_up(monkeypatch):
    monkeypatch.setattr("apps.engine.cluster.sentinel_main", _dies_at_once)
    supervisor = ClusterSupervisor(grace_seconds=1)
    previous = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    try:
        assert supervisor.run(run_once=True) == 1
    finally:
        signal.signal(signal.SIGTERM, previous[0])
        signal.signal(signal.SIGINT, previous[1])
    assert supervisor.sentinel.exitcode == 3
