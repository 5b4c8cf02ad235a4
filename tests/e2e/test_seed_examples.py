"""Every example of the seed article ("dynamic workflows in Python"), end to end, with the
official SDK against a real server: route_by_priority (SWITCH), parallel_enrichment
(FORK/JOIN), agent_loop (DO_WHILE), data_pipeline (HTTP, JSON_JQ_TRANSFORM, WAIT),
batch_processor (SUB_WORKFLOW), dynamic_pipeline (inline definition, no registration)
and the synchronous ``executor.execute``.

The examples' ``@worker_task`` workers run in one ``TaskHandler`` (one process per worker,
``running_workers``) shared by the whole module; the tests start their executions only
once every worker has polled. Waiting is bounded polling (``wait_for_workflow``).
"""
import ast
import json
import os
import sqlite3
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

import pytest
from conductor.client.configuration.configuration import Configuration
from conductor.client.http.api_client import ApiClient
from conductor.client.http.rest import ApiException
from conductor.client.orkes_clients import OrkesClients
from conductor.client.workflow.executor.workflow_executor import WorkflowExecutor

from examples import agent_loop, batch_processor, data_pipeline, dynamic_pipeline, parallel_enrichment
from examples import route_by_priority
from tests.e2e.sdk_helpers import running_workers, tasks_by_ref, wait_for_workflow

pytestmark = [
    pytest.mark.e2e,
    # the SDK's own TaskDef serialisation reads its deprecated ``owner_app`` property
    pytest.mark.filterwarnings("ignore:Call to deprecated function:DeprecationWarning"),
]

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFINITIONS = REPO_ROOT / "examples" / "definitions"
SCRIPT_TIMEOUT_SECONDS = 240

# The task types the examples' workers poll.
EXAMPLE_TASK_TYPES = (
    "classify_ticket", "page_oncall", "escalate", "assign_senior", "add_to_backlog",
    "check_credit", "check_fraud", "check_kyc", "make_decision",
    "call_llm", "execute_tool", "summarize_results",
    "enrich_records", "save_to_database",
    "prepare_batch", "validate_item", "transform_item", "aggregate_results",
    "validate", "enrich", "store",
)


@dataclass
class Seed:
    config: Configuration
    clients: OrkesClients
    executor: WorkflowExecutor
    pipeline_db: Path


@pytest.fixture(scope="module")
def seed(conductor_server, tmp_path_factory):
    """The server, the SDK pointed at it through ``CONDUCTOR_SERVER_URL`` and the
    examples' workers running (they inherit the environment, ``PIPELINE_DB`` included)."""
    pipeline_db = tmp_path_factory.mktemp("seed-examples") / "pipeline.sqlite3"
    with pytest.MonkeyPatch.context() as mp:
        for name, value in conductor_server.sdk_env().items():
            mp.setenv(name, value)
        mp.setenv("PIPELINE_DB", str(pipeline_db))
        config = Configuration()
        clients = OrkesClients(configuration=config)
        with running_workers(config, EXAMPLE_TASK_TYPES):
            yield Seed(config, clients, clients.get_workflow_executor(), pipeline_db)


def refs(workflow) -> set[str]:
    return {t.reference_task_name for t in workflow.tasks or []}


def only(workflow, ref: str):
    runs = tasks_by_ref(workflow.tasks).get(ref) or []
    assert len(runs) == 1, (ref, [(t.reference_task_name, t.status) for t in workflow.tasks or []])
    return runs[0]


def start_all(seed: Seed, workflow, inputs: list[dict]) -> list:
    """Start one execution per input, then wait for each; the terminal Workflows in order."""
    ids = [workflow.start_workflow_with_input(workflow_input=i) for i in inputs]
    return [wait_for_workflow(seed.executor, seed.config, wid) for wid in ids]


# --- the JSON definitions `make run` loads ------------------------------------------------------

