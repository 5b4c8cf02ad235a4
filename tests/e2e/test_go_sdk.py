"""The official Go SDK (``github.com/conductor-sdk/conductor-go``, pinned in
``tests/go/go.mod`` with its ``go.sum``) against a real server.

``tests/go/*_test.go`` is a Go test package written as the SDK's users write code (one
``client.NewAPIClientFromEnv()`` reading ``CONDUCTOR_SERVER_URL``, ``CONDUCTOR_AUTH_KEY`` and
``CONDUCTOR_AUTH_SECRET``; ``worker.TaskRunner`` workers; ``executor.WorkflowExecutor``; the
metadata, workflow and task clients). It is compiled once with ``go test -c`` into
``build/go-sdk/<hash of the module's files>/`` (rebuilt only when a file of tests/go changes),
run once per server through ``go tool test2json``, and each of its ``Test`` functions is one
pytest test here, failing with that function's own output. ``tests/go/order_fulfillment`` is
the README's Go example, built the same way and run as is.

``make test`` downloads the modules first (``make go-sdk``: ``go mod download``, into the
default module cache outside the repo); the builds here use ``-mod=readonly``, so they never
change go.mod or go.sum.
"""
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

from tests.e2e.sdk_helpers import load_order_fulfillment, order_fulfillment_definitions

pytestmark = pytest.mark.e2e

REPO_ROOT = Path(__file__).resolve().parents[2]
GO_DIR = REPO_ROOT / "tests" / "go"
BUILD_ROOT = REPO_ROOT / "build" / "go-sdk"
EXAMPLE = GO_DIR / "order_fulfillment" / "main.go"
BUILD_TIMEOUT_SECONDS = 300
# The suite's own bound (go test's -test.timeout) and ours around it.
SUITE_TIMEOUT_SECONDS = 240
EXAMPLE_TIMEOUT_SECONDS = 120
OUTPUT_TAIL_CHARS = 12_000
TEST_FUNC = re.compile(r"^func (Test\w+)\(t \*testing\.T\)", re.MULTILINE)


def go_test_names() -> list[str]:
    """The ``Test`` functions of tests/go (read from the source, so collecting needs no Go)."""
    names = []
    for path in sorted(GO_DIR.glob("*_test.go")):
        names += TEST_FUNC.findall(path.read_text())
    return names


