"""The official Java SDK (``org.conductoross:conductor-client``, pinned in
``tests/java/pom.xml``) against a real server.

``tests/java`` is a Maven project written as the SDK's users write code: ``new ApiClient()``
configured by ``CONDUCTOR_SERVER_URL`` / ``CONDUCTOR_AUTH_KEY`` / ``CONDUCTOR_AUTH_SECRET``,
the ``ConductorWorkflow`` DSL, ``@WorkerTask`` and ``Worker`` workers run by the SDK, and the
metadata, workflow, task, scheduler and event clients. Its JUnit 5 classes
(``src/test/java/**/*Test.java``) are the scenarios: one ``mvn -o test`` runs all of them in one
JVM (Maven compiles only what changed), and each class is one pytest test here, failing with
its failures from surefire's report. ``make test`` installs the SDK and the plugins into the
local Maven repository (``make java-sdk``), so this run is offline.

The SDK is Java 21 bytecode: ``tests/java/java_home.sh`` picks a JDK 21+.
"""
import os
import shutil
import signal
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.e2e.sdk_helpers import load_order_fulfillment, order_fulfillment_definitions

pytestmark = pytest.mark.e2e

REPO_ROOT = Path(__file__).resolve().parents[2]
JAVA_DIR = REPO_ROOT / "tests" / "java"
SCENARIO_DIR = JAVA_DIR / "src" / "test" / "java" / "com" / "example" / "conductor"
SCENARIOS = sorted(p.stem for p in SCENARIO_DIR.glob("*Test.java"))
REPORTS = JAVA_DIR / "target" / "surefire-reports"
MAVEN_TIMEOUT_SECONDS = 420
OUTPUT_TAIL_CHARS = 12_000


def java_home() -> str:
    proc = subprocess.run([str(JAVA_DIR / "java_home.sh")], capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.fail(proc.stderr.strip())
    return proc.stdout.strip()


@pytest.fixture(scope="module")
def java_run(conductor_server):
    """Runs every scenario class once (``mvn -o test``); returns Maven's output."""
    mvn = shutil.which("mvn")
    if mvn is None:
        pytest.fail("mvn is not installed: the Java SDK suite needs Maven (on Debian: apt-get install maven)")
    conductor_server.assert_alive()
    before = load_order_fulfillment(conductor_server)  # the README example must leave it alone
    shutil.rmtree(REPORTS, ignore_errors=True)
    env = {**os.environ, **conductor_server.sdk_env(), "JAVA_HOME": java_home()}
    # failures are read from the reports, class by class, so Maven itself goes on
    argv = [mvn, "-B", "-o", "-q", "test", "-Dmaven.test.failure.ignore=true"]
    proc = subprocess.Popen(argv, cwd=JAVA_DIR, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=MAVEN_TIMEOUT_SECONDS)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        pytest.fail(f"mvn test did not finish within {MAVEN_TIMEOUT_SECONDS}s (killed)\n{out[-OUTPUT_TAIL_CHARS:]}")
    if proc.returncode != 0:
        pytest.fail(f"mvn test exited with {proc.returncode} (run `make java-sdk` first?)\n{out[-OUTPUT_TAIL_CHARS:]}")
    return {"output": out, "definitions_before": before}


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_scenario(java_run, scenario):
    java_run = java_run["output"]
    report = REPORTS / f"TEST-com.example.conductor.{scenario}.xml"
    if not report.exists():
        pytest.fail(f"no surefire report for {scenario}\n{java_run[-OUTPUT_TAIL_CHARS:]}")
    suite = ET.parse(report).getroot()
    cases = suite.findall("testcase")
    assert cases, f"{scenario} ran no test"
    problems = []
    for case in cases:
        for kind in ("failure", "error"):
            for node in case.findall(kind):
                problems.append(f"{case.get('name')}: {kind}: {node.get('message')}\n{(node.text or '')[:4000]}")
        if case.find("skipped") is not None:
            problems.append(f"{case.get('name')}: skipped")
    if problems:
        output = REPORTS / f"com.example.conductor.{scenario}-output.txt"
        log = output.read_text(errors="replace")[-OUTPUT_TAIL_CHARS:] if output.exists() else ""
        pytest.fail("\n\n".join(problems) + (f"\n--- JVM output\n{log}" if log else ""), pytrace=False)


def test_readme_example_leaves_make_runs_definitions_alone(java_run, conductor_server):
    """``ReadmeExampleTest`` ran ``OrderFulfillment.main`` against a server holding
    ``examples/definitions/order_fulfillment.json`` as ``make run`` loads it: every definition
    is exactly as it was (the example registers only what the server lacks)."""
    assert order_fulfillment_definitions(conductor_server) == java_run["definitions_before"]
