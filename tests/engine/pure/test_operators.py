"""Operators and sync system tasks over the pure decider (docs/conductor-notes.md §5)."""
from __future__ import annotations

from tests.engine.pure.sim import Sim

NO_RETRY = {"retryCount": 0, "retryDelaySeconds": 0, "responseTimeoutSeconds": 0}


def simple(ref, name=None, **kw):
    return {"name": name or ref, "taskReferenceName": ref, "type": "SIMPLE", "inputParameters": kw.pop("input", {}), **kw}


def wf(*tasks, **kw):
    return {"name": "t", "version": 1, "tasks": list(tasks), **kw}


def defs(*names):
    return {n: {"name": n, **NO_RETRY} for n in names}


# --- SWITCH ------------------------------------------------------------------------------

SWITCH = {
    "name": "route", "taskReferenceName": "route", "type": "SWITCH", "evaluatorType": "value-param",
    "expression": "switchCaseValue", "inputParameters": {"switchCaseValue": "${workflow.input.priority}"},
    "decisionCases": {"critical": [simple("page"), simple("escalate")], "high": [simple("assign")]},
    "defaultCase": [simple("backlog")],
}


def test_switch_value_param_runs_case_in_order_then_continues():
    s = Sim(wf(SWITCH, simple("after")), {"priority": "critical"})
    sw = s.task("route")
    assert sw.status == "COMPLETED"
    assert sw.output_data == {"evaluationResult": ["critical"], "selectedCase": "critical"}
    assert s.pending_worker_refs() == ["page"]
    s.complete("page")
    assert s.pending_worker_refs() == ["escalate"]
    s.complete("escalate")
    assert s.pending_worker_refs() == ["after"]
    s.complete("after")
    assert s.wf.status == "COMPLETED"
    assert "assign" not in s.refs() and "backlog" not in s.refs()


def test_switch_default_case_when_nothing_matches():
    s = Sim(wf(SWITCH, simple("after")), {"priority": "low"})
    assert s.task("route").output_data["selectedCase"] == "low"
    assert s.pending_worker_refs() == ["backlog"]


def test_switch_javascript_evaluator():
    sw = {**SWITCH, "evaluatorType": "graaljs", "expression": "$.p == 'critical' ? 'critical' : 'high'",
          "inputParameters": {"p": "${workflow.input.priority}"}}
    s = Sim(wf(sw), {"priority": "x"})
    assert s.pending_worker_refs() == ["assign"]


def test_switch_matched_empty_case_does_not_fall_through():  # cases/11
    sw = {"name": "sw", "taskReferenceName": "sw", "type": "SWITCH", "evaluatorType": "value-param",
          "expression": "flag", "inputParameters": {"flag": "${workflow.input.flag}"},
          "decisionCases": {"true": []},
          "defaultCase": [{"name": "stop", "taskReferenceName": "stop", "type": "TERMINATE",
                           "inputParameters": {"terminationStatus": "FAILED", "terminationReason": "default path taken"}}]}
    s = Sim(wf(sw, simple("after")), {"flag": True})
    assert s.task("sw").output_data["evaluationResult"] == ["true"]
    assert s.pending_worker_refs() == ["after"]
    assert "stop" not in s.refs()
    s2 = Sim(wf(sw, simple("after")), {"flag": "nope"})
    assert s2.wf.status == "FAILED"
    assert s2.wf.reason_for_incompletion == "default path taken"
    assert "after" not in s2.refs()


def test_switch_unknown_evaluator_fails_workflow():
    sw = {**SWITCH, "evaluatorType": "python3"}
    s = Sim(wf(sw), {"priority": "critical"})
    assert s.wf.status == "FAILED"
    assert s.wf.reason_for_incompletion == "No evaluator registered for type: python3"


# --- FORK / JOIN -----------------------------------------------------------------------------

def fork(ref, branches):
    return {"name": ref, "taskReferenceName": ref, "type": "FORK_JOIN", "forkTasks": branches}


def join(ref, on):
    return {"name": ref, "taskReferenceName": ref, "type": "JOIN", "joinOn": on}