def sdk_json(workflow) -> dict:
    return ApiClient().sanitize_for_serialization(workflow.to_workflow_def())


@pytest.mark.parametrize("file_name, builders", [
    ("route_by_priority.json", [route_by_priority.route_by_priority_workflow]),
    ("parallel_enrichment.json", [parallel_enrichment.parallel_enrichment_workflow]),
    ("agent_loop.json", [agent_loop.agent_loop_workflow]),
    ("data_pipeline.json", [data_pipeline.data_pipeline_workflow]),
    ("batch_processor.json", [batch_processor.process_single_item_workflow,
                              batch_processor.batch_processor_workflow]),
])
def test_definition_files_are_the_sdk_serialization(file_name, builders):
    executor = WorkflowExecutor(Configuration())  # builds requests only; nothing is sent
    content = json.loads((DEFINITIONS / file_name).read_text())
    assert content["workflowDefs"] == [sdk_json(b(executor, register=False)) for b in builders]
    simple = {t["name"] for wf in content["workflowDefs"] for t in _all_tasks(wf["tasks"]) if t["type"] == "SIMPLE"}
    assert {d["name"] for d in content["taskDefs"]} == simple


def _all_tasks(tasks):
    for t in tasks:
        yield t
        for branch in t.get("forkTasks") or []:
            yield from _all_tasks(branch)
        for case in (t.get("decisionCases") or {}).values():
            yield from _all_tasks(case)
        yield from _all_tasks(t.get("defaultCase") or [])
        yield from _all_tasks(t.get("loopOver") or [])


