"""Workflows served as A2A agents, called by the official ``a2a-sdk`` client (its A2A 0.3
JSON-RPC transport, chosen from the card we serve) against a real server (uvicorn and the
cluster, API auth on: the client's httpx client carries the key's token).

The card is resolved from ``/api/a2a/workflow/{name}/.well-known/agent-card.json``;
``message/stream`` runs a workflow to its end; ``message/send`` (no streaming) of a
workflow waiting on a HUMAN task reports ``input-required``, and a follow-up message with
that task id resumes it; ``tasks/get`` and ``tasks/cancel`` act on the execution."""
import asyncio
import threading
import uuid

import httpx
import pytest

pytestmark = pytest.mark.e2e


def run_on_own_loop(scenario) -> None:
    """Run the coroutine function ``scenario`` to its end on a new event loop in a thread of
    its own, re-raising what it raised: the session's sync Playwright (the browser tests
    that ran before in the same pytest process) leaves an event loop running in the main
    thread, where ``asyncio.run`` refuses to start."""
    failure: list[BaseException] = []

    def target() -> None:
        try:
            asyncio.run(scenario())
        except BaseException as exc:  # noqa: BLE001 - handed to the test's thread
            failure.append(exc)

    thread = threading.Thread(target=target, name="a2a-scenario")
    thread.start()
    thread.join()
    if failure:
        raise failure[0]


def register(server, definition: dict) -> None:
    resp = httpx.post(f"{server.url}/metadata/workflow", params={"overwrite": "true"}, json=definition,
                      headers=server.auth_headers(), timeout=30)
    assert resp.status_code == 200, resp.text


def definitions(suffix: str) -> tuple[str, str]:
    echo, ask = f"a2a_echo_{suffix}", f"a2a_ask_{suffix}"
    common = {"version": 1, "schemaVersion": 2, "ownerEmail": "a2a@example.com",
              "metadata": {"a2a.enabled": True, "a2a.tags": ["demo"]}}
    return ({**common, "name": echo, "description": "Shouts the text back",
             "tasks": [{"name": "shout", "taskReferenceName": "shout", "type": "INLINE",
                        "inputParameters": {"evaluatorType": "javascript", "text": "${workflow.input._a2a_text}",
                                            "expression": "$.text.toUpperCase()"}}],
             "outputParameters": {"reply": "${shout.output.result}", "n": "${workflow.input.n}"}},
            {**common, "name": ask,
             "tasks": [{"name": "approve", "taskReferenceName": "approve", "type": "HUMAN"}],
             "outputParameters": {"answer": "${approve.output._a2a_text}"}})


async def client_for(server, name: str, streaming: bool):
    from a2a.client import ClientConfig, create_client

    http = httpx.AsyncClient(headers=server.auth_headers(), timeout=30)
    client = await create_client(f"{server.url}/a2a/workflow/{name}",
                                 client_config=ClientConfig(streaming=streaming, httpx_client=http))
    return client, http