def test_fork_join_waits_for_all_branches_and_merges_outputs():
    s = Sim(wf(fork("f", [[simple("a1"), simple("a2")], [simple("b")]]), join("j", ["a2", "b"]),
               simple("merge", input={"x": "${j.output.b.v}", "y": "${a2.output.v}"})))
    assert s.task("f").task_type == "FORK" and s.task("f").status == "COMPLETED"
    assert sorted(s.pending_worker_refs()) == ["a1", "b"]
    assert s.task("j").status == "IN_PROGRESS"
    s.complete("b", {"v": 2})
    assert s.task("j").status == "IN_PROGRESS"
    s.complete("a1")
    assert s.pending_worker_refs() == ["a2"]
    s.complete("a2", {"v": 1})
    assert s.task("j").status == "COMPLETED"
    assert s.task("j").output_data == {"a2": {"v": 1}, "b": {"v": 2}}
    assert s.task("merge").input_data == {"x": 2, "y": 1}
    s.complete("merge")
    assert s.wf.status == "COMPLETED"


def test_join_with_optional_failure_waits_then_completed_with_errors():  # cases/06
    opt = simple("opt", optional=True)
    s = Sim(wf(fork("fork", [[opt], [simple("slow")]]), join("join", ["opt", "slow"]),
               simple("after", input={"slowValue": "${join.output.slow.value}"})), task_defs=defs("opt", "slow", "after"))
    s.fail("opt")
    assert s.task("opt").status == "COMPLETED_WITH_ERRORS"
    assert s.task("join").status == "IN_PROGRESS"
    s.complete("slow", {"value": 42})
    assert s.task("join").status == "COMPLETED_WITH_ERRORS"
    assert s.task("after").input_data == {"slowValue": 42}
    s.complete("after")
    assert s.wf.status == "COMPLETED"


def test_join_empty_join_on_completes_at_once():  # cases/07
    w1 = {"name": "w1", "taskReferenceName": "w1", "type": "WAIT", "inputParameters": {}}
    s = Sim(wf(fork("fork", [[w1]]), join("join", []), simple("after")))
    assert s.task("join").status == "COMPLETED"
    assert s.task("w1").status == "IN_PROGRESS"
    assert s.pending_worker_refs() == ["after"]


def test_join_on_untaken_switch_case_does_not_hang():  # cases/10 (contested; no hang)
    sw = {"name": "sw", "taskReferenceName": "sw", "type": "SWITCH", "evaluatorType": "value-param",
          "expression": "kind", "inputParameters": {"kind": "${workflow.input.kind}"},
          "decisionCases": {"a": [simple("case_a")]}, "defaultCase": [simple("dflt")]}
    s = Sim(wf(fork("fork", [[simple("left")], [sw]]), join("join", ["left", "case_a"])), {"kind": "other"})
    s.complete("left")
    s.complete("dflt")
    assert s.task("join").status == "COMPLETED"
    assert s.wf.status == "COMPLETED"
    assert "case_a" not in s.refs()


def test_fork_without_join_fails_the_workflow():
    s = Sim(wf(fork("f", [[simple("a")]])))
    assert s.wf.status == "FAILED"
    assert "not followed by a join task" in s.wf.reason_for_incompletion


# --- dynamic fork -----------------------------------------------------------------------------

DYN = {"name": "dynfork", "taskReferenceName": "dynfork", "type": "FORK_JOIN_DYNAMIC",
       "inputParameters": {"dynamicTasks": "${workflow.input.tasks}", "dynamicTasksInput": "${workflow.input.inputs}"},
       "dynamicForkTasksParam": "dynamicTasks", "dynamicForkTasksInputParamName": "dynamicTasksInput"}


