"""The graph builder (apps/ui/graph.py): shapes, runtime state, dimming, loops, dynamic
forks, and an execution of 2,000 tasks."""
from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from apps.engine.state import TaskState
from apps.ui.graph import build_graph, node_index, scope_key


def t(ref, status="COMPLETED", seq=0, task_type="SIMPLE", retry=0, iteration=0, **kw):
    return TaskState(task_id=f"id-{ref}-{seq}", workflow_id="wf", task_type=task_type, task_def_name=ref,
                     reference_task_name=ref, seq=seq, status=status, retry_count=retry, iteration=iteration, **kw)


def simple(ref, **kw):
    return {"name": ref, "taskReferenceName": ref, "type": "SIMPLE", **kw}


DEFINITION = {
    "name": "shapes", "version": 1,
    "tasks": [
        simple("first"),
        {"name": "fork", "taskReferenceName": "fork", "type": "FORK_JOIN",
         "forkTasks": [[simple("left")], [simple("right1"), simple("right2")]]},
        {"name": "join", "taskReferenceName": "join", "type": "JOIN", "joinOn": ["left", "right2"]},
        {"name": "switch", "taskReferenceName": "sw", "type": "SWITCH", "evaluatorType": "value-param",
         "expression": "k", "decisionCases": {"yes": [simple("on_yes")], "skip": []},
         "defaultCase": [{"name": "stop", "taskReferenceName": "stop", "type": "TERMINATE"}]},
        {"name": "loop", "taskReferenceName": "loop", "type": "DO_WHILE", "loopCondition": "false",
         "loopOver": [simple("body1"), simple("body2")]},
        {"name": "child", "taskReferenceName": "child", "type": "SUB_WORKFLOW", "subWorkflowParam": {"name": "c"}},
    ],
}


def edges_of(graph):
    return {(e["source"], e["target"], e.get("label")) for e in graph["edges"]}


def test_preview_shapes_and_edges():
    g = build_graph(DEFINITION)
    nodes = node_index(g)
    assert g["preview"] is True
    assert nodes["__start"]["kind"] == "start" and nodes["__end"]["kind"] == "end"
    assert nodes["fork"]["kind"] == "fork" and nodes["join"]["kind"] == "join"
    assert nodes["sw"]["kind"] == "switch" and nodes["sw"]["caseKeys"] == ["yes", "skip"]
    assert nodes["stop"]["kind"] == "terminate"
    assert nodes["child"]["kind"] == "sub"
    assert nodes["loop::loop"]["kind"] == "loopgroup"
    assert nodes["loop"]["parent"] == "loop::loop" and nodes["body1"]["parent"] == "loop::loop"
    assert nodes["body1"]["loop"] == "loop" and nodes["loop::end"]["kind"] == "loopend"
    e = edges_of(g)
    assert ("__start", "first", None) in e and ("first", "fork", None) in e
    assert {("fork", "left", None), ("fork", "right1", None), ("right1", "right2", None),
            ("left", "join", None), ("right2", "join", None), ("join", "sw", None)} <= e
    # case-labelled edges, an empty case going straight on, the default case, TERMINATE ends
    assert ("sw", "on_yes", "yes") in e and ("sw", "loop", "skip") in e and ("sw", "stop", "default") in e
    assert ("on_yes", "loop", None) in e
    assert not any(src == "stop" for src, _, _ in e)
    assert {("loop", "body1", None), ("body1", "body2", None), ("body2", "loop::end", None),
            ("loop::end", "child", None), ("child", "__end", None)} <= e
    assert all(n["executed"] for n in g["nodes"]) and all(x["executed"] for x in g["edges"])


def test_switch_without_default_case_draws_a_default_edge():
    d = {"tasks": [{"name": "s", "taskReferenceName": "s", "type": "SWITCH", "decisionCases": {"a": [simple("x")]}},
                   simple("after")]}
    assert ("s", "after", "default") in edges_of(build_graph(d))


