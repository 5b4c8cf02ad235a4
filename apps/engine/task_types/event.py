"""EVENT: publish the task's output as a message on an event queue.

The internal queue (sink ``conductor``) is built in; other queue types (``amqp:``,
``nats:``, ``kafka:`` ...) exist when an app registers them (``register_queue_type``;
``apps.brokers`` does for the brokers configured). Event names, as Conductor's
``Event.computeQueueName``: sink ``conductor`` -> ``conductor:<workflowName>:<taskRef>``;
``conductor:<x>`` -> ``conductor:<workflowName>:<x>``; any other ``conductor...`` sink
fails the task with ``Invalid / Unsupported sink specified: <sink>``. Queue types not
registered (``sqs:``, or a broker not configured) fail the task with
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

from collections.abc import Callable
from dataclasses import dataclass

from apps.engine import params
from apps.engine.state import TaskState
from apps.engine.task_types import register
from apps.engine.task_types.base import SystemTask, act_once, async_complete, finish

PUBLISH = "publish_event"
INTERNAL_QUEUE_TYPE = "conductor"


@dataclass(frozen=True)
class QueueType:
    """An event queue type other than the internal one (Conductor's EventQueueProvider).

    * ``name``: the prefix before the first ``:`` of an event (``amqp``, ``kafka`` ...);
    * ``check(uri) -> str | None``: the reason the part after the prefix names no queue
      of this type that can be used now (``None`` when it does); pure, no I/O;
    * ``syntax(uri) -> str | None``: the same for the name alone (a definition may name
      a broker before it is configured);
    * ``write(*, message_id, event, payload, now) -> bool``: record the message for
      publication inside the current transaction (an outbox row sent after commit);
      idempotent on ``message_id`` (False when already recorded); ``now`` epoch ms.
    """

    name: str
    check: Callable[[str], str | None]
    syntax: Callable[[str], str | None]
    write: Callable[..., bool]


QUEUE_TYPES: dict[str, QueueType] = {}


def register_queue_type(queue_type: QueueType) -> None:
    """Make ``queue_type`` usable as an EVENT task sink (called by an app's ``ready``)."""
    QUEUE_TYPES[queue_type.name] = queue_type


def external_queue_type(event: str) -> QueueType | None:
    """The registered queue type of an event name (``amqp:orders`` -> amqp), or None for
    the internal queue and unknown types."""
    return QUEUE_TYPES.get(event.split(":", 1)[0]) if ":" in event else None


def external_event_error(event: object) -> str | None:
    """Why an event name on a registered queue type (``amqp:...``) is malformed (its
    ``syntax``), or None: for valid ones and for every other event (the internal
    queue's names, anything not registered). For validating definitions."""
    if not isinstance(event, str):
        return None
    queue_type = external_queue_type(event)
    return queue_type.syntax(event.split(":", 1)[1]) if queue_type is not None else None


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
    """Raise SinkError unless ``name`` is on a queue type this server has (``conductor``
    or a registered one whose ``check`` accepts it), with Conductor's
    EventQueues.getQueue / Event.getQueue reason."""
    kind = name.split(":", 1)[0]
    if ":" not in name:
        error = f"Illegal event {name}"
    elif kind == INTERNAL_QUEUE_TYPE:
        return
    elif kind in QUEUE_TYPES:
        error = QUEUE_TYPES[kind].check(name.split(":", 1)[1])
        if error is None:
            return
    else:
        error = f"Unknown queue type {kind}"
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
        if task.status == "SCHEDULED":
            act_once(d, PUBLISH, task)
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