def test_dynamic_fork_runs_each_branch_with_its_input():
    tasks = [{"name": "enrich", "taskReferenceName": "e1"}, {"name": "enrich", "taskReferenceName": "e2"}]
    s = Sim(wf(DYN, join("dynjoin", []), simple("after")), {"tasks": tasks, "inputs": {"e1": {"n": 1}, "e2": {"n": 2}}})
    assert sorted(s.pending_worker_refs()) == ["e1", "e2"]
    assert s.task("e1").input_data == {"n": 1}
    assert s.task("dynjoin").input_data["joinOn"] == ["e1", "e2"]
    s.complete("e1", {"r": 1})
    s.complete("e2", {"r": 2})
    assert s.task("dynjoin").output_data == {"e1": {"r": 1}, "e2": {"r": 2}}
    assert s.pending_worker_refs() == ["after"]


def test_dynamic_fork_empty_list_completes_and_bad_input_fails():  # cases/09
    s = Sim(wf(DYN, join("dynjoin", []), simple("after")), {"tasks": [], "inputs": {}})
    assert s.task("dynfork").status == "COMPLETED"
    assert s.task("dynjoin").status == "COMPLETED" and s.task("dynjoin").input_data["joinOn"] == []
    assert s.pending_worker_refs() == ["after"]
    for bad in ({"tasks": "not-a-list", "inputs": {}}, {"tasks": [], "inputs": None}):
        s = Sim(wf(DYN, join("dynjoin", []), simple("after")), bad)
        assert s.wf.status == "FAILED" and s.wf.reason_for_incompletion


def test_dynamic_fork_task_inputs_form():
    d = {"name": "df", "taskReferenceName": "df", "type": "FORK_JOIN_DYNAMIC",
         "inputParameters": {"forkTaskName": "work", "forkTaskInputs": "${workflow.input.items}"}}
    s = Sim(wf(d, join("j", [])), {"items": [{"a": 1}, "x"]})
    assert sorted(s.pending_worker_refs()) == ["_work_0", "_work_1"]
    assert s.task("_work_1").input_data == {"input": "x", "__index": 1}


# --- DO_WHILE ---------------------------------------------------------------------------------

def loop(ref, cond, body, **kw):
    return {"name": ref, "taskReferenceName": ref, "type": "DO_WHILE", "loopCondition": cond, "loopOver": body,
            "inputParameters": kw.pop("input", {}), **kw}


def test_do_while_counter_runs_body_n_times_then_next_once():  # cases/01
    s = Sim(wf(loop("loop", "if ($.loop['iteration'] < $.limit) { true; } else { false; }", [simple("body")],
                    input={"limit": "${workflow.input.limit}"}), simple("after")), {"limit": 3})
    for i in (1, 2, 3):
        assert s.pending_worker_refs() == [f"body__{i}"]
        assert s.task(f"body__{i}").iteration == i
        s.complete(f"body__{i}", {"i": i})
    assert s.task("loop").status == "COMPLETED"
    assert s.task("loop").output_data["iteration"] == 3
    assert s.task("loop").output_data["2"] == {"body": {"i": 2}}
    assert s.pending_worker_refs() == ["after"]
    s.complete("after")
    assert s.wf.status == "COMPLETED"
    assert [t.task_def_name for t in s.wf.tasks].count("after") == 1


def test_do_while_condition_sees_body_output_and_multi_task_body():
    body = [simple("think"), simple("act", input={"tool": "${think.output.tool}"})]
    s = Sim(wf(loop("agent", "if ($.act['done'] == true) { false; } else { true; }", body)))
    s.complete("think__1", {"tool": "search"})
    assert s.task("act__1").input_data == {"tool": "search"}
    s.complete("act__1", {"done": False})
    s.complete("think__2", {"tool": "write"})
    s.complete("act__2", {"done": True})
    assert s.task("agent").status == "COMPLETED" and s.task("agent").output_data["iteration"] == 2


