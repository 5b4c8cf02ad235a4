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


def test_problems_script_times_every_view(tmp_path):
    out = tmp_path / "problems.jsonl"
    done = _run(["bench/problems.py", "-n", "3000", "--repeat", "1", "--json-out", str(out)])
    assert done.returncode == 0, done.stderr[-3000:]
    row = json.loads(out.read_text())["problems"]
    for key in ("counts_all", "failed_page", "slow_page", "stuck_page", "export_10k", "diagnose", "grid_100", "inbox"):
        assert row[key] >= 0, key
def test_overview_script_fills_what_the_recorder_would_and_times_every_query(tmp_path):
    """bench/overview.py at a tiny size: its SQL fill's rollup rows equal what
    ``apps.overview.rollup.increments`` makes of the same executions (``--check``), and it
    times the page and each part."""
    out = tmp_path / "overview.jsonl"
    done = _run(["bench/overview.py", "-n", "400", "--pending", "20", "--repeat", "1", "--check",
                 "--json-out", str(out)])
    assert done.returncode == 0, done.stderr[-3000:]
    assert "check: the " in done.stdout
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert sorted(r["range"] for r in rows if r["overview"] == "page") == ["1h", "24h", "7d"]
    assert {r["executions"] for r in rows} == {400} and all(r["ms_median"] > 0 for r in rows)
def test_group_commit_script_measures_both_modes():
    done = _run(["bench/group_commit.py", "--db", "sqlite", "-n", "4", "--concurrency", "2", "--rounds", "1"])
    assert done.returncode == 0, done.stderr[-3000:]
    rows = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert [(r["mode"], r["updates"]) for r in rows] == [("off", 12), ("on", 12)]
    assert rows[0]["batches"] == 0 and rows[1]["batches"] >= 1
