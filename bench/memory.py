"""Memory of the embedded server as `make run` starts it (issue #9's "memory" target).

    .venv/bin/python bench/memory.py [--transitions N] [--rest-s 10] [--workers 6]
                                     [--deadline S] [--json-out FILE]

1. At rest: a temp SQLite database prepared as `make run` prepares it (migrate,
   load_examples, install_schedules), then ``scripts/run.sh 127.0.0.1 PORT`` (the server,
   ``python -m conductor_web.serve``, and the django-q2 cluster, with run.sh's Q_WORKERS) in a session of its own, API auth off
   as on a loopback `make run`. Once /health answers and the process tree has not changed
   for 3 s, it waits ``--rest-s`` seconds and reads each process's RSS (``VmRSS`` of
   /proc/PID/status) and PSS (``Pss`` of /proc/PID/smaps_rollup: each resident page divided
   among the processes that map it, so the PSS sum is what the tree occupies, while the RSS
   sum counts the pages the cluster's forked processes share once per process).
2. Stability: ``--transitions`` task transitions (default $BENCH_RSS_TRANSITIONS, else
   100,000; N/3 workflows of bench.py's 3 SIMPLE tasks) through the HTTP API, driven by
   bench.py's ``Bench`` (its SDK-like worker threads, its warm-up and its checks); each
   process's RSS right before the main run (after the 20-workflow warm-up), every 2 s
   during it and right after it: growth in MB and % over the run and over its second half
   (from the sample when half the workflows were done: a leak keeps growing there, a
   process that only reached its high-water mark does not), and the peak. ``--deadline``
   (seconds) bounds the whole run (default 600 + 25 ms per transition); the JSON says how
   many transitions ran.

Prints one JSON line ``{"memory": {...}}`` (also appended to ``--json-out``, which
bench/summarize.py reads) and a few ``#`` lines; sizes in MB (MiB). It stops run.sh with
SIGTERM (run.sh stops the server and the cluster), then kills by PID any process of the tree
still there, and deletes the temp dir. A benchmark, not a test: nothing is asserted.
"""
from __future__ import annotations

import argparse
import math
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))

from bench import Bench, Server, emit, free_port, parse_args as bench_args  # noqa: E402
from cpu_meter import _children_map  # noqa: E402

STOP_TIMEOUT_S = 20  # run.sh's wait for the cluster's job in hand; ours is a little longer


def _proc_field_kb(pid: int, name: str, key: str) -> int | None:
    """The ``key:`` line of /proc/PID/NAME in kB, or None if the process is gone."""
    try:
        for line in Path(f"/proc/{pid}/{name}").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def _start_ticks(pid: int) -> str | None:
    """Start time of a process (field 22 of /proc/PID/stat): tells a reused PID apart."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def _cmdline(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")[:-1]
    except OSError:
        return []


def mem_mb(pid: int) -> tuple[float | None, float | None]:
    """(RSS, PSS) of one process in MB; None for what could not be read."""
    rss = _proc_field_kb(pid, "status", "VmRSS")
    pss = _proc_field_kb(pid, "smaps_rollup", "Pss")
    return (round(rss / 1024, 1) if rss is not None else None, round(pss / 1024, 1) if pss is not None else None)


class RunShServer(Server):
    """bench.py's ``Server`` (temp SQLite database, env, stop) serving with scripts/run.sh."""

    def start(self) -> None:
        self.db_url = self.database_url()
        env = self.env(self.db_url)
        env.update(VENV=str(Path(sys.executable).parent.parent), STOP_TIMEOUT=str(STOP_TIMEOUT_S))
        log = open(self.tmp / "server.log", "ab")
        for cmd in (("migrate", "-v", "0", "--no-input"), ("load_examples",), ("install_schedules",)):
            subprocess.run([sys.executable, str(self.app_dir / "manage.py"), *cmd], env=env, cwd=self.app_dir,
                           check=True, timeout=300, stdout=log, stderr=subprocess.STDOUT)
        port = free_port()
        self.procs.append(subprocess.Popen([str(self.app_dir / "scripts" / "run.sh"), "127.0.0.1", str(port)],
                                           env=env, cwd=self.app_dir, stdout=log, stderr=subprocess.STDOUT,
                                           start_new_session=True))
        self.url = f"http://127.0.0.1:{port}"
        self.description = "scripts/run.sh (server + qcluster)"
        self.wait_healthy()

    def tree(self) -> dict[int, str]:
        """{pid: name} of run.sh and its descendants, without run.sh's one-second ``sleep``."""
        kids = _children_map()
        out: dict[int, str] = {}
        stack = [(p.pid, "", 0, 1) for p in self.procs]  # pid, parent's name, index among siblings, siblings
        while stack:
            pid, parent, i, n = stack.pop()
            args = _cmdline(pid)
            if not args or Path(args[0]).name == "sleep":
                continue
            out[pid] = name = _name(args, parent, i, n)
            children = sorted(kids.get(pid, ()))
            stack.extend((k, name, j, len(children)) for j, k in enumerate(children))
        return out

    def stop(self) -> None:
        started = {pid: _start_ticks(pid) for pid in self.tree()}
        for p in self.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in self.procs:
            try:
                p.wait(timeout=STOP_TIMEOUT_S + 20)
            except subprocess.TimeoutExpired:
                pass
        for pid, ticks in started.items():  # what run.sh did not stop: only the processes we started
            if ticks is not None and _start_ticks(pid) == ticks:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        super().stop()


