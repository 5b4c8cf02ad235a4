"""The Agent tab's JSON (``/execution/<id>/agent.json``, apps/ui/agent_run.py) on an
execution of a hand-written definition classified as an agent: a HUMAN step waiting,
then answered, a tool task's call and result, the final answer; the tab only on agent
executions; sign-in and view permission required. (A real agent run by the SDK, with LLM
turns and tokens, is in tests/browser/test_agent_run.py.)"""
from __future__ import annotations

from apps.engine import executor, queue, selectors
from apps.metadata import services
from tests.factories import simple_task, task_def, unique, workflow_def


def _agent_like() -> str:
    name, tool = unique("agent_like"), unique("lookup")
    services.task_defs_register(task_defs=[task_def(tool)])
    services.workflow_def_register(workflow_def=workflow_def(name, [
        {"name": "ask_user", "taskReferenceName": "r_ask", "type": "HUMAN",
         "inputParameters": {"tool_name": "ask_user", "parameters": {"question": "<i>Where</i> to?"}}},
        simple_task(tool, "r_lookup", {"city": "${r_ask.output.answer}"})],
        inputParameters=["prompt"], outputParameters={"result": "${r_lookup.output.result}"},
        metadata={"classifier": "agent"}), overwrite=True)
    return name


def test_a_human_step_then_a_tool_then_the_answer(viewer_client, db):
    name = _agent_like()
    wid = executor.workflow_start(name=name, input={"prompt": "Plan <my> trip"})
    page = viewer_client.get(f"/execution/{wid}").content.decode()
    assert 'id="tabbtn-agent"' in page
    body = viewer_client.get(f"/execution/{wid}/agent.json").json()
    assert body["prompt"] == "Plan <my> trip" and body["status"] == "RUNNING"
    assert [(e["kind"], e["name"], e["answer"]) for e in body["entries"]] == [("human", "ask_user", None)]
    assert "<i>Where</i> to?" in body["entries"][0]["question"]
    human = next(t for t in selectors.workflow_get(workflow_id=wid).tasks if t.task_type == "HUMAN")
    executor.task_update(task_result={"workflowInstanceId": wid, "taskId": human.task_id, "status": "COMPLETED",
                                      "outputData": {"answer": "Oslo"}})
    lookup = next(t for t in selectors.workflow_get(workflow_id=wid).tasks if t.reference_task_name == "r_lookup")
    polled = queue.task_poll(task_type=lookup.task_def_name, worker_id="w1")[0]
    executor.task_update(task_result={"workflowInstanceId": wid, "taskId": polled.task_id, "status": "COMPLETED",
                                      "outputData": {"result": "sunny"}})
    body = viewer_client.get(f"/execution/{wid}/agent.json").json()
    kinds = [e["kind"] for e in body["entries"]]
    assert kinds == ["human", "tool", "done"], body
    assert '"answer": "Oslo"' in body["entries"][0]["answer"] and body["entries"][0]["status"] == "COMPLETED"
    assert '"city": "Oslo"' in body["entries"][1]["args"] and '"result": "sunny"' in body["entries"][1]["result"]
    assert body["entries"][2]["answer"] == "sunny"
    assert body["tokens"] == {"prompt": 0, "completion": 0, "total": 0}


def test_only_agents_and_permissions(client, viewer_client, nobody, chain):
    wid = executor.workflow_start(name=chain, input={"x": 1})
    assert 'id="tabbtn-agent"' not in viewer_client.get(f"/execution/{wid}").content.decode()
    assert viewer_client.get(f"/execution/{wid}/agent.json").status_code == 404
    assert viewer_client.get("/execution/nope/agent.json").status_code == 404
    agent = executor.workflow_start(name=_agent_like(), input={"prompt": "hi"})
    viewer_client.logout()
    assert viewer_client.get(f"/execution/{agent}/agent.json").status_code in (302, 403)
    client.force_login(nobody)
    assert client.get(f"/execution/{agent}/agent.json").status_code == 403
