"""The EVENT task: publishing to the internal queue (sink ``conductor``), Conductor's event
names, output and failure reasons for sinks this server does not have, asyncComplete
(docs/conductor-notes.md §5 EVENT row)."""
from __future__ import annotations

import pytest

from apps.engine.models import EventMessage
from tests.factories import simple_task, task_def, unique, workflow_def

pytestmark = pytest.mark.django_db(transaction=True)


def event_task(ref: str, sink: str | None, input_parameters: dict | None = None, **extra) -> dict:
    out = {"name": ref, "taskReferenceName": ref, "type": "EVENT", "inputParameters": input_parameters or {}}
    if sink is not None:
        out["sink"] = sink
    out.update(extra)
    return out


def tasks_by_ref(wf: dict) -> dict:
    return {t["referenceTaskName"]: t for t in wf["tasks"]}


@pytest.fixture
def worker_type(api):
    name = unique("after")
    api.register_task_defs(task_def(name))
    return name


def test_conductor_sink_publishes_the_output_and_completes(api, worker_type):
    name = unique("pub")
    api.register_workflow(workflow_def(name, [
        event_task("notify", "conductor", {"orderId": "${workflow.input.orderId}", "fixed": 1}),
        simple_task(worker_type, "after"),
    ]))
    wf_id = api.start(name, {"orderId": "o-1"}, correlationId="corr-1", taskToDomain={"x": "y"})
    wf = api.workflow(wf_id)
    task = tasks_by_ref(wf)["notify"]
    assert task["status"] == "COMPLETED"
    assert task["taskType"] == "EVENT"
    expected = {
        "orderId": "o-1", "fixed": 1, "sink": "conductor", "asyncComplete": False,
        "workflowInstanceId": wf_id, "workflowType": name, "workflowVersion": 1,
        "correlationId": "corr-1", "taskToDomain": {"x": "y"},
        "event_produced": f"conductor:{name}:notify",
    }
    assert task["outputData"] == expected
    # the next task is scheduled in the same decide
    assert tasks_by_ref(wf)["after"]["status"] == "SCHEDULED"
    message = EventMessage.objects.get(pk=task["taskId"])
    assert message.event == f"conductor:{name}:notify"
    assert message.payload == expected
    assert message.processed_time is None


def test_conductor_queue_sink_is_scoped_by_workflow_name(api):
    name = unique("pub")
    api.register_workflow(workflow_def(name, [event_task("notify", "conductor:orders")]))
    wf = api.workflow(api.start(name))
    assert wf["status"] == "COMPLETED"
    task = tasks_by_ref(wf)["notify"]
    assert task["outputData"]["event_produced"] == f"conductor:{name}:orders"
    assert EventMessage.objects.get(pk=task["taskId"]).event == f"conductor:{name}:orders"


def test_sink_may_come_from_input_parameters_and_be_resolved(api):
    name = unique("pub")
    api.register_workflow(workflow_def(name, [event_task("notify", None, {"sink": "${workflow.input.sink}"})]))
    wf = api.workflow(api.start(name, {"sink": "conductor:dynamic"}))
    assert tasks_by_ref(wf)["notify"]["outputData"]["event_produced"] == f"conductor:{name}:dynamic"


@pytest.mark.parametrize("sink, reason", [
    ("sqs:my_queue", "Error loading queue:sqs:my_queue, for task:{task_id}, error: Unknown queue type sqs"),
    # a broker queue type whose broker is not configured (apps.brokers, docs/events.md)
    ("kafka:topic", "Error loading queue:kafka:topic, for task:{task_id}, error: Unknown queue type kafka: "
                    "the kafka event queue is not configured (CONDUCTOR_KAFKA_BOOTSTRAP_SERVERS)"),
    ("plainname", "Error loading queue:plainname, for task:{task_id}, error: Illegal event plainname"),
    ("conductorx", "Invalid / Unsupported sink specified: conductorx"),
])
def test_unsupported_sinks_fail_the_task(api, sink, reason):
    name = unique("pub")
    api.register_workflow(workflow_def(name, [event_task("notify", sink)]))
    wf = api.workflow(api.start(name))
    task = tasks_by_ref(wf)["notify"]
    assert task["status"] == "FAILED"
    assert task["reasonForIncompletion"] == reason.format(task_id=task["taskId"])
    assert wf["status"] == "FAILED"
    assert not EventMessage.objects.exists()


def test_async_complete_publishes_and_stays_in_progress(api, worker_type):
    name = unique("pub")
    api.register_workflow(workflow_def(name, [event_task("notify", "conductor", asyncComplete=True),
                                              simple_task(worker_type, "after")]))
    wf_id = api.start(name)
    task = tasks_by_ref(api.workflow(wf_id))["notify"]
    assert task["status"] == "IN_PROGRESS"
    assert task["outputData"]["asyncComplete"] is True
    assert EventMessage.objects.filter(pk=task["taskId"]).exists()
    # completed from outside, the workflow moves on
    api.ok(api.post(f"/tasks/{wf_id}/notify/COMPLETED", {"done": True}))
    wf = api.workflow(wf_id)
    assert tasks_by_ref(wf)["notify"]["status"] == "COMPLETED"
    assert tasks_by_ref(wf)["after"]["status"] == "SCHEDULED"
    assert EventMessage.objects.count() == 1


def test_the_decider_asks_for_publication_without_touching_the_database():
    """Pure decide: the EVENT task stays SCHEDULED with its output computed and asks for
    the ``publish_event`` action; the executor performs it inside the transaction."""
    from tests.engine.pure.sim import Sim

    sim = Sim(workflow_def("pure", [event_task("notify", "conductor:x", {"a": "${workflow.input.a}"})]),
              input={"a": 5})
    task = sim.task("notify")
    assert task.status == "SCHEDULED"
    assert task.output_data["event_produced"] == "conductor:pure:x"
    assert task.output_data["a"] == 5
    assert [(a.kind, a.task.task_id) for a in sim.outcomes[0].actions] == [("publish_event", task.task_id)]
    # deciding again does not ask twice within one decide, and re-asks while unpublished
    again = sim.decide()
    assert [a.kind for a in again.actions] == ["publish_event"]