def _name(args: list[str], parent: str, i: int, n: int) -> str:
    """A process's name from its command line and place in the tree (the ``i``-th of ``n``
    children of its parent, by PID: the sentinel spawns the workers, then monitor, pusher)."""
    if "qcluster" in args:
        if not parent.startswith("qcluster"):
            return "qcluster"
        if parent == "qcluster":
            return "qcluster sentinel"
        return "qcluster " + ("monitor" if i == n - 2 else "pusher" if i == n - 1 else f"worker {i + 1}")
    if "conductor_web.serve" in args[1:3]:  # python -m conductor_web.serve
        return "server"
    return Path(args[1] if Path(args[0]).name in ("bash", "sh") and len(args) > 1 else args[0]).name


def settle(server: RunShServer, quiet_s: float = 3.0, timeout_s: float = 90.0) -> dict[int, str]:
    """Wait (at most ``timeout_s``) until the tree holds the server and the cluster and has not
    changed for ``quiet_s`` seconds; returns it."""
    deadline = time.time() + timeout_s
    last: dict[int, str] = {}
    since = time.time()
    while time.time() < deadline:
        tree = server.tree()
        if tree != last:
            last, since = tree, time.time()
        elif time.time() - since >= quiet_s and {"server", "qcluster sentinel"} <= set(tree.values()):
            break
        time.sleep(0.5)
    return last


def snapshot(tree: dict[int, str]) -> list[dict]:
    out = []
    for pid, name in sorted(tree.items()):  # by PID: run.sh, the server, the cluster in spawn order
        rss, pss = mem_mb(pid)
        if rss is not None:
            out.append({"pid": pid, "name": name, "rss_mb": rss, "pss_mb": pss})
    return out


class Sampler(threading.Thread):
    """Every ``interval`` s until ``stop``: (workflows done, {pid: RSS MB}) of ``pids``."""

    def __init__(self, pids: list[int], done, interval: float = 2.0):
        super().__init__(daemon=True)
        self.pids, self.done, self.interval = pids, done, interval
        self.samples: list[tuple[int, dict[int, float | None]]] = []
        self.halt = threading.Event()

    def run(self) -> None:
        while not self.halt.wait(self.interval):
            self.samples.append((self.done(), {p: mem_mb(p)[0] for p in self.pids}))