def test_runtime_status_attempts_dimming_and_taken_case():
    tasks = [
        t("first", seq=1), t("fork", seq=2, task_type="FORK"), t("left", seq=3),
        t("right1", "FAILED", seq=4), t("right1", seq=5, retry=1), t("right2", seq=6),
        t("join", seq=7, task_type="JOIN"),
        t("sw", seq=8, task_type="SWITCH", input_data={"case": "yes"}), t("on_yes", "IN_PROGRESS", seq=9),
    ]
    g = build_graph(DEFINITION, tasks, "RUNNING")
    nodes = node_index(g)
    assert nodes["right1"]["status"] == "COMPLETED" and nodes["right1"]["attempts"] == 2
    assert [a["status"] for a in nodes["right1"]["iters"][""]] == ["FAILED", "COMPLETED"]
    assert nodes["on_yes"]["status"] == "IN_PROGRESS"
    assert nodes["stop"]["executed"] is False and nodes["loop"]["executed"] is False
    assert nodes["__end"]["executed"] is False and nodes["__start"]["executed"] is True
    edges = {(e["source"], e["target"]): e for e in g["edges"]}
    assert edges[("sw", "on_yes")]["executed"] is True
    assert edges[("sw", "stop")]["executed"] is False
    assert edges[("on_yes", "loop")]["executed"] is False
    assert edges[("fork", "left")]["executed"] is True


def test_default_case_edge_is_executed_when_no_case_matched():
    tasks = [t("first", seq=1), t("sw", seq=2, task_type="SWITCH", input_data={"case": "other"}),
             t("stop", seq=3, task_type="TERMINATE")]
    g = build_graph(DEFINITION, tasks, "COMPLETED")
    edges = {(e["source"], e["target"], e.get("label")): e for e in g["edges"]}
    assert edges[("sw", "stop", "default")]["executed"] is True
    assert edges[("sw", "on_yes", "yes")]["executed"] is False
    assert node_index(g)["__end"]["executed"] is True


def test_do_while_iterations_are_scopes_of_one_drawing():
    tasks = [t("loop", "IN_PROGRESS", seq=1, task_type="DO_WHILE")]
    seq = 2
    for i in range(1, 4):
        tasks.append(t(f"body1__{i}", seq=seq, iteration=i)); seq += 1
        status = "IN_PROGRESS" if i == 3 else "COMPLETED"
        tasks.append(t(f"body2__{i}", status, seq=seq, iteration=i)); seq += 1
    tasks.append(t("body2__2", "FAILED", seq=0, iteration=2, retry=0))
    g = build_graph(DEFINITION, tasks, "RUNNING")
    nodes = node_index(g)
    assert nodes["loop"]["scopes"] == ["__1", "__2", "__3"]
    assert nodes["body2"]["status"] == "IN_PROGRESS"  # latest iteration shown by default
    assert sorted(nodes["body2"]["iters"]) == ["__1", "__2", "__3"]
    assert [a["status"] for a in nodes["body2"]["iters"]["__2"]] == ["FAILED", "COMPLETED"]
    assert sum(1 for n in g["nodes"] if n["id"].startswith("body")) == 2  # never one node per iteration


def test_nested_loops_scopes():
    d = {"tasks": [{"name": "outer", "taskReferenceName": "outer", "type": "DO_WHILE", "loopOver": [
        {"name": "inner", "taskReferenceName": "inner", "type": "DO_WHILE", "loopOver": [simple("x")]}]}]}
    tasks = [t("outer", "IN_PROGRESS", seq=1, task_type="DO_WHILE"),
             t("inner__1", seq=2, task_type="DO_WHILE", iteration=1),
             t("x__1__1", seq=3), t("x__1__2", seq=4),
             t("inner__2", "IN_PROGRESS", seq=5, task_type="DO_WHILE", iteration=2), t("x__2__1", "SCHEDULED", seq=6)]
    nodes = node_index(build_graph(d, tasks, "RUNNING"))
    assert nodes["outer"]["scopes"] == ["__1", "__2"]
    assert nodes["inner"]["scopes"] == ["__1__1", "__1__2", "__2__1"]
    assert nodes["inner"]["loop"] == "outer" and nodes["x"]["loop"] == "inner"
    assert nodes["x"]["status"] == "SCHEDULED"
    assert scope_key("__2__10") == (2, 10) and scope_key("") == ()


