"""``make test-reference``: the same scenarios against Conductor OSS and against ours, compared.

    .venv/bin/python tests/reference/run.py [--out DIR] [--cases 1,3,...] [--no-specs]

It starts Conductor OSS (scripts/conductor_oss.sh: the pinned server from Maven Central, its
default SQLite store, 127.0.0.1) and our server (uvicorn + qcluster as ``make run`` starts
them, on SQLite, or on PostgreSQL when DATABASE_URL points at one; API auth off, as on
Conductor OSS), side by side, then runs against each:

* the case fixtures of tests/cases (tests/reference/remote.py's ``RemoteCaseRunner``: the
  harness in real time), and reduces each run's workflows (tests/reference/compare.py) to
  compare them field by field: statuses, task lists and order, inputs, outputs, reasons;
* the ported specs of tests/specs (pytest with ``CONDUCTOR_REFERENCE_URL`` set: the spec
  driver over HTTP), comparing each test's outcome;
* a few single requests (``PROBES``), comparing their status codes.

It prints one table of every difference and whether docs/differences.md explains it (a row
of its table whose pattern matches ``<scenario> <field>``), writes the details to
``DIR/reference.json``, stops both servers by PID, and exits 1 if a difference is not
explained there (or a server did not start), 0 otherwise.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import subprocess
import sys
import tempfile
import time
import traceback
import xml.etree.ElementTree as ET
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "conductor_web.settings")

from tests.cases.harness import load_case  # noqa: E402
from tests.cases.test_cases import CASES  # noqa: E402
from tests.reference.compare import collect_tree, diff, documented, documented_patterns, reduce_tree  # noqa: E402
from tests.reference.remote import RemoteCaseRunner  # noqa: E402

DIFFERENCES_DOC = REPO_ROOT / "docs" / "differences.md"
OSS_SCRIPT = REPO_ROOT / "scripts" / "conductor_oss.sh"
# Case 33's server limits (its ``serverConfig``), set on both servers for the whole run:
# no other case sends an output above 10 KB.
OURS_ENV = {"CONDUCTOR_API_AUTH": "off", "CONDUCTOR_MAX_TASK_OUTPUT_PAYLOAD_KB": "100"}
OSS_ARGS = "--conductor.app.maxTaskOutputPayloadSizeThreshold=100KB --conductor.app.taskOutputPayloadSizeThreshold=10KB"
SPEC_TIMEOUT_SECONDS = 1200
# Single requests whose answer (status code) both servers should give alike: each names
# what it probes. Bodies are refused or harmless; nothing they create is used later.
PROBES = [
    ("TaskDef responseTimeoutSeconds 0", "post", "/metadata/taskdefs",
     [{"name": "reference_probe_rt0", "retryCount": 0, "timeoutSeconds": 0, "responseTimeoutSeconds": 0,
       "ownerEmail": "probe@example.com"}]),
    ("GET /api/version", "get", "/version", None),
    ("unknown workflow", "get", "/workflow/00000000-0000-0000-0000-000000000000", None),
    ("start of an unknown definition", "post", "/workflow", {"name": "reference_probe_no_such_def", "input": {}}),
]
VALUE_WIDTH = 58


# --- the servers -----------------------------------------------------------------------------------

class OssServer:
    """Conductor OSS started by scripts/conductor_oss.sh in ``workdir``."""

    def __init__(self, workdir: Path):
        self.workdir = workdir
        self.url = ""

    def start(self) -> None:
        env = {**os.environ, "CONDUCTOR_OSS_ARGS": OSS_ARGS}
        proc = subprocess.run([str(OSS_SCRIPT), "start", str(self.workdir)], env=env, capture_output=True,
                              text=True, timeout=900)
        if proc.returncode != 0:
            raise RuntimeError(f"Conductor OSS did not start:\n{proc.stderr[-3000:]}")
        self.url = proc.stdout.strip().splitlines()[-1]

    def stop(self) -> None:
        subprocess.run([str(OSS_SCRIPT), "stop", str(self.workdir)], timeout=120)


class OurServer:
    """Ours, as tests/e2e/conftest.py starts it (uvicorn + qcluster on a fresh database)."""

    def __init__(self, workdir: Path):
        from tests.e2e.conftest import ConductorServer, PostgresDatabase, _is_postgres

        session_url = os.environ.get("DATABASE_URL", "")
        self.pg = PostgresDatabase(session_url) if _is_postgres(session_url) else None
        database_url = self.pg.url if self.pg else f"sqlite:///{workdir / 'conductor.sqlite3'}"
        self.server = ConductorServer(workdir, database_url)
        self.server.env.update(OURS_ENV)
        self.database = "PostgreSQL" if self.pg else "SQLite"
        self.url = ""

    def start(self) -> None:
        self.server.start()
        self.url = self.server.url

    def stop(self) -> None:
        self.server.stop()
        if self.pg is not None:
            self.pg.drop()


# --- running the scenarios -------------------------------------------------------------------------

def run_case(number: int, api_url: str) -> dict:
    """One case on one server: whether its expectations held, and its reduced tree."""
    case = load_case(number)
    runner = RemoteCaseRunner(case, api_url)
    started = time.monotonic()
    error = None
    try:
        runner.run()
    except Exception as exc:  # noqa: BLE001 - an unexpected answer is a result here
        error = f"{type(exc).__name__}: {exc}" if isinstance(exc, AssertionError) else traceback.format_exc(limit=3)
    roots = {"main": runner.workflow_id, **runner.runs}
    mock_url = runner.mock_url

    def get(wid: str):
        resp = runner.api.get(f"/workflow/{wid}", {"includeTasks": True})
        return resp.json() if resp.status_code == 200 else None

    try:
        tree, names = collect_tree(get, roots)
        if mock_url:
            names[mock_url] = "<mock>"
        reduced = reduce_tree(tree, names)
    except Exception:  # noqa: BLE001
        reduced = {"(tree)": {"error": traceback.format_exc(limit=2)}}
    runner.api.client.close()
    return {"passed": error is None, "error": error, "tree": reduced,
            "seconds": round(time.monotonic() - started, 1)}


def run_probes(api_url: str) -> dict[str, dict]:
    """``{probe: {"status", "body"}}`` of each of ``PROBES`` on one server."""
    from tests.factories import Api
    from tests.reference.remote import HttpClient, origin_of

    api = Api(HttpClient(origin_of(api_url)))
    out = {}
    for name, method, path, body in PROBES:
        resp = api.get(path) if method == "get" else getattr(api, method)(path, body)
        out[name] = {"status": resp.status_code, "body": resp.content.decode(errors="replace")[:300]}
    api.client.close()
    return out


def run_specs(api_url: str, out: Path, name: str) -> dict[str, dict]:
    """tests/specs against a live server: ``{test id: {"outcome", "message"}}``."""
    junit = out / f"specs-{name}.xml"
    # The spec fixture still sets up pytest-django's test database (unused over HTTP): one
    # SQLite file per run, so the two runs side by side do not share one.
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    env.update({"CONDUCTOR_REFERENCE_URL": api_url, "SQLITE_TEST_NAME": str(out / f"specs-{name}-test.sqlite3")})
    with open(out / f"specs-{name}.log", "wb") as log:
        subprocess.run([sys.executable, "-m", "pytest", "tests/specs", "-q", "-p", "no:cacheprovider",
                        f"--junitxml={junit}", "--timeout=300"], cwd=REPO_ROOT, env=env, stdout=log,
                       stderr=subprocess.STDOUT, timeout=SPEC_TIMEOUT_SECONDS)
    results: dict[str, dict] = {}
    if not junit.exists():
        return {"(specs)": {"outcome": "not run", "message": f"see {out / f'specs-{name}.log'}"}}
    for case in ET.parse(junit).getroot().iter("testcase"):
        test_id = f"{case.get('classname', '').rsplit('.', 1)[-1]}::{case.get('name')}"
        problem = next((c for c in case if c.tag in ("failure", "error", "skipped")), None)
        if problem is None:
            results[test_id] = {"outcome": "passed", "message": ""}
        else:
            message = (problem.get("message") or problem.text or "").strip().splitlines()
            results[test_id] = {"outcome": "failed" if problem.tag != "skipped" else "skipped",
                                "message": message[0][:300] if message else ""}
    return results


# --- the table -------------------------------------------------------------------------------------

def _cell(value) -> str:
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    text = text.replace("\n", " ").replace("|", "/")
    return text if len(text) <= VALUE_WIDTH else text[: VALUE_WIDTH - 1] + "…"


def differences(cases: dict[int, dict], specs: dict[str, dict], probes: dict[str, dict]) -> list[dict]:
    rows = []
    for name in probes.get("ours", {}):
        a, b = probes["ours"][name], probes["oss"].get(name, {})
        if a["status"] != b.get("status"):
            rows.append({"scenario": f"probe {name}", "field": "status", "ours": f"{a['status']} {a['body']}",
                         "oss": f"{b.get('status')} {b.get('body')}"})
    for number, by_server in cases.items():
        scenario = f"case {number:02d}"
        ours, oss = by_server["ours"], by_server["oss"]
        if not (ours["passed"] and oss["passed"]):
            rows.append({"scenario": scenario, "field": "expectations",
                         "ours": "held" if ours["passed"] else ours["error"],
                         "oss": "held" if oss["passed"] else oss["error"]})
        for path, a, b in diff(ours["tree"], oss["tree"]):
            rows.append({"scenario": scenario, "field": path, "ours": a, "oss": b})
    for test_id in sorted(set(specs["ours"]) | set(specs["oss"])):
        a = specs["ours"].get(test_id, {"outcome": "absent", "message": ""})
        b = specs["oss"].get(test_id, {"outcome": "absent", "message": ""})
        if a["outcome"] != "passed" or b["outcome"] != "passed":
            rows.append({"scenario": f"spec {test_id}", "field": "outcome",
                         "ours": f"{a['outcome']} {a['message']}".strip(),
                         "oss": f"{b['outcome']} {b['message']}".strip()})
    return rows


def print_table(rows: list[dict], patterns) -> int:
    """Print the table; return how many rows no documented pattern covers."""
    unexplained = 0
    header = f"{'scenario':<44} {'field':<44} {'ours':<{VALUE_WIDTH}} {'Conductor OSS':<{VALUE_WIDTH}} documented"
    print(header)
    print("-" * len(header))
    for row in rows:
        pattern = documented(row["scenario"], row["field"], patterns)
        row["documented"] = pattern
        unexplained += pattern is None
        print(f"{row['scenario'][:44]:<44} {row['field'][:44]:<44} {_cell(row['ours']):<{VALUE_WIDTH}} "
              f"{_cell(row['oss']):<{VALUE_WIDTH}} {'yes' if pattern else 'NO'}")
    return unexplained


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "var" / "reference")
    parser.add_argument("--cases", help="comma-separated case numbers (default: those of tests/cases)")
    parser.add_argument("--no-specs", action="store_true", help="skip tests/specs")
    parser.add_argument("--oss-url", help="a Conductor OSS already running (its API base URL): not started here")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    numbers = [int(n) for n in args.cases.split(",")] if args.cases else list(CASES)

    scratch = Path(tempfile.mkdtemp(prefix="conductor-reference-"))
    (scratch / "oss").mkdir()
    (scratch / "ours").mkdir()
    oss, ours = OssServer(scratch / "oss"), OurServer(scratch / "ours")
    if args.oss_url:
        oss.url = args.oss_url
        oss.start = oss.stop = lambda: None
    started = time.monotonic()
    try:
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            for future in [pool.submit(oss.start), pool.submit(ours.start)]:
                future.result()
        print(f"reference run: Conductor OSS {subprocess.check_output([str(OSS_SCRIPT), 'version'], text=True).strip()}"
              f" at {oss.url} (SQLite), ours at {ours.url} ({ours.database}); "
              f"servers up in {time.monotonic() - started:.0f} s", flush=True)
        cases: dict[int, dict] = {}
        probes = {"ours": run_probes(ours.url), "oss": run_probes(oss.url)}
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            spec_futures = {}
            for number in numbers:
                a, b = pool.submit(run_case, number, ours.url), pool.submit(run_case, number, oss.url)
                cases[number] = {"ours": a.result(), "oss": b.result()}
                print(f"  case {number:02d}: ours {'held' if cases[number]['ours']['passed'] else 'FAILED'}"
                      f" ({cases[number]['ours']['seconds']} s), Conductor OSS "
                      f"{'held' if cases[number]['oss']['passed'] else 'FAILED'} ({cases[number]['oss']['seconds']} s)",
                      flush=True)
            if not args.no_specs:
                spec_futures = {name: pool.submit(run_specs, server.url, args.out, name)
                                for name, server in (("ours", ours), ("oss", oss))}
            specs = {name: f.result() for name, f in spec_futures.items()} or {"ours": {}, "oss": {}}
    finally:
        for server in (ours, oss):
            try:
                server.stop()
            except Exception:  # noqa: BLE001 - stop the other one too
                traceback.print_exc()
    rows = differences(cases, specs, probes)
    patterns = documented_patterns(DIFFERENCES_DOC)
    print(f"\nDifferences between ours and Conductor OSS ({len(numbers)} cases, "
          f"{len(specs['ours'])} spec tests; {time.monotonic() - started:.0f} s):\n")
    unexplained = print_table(rows, patterns)
    (args.out / "reference.json").write_text(json.dumps({"cases": cases, "specs": specs, "probes": probes, "differences": rows},
                                                        indent=1, sort_keys=True, default=str))
    print(f"\n{len(rows)} difference(s), {unexplained} not in {DIFFERENCES_DOC.relative_to(REPO_ROOT)}; "
          f"details in {args.out / 'reference.json'}")
    return 1 if unexplained else 0


if __name__ == "__main__":
    sys.exit(main())