def test_load_examples_registers_the_seed_definitions(tmp_path):
    env = dict(os.environ, DATABASE_URL=f"sqlite:///{tmp_path / 'load.sqlite3'}",
               PYTHONPATH=os.pathsep.join(p for p in (str(REPO_ROOT), os.environ.get("PYTHONPATH")) if p))
    for args in (["migrate", "--noinput"], ["load_examples"], ["load_examples"]):
        proc = subprocess.run([sys.executable, "manage.py", *args], cwd=REPO_ROOT, env=env,
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 task definition(s) and 0 workflow definition(s)" in proc.stdout, proc.stdout
    check = ("from apps.metadata import services\n"
             "for n in ('route_by_priority','parallel_enrichment','agent_loop','data_pipeline',"
             "'batch_processor','process_single_item','order_fulfillment'):\n"
             "    assert services.workflow_def_row(name=n, version=1) is not None, n\n"
             "print('all registered')\n")
    proc = subprocess.run([sys.executable, "manage.py", "shell", "-c", check], cwd=REPO_ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "all registered" in proc.stdout, proc.stdout + proc.stderr


# --- SWITCH ------------------------------------------------------------------------------------

def test_route_by_priority_takes_the_right_branch(seed):
    workflow = route_by_priority.route_by_priority_workflow(seed.executor)
    registered = seed.clients.get_metadata_client().get_workflow_def("route_by_priority", version=1)
    switch = registered.tasks[1]
    assert (switch.type, switch.evaluator_type, switch.expression) == ("SWITCH", "value-param", "switchCaseValue")
    assert switch.input_parameters == {"switchCaseValue": "${classify.output.priority}"}

    critical, high, low = start_all(seed, workflow, [
        {"ticket_id": "T-1", "description": "Payments are down in every region"},
        {"ticket_id": "T-2", "description": "Invoice export fails with an error"},
        {"ticket_id": "T-3", "description": "Please update the FAQ wording"},
    ])
    branch_refs = {"page", "escalate", "assign", "backlog"}
    for done, priority, taken in ((critical, "critical", ["page", "escalate"]), (high, "high", ["assign"]),
                                  (low, "low", ["backlog"])):
        assert done.status == "COMPLETED", done.reason_for_incompletion
        assert done.output == {"priority": priority}
        assert only(done, "priority_router").output_data["evaluationResult"] == [priority]
        ran = [t.reference_task_name for t in sorted(done.tasks, key=lambda t: t.seq)
               if t.reference_task_name in branch_refs]
        assert ran == taken, (priority, ran)
        assert refs(done) == {"classify", "priority_router", *taken}
        ticket = done.input["ticket_id"]
        for ref in taken:
            assert only(done, ref).status == "COMPLETED"
            assert only(done, ref).input_data == {"ticket_id": ticket}
            assert only(done, ref).output_data["ticket_id"] == ticket
    assert only(critical, "page").output_data == {"paged": "oncall-primary", "ticket_id": "T-1"}
    assert only(critical, "escalate").output_data == {"escalated_to": "incident-commander", "ticket_id": "T-1"}
    assert only(high, "assign").output_data == {"assignee": "senior-engineer", "ticket_id": "T-2"}
    assert only(low, "backlog").output_data == {"backlog": "support-backlog", "ticket_id": "T-3"}

    # The article's synchronous call, on the registered definition.
    run = seed.executor.execute(name="route_by_priority", version=1,
                                workflow_input={"ticket_id": "T-4", "description": "Site outage"})
    assert run.status == "COMPLETED"
    assert run.output == {"priority": "critical"}
    assert {"page", "escalate"} <= refs(run) and not {"assign", "backlog"} & refs(run)


# --- FORK / JOIN -------------------------------------------------------------------------------

def test_parallel_enrichment_merges_three_branches(seed):
    workflow = parallel_enrichment.parallel_enrichment_workflow(seed.executor)

    # Synchronous, as the article shows: executor.execute(name=..., version=1, workflow_input=...).
    run = seed.executor.execute(name="parallel_enrichment", version=1, workflow_input={"customer_id": "CUST-42"})
    assert run.status == "COMPLETED"
    approved = {"approved": True, "reasons": [], "credit_score": 742, "fraud_risk": "low", "kyc_status": "verified"}
    assert run.output == {"decision": approved}
    assert run.input == {"customer_id": "CUST-42"}

    done = seed.executor.get_workflow(run.workflow_id, include_tasks=True)
    assert refs(done) == {"parallel_checks", "credit", "fraud", "kyc", "wait_all", "decide"}
    assert only(done, "parallel_checks").task_type == "FORK"
    join = only(done, "wait_all")
    assert join.task_type == "JOIN" and join.status == "COMPLETED"
    assert join.input_data["joinOn"] == ["credit", "fraud", "kyc"]
    assert join.output_data == {"credit": {"score": 742, "bureau": "acme-credit"},
                                "fraud": {"risk_level": "low"}, "kyc": {"status": "verified"}}
    decide = only(done, "decide")
    assert decide.input_data == {"credit_score": 742, "fraud_risk": "low", "kyc_status": "verified"}
    # the three branches were all scheduled before the join let decide run
    branch_scheduled = [only(done, r).scheduled_time for r in ("credit", "fraud", "kyc")]
    assert max(branch_scheduled) <= decide.scheduled_time
    assert min(only(done, r).end_time for r in ("credit", "fraud", "kyc")) >= only(done, "parallel_checks").start_time

    (declined,) = start_all(seed, workflow, [{"customer_id": "CUST-13"}])
    assert declined.status == "COMPLETED", declined.reason_for_incompletion
    assert declined.output == {"decision": {"approved": False, "reasons": ["fraud risk high"], "credit_score": 700,
                                            "fraud_risk": "high", "kyc_status": "verified"}}


# --- DO_WHILE ----------------------------------------------------------------------------------

def test_agent_loop_iterates_until_done_then_summarizes(seed):
    workflow = agent_loop.agent_loop_workflow(seed.executor)
    registered = seed.clients.get_metadata_client().get_workflow_def("agent_loop", version=1)
    assert registered.tasks[0].loop_condition == \
        "if ($.act['output']['done'] == true) { false; } else { true; }"
    assert registered.tasks[0].input_parameters == {"max_iterations": 10}

    three = ["flights to Lisbon", "hotels near Alfama", "weather in May"]
    many = [f"topic {n}" for n in range(1, 16)]
    finished, capped = start_all(seed, workflow, [{"goal": "; ".join(three)}, {"goal": "; ".join(many)}])

    # Three look-ups, then the LLM says "finish": 4 iterations.
    assert finished.status == "COMPLETED", finished.reason_for_incompletion
    n = len(three) + 1
    by_ref = tasks_by_ref(finished.tasks)
    assert {r for r in by_ref if r.startswith(("think__", "act__"))} == \
        {f"{r}__{i}" for r in ("think", "act") for i in range(1, n + 1)}
    loop = only(finished, "agent_loop")
    assert loop.status == "COMPLETED" and loop.output_data["iteration"] == n
    for i in range(1, n + 1):
        act = only(finished, f"act__{i}")
        assert act.iteration == i and act.input_data["iteration"] == i
        assert act.input_data["max_iterations"] == 10
        assert act.output_data["output"]["done"] is (i == n)
        assert act.output_data["results"] == [f"found: {q}" for q in three[:min(i, len(three))]]
        assert loop.output_data[str(i)]["act"] == act.output_data
    assert only(finished, f"think__{n}").output_data["tool"] == "finish"
    assert only(finished, "act__1").input_data["history"] is None
    assert only(finished, "act__2").input_data["history"] == ["found: flights to Lisbon"]
    summarize = only(finished, "summarize")
    assert summarize.input_data == {"results": [f"found: {q}" for q in three]}
    assert finished.output == {"summary": "; ".join(f"found: {q}" for q in three), "count": 3, "iterations": n}

    # Fifteen look-ups wanted: the worker stops the loop at max_iterations (10).
    assert capped.status == "COMPLETED", capped.reason_for_incompletion
    assert only(capped, "agent_loop").output_data["iteration"] == 10
    assert sorted(r for r in refs(capped) if r.startswith("act__")) == sorted(f"act__{i}" for i in range(1, 11))
    assert only(capped, "act__10").output_data["output"] == \
        {"done": True, "reason": "stopped at max_iterations=10", "iteration": 10}
    assert capped.output == {"summary": "; ".join(f"found: {q}" for q in many[:10]), "count": 10, "iterations": 10}


# --- HTTP, JSON_JQ_TRANSFORM, WAIT -------------------------------------------------------------

def test_data_pipeline_runs_system_tasks_and_workers(seed):
    workflow = data_pipeline.data_pipeline_workflow(seed.executor)
    with data_pipeline.serve_records() as (url, requests):
        (done,) = start_all(seed, workflow, [{"url": url, "api_key": "k-123"}])
    assert done.status == "COMPLETED", done.reason_for_incompletion
    assert [t.reference_task_name for t in sorted(done.tasks, key=lambda t: t.seq)] == \
        ["fetch_data", "transform", "enrich", "cooldown", "store"]

    assert len(requests) == 1
    path, headers = requests[0]
    assert path == "/records"
    assert headers.get("Authorization") == "Bearer k-123"

    fetch = only(done, "fetch_data")
    assert fetch.task_type == "HTTP"
    assert fetch.input_data["http_request"]["uri"] == url
    assert fetch.output_data["response"]["statusCode"] == 200
    assert fetch.output_data["response"]["body"] == data_pipeline.SAMPLE_RECORDS

    expected = [{"id": "rec-1", "value": 120}, {"id": "rec-2", "value": 45}, {"id": "rec-3", "value": 300}]
    transform = only(done, "transform")
    assert transform.task_type == "JSON_JQ_TRANSFORM"
    assert transform.input_data["records"] == data_pipeline.SAMPLE_RECORDS
    assert transform.output_data["result"] == expected
    assert transform.output_data["resultList"] == [expected]

    tiers = ["gold", "standard", "gold"]
    enriched = [{**r, "tier": tier} for r, tier in zip(expected, tiers)]
    assert only(done, "enrich").output_data == {"enriched": enriched}

    cooldown = only(done, "cooldown")
    assert cooldown.task_type == "WAIT" and cooldown.status == "COMPLETED"
    assert cooldown.end_time - cooldown.start_time >= 5000, (cooldown.start_time, cooldown.end_time)
    store = only(done, "store")
    assert store.scheduled_time >= cooldown.start_time + 5000
    assert store.output_data["count"] == 3
    assert done.output == {"stored": 3}

    with closing(sqlite3.connect(seed.pipeline_db)) as db:
        rows = db.execute("SELECT id, value, tier FROM records ORDER BY id").fetchall()
    assert rows == [(r["id"], r["value"], r["tier"]) for r in enriched]


# --- SUB_WORKFLOW ------------------------------------------------------------------------------

def test_batch_processor_runs_the_child_and_gets_its_output(seed):
    parent = batch_processor.batch_processor_workflow(seed.executor)  # registers the child too
    metadata = seed.clients.get_metadata_client()
    assert metadata.get_workflow_def("process_single_item", version=1).output_parameters == \
        {"result": "${transform.output.transformed}"}

    (done,) = start_all(seed, parent, [{"batch_id": "B-9"}])
    assert done.status == "COMPLETED", done.reason_for_incompletion
    item_result = {"sku": "B-9-1", "quantity": 1, "unit_price": 2.5, "valid": True, "total": 2.5}
    assert done.output == {"item_result": item_result, "processed": 1, "grand_total": 2.5}

    process_item = only(done, "process_item")
    assert process_item.task_type == "SUB_WORKFLOW" and process_item.status == "COMPLETED"
    assert process_item.input_data["item"] == {"sku": "B-9-1", "quantity": 1, "unit_price": 2.5}
    assert process_item.output_data["result"] == item_result
    assert only(done, "aggregate").input_data == {"result": item_result}

    child_id = process_item.sub_workflow_id
    assert child_id and process_item.output_data["subWorkflowId"] == child_id
    child = seed.executor.get_workflow(child_id, include_tasks=True)
    assert child.status == "COMPLETED"
    assert (child.workflow_name, child.workflow_version) == ("process_single_item", 1)
    assert child.parent_workflow_id == done.workflow_id
    assert child.input == {"item": {"sku": "B-9-1", "quantity": 1, "unit_price": 2.5}}
    assert child.output == {"result": item_result}
    assert [t.reference_task_name for t in sorted(child.tasks, key=lambda t: t.seq)] == ["validate", "transform"]


# --- inline definition, no registration --------------------------------------------------------

def test_dynamic_pipeline_starts_without_registration(seed):
    metadata = seed.clients.get_metadata_client()
    workflow_id = dynamic_pipeline.start_dynamic_pipeline(seed.executor, ["validate", "enrich", "store"],
                                                          {"key": "value"})
    short_id = dynamic_pipeline.start_dynamic_pipeline(seed.executor, ["validate", "store"], {"a": 1})
    done = wait_for_workflow(seed.executor, seed.config, workflow_id)
    assert done.status == "COMPLETED", done.reason_for_incompletion
    assert done.workflow_name == "dynamic_pipeline" and done.workflow_version == 1
    assert done.output == {"result": {"key": "value", "validated": True, "enriched": True, "field_count": 2,
                                      "stored": True}}
    assert [t.reference_task_name for t in sorted(done.tasks, key=lambda t: t.seq)] == \
        ["validate_0", "enrich_1", "store_2"]
    assert only(done, "enrich_1").input_data == {"data": {"key": "value", "validated": True}}

    # The inline definition is kept on the execution.
    definition = done.workflow_definition
    assert definition is not None and definition.name == "dynamic_pipeline"
    assert [(t.name, t.task_reference_name, t.type, t.input_parameters) for t in definition.tasks] == [
        ("validate", "validate_0", "SIMPLE", {"data": "${workflow.input.data}"}),
        ("enrich", "enrich_1", "SIMPLE", {"data": "${validate_0.output.result}"}),
        ("store", "store_2", "SIMPLE", {"data": "${enrich_1.output.result}"}),
    ]
    assert definition.output_parameters == {"result": "${store_2.output.result}"}

    short = wait_for_workflow(seed.executor, seed.config, short_id)
    assert short.status == "COMPLETED", short.reason_for_incompletion
    assert short.output == {"result": {"a": 1, "validated": True, "stored": True}}
    assert [t.task_reference_name for t in short.workflow_definition.tasks] == ["validate_0", "store_1"]

    # Nothing was registered.
    with pytest.raises(ApiException) as info:
        metadata.get_workflow_def("dynamic_pipeline", version=1)
    assert info.value.status == 404


# --- the example scripts, as a user runs them --------------------------------------------------

SCRIPTS = {
    "route_by_priority": ["COMPLETED"] * 3,
    "parallel_enrichment": ["COMPLETED"] * 2,
    "agent_loop": ["COMPLETED"],
    "data_pipeline": ["COMPLETED"],
    "batch_processor": ["COMPLETED"],
    "dynamic_pipeline": ["COMPLETED"],
}


def _run_script(name: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, f"examples/{name}.py"], cwd=REPO_ROOT, env=env,
                          capture_output=True, text=True, timeout=SCRIPT_TIMEOUT_SECONDS)


def test_example_scripts_run_as_is(seed, tmp_path):
    """``python examples/<name>.py`` with CONDUCTOR_SERVER_URL, all at once, as the README says.
    Each script starts its own workers; the module's are still polling too, so a slow
    start of the scripts' worker processes does not decide the outcome."""
    env = dict(os.environ, CONDUCTOR_SERVER_URL=seed.config.host, PIPELINE_DB=str(tmp_path / "script.sqlite3"),
               CONDUCTOR_AUTH_KEY=seed.config.authentication_settings.key_id,
               CONDUCTOR_AUTH_SECRET=seed.config.authentication_settings.key_secret)
    env.pop("RECORDS_API_URL", None)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), os.environ.get("PYTHONPATH")) if p)
    with ThreadPoolExecutor(max_workers=len(SCRIPTS)) as pool:
        procs = dict(zip(SCRIPTS, pool.map(lambda n: _run_script(n, env), SCRIPTS)))
    for name, proc in procs.items():
        detail = f"{name}: stdout:\n{proc.stdout}\nstderr (tail):\n{proc.stderr[-3000:]}"
        assert proc.returncode == 0, detail
        lines = proc.stdout.splitlines()
        assert [line.removeprefix("Status: ") for line in lines if line.startswith("Status: ")] == SCRIPTS[name], detail
    outputs = {name: [ast.literal_eval(line.removeprefix("Output: "))
                      for line in proc.stdout.splitlines() if line.startswith("Output: ")]
               for name, proc in procs.items()}
    assert [o["priority"] for o in outputs["route_by_priority"]] == ["critical", "high", "low"]
    assert [o["decision"]["approved"] for o in outputs["parallel_enrichment"]] == [True, False]
    assert outputs["agent_loop"] == [{"summary": "found: flights to Lisbon; found: hotels near Alfama; "
                                                 "found: weather in May", "count": 3, "iterations": 4}]
    assert outputs["data_pipeline"] == [{"stored": 3}]
    assert outputs["batch_processor"][0]["processed"] == 1
    assert outputs["dynamic_pipeline"][0]["result"]["stored"] is True
    branches = [ast.literal_eval(line.removeprefix("Branch: "))
                for line in procs["route_by_priority"].stdout.splitlines() if line.startswith("Branch: ")]
    assert branches == [["page", "escalate"], ["assign"], ["backlog"]]
