"""The History tab's JSON (``/execution/<id>/history.json``, ``/execution/<id>/at.json``):
events with a line of text, the execution as it was at one of them (before a rerun),
sign-in and view permission required, 404/400 for what does not exist."""
from __future__ import annotations

from apps.engine import executor, queue
from apps.engine.models import ExecutionEvent, WorkflowExecution
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
    assert failed["text"].startswith("Workflow RUNNING → FAILED: Task b failed")  # by reference, not task id

    moment = viewer_client.get(f"/execution/{wid}/at.json", {"seq": failed["seq"]}).json()
    data = moment["data"]
    assert moment["type"] == "snapshot" and data["moment"] == failed["seq"]
    assert data["header"]["status"] == "FAILED" and data["event"]["text"].startswith("Workflow RUNNING → FAILED")
    assert [(t["ref"], t["status"], t["workerId"]) for t in data["tasks"]] == [("a", "COMPLETED", "w1"),
                                                                               ("b", "FAILED", "w2")]
    # the header and the payloads as they were then, not as they are now
    header = data["header"]
    assert header["endTime"] and header["reason"].startswith("Task b failed")  # the task named by reference
    assert header["reRunFromWorkflowId"] is None and header["rerun"] is None
    assert header["failedReferenceTaskNames"] == ["b"]
    assert "Task b failed" in data["event"]["text"] and b.task_id not in data["event"]["text"]
    assert data["payloads"]["input"]["text"] == '{\n  "x": 1\n}' and data["payloads"]["output"]["text"] == "{}"
    nodes = {n["id"]: n for n in data["graph"]["nodes"]}
    assert nodes["b"]["status"] == "FAILED"
    now = viewer_client.get(f"/execution/{wid}/live.json").json()["data"]
    assert [(t["ref"], t["status"]) for t in now["tasks"]] == [("a", "SCHEDULED")]
    assert now["header"]["endTime"] == 0 and now["header"]["reRunFromWorkflowId"] is None
    rerun = next(e for e in body["events"] if e["kind"] == "action")
    assert now["header"]["rerun"] == {"action": "rerun", "seq": rerun["seq"], "time": rerun["time"]}
    after = viewer_client.get(f"/execution/{wid}/at.json", {"seq": body["events"][-1]["seq"]}).json()["data"]
    assert after["header"]["rerun"] == now["header"]["rerun"] and after["header"]["status"] == "RUNNING"
    assert after["header"]["reason"] is None and after["header"]["endTime"] == 0 and after["header"]["failedReferenceTaskNames"] == []


def test_the_header_never_links_an_execution_to_itself(viewer_client, operator, chain):
    wid, a, _ = _failed_run(chain)
    page = viewer_client.get(f"/execution/{wid}").content.decode()
    assert 'id="wf-rerun"' in page and "Rerun of" not in page
    assert actions.perform(operator, "rerun", wid, {"task_id": a.task_id}).ok
    # rows written by earlier versions name the execution itself as its origin
    WorkflowExecution.objects.filter(pk=wid).update(re_run_from_workflow_id=wid)
    page = viewer_client.get(f"/execution/{wid}").content.decode()
    assert "Rerun of" not in page and f'href="/execution/{wid}"' not in page
    seq = ExecutionEvent.objects.filter(workflow_id=wid, kind="action").values_list("id", flat=True).get()
    assert "rerun at" in page and f"?tab=history&amp;at={seq}" in page
    # another execution as the origin is linked
    WorkflowExecution.objects.filter(pk=wid).update(re_run_from_workflow_id="other-execution")
    page = viewer_client.get(f"/execution/{wid}").content.decode()
    assert "Rerun of" in page and 'href="/execution/other-execution"' in page


def test_unknown_things_and_permissions(client, viewer_client, nobody, chain):
    wid, _, _ = _failed_run(chain)
    assert viewer_client.get("/execution/nope/history.json").status_code == 404
    assert viewer_client.get(f"/execution/{wid}/at.json", {"seq": "x"}).status_code == 400
    assert viewer_client.get(f"/execution/{wid}/at.json", {"seq": 999999999}).status_code == 404
    viewer_client.logout()
    assert viewer_client.get(f"/execution/{wid}/history.json").status_code in (302, 403)
    client.force_login(nobody)
    assert client.get(f"/execution/{wid}/at.json", {"seq": 1}).status_code == 403
