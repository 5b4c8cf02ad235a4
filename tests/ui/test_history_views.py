"""The History tab's JSON (``/execution/<id>/history.json``, ``/execution/<id>/at.json``):
events with a line of text, the execution as it was at one of them (before a rerun),
sign-in and view permission required, 404/400 for what does not exist."""
from __future__ import annotations

from apps.engine import executor, queue
from apps.ui import actions


def _failed_run(chain: str) -> tuple[str, dict, dict]:
    wid = executor.workflow_start(name=chain, input={"x": 1})
    a = queue.task_poll(task_type=f"{chain}_a", worker_id="w1")[0]
    executor.task_update(task_result={"workflowInstanceId": wid, "taskId": a.task_id, "status": "COMPLETED",
                                      "outputData": {"v": 1}})
    b = queue.task_poll(task_type=f"{chain}_b", worker_id="w2")[0]
    executor.task_update(task_result={"workflowInstanceId": wid, "taskId": b.task_id, "status": "FAILED",
                                      "reasonForIncompletion": "boom"})
    return wid, a, b


def test_events_and_a_moment_before_a_rerun(viewer_client, operator, chain):
    wid, a, b = _failed_run(chain)
    result = actions.perform(operator, "rerun", wid, {"task_id": a.task_id, "task_input": {"again": 1}})
    assert result.ok, result.message
    body = viewer_client.get(f"/execution/{wid}/history.json").json()
    texts = [e["text"] for e in body["events"]]
    assert body["next"] is None
    assert "b polled by w2" in texts and f"Rerun by user:{operator.username} (2 task executions kept as they were)" in texts
    failed = next(e for e in body["events"] if e["kind"] == "workflow.status" and e["data"]["to"] == "FAILED")

    moment = viewer_client.get(f"/execution/{wid}/at.json", {"seq": failed["seq"]}).json()
    data = moment["data"]
    assert moment["type"] == "snapshot" and data["moment"] == failed["seq"]
    assert data["header"]["status"] == "FAILED" and data["event"]["text"].startswith("Workflow RUNNING → FAILED")
    assert [(t["ref"], t["status"], t["workerId"]) for t in data["tasks"]] == [("a", "COMPLETED", "w1"),
                                                                               ("b", "FAILED", "w2")]
    assert "not kept in the history" in data["payloads"]["output"]["text"]
    nodes = {n["id"]: n for n in data["graph"]["nodes"]}
    assert nodes["b"]["status"] == "FAILED"
    now = viewer_client.get(f"/execution/{wid}/live.json").json()["data"]
    assert [(t["ref"], t["status"]) for t in now["tasks"]] == [("a", "SCHEDULED")]


def test_unknown_things_and_permissions(client, viewer_client, nobody, chain):
    wid, _, _ = _failed_run(chain)
    assert viewer_client.get("/execution/nope/history.json").status_code == 404
    assert viewer_client.get(f"/execution/{wid}/at.json", {"seq": "x"}).status_code == 400
    assert viewer_client.get(f"/execution/{wid}/at.json", {"seq": 999999999}).status_code == 404
    viewer_client.logout()
    assert viewer_client.get(f"/execution/{wid}/history.json").status_code in (302, 403)
    client.force_login(nobody)
    assert client.get(f"/execution/{wid}/at.json", {"seq": 1}).status_code == 403