def test_do_while_retry_inside_loop_stays_in_iteration():  # cases/04
    s = Sim(wf(loop("loop", "$.loop['iteration'] < 2", [simple("step", name="flaky_step")])),
            task_defs={"flaky_step": {"name": "flaky_step", "retryCount": 1, "retryDelaySeconds": 0}})
    s.fail("step__1")
    attempts = [t for t in s.wf.tasks if t.reference_task_name == "step__1"]
    assert [(t.status, t.retry_count) for t in attempts] == [("FAILED", 0), ("SCHEDULED", 1)]
    assert s.task("loop").status == "IN_PROGRESS"
    s.complete("step__1")
    s.complete("step__2")
    assert s.task("loop").output_data["iteration"] == 2
    assert s.wf.status == "COMPLETED"
    s2 = Sim(wf(loop("loop", "$.loop['iteration'] < 2", [simple("step", name="flaky_step")])),
             task_defs={"flaky_step": {"name": "flaky_step", "retryCount": 0}})
    s2.fail("step__1")
    # As Conductor's DeciderService.retry: the body task's failure ends the workflow at
    # once, and the still-running DO_WHILE is cancelled with it.
    assert s2.wf.status == "FAILED"
    assert s2.wf.reason_for_incompletion == f"Task {s2.task('step__1').task_id} failed with status: FAILED and reason: 'boom'"
    assert s2.task("loop").status == "CANCELED"
    assert "step__2" not in s2.refs()


def test_nested_do_while():  # cases/03
    inner = loop("inner", "$.inner['iteration'] < 2", [simple("leaf", name="nested_leaf")])
    s = Sim(wf(loop("outer", "$.outer['iteration'] < 2", [inner])))
    for _ in range(4):
        pending = s.pending_worker_refs()
        assert len(pending) == 1, s.statuses()
        s.complete(pending[0])
    assert s.wf.status == "COMPLETED", s.statuses()
    assert s.task("outer").output_data["iteration"] == 2
    assert sum(1 for t in s.wf.tasks if t.task_def_name == "nested_leaf") == 4


def test_do_while_with_switch_in_body():
    sw = {"name": "sw", "taskReferenceName": "sw", "type": "SWITCH", "evaluatorType": "value-param",
          "expression": "x", "inputParameters": {"x": "a"}, "decisionCases": {"a": [simple("c1"), simple("c2")]}}
    s = Sim(wf(loop("l", "$.l['iteration'] < 2", [sw, simple("tail")])))
    assert s.pending_worker_refs() == ["c1__1"]
    s.complete("c1__1")
    assert s.pending_worker_refs() == ["c2__1"]
    s.complete("c2__1")
    assert s.pending_worker_refs() == ["tail__1"]
    s.complete("tail__1")
    assert s.pending_worker_refs() == ["c1__2"]


def test_do_while_list_items_and_keep_last_n():
    body = [simple("each", input={"item": "${l.output.loopItem}"})]
    s = Sim(wf({**loop("l", None, body, input={"keepLastN": 1}), "items": "${workflow.input.xs}"}), {"xs": ["a", "b", "c"]})
    seen = []
    for _ in range(3):
        ref = s.pending_worker_refs()[0]
        seen.append(s.task(ref).input_data["item"])
        s.complete(ref, {"ok": True})
    assert seen == ["a", "b", "c"]
    assert s.task("l").status == "COMPLETED"
    assert "1" not in s.task("l").output_data and "3" in s.task("l").output_data
    assert [t.reference_task_name for t in s.wf.tasks if t.task_def_name == "each"] == ["each__3"]
    empty = Sim(wf({**loop("l", None, body), "items": "${workflow.input.xs}"}), {"xs": []})
    assert empty.task("l").status == "COMPLETED" and empty.task("l").output_data == {"iteration": 0}


def test_do_while_condition_error_is_terminal():
    s = Sim(wf(loop("l", "$.nope.deeper > 1", [simple("b")])))
    s.complete("b__1")
    assert s.task("l").status == "FAILED_WITH_TERMINAL_ERROR"
    assert s.task("l").reason_for_incompletion.startswith("Unable to evaluate condition $.nope.deeper > 1, exception")
    assert s.wf.status == "FAILED"


# --- INLINE / JQ / SET_VARIABLE / TERMINATE / WAIT ---------------------------------------------