def _module_hash() -> str:
    digest = hashlib.sha256()
    for path in sorted(GO_DIR.rglob("*")):
        if path.is_file() and (path.suffix == ".go" or path.name in ("go.mod", "go.sum")):
            digest.update(str(path.relative_to(GO_DIR)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def _run_go(go: str, *args: str) -> None:
    # -buildvcs=false: no git stamping of the example binary (CI may run on a clone git
    # does not trust for this user)
    env = {**os.environ, "GOFLAGS": "-mod=readonly -buildvcs=false"}
    proc = subprocess.run([go, *args], cwd=GO_DIR, env=env, capture_output=True, text=True,
                          timeout=BUILD_TIMEOUT_SECONDS)
    if proc.returncode != 0:
        pytest.fail(f"go {' '.join(args)} exited with {proc.returncode} (run `make go-sdk` first?):\n"
                    f"{proc.stdout[-OUTPUT_TAIL_CHARS:]}\n{proc.stderr[-OUTPUT_TAIL_CHARS:]}", pytrace=False)


@pytest.fixture(scope="module")
def go() -> str:
    binary = shutil.which("go")
    if binary is None:
        pytest.fail("go is not installed: the Go SDK suite needs Go 1.23 or newer")
    return binary


@pytest.fixture(scope="module")
def go_build(go) -> Path:
    """The directory holding ``suite.test`` and ``order_fulfillment``, built for the current
    sources (older builds are removed)."""
    out = BUILD_ROOT / _module_hash()
    if not (out / "suite.test").exists() or not (out / "order_fulfillment").exists():
        if BUILD_ROOT.exists():
            shutil.rmtree(BUILD_ROOT)
        tmp = BUILD_ROOT / "partial"
        tmp.mkdir(parents=True)
        _run_go(go, "test", "-c", "-o", str(tmp / "suite.test"), ".")
        _run_go(go, "build", "-o", str(tmp / "order_fulfillment"), "./order_fulfillment")
        tmp.rename(out)
    return out


def _communicate(argv: list[str], env: dict, timeout: int) -> tuple[int | None, str, str]:
    """Run argv in its own session; on timeout kill exactly its process group."""
    proc = subprocess.Popen(argv, cwd=GO_DIR, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
        return proc.returncode, stdout, stderr
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        stdout, stderr = proc.communicate()
        return None, stdout, stderr


def parse_test2json(stdout: str) -> tuple[dict[str, str], dict[str, str]]:
    """``(outcome, output)`` per top-level test from ``go tool test2json`` lines: outcome is
    pass, fail or skip; output is everything the test (and its subtests) printed."""
    outcomes: dict[str, str] = {}
    outputs: dict[str, str] = {}
    for line in stdout.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        test = event.get("Test")
        if not test:
            continue
        top = test.split("/", 1)[0]
        if event.get("Action") == "output":
            outputs[top] = outputs.get(top, "") + event.get("Output", "")
        elif event.get("Action") in ("pass", "fail", "skip") and test == top:
            outcomes[top] = event["Action"]
    return outcomes, outputs


@pytest.fixture(scope="module")
def go_results(go, go_build, conductor_server) -> dict:
    """One run of the compiled suite against the server: per test its outcome and output,
    plus the run's exit status and its stderr."""
    conductor_server.assert_alive()
    env = {**os.environ, **conductor_server.sdk_env()}
    rc, stdout, stderr = _communicate(
        [go, "tool", "test2json", "-t", str(go_build / "suite.test"), "-test.v=test2json",
         f"-test.timeout={SUITE_TIMEOUT_SECONDS}s", "-test.parallel=4"],
        env, SUITE_TIMEOUT_SECONDS + 30)
    outcomes, outputs = parse_test2json(stdout)
    return {"rc": rc, "outcomes": outcomes, "outputs": outputs, "stderr": stderr, "stdout": stdout}


@pytest.mark.parametrize("test_name", go_test_names())
def test_go_sdk(go_results, test_name):
    outcome = go_results["outcomes"].get(test_name)
    output = go_results["outputs"].get(test_name, "")
    if outcome is None:
        pytest.fail(f"{test_name} did not finish (suite exit status {go_results['rc']}, killed if None)\n"
                    f"--- its output\n{output[-OUTPUT_TAIL_CHARS:]}\n"
                    f"--- suite stdout (tail)\n{go_results['stdout'][-OUTPUT_TAIL_CHARS // 2:]}\n"
                    f"--- suite stderr\n{go_results['stderr'][-OUTPUT_TAIL_CHARS // 2:]}", pytrace=False)
    if outcome == "skip":
        pytest.fail(f"{test_name} skipped itself (the suite runs with API authentication on):\n{output}",
                    pytrace=False)
    assert outcome == "pass", f"{test_name} failed:\n{output[-OUTPUT_TAIL_CHARS:]}"


def test_every_go_test_ran(go_results):
    """The run reported exactly the Test functions the source declares: none renamed past
    the parametrization, none lost (a panic ends the binary before later tests report)."""
    assert sorted(go_results["outcomes"]) == sorted(go_test_names()), go_results["stderr"][-OUTPUT_TAIL_CHARS:]
    assert go_results["rc"] == (0 if set(go_results["outcomes"].values()) == {"pass"} else 1)


def test_parse_test2json_reads_outcomes_and_output():
    lines = [
        {"Action": "run", "Test": "TestA"},
        {"Action": "output", "Test": "TestA", "Output": "=== RUN   TestA\n"},
        {"Action": "output", "Test": "TestA/sub", "Output": "sub says\n"},
        {"Action": "fail", "Test": "TestA/sub"},
        {"Action": "fail", "Test": "TestA"},
        {"Action": "pass", "Test": "TestB"},
        {"Action": "pass"},
    ]
    stdout = "\n".join(json.dumps(line) for line in lines) + "\nnot json\n"
    outcomes, outputs = parse_test2json(stdout)
    assert outcomes == {"TestA": "fail", "TestB": "pass"}
    assert outputs == {"TestA": "=== RUN   TestA\nsub says\n"}


def test_readme_go_example(go_build, conductor_server):
    """The README shows ``tests/go/order_fulfillment/main.go`` verbatim, and it runs: both
    runs (the monitored asynchronous one and ExecuteWorkflow) complete with the workers'
    output; the definitions that were there before (as ``make run`` loads them) are left
    exactly as they were."""
    readme = (REPO_ROOT / "README.md").read_text()
    assert EXAMPLE.read_text().strip() in readme, "README.md must show tests/go/order_fulfillment/main.go verbatim"
    conductor_server.assert_alive()
    before = load_order_fulfillment(conductor_server)
    env = {**os.environ, **conductor_server.sdk_env()}
    rc, stdout, stderr = _communicate([str(go_build / "order_fulfillment")], env, EXAMPLE_TIMEOUT_SECONDS)
    assert rc == 0, f"exit status {rc} (None: killed after {EXAMPLE_TIMEOUT_SECONDS}s)\n{stdout}\n{stderr[-OUTPUT_TAIL_CHARS:]}"
    assert stdout.count("Status: COMPLETED") == 2, stdout
    assert "TRACK-456" in stdout and "txn_abc123" in stdout, stdout
    assert order_fulfillment_definitions(conductor_server) == before
