"""The in-process benchmark scripts still run against the engine's current API.

``make bench`` is not part of ``make test``; these scripts import the engine's functions
directly (``start_from_request``, ``executor``, ``queue``), so a changed signature broke
``make bench`` once without any test noticing (``start_from_request`` gained a keyword-only
``principal``). Each runs here at a tiny size on its own throwaway SQLite database and
must finish with every workflow COMPLETED.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _run(args: list[str]) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    return subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


def test_growth_script_completes_its_loop_and_fork(tmp_path):
    out = tmp_path / "growth.jsonl"
    done = _run(["bench/growth.py", "-n", "30", "--window", "5", "--json-out", str(out)])
    assert done.returncode == 0, done.stderr[-3000:]
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert {r["growth"] for r in rows} == {"loop", "fork"}
    assert {r["status"] for r in rows} == {"COMPLETED"}


def test_profile_paths_script_measures_every_path():
    done = _run(["bench/profile_paths.py", "--db", "sqlite", "-n", "5"])
    assert done.returncode == 0, done.stderr[-3000:]
    for path in ("start", "empty poll"):
        assert f"'{path}'" in done.stdout


def test_group_commit_script_measures_both_modes():
    done = _run(["bench/group_commit.py", "--db", "sqlite", "-n", "4", "--concurrency", "2", "--rounds", "1"])
    assert done.returncode == 0, done.stderr[-3000:]
    rows = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert [(r["mode"], r["updates"]) for r in rows] == [("off", 12), ("on", 12)]
    assert rows[0]["batches"] == 0 and rows[1]["batches"] >= 1
