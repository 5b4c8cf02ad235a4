"""CPU time spent by process trees, to compare engines on a machine that other jobs share.

Wall-clock throughput on a loaded machine mostly measures the scheduler's share; the CPU
seconds that an engine's processes burn per step transition do not depend much on it.
``tree_cpu_s(pid)`` = utime + stime of ``pid`` and of all its live descendants, plus the
cutime + cstime of each of them (children that already exited and were waited for, e.g.
PostgreSQL backends that closed, reaped by the postmaster).

As a command:

    python bench/cpu_meter.py [--tree PID]... [--pg-data DIR] -- COMMAND [ARGS...]

runs COMMAND, passes its output through, and then prints one JSON line
``{"cpu_meter": {"command_s": ..., "trees_s": ..., "postgres_s": ..., "total_s": ...}}``:
CPU of COMMAND and everything it waited for, of the given trees (e.g. a Celery worker,
Redis) and of the PostgreSQL cluster whose data directory is DIR, during COMMAND.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
from pathlib import Path

TCK = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> tuple[int, float, float] | None:
    """(ppid, own cpu s, waited-children cpu s) of one process, or None if gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    # after the comm field: state(0) ppid(1) ... utime(11) stime(12) cutime(13) cstime(14)
    return int(fields[1]), (int(fields[11]) + int(fields[12])) / TCK, (int(fields[13]) + int(fields[14])) / TCK


def _children_map() -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            st = _stat(int(entry))
            if st:
                kids.setdefault(st[0], []).append(int(entry))
    return kids


def tree_cpu_s(pid: int, kids: dict[int, list[int]] | None = None) -> float:
    """CPU seconds of ``pid`` and its descendants (live ones, and exited ones that were waited for)."""
    kids = kids if kids is not None else _children_map()
    total = 0.0
    stack = [pid]
    seen = set()
    while stack:
        p = stack.pop()
        if p in seen:
            continue
        seen.add(p)
        st = _stat(p)
        if st is None:
            continue
        total += st[1] + st[2]
        stack.extend(kids.get(p, ()))
    return total


def postmaster_pid(pg_data: str | None) -> int | None:
    """PID of the postmaster of a data directory (first line of postmaster.pid)."""
    if not pg_data:
        return None
    try:
        return int(Path(pg_data, "postmaster.pid").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tree", type=int, action="append", default=[], help="PID of a process tree to include")
    p.add_argument("--pg-data", default=os.environ.get("BENCH_PG_DATA"), help="PostgreSQL data dir to include")
    p.add_argument("command", nargs=argparse.REMAINDER)
    a = p.parse_args()
    cmd = a.command[1:] if a.command[:1] == ["--"] else a.command
    if not cmd:
        p.error("give a COMMAND after --")
    pm = postmaster_pid(a.pg_data)
    kids = _children_map()
    trees0 = sum(tree_cpu_s(t, kids) for t in a.tree)
    pg0 = tree_cpu_s(pm, kids) if pm else 0.0
    self0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    rc = subprocess.call(cmd)
    self1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    kids = _children_map()
    trees = sum(tree_cpu_s(t, kids) for t in a.tree) - trees0
    pg = (tree_cpu_s(pm, kids) - pg0) if pm else 0.0
    command = (self1.ru_utime + self1.ru_stime) - (self0.ru_utime + self0.ru_stime)
    out = {"command_s": round(command, 2), "trees_s": round(trees, 2), "postgres_s": round(pg, 2),
           "total_s": round(command + trees + pg, 2)}
    print(json.dumps({"cpu_meter": out}), flush=True)
    return rc


if __name__ == "__main__":
    sys.exit(main())