def test_the_a2a_sdk_client_talks_to_a_workflow_agent(conductor_server):
    from a2a.client.card_resolver import A2ACardResolver
    from a2a.helpers.proto_helpers import new_data_part, new_message, new_text_part
    from a2a.types.a2a_pb2 import CancelTaskRequest, GetTaskRequest, Role, SendMessageRequest, TaskState
    from google.protobuf.json_format import MessageToDict

    suffix = uuid.uuid4().hex[:8]
    echo_def, ask_def = definitions(suffix)
    register(conductor_server, echo_def)
    register(conductor_server, ask_def)
    echo, ask = echo_def["name"], ask_def["name"]

    async def scenario():
        async with httpx.AsyncClient(headers=conductor_server.auth_headers(), timeout=30) as http:
            card = await A2ACardResolver(http, f"{conductor_server.url}/a2a/workflow/{echo}").get_agent_card()
        assert card.name == echo and card.description == "Shouts the text back"
        assert card.capabilities.streaming
        assert card.supported_interfaces[0].url == f"{conductor_server.url}/a2a/workflow/{echo}"

        client, http = await client_for(conductor_server, echo, streaming=True)
        try:
            message = new_message([new_text_part("hello agent"), new_data_part({"n": 3})], role=Role.ROLE_USER)
            events = [e async for e in client.send_message(SendMessageRequest(message=message))]
            assert events[0].HasField("task")
            workflow_id = events[0].task.id
            states = [e.status_update.status.state for e in events if e.HasField("status_update")]
            assert states and states[-1] == TaskState.TASK_STATE_COMPLETED, events
            assert events[-1].status_update.task_id == workflow_id
            (artifact,) = [e.artifact_update.artifact for e in events if e.HasField("artifact_update")]
            assert MessageToDict(artifact.parts[0].data) == {"reply": "HELLO AGENT", "n": 3}
            task = await client.get_task(GetTaskRequest(id=workflow_id))
            assert task.status.state == TaskState.TASK_STATE_COMPLETED
            assert MessageToDict(task.artifacts[0].parts[0].data) == {"reply": "HELLO AGENT", "n": 3}
        finally:
            await client.close()
            await http.aclose()
        wf = httpx.get(f"{conductor_server.url}/workflow/{workflow_id}", headers=conductor_server.auth_headers(),
                       timeout=30).json()
        assert wf["workflowName"] == echo and wf["status"] == "COMPLETED"

        client, http = await client_for(conductor_server, ask, streaming=False)
        try:
            first = [e async for e in client.send_message(SendMessageRequest(
                message=new_message([new_text_part("may I?")], role=Role.ROLE_USER)))]
            waiting = first[-1].task
            assert waiting.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
            got = await client.get_task(GetTaskRequest(id=waiting.id))
            assert got.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
            resumed = [e async for e in client.send_message(SendMessageRequest(
                message=new_message([new_text_part("yes")], task_id=waiting.id, role=Role.ROLE_USER)))]
            done = resumed[-1].task
            assert done.id == waiting.id and done.status.state == TaskState.TASK_STATE_COMPLETED
            assert MessageToDict(done.artifacts[0].parts[0].data) == {"answer": "yes"}

            second = [e async for e in client.send_message(SendMessageRequest(
                message=new_message([new_text_part("again")], role=Role.ROLE_USER)))][-1].task
            canceled = await client.cancel_task(CancelTaskRequest(id=second.id))
            assert canceled.status.state == TaskState.TASK_STATE_CANCELED
        finally:
            await client.close()
            await http.aclose()
        wf = httpx.get(f"{conductor_server.url}/workflow/{second.id}", headers=conductor_server.auth_headers(),
                       timeout=30).json()
        assert wf["status"] == "TERMINATED" and wf["reasonForIncompletion"] == "Canceled via A2A tasks/cancel"

    run_on_own_loop(scenario)


def test_message_stream_sends_each_event_as_it_happens(conductor_server):
    """The stream's first frame (the Task, ``working``) arrives while the execution still
    waits on its worker, before the run ends: the events are sent as they are made, not
    collected to the end (a synchronous response body under ASGI would be)."""
    import json

    suffix = uuid.uuid4().hex[:8]
    name, worker = f"a2a_slow_{suffix}", f"a2a_step_{suffix}"
    headers = conductor_server.auth_headers()
    resp = httpx.post(f"{conductor_server.url}/metadata/taskdefs", headers=headers, timeout=30,
                      json=[{"name": worker, "ownerEmail": "a2a@example.com", "retryCount": 0,
                             "responseTimeoutSeconds": 60}])
    assert resp.status_code == 200, resp.text
    register(conductor_server, {"name": name, "version": 1, "schemaVersion": 2, "ownerEmail": "a2a@example.com",
                                "metadata": {"a2a.enabled": True},
                                "tasks": [{"name": worker, "taskReferenceName": "step", "type": "SIMPLE"}],
                                "outputParameters": {"done": "${step.output.done}"}})
    request = {"jsonrpc": "2.0", "id": "1", "method": "message/stream", "params": {"message": {
        "kind": "message", "role": "user", "messageId": uuid.uuid4().hex,
        "parts": [{"kind": "text", "text": "go"}]}}}

    async def scenario():
        async with httpx.AsyncClient(headers=headers, timeout=30) as http:
            async with http.stream("POST", f"{conductor_server.url}/a2a/workflow/{name}", json=request) as resp:
                lines = resp.aiter_lines()

                async def next_frame() -> dict:
                    async for line in lines:
                        if line.startswith("data: "):
                            return json.loads(line[6:])["result"]
                    raise AssertionError("the stream ended")

                first = await asyncio.wait_for(next_frame(), 20)
                assert first["kind"] == "task" and first["status"]["state"] == "working"
                for _ in range(20):
                    got = await http.get(f"{conductor_server.url}/tasks/poll/{worker}", params={"workerid": "w1"})
                    if got.status_code == 200 and got.content:
                        break
                    await asyncio.sleep(0.5)
                polled = got.json()
                assert polled["workflowInstanceId"] == first["id"]
                done = await http.post(f"{conductor_server.url}/tasks", json={
                    "workflowInstanceId": first["id"], "taskId": polled["taskId"], "status": "COMPLETED",
                    "outputData": {"done": True}})
                assert done.status_code == 200, done.text
                frames = [await asyncio.wait_for(next_frame(), 30)]
                while not frames[-1].get("final"):
                    frames.append(await asyncio.wait_for(next_frame(), 30))
        assert frames[-1]["status"]["state"] == "completed"
        (artifact,) = [f["artifact"] for f in frames if f["kind"] == "artifact-update"]
        assert artifact["parts"][0]["data"] == {"done": True}

    run_on_own_loop(scenario)