def _dynamic_def():
    return {"tasks": [{"name": "dyn", "taskReferenceName": "dyn", "type": "FORK_JOIN_DYNAMIC",
                       "dynamicForkTasksParam": "tasks", "dynamicForkTasksInputParamName": "inputs"},
                      {"name": "join", "taskReferenceName": "join", "type": "JOIN"}]}


def test_dynamic_fork_small_is_expanded():
    refs = [f"d{i}" for i in range(3)]
    tasks = [t("dyn", seq=1, task_type="FORK", input_data={"forkedTasks": refs})]
    tasks += [t(r, "COMPLETED" if i else "IN_PROGRESS", seq=2 + i) for i, r in enumerate(refs)]
    g = build_graph(_dynamic_def(), tasks, "RUNNING", dynamic_limit=5)
    nodes = node_index(g)
    assert {f"dyn::dyn::{r}" for r in refs} <= set(nodes)
    assert nodes["dyn::dyn::d0"]["status"] == "IN_PROGRESS"
    assert ("dyn::dyn::d1", "join", None) in edges_of(g)


def test_dynamic_fork_of_hundreds_is_one_summary_node():
    refs = [f"d{i}" for i in range(300)]
    tasks = [t("dyn", seq=1, task_type="FORK", input_data={"forkedTasks": refs})]
    tasks += [t(r, "FAILED" if i == 7 else "COMPLETED", seq=2 + i) for i, r in enumerate(refs)]
    g = build_graph(_dynamic_def(), tasks, "RUNNING", dynamic_limit=40)
    nodes = node_index(g)
    summary = nodes["dyn::dyn"]
    assert summary["kind"] == "dynamic" and summary["title"] == "300 dynamic tasks"
    assert summary["status"] == "FAILED"
    assert summary["iters"][""][0]["counts"] == {"COMPLETED": 299, "FAILED": 1}
    assert len(summary["members"]) == 300
    assert len(g["nodes"]) < 10


def test_structure_signature_ignores_status_changes():
    a = build_graph(DEFINITION, [t("first", "IN_PROGRESS", seq=1)], "RUNNING")
    b = build_graph(DEFINITION, [t("first", seq=1)], "RUNNING")
    assert a["signature"] == b["signature"]
    assert node_index(a)["first"] != node_index(b)["first"]


@pytest.mark.django_db(transaction=True)  # evaluations run after the service's commit
def test_an_execution_of_2000_tasks_stays_small_and_fast():
    """A DO_WHILE of 500 iterations x 4 INLINE tasks, run by the real engine."""
    from apps.engine import executor
    from apps.metadata import services
    from apps.ui import live
    from tests.factories import unique, workflow_def

    body = [{"name": f"step{i}", "taskReferenceName": f"step{i}", "type": "INLINE",
             "inputParameters": {"evaluatorType": "javascript", "expression": f"{i}"}} for i in range(4)]
    name = unique("ui_big")
    services.workflow_def_register(workflow_def=workflow_def(name, [
        {"name": "loop", "taskReferenceName": "loop", "type": "DO_WHILE",
         "loopCondition": "$.loop['iteration'] < 500", "loopOver": body}]))
    wf_id = executor.workflow_start(name=name, input={})
    from apps.engine.models import WorkflowExecution

    for _ in range(50):  # one decide runs a bounded number of steps; the sweeper does the rest
        if WorkflowExecution.objects.get(pk=wf_id).status != "RUNNING":
            break
        executor.workflow_decide(wf_id)
    # fast without timing it (issue #14): a handful of queries whatever the number of tasks
    # (5 today; one per task would be 2,001)
    with CaptureQueriesContext(connection) as queries:
        snap = live.build_snapshot(wf_id)
    assert len(snap["tasks"]) == 2001 and snap["header"]["status"] == "COMPLETED"
    assert len(snap["graph"]["nodes"]) == 2 + 3 + 4  # start/end, loop group/node/end, body
    assert len(node_index(snap["graph"])["loop"]["scopes"]) == 500
    assert len(queries.captured_queries) <= 10, [q["sql"][:80] for q in queries.captured_queries]