def growth(before: list[dict], after: list[dict], samples: list[tuple[int, dict]]) -> list[dict]:
    """Per process (by PID) of ``before``: RSS before, at half the run, at its peak and after;
    growth over the run and over its second half, MB and %."""
    now = {p["pid"]: p for p in after}
    total = max((d for d, _ in samples), default=0)
    mid = min(samples, key=lambda s: abs(s[0] - total / 2))[1] if samples else {}
    out = []
    for p in before:
        a, m = now.get(p["pid"]), mid.get(p["pid"])
        seen = [x[p["pid"]] for _, x in samples if x.get(p["pid"])] + [p["rss_mb"]] + ([a["rss_mb"]] if a else [])
        row = {"pid": p["pid"], "name": p["name"], "rss_before_mb": p["rss_mb"], "rss_mid_mb": m,
               "rss_peak_mb": max(seen), "rss_after_mb": a["rss_mb"] if a else None}
        if a:
            row["growth_mb"] = round(a["rss_mb"] - p["rss_mb"], 1)
            row["growth_pct"] = round(100 * (a["rss_mb"] - p["rss_mb"]) / p["rss_mb"], 1)
        if a and m:
            row["growth_2nd_half_mb"] = round(a["rss_mb"] - m, 1)
            row["growth_2nd_half_pct"] = round(100 * (a["rss_mb"] - m) / m, 1)
        out.append(row)
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--transitions", type=int, default=int(os.environ.get("BENCH_RSS_TRANSITIONS") or 100_000))
    p.add_argument("--rest-s", type=float, default=10.0, help="seconds at rest before the memory is read")
    p.add_argument("--workers", type=int, default=6, help="bench.py's worker threads for the run")
    p.add_argument("--deadline", type=float, help="limit for the whole run, s (default 600 + 0.025 per transition)")
    p.add_argument("--app-dir", default=str(REPO), help="project tree to serve (its scripts/run.sh)")
    p.add_argument("--json-out", metavar="FILE", help="append the JSON line to FILE")
    a = p.parse_args()
    workflows = max(1, math.ceil(a.transitions / 3))
    deadline = a.deadline or 600 + 0.025 * a.transitions
    bargs = bench_args(["--start-server", "--db", "sqlite", "--app-dir", a.app_dir, "-n", str(workflows),
                        "--workers", str(a.workers), "--lone", "0", "--idle-s", "1", "--deadline", str(deadline)])
    server = RunShServer(bargs)
    out: dict = {"server": "scripts/run.sh, SQLite", "rest_s": a.rest_s,
                 "loadavg": " ".join(Path("/proc/loadavg").read_text().split()[:3])}
    try:
        server.start()
        tree = settle(server)
        time.sleep(a.rest_s)
        rest = snapshot(server.tree())
        out["q_workers"] = sum(1 for n in tree.values() if n.startswith("qcluster worker"))
        out["rest"] = {"processes": rest, "rss_mb": round(sum(x["rss_mb"] for x in rest), 1),
                       "pss_mb": round(sum(x["pss_mb"] or 0 for x in rest), 1)}
        print(f"# at rest: {len(rest)} processes, RSS {out['rest']['rss_mb']} MB, PSS {out['rest']['pss_mb']} MB: "
              + ", ".join(f"{x['name']} {x['rss_mb']}/{x['pss_mb']}" for x in rest), flush=True)
        if a.transitions > 0:
            bench = Bench(bargs, server.url, server)
            marks: dict[str, list[dict]] = {}
            sampler: list[Sampler] = []

            def on_main(starting: bool) -> None:
                if not starting:
                    sampler[0].halt.set()
                marks["before" if starting else "after"] = snapshot(server.tree())
                if starting:
                    sampler.append(Sampler([x["pid"] for x in marks["before"]], lambda: len(bench.done_at)))
                    sampler[0].start()
            bench.on_main = on_main
            report = bench.run()
            done = report["client"]["updates"]
            out["stability"] = {"transitions_requested": a.transitions, "transitions": done,
                                "workflows": report["n"], "completed": report["completed"], "bad": report["bad"],
                                "wall_s": report["wall_s"], "step_transitions_per_s": report["step_transitions_per_s"],
                                "processes": growth(marks.get("before", []), marks.get("after", []),
                                                    sampler[0].samples if sampler else [])}
            for r in out["stability"]["processes"]:
                print(f"# {r['name']}: RSS {r['rss_before_mb']} -> {r['rss_mid_mb']} (half) -> {r['rss_after_mb']} MB "
                      f"(peak {r['rss_peak_mb']}): {r.get('growth_pct')} %, second half {r.get('growth_2nd_half_pct')} %")
            print(f"# {done} of {a.transitions} transitions in {report['wall_s']} s", flush=True)
    finally:
        server.stop()
    emit({"memory": out}, a.json_out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
