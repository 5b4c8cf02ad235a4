"""A running DO_WHILE's output (issue #9, flat growth): the stored row keeps only the
counter and the current iteration, the finished iterations stay in their body tasks; every
reader still sees Conductor's shape ``{"1": {ref: output}, ..., "iteration": n}``: GET
workflow, GET task, task search, ``${loop.output...}`` references and a loopCondition
that reads an earlier iteration. When the loop ends its output is written whole."""
from __future__ import annotations

from django.db import connection

from apps.engine import store
from tests.factories import simple_task, task_def, unique, workflow_def


def stored_output(task_id: str) -> dict:
    with connection.cursor() as cursor:
        cursor.execute("SELECT output_data FROM engine_task_execution WHERE task_id = %s", [task_id])
        value = cursor.fetchone()[0]
    return store.loads(value) if isinstance(value, (str, bytes)) else value


def loop_workflow(api, condition: str, body_input: dict | None = None, *,
                  loop_input: dict | None = None) -> tuple[str, str]:
    worker = unique("loop_worker")
    api.register_task_defs(task_def(worker))
    name = unique("loop_output")
    loop = {"name": "loop", "taskReferenceName": "loop", "type": "DO_WHILE", "loopCondition": condition,
            "inputParameters": loop_input or {}, "loopOver": [simple_task(worker, "g", body_input or {})]}
    api.register_workflow(workflow_def(name, [loop]))
    return api.start(name, {}), worker


def run_iterations(api, worker: str, count: int) -> list[dict]:
    done = []
    for _ in range(count):
        task = api.poll_one(worker)
        api.complete(task, {"r": task["iteration"] * 10})
        done.append(task)
    return done


def test_every_reader_sees_each_finished_iteration_while_only_the_current_one_is_stored(api):
    wid, worker = loop_workflow(api, "$.loop['iteration'] < 5")
    run_iterations(api, worker, 3)
    wf = api.workflow(wid)
    loop = wf["tasks"][0]
    expected = {"iteration": 4, "1": {"g": {"r": 10}}, "2": {"g": {"r": 20}}, "3": {"g": {"r": 30}},
                "4": {"g": {}}}
    assert loop["status"] == "IN_PROGRESS"
    assert loop["outputData"] == expected
    assert list(loop["outputData"]) == ["iteration", "1", "2", "3", "4"]
    assert api.task(loop["taskId"])["outputData"] == expected
    found = api.ok(api.get("/tasks/search", {"query": f"workflowId = '{wid}'", "size": 10})).json()["results"]
    assert [r for r in found if r["taskType"] == "DO_WHILE"][0]["output"] == \
        '{"iteration": 4, "1": {"g": {"r": 10}}, "2": {"g": {"r": 20}}, "3": {"g": {"r": 30}}, "4": {"g": {}}}'
    # the row itself: counter and current iteration only (no rewrite of a growing document)
    assert stored_output(loop["taskId"]) == {"iteration": 4, "4": {"g": {}}}

    run_iterations(api, worker, 2)
    wf = api.workflow(wid)
    assert wf["status"] == "COMPLETED"
    whole = {"iteration": 5, **{str(k): {"g": {"r": k * 10}} for k in range(1, 6)}}
    assert wf["tasks"][0]["outputData"] == whole
    assert stored_output(wf["tasks"][0]["taskId"]) == whole  # written whole when the loop ends


def test_a_condition_reading_an_earlier_iteration_gets_it(api):
    # iteration 1's r is 10: the loop goes on while iteration 1 said 10 and fewer than 4 ran
    wid, worker = loop_workflow(api, "$.loop['1'].g.r == 10 && $.loop.iteration < 4")
    run_iterations(api, worker, 4)
    wf = api.workflow(wid)
    assert wf["status"] == "COMPLETED" and wf["tasks"][0]["outputData"]["iteration"] == 4
    # and one that enumerates the output sees every key
    wid, worker = loop_workflow(api, "Object.keys($.loop).length < 5")
    run_iterations(api, worker, 4)  # keys at iteration k: "iteration" and "1".."k"
    wf = api.workflow(wid)
    assert wf["status"] == "COMPLETED" and wf["tasks"][0]["outputData"]["iteration"] == 4


def test_a_body_task_reads_a_finished_iteration_by_reference(api):
    wid, worker = loop_workflow(api, "$.loop['iteration'] < 3",
                                {"first": "${loop.output.1.g.r}", "n": "${loop.output.iteration}",
                                 "all": "${loop.output}"})
    done = run_iterations(api, worker, 3)
    assert done[0]["inputData"] == {"first": None, "n": 1, "all": {"iteration": 1}}
    assert done[2]["inputData"]["first"] == 10 and done[2]["inputData"]["n"] == 3
    assert done[2]["inputData"]["all"] == {"iteration": 3, "1": {"g": {"r": 10}}, "2": {"g": {"r": 20}}}
    assert api.workflow(wid)["status"] == "COMPLETED"


def test_keep_last_n_shows_only_the_kept_iterations(api):
    wid, worker = loop_workflow(api, "$.loop['iteration'] < 6", loop_input={"keepLastN": 2})
    run_iterations(api, worker, 4)
    loop = api.workflow(wid)["tasks"][0]
    assert loop["outputData"] == {"iteration": 5, "4": {"g": {"r": 40}}, "5": {"g": {}}}


def test_a_terminated_loop_keeps_its_whole_output(api):
    wid, worker = loop_workflow(api, "$.loop['iteration'] < 5")
    run_iterations(api, worker, 2)
    api.ok(api.delete(f"/workflow/{wid}", params={"reason": "enough"}))
    wf = api.workflow(wid)
    loop = wf["tasks"][0]
    assert wf["status"] == "TERMINATED" and loop["status"] == "CANCELED"
    expected = {"iteration": 3, "1": {"g": {"r": 10}}, "2": {"g": {"r": 20}}, "3": {"g": {}}}
    assert loop["outputData"] == expected
    assert stored_output(loop["taskId"]) == expected
