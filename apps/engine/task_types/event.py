"""EVENT: publish the task's output as a message on an event queue.

Only the internal queue (sink ``conductor``) exists here. Event names, as Conductor's
``Event.computeQueueName``: sink ``conductor`` -> ``conductor:<workflowName>:<taskRef>``;
``conductor:<x>`` -> ``conductor:<workflowName>:<x>``; any other ``conductor...`` sink
fails the task with ``Invalid / Unsupported sink specified: <sink>``. Other queue types
(``sqs:``, ``kafka:``, ``nats:``, ``amqp:`` ...) are not available and fail the task with
Conductor's ``Error loading queue:<sink>, for task:<taskId>, error: Unknown queue type
<type>`` (``Illegal event <sink>`` without a ``:``).

The input is the resolved ``inputParameters`` plus the WorkflowTask's ``sink`` and
``asyncComplete`` (EventTaskMapper). Output (also the message payload): the input plus
``workflowInstanceId``, ``workflowType``, ``workflowVersion``, ``correlationId``,
``taskToDomain`` and ``event_produced`` (the event name). The message id is the task id,
as Conductor's.

Publishing is transactional: ``start`` computes the output and asks for the inline action
``publish_event``; the executor runs ``apply_inline`` inside the deciding transaction,
which inserts the ``EventMessage`` row (processed after commit by
``apps.engine.event_handlers``; written by ``apps.engine.event_queue``) and completes the task, or leaves it IN_PROGRESS with
``asyncComplete`` (completed later through the task update API or an event handler).
The task is SCHEDULED exactly while its message is not yet written.
Source: Conductor ``Event`` system task and ``EventQueues.getQueue``.
"""
from __future__ import annotations

from apps.engine import params
from apps.engine.state import TaskState
from apps.engine.task_types import register
from apps.engine.task_types.base import SystemTask, async_complete, finish

PUBLISH = "publish_event"
INTERNAL_QUEUE_TYPE = "conductor"


class SinkError(Exception):
    """The sink names no queue this server can publish to; ``str()`` is the task reason."""


def queue_name(sink: object, workflow_name: str, task: TaskState) -> str:
    """The event name for a resolved ``sink`` (Conductor's computeQueueName). Raises
    SinkError when the sink is missing or is a ``conductor...`` sink of another shape."""
    if not isinstance(sink, str) or not sink:
        raise SinkError("No sink specified in task")
    if not sink.startswith(INTERNAL_QUEUE_TYPE):
        return sink
    if sink == INTERNAL_QUEUE_TYPE:
        return f"{INTERNAL_QUEUE_TYPE}:{workflow_name}:{task.reference_task_name}"
    if sink.startswith(INTERNAL_QUEUE_TYPE + ":"):
        return f"{INTERNAL_QUEUE_TYPE}:{workflow_name}:{sink.replace(INTERNAL_QUEUE_TYPE + ':', '')}"
    raise SinkError(f"Invalid / Unsupported sink specified: {sink}")


def check_queue(name: str, task: TaskState) -> None:
    """Raise SinkError unless ``name`` is on a queue type this server has (only
    ``conductor``), with Conductor's EventQueues.getQueue / Event.getQueue reason."""
    if ":" not in name:
        error = f"Illegal event {name}"
    elif name.split(":", 1)[0] != INTERNAL_QUEUE_TYPE:
        error = f"Unknown queue type {name.split(':', 1)[0]}"
    else:
        return
    raise SinkError(f"Error loading queue:{name}, for task:{task.task_id}, error: {error}")


@register
class Event(SystemTask):
    """EVENT: ``start`` resolves the sink and output and asks for ``publish_event``
    (or fails the task for an unusable sink); ``apply_inline`` writes the message."""

    type_name = "EVENT"

    def start(self, d, task: TaskState) -> None:
        wf = d.wf
        # EventTaskMapper: the WorkflowTask's sink and asyncComplete join the input.
        workflow_task = d.workflow_task_of(task)
        if workflow_task.get("sink") is not None or "sink" not in task.input_data:
            task.input_data["sink"] = params.resolve_value(workflow_task.get("sink"), d.document())
        task.input_data["asyncComplete"] = params.resolve_value(workflow_task.get("asyncComplete", False),
                                                                d.document())
        output = dict(task.input_data)
        output.update({
            "workflowInstanceId": wf.workflow_id,
            "workflowType": wf.workflow_name,
            "workflowVersion": wf.workflow_version,
            "correlationId": wf.correlation_id,
            "taskToDomain": wf.task_to_domain or {},
        })
        task.output_data = output
        try:
            output["event_produced"] = queue_name(task.input_data.get("sink"), wf.workflow_name, task)
            check_queue(output["event_produced"], task)
        except SinkError as exc:
            finish(d, task, "FAILED", output=output, reason=str(exc))
            return
        task.update_time = d.now
        d.touch(task)
        d.act(PUBLISH, task)

    def execute(self, d, task: TaskState) -> bool:
        # Recovery: a SCHEDULED EVENT task has not published yet (the action was lost).
        if task.status == "SCHEDULED" and not any(a.task is task for a in d.outcome.actions):
            d.act(PUBLISH, task)
        return False

    # --- executor side (inside the deciding transaction) --------------------------------

    def apply_inline(self, wf, outcome, action, now: int, services) -> bool:
        """Write the task's message and complete the task (IN_PROGRESS with
        ``asyncComplete``). Returns True when the task changed."""
        task = action.task
        if action.kind != PUBLISH or task.status != "SCHEDULED":
            return False
        services.event_message_insert(message_id=task.task_id, event=task.output_data["event_produced"],
                                      payload=task.output_data, now=now)
        task.status = "IN_PROGRESS" if async_complete(task) else "COMPLETED"
        task.start_time = task.start_time or now
        task.update_time = now
        if task.status == "COMPLETED":
            task.end_time = now
        return True