def test_inline_result_and_script_error_is_terminal():  # cases/27
    ok = {"name": "calc", "taskReferenceName": "ok", "type": "INLINE", "inputParameters": {
        "evaluatorType": "javascript", "v": "${workflow.input.v}", "expression": "(function(){ return $.v * 2; })()"}}
    bad = {"name": "calc", "taskReferenceName": "bad", "type": "INLINE", "inputParameters": {
        "evaluatorType": "javascript", "v": "${workflow.input.v}",
        "expression": "(function(){ throw new Error('bad input ' + $.v); })()"}}
    s = Sim(wf(ok, bad), {"v": 7}, task_defs={"calc": {"name": "calc", "retryCount": 2, "retryDelaySeconds": 0}})
    assert s.task("ok").output_data == {"result": 14}
    assert s.task("bad").status == "FAILED_WITH_TERMINAL_ERROR"
    assert "bad input 7" in s.task("bad").reason_for_incompletion
    assert "bad input 7" in s.task("bad").output_data["error"]
    assert [t.reference_task_name for t in s.wf.tasks].count("bad") == 1
    assert s.wf.status == "FAILED"


def test_inline_runaway_script_is_stopped():
    spin = {"name": "spin", "taskReferenceName": "spin", "type": "INLINE",
            "inputParameters": {"evaluatorType": "graaljs", "expression": "while(true){}"}}
    s = Sim(wf(spin))
    assert s.task("spin").status == "FAILED_WITH_TERMINAL_ERROR"
    assert "interrupted" in s.task("spin").reason_for_incompletion


def test_jq_transform_result_and_error():
    jq_ok = {"name": "jq", "taskReferenceName": "jq", "type": "JSON_JQ_TRANSFORM", "inputParameters": {
        "queryExpression": ".records | map(.v)", "records": [{"v": 1}, {"v": 2}]}}
    s = Sim(wf(jq_ok))
    assert s.task("jq").output_data == {"result": [1, 2], "resultList": [[1, 2]]}
    assert s.wf.status == "COMPLETED"
    jq_bad = {**jq_ok, "inputParameters": {"queryExpression": ".records | map(", "records": []}}
    s = Sim(wf(jq_bad))
    assert s.task("jq").status == "FAILED" and s.task("jq").output_data["error"]


def test_set_variable_and_terminate_output():
    setv = {"name": "sv", "taskReferenceName": "sv", "type": "SET_VARIABLE", "inputParameters": {"count": 3}}
    term = {"name": "t", "taskReferenceName": "t", "type": "TERMINATE", "inputParameters": {
        "terminationStatus": "COMPLETED", "workflowOutput": {"n": "${workflow.variables.count}"}}}
    s = Sim(wf(setv, term, simple("never")))
    assert s.wf.variables == {"count": 3}
    assert s.wf.status == "COMPLETED"
    assert s.wf.output == {"n": 3}
    assert "never" not in s.refs()


def test_terminate_terminated_status():  # cases/23
    term = {"name": "t", "taskReferenceName": "t", "type": "TERMINATE",
            "inputParameters": {"terminationStatus": "TERMINATED"}}
    s = Sim(wf(simple("a"), term))
    s.complete("a")
    assert s.wf.status == "TERMINATED"
    assert s.wf.reason_for_incompletion == f"Workflow is TERMINATED by TERMINATE task: {s.task('t').task_id}"


def test_wait_duration_fires_at_due_time():
    w = {"name": "w", "taskReferenceName": "w", "type": "WAIT", "inputParameters": {"duration": "2s"}}
    s = Sim(wf(w, simple("after")))
    assert s.task("w").status == "IN_PROGRESS"
    assert s.wf.next_decide_at == s.now + 2000
    s.advance(1999)
    assert s.task("w").status == "IN_PROGRESS"
    s.advance(1)
    assert s.task("w").status == "COMPLETED"
    assert s.pending_worker_refs() == ["after"]


def test_wait_both_inputs_is_terminal_error():
    w = {"name": "w", "taskReferenceName": "w", "type": "WAIT", "inputParameters": {"duration": "2s", "until": "2030-01-01"}}
    s = Sim(wf(w))
    assert s.task("w").status == "FAILED_WITH_TERMINAL_ERROR"
    assert s.wf.status == "FAILED"
