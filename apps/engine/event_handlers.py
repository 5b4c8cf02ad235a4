"""Event processing: the EventHandlers that consume the internal event queue.

Messages (``EventMessage`` rows) are written by ``apps.engine.event_queue``; after commit
each is handed to the django-q2 cluster (``process_event_message_job``, here);
``event_messages_sweep`` picks up messages whose job was lost or failed transiently.

Processing one message (Conductor's DefaultEventProcessor + SimpleActionProcessor):
1. claim it by compare-and-set on ``lease_until`` (so two workers never run it at once);
2. a ``_default_queue:<STATUS>`` message first completes/fails the task it names
   (Conductor's DefaultEventQueueProcessor);
3. every active EventHandler whose ``event`` equals the message's event is evaluated: an
   empty ``condition`` holds; otherwise the condition is evaluated (JavaScript, or the
   handler's ``evaluatorType``) over ``$`` = the payload with inline JSON strings
   expanded, true being boolean true or a number > 0. A false condition records a
   SKIPPED execution; an error in it a FAILED one;
4. each action runs with its fields ``${...}``-resolved against the payload (JSONPath from
   the payload root, as ``ParametersUtils.replace``), through engine services only, and
   is recorded as one ``EventExecution`` (COMPLETED with the action's output, or FAILED
   with ``{"exception": reason}``) in the same transaction as its effect, so an action
   runs at most once per message and handler even when a message is delivered again;
5. the message is marked processed (``processed_time``).

Actions: ``start_workflow`` (``executor.workflow_start``; input gets
``conductor.event.messageId`` and ``conductor.event.name``; output ``{workflowId}``),
``complete_task`` / ``fail_task`` (``executor.task_update`` of the task named by
``taskId`` or by ``workflowId`` + ``taskRefName``; the task output is the resolved
details plus ``conductor.event.messageId``/``conductor.event.name``),
``terminate_workflow`` (``executor.workflow_terminate``) and ``update_workflow_variables``
(``executor.workflow_variables_update``). Any other action records FAILED with Conductor's
``Action not supported <action> for event <event>``.

Differences from Conductor, on purpose: handlers are matched when a message is processed
(Conductor listens only on queues of active handlers; messages for an event with no
active handler wait in its queue), so a message with no matching handler is simply
marked processed; a condition that cannot be evaluated records a FAILED execution instead
of leaving the message to be redelivered forever; transient failures (database busy,
``Transient``) are retried by a later sweep up to ``CONDUCTOR["EVENT_MESSAGE_MAX_ATTEMPTS"]`` claims, then recorded
FAILED.
Times are epoch ms from ``apps.core.clock``.
"""
from __future__ import annotations

import copy
import json
import logging
from typing import Any

from django.conf import settings
from django.db import IntegrityError, InterfaceError, OperationalError, transaction
from django.db.models import F

from apps.core.clock import now_ms
from apps.core.errors import ConductorError, InvalidInput, NotFound, Transient
from apps.engine import event_queue, executor, params, store
from apps.engine.evaluators import EvaluationError, evaluate, evaluate_js, truthy
from apps.engine.models import EventExecution, EventMessage, TaskExecution
from apps.engine.representation import event_execution_json
from apps.metadata.environment import WorkflowEnvironment

log = logging.getLogger(__name__)


class RetryLater(Exception):
    """A transient failure: leave the message for a later attempt."""


# --- processing ---------------------------------------------------------------------------

def process_event_message_job(message_id: str) -> bool:
    """Process one message (the django-q2 job; also called by the sweep). Returns True
    if this call processed it, False if it was already processed, is claimed by another
    worker, or failed transiently (it is then retried after ``CONDUCTOR["EVENT_MESSAGE_RETRY_DELAY_MS"]`` x attempts,
    by the sweep). Never raises for handler or action errors: they are recorded as
    ``EventExecution`` rows."""
    now = now_ms()
    claimed = EventMessage.objects.filter(pk=message_id, processed_time__isnull=True, lease_until__lt=now).update(
        lease_until=now + settings.CONDUCTOR["EVENT_MESSAGE_LEASE_MS"], attempts=F("attempts") + 1)
    if claimed != 1:
        return False
    message = EventMessage.objects.get(pk=message_id)
    final = message.attempts >= settings.CONDUCTOR["EVENT_MESSAGE_MAX_ATTEMPTS"]
    try:
        _process(message, final)
    except RetryLater as exc:
        log.warning("event message %s (%s): transient failure, attempt %d: %s",
                    message_id, message.event, message.attempts, exc.__cause__ or exc)
        EventMessage.objects.filter(pk=message_id, processed_time__isnull=True).update(
            lease_until=now_ms() + settings.CONDUCTOR["EVENT_MESSAGE_RETRY_DELAY_MS"] * message.attempts)
        return False
    EventMessage.objects.filter(pk=message_id, processed_time__isnull=True).update(
        processed_time=now_ms(), lease_until=0)
    return True


def event_messages_sweep(now: int | None = None, limit: int = 50) -> int:
    """Process pending messages older than ``CONDUCTOR["EVENT_SWEEP_GRACE_MS"]`` whose lease has expired
    (their job was lost, or they failed transiently), oldest first, at most ``limit``.
    Returns how many were processed. Safe to run on several machines at once (each
    message is claimed by compare-and-set). Meant for the sweeper loop."""
    now = now if now is not None else now_ms()
    ids = list(EventMessage.objects.filter(processed_time__isnull=True, created_time__lte=now - settings.CONDUCTOR["EVENT_SWEEP_GRACE_MS"],
                                           lease_until__lt=now)
               .order_by("created_time").values_list("message_id", flat=True)[:limit])
    processed = 0
    for message_id in ids:
        try:
            if process_event_message_job(message_id):
                processed += 1
        except Exception:  # noqa: BLE001 - one broken message must not stop the sweep
            log.exception("event sweep failed on message %s", message_id)
    return processed


def _process(message: EventMessage, final: bool) -> None:
    from apps.metadata.event_services import event_handler_list_for_event

    transient = False
    if message.event.startswith(event_queue.DEFAULT_QUEUE_PREFIX):
        try:
            _default_queue_update(message)
        except RetryLater:
            if not final:
                transient = True
    for handler in event_handler_list_for_event(event=message.event, active_only=True):
        try:
            _run_handler(message, handler, final)
        except RetryLater:
            transient = True
    if transient:
        raise RetryLater(f"message {message.message_id}")


def _is_transient(exc: BaseException) -> bool:
    """Failures worth another attempt: a busy/deadlocked database, a lost race, Transient."""
    return isinstance(exc, (Transient, OperationalError, InterfaceError, store.StaleState))


def _record(message: EventMessage, handler: dict, index: int, action: str, status: str, output: dict) -> None:
    """Insert one EventExecution in the current transaction (raises IntegrityError if
    that (message, handler, index) is already recorded)."""
    EventExecution.objects.create(message_id=message.message_id, handler_name=handler["name"],
                                  event=handler.get("event") or message.event, action_index=index,
                                  action=action or "", status=status, output=output, created_time=now_ms())


def _record_once(message: EventMessage, handler: dict, index: int, action: str, status: str, output: dict) -> None:
    try:
        with transaction.atomic():
            if not EventExecution.objects.filter(message_id=message.message_id, handler_name=handler["name"],
                                                 action_index=index).exists():
                _record(message, handler, index, action, status, output)
    except IntegrityError:
        pass  # recorded by another worker


def condition_holds(condition: str | None, evaluator_type: str | None, payload: Any) -> bool:
    """Whether a handler's condition holds for a payload (Conductor's executeEvent): an
    empty condition holds; ``evaluatorType`` ``javascript``/``graaljs``/``value-param``
    selects that evaluator, anything else JavaScript; ``$`` is the payload with inline
    JSON strings expanded; true is boolean true or a number > 0.
    Errors: EvaluationError from the evaluator."""
    if not condition:
        return True
    bindings = expand(copy.deepcopy(payload))
    if evaluator_type and evaluator_type.lower() in ("javascript", "graaljs", "value-param"):
        result = evaluate(evaluator_type, condition, bindings)
    else:
        result = evaluate_js(condition, bindings)
    return truthy(result)


def _run_handler(message: EventMessage, handler: dict, final: bool) -> None:
    condition = handler.get("condition")
    try:
        holds = condition_holds(condition, handler.get("evaluatorType"), message.payload)
    except EvaluationError as exc:
        _record_once(message, handler, -1, "", "FAILED", {"exception": str(exc), "condition": condition})
        return
    if not holds:
        _record_once(message, handler, -1, "", "SKIPPED", {"msg": message.payload, "condition": condition})
        return
    transient = False
    for index, action in enumerate(handler.get("actions") or []):
        try:
            _run_action(message, handler, index, action, final)
        except RetryLater:
            transient = True
    if transient:
        raise RetryLater(handler["name"])


def _run_action(message: EventMessage, handler: dict, index: int, action: dict, final: bool) -> None:
    """Run one action and record it in one transaction (effect and record commit
    together; a record that already exists means the action ran before)."""
    kind = action.get("action") if isinstance(action, dict) else None
    try:
        with transaction.atomic():
            if EventExecution.objects.filter(message_id=message.message_id, handler_name=handler["name"],
                                             action_index=index).exists():
                log.info("duplicate delivery of message %s to handler %s", message.message_id, handler["name"])
                return
            try:
                with transaction.atomic():
                    output = execute_action(action, message.payload, message.event, message.message_id)
                status = "COMPLETED"
            except Exception as exc:  # noqa: BLE001 - every failure is recorded on the execution
                if _is_transient(exc) and not final:
                    raise RetryLater(str(exc)) from exc
                reason = exc.message if isinstance(exc, ConductorError) else (str(exc) or exc.__class__.__name__)
                if not isinstance(exc, ConductorError):
                    log.exception("event action %s of handler %s failed on message %s", kind, handler["name"],
                                  message.message_id)
                status, output = "FAILED", {"exception": reason}
            _record(message, handler, index, kind or "", status, output)
    except IntegrityError:
        # Another worker recorded this action first: its effect stands, ours was rolled back.
        log.info("action %d of handler %s already ran for message %s", index, handler["name"], message.message_id)


# --- actions ---------------------------------------------------------------------------------

class UnsupportedAction(ConductorError):
    """An action this server does not run (Conductor's UnsupportedOperationException)."""


def execute_action(action: dict, payload: Any, event: str, message_id: str) -> dict:
    """Run one EventHandler action for one message through the engine services and
    return its output (Conductor's SimpleActionProcessor.execute).

    ``payload`` is the message JSON (expanded with ``expandInlineJSON``); ``${...}`` in
    the action's fields are JSONPath expressions from its root.
    Errors: whatever the engine service raises (ConductorError subclasses), and
    UnsupportedAction ``Action not supported %s for event %s``.
    """
    if not isinstance(action, dict):
        raise UnsupportedAction(f"Action not supported None for event {event}")
    kind = action.get("action")
    if action.get("expandInlineJSON"):
        payload = expand(copy.deepcopy(payload))
    doc = PayloadDocument(payload)
    if kind == "start_workflow":
        return _start_workflow(action.get("start_workflow"), doc, event, message_id)
    if kind in ("complete_task", "fail_task"):
        return _update_task(kind, action.get(kind), doc, event, message_id)
    if kind == "terminate_workflow":
        return _terminate_workflow(action.get("terminate_workflow"), doc)
    if kind == "update_workflow_variables":
        return _update_variables(action.get("update_workflow_variables"), doc)
    raise UnsupportedAction(f"Action not supported {kind} for event {event}")


def _details(value: Any, kind: str) -> dict:
    if not isinstance(value, dict):
        raise InvalidInput(f"Missing '{kind}' in action {kind}")
    return value


def _text(value: Any) -> str | None:
    """A resolved value as Conductor reads it into a String field (Java toString)."""
    if value is None or isinstance(value, str):
        return value
    return params.java_string(value)


def _start_workflow(details: Any, doc: "PayloadDocument", event: str, message_id: str) -> dict:
    details = _details(details, "start_workflow")
    workflow_input = params.resolve_value(details.get("input") or {}, doc)
    if not isinstance(workflow_input, dict):
        raise InvalidInput("start_workflow input must be a JSON object")
    correlation_id = details.get("correlationId")
    if correlation_id is not None:
        resolved = params.resolve_value(correlation_id, doc)
        correlation_id = _text(resolved) if resolved is not None else correlation_id
    workflow_input["conductor.event.messageId"] = message_id
    workflow_input["conductor.event.name"] = event
    name = _text(params.resolve_value(details.get("name"), doc))
    version = params.resolve_value(details.get("version"), doc)
    if version is not None and not isinstance(version, int):
        try:
            version = int(str(version))
        except ValueError:
            raise InvalidInput(f"Invalid workflow version: {version}") from None
    task_to_domain = params.resolve_value(details.get("taskToDomain"), doc) or None
    workflow_id = executor.workflow_start(name=name, version=version, input=workflow_input,
                                          correlation_id=correlation_id, task_to_domain=task_to_domain,
                                          event=event, not_found="name")
    return {"workflowId": workflow_id}


def _find_task(workflow_id: str | None, task_id: str | None, task_ref_name: str | None) -> tuple[str, str] | None:
    """``(workflow id, task id)`` of the task an action names, or None. By ``taskId``; else
    by ``workflowId`` + ``taskRefName`` (a loop task by its reference without ``__N``,
    the latest iteration; a pending attempt before a finished one).
    Errors: NotFound ``No such workflow found by id: %s``."""
    if task_id:
        row = TaskExecution.objects.filter(pk=task_id).values_list("workflow_id", "task_id").first()
        return (row[0], row[1]) if row else None
    if not (workflow_id and task_ref_name):
        return None
    wf = store.load_workflow(workflow_id)
    if wf is None:
        raise NotFound(f"No such workflow found by id: {workflow_id}")
    matching = [t for t in wf.tasks if t.reference_task_name == task_ref_name
                or params.strip_iteration(t.reference_task_name) == task_ref_name]
    if not matching:
        return None
    pending = [t for t in matching if not t.terminal]
    task = (pending or matching)[-1]
    return wf.workflow_id, task.task_id


def _update_task(kind: str, details: Any, doc: "PayloadDocument", event: str, message_id: str) -> dict:
    details = _details(details, kind)
    values = {"workflowId": details.get("workflowId"), "taskId": details.get("taskId"),
              "taskRefName": details.get("taskRefName"), "reasonForIncompletion": details.get("reasonForIncompletion")}
    values.update(details.get("output") or {})
    replaced = params.resolve_value(values, doc)
    workflow_id = _text(replaced.get("workflowId"))
    task_id = _text(replaced.get("taskId"))
    task_ref_name = _text(replaced.get("taskRefName"))
    target = _find_task(workflow_id, task_id, task_ref_name)
    if target is None:
        replaced["error"] = (f"No task found with taskId: {params.java_string(task_id)}, reference name: "
                             f"{params.java_string(task_ref_name)}, workflowId: {params.java_string(workflow_id)}")
        return replaced
    status = "COMPLETED" if kind == "complete_task" else "FAILED"
    output = dict(replaced)
    output["conductor.event.messageId"] = message_id
    output["conductor.event.name"] = event
    result = {"workflowInstanceId": target[0], "taskId": target[1], "status": status, "outputData": output}
    reason = _text(replaced.get("reasonForIncompletion"))
    if status == "FAILED" and reason is not None:
        result["reasonForIncompletion"] = reason
    executor.task_update(task_result=result)
    return replaced


def _terminate_workflow(details: Any, doc: "PayloadDocument") -> dict:
    details = _details(details, "terminate_workflow")
    replaced = params.resolve_value(
        {"workflowId": details.get("workflowId"), "terminationReason": details.get("terminationReason")}, doc)
    workflow_id = _text(replaced.get("workflowId"))
    if not workflow_id:
        raise InvalidInput("Missing workflowId in action terminate_workflow")
    executor.workflow_terminate(workflow_id=workflow_id, reason=_text(replaced.get("terminationReason")))
    return replaced


def _update_variables(details: Any, doc: "PayloadDocument") -> dict:
    details = _details(details, "update_workflow_variables")
    replaced = params.resolve_value({"workflowId": details.get("workflowId"),
                                     "variables": details.get("variables") or {},
                                     "appendArray": details.get("appendArray")}, doc)
    workflow_id = _text(replaced.get("workflowId"))
    if not workflow_id:
        raise InvalidInput("Missing workflowId in action update_workflow_variables")
    variables = executor.workflow_variables_update(workflow_id=workflow_id, variables=replaced.get("variables"),
                                          append_array=bool(replaced.get("appendArray")))
    return {"workflowId": workflow_id, "variables": variables}




# --- the default event queue ------------------------------------------------------------------

def _default_queue_update(message: EventMessage) -> None:
    """Complete or fail the pending task a default-queue message names (Conductor's
    DefaultEventQueueProcessor): by ``taskId``; else by ``taskRefName`` (without loop
    suffix); with neither, the first pending WAIT task. The task output gets the payload
    merged in. Bad or stale messages are logged and dropped."""
    status = message.event[len(event_queue.DEFAULT_QUEUE_PREFIX):]
    payload = message.payload if isinstance(message.payload, dict) else {}
    external = payload.get("externalId")
    if isinstance(external, str):
        try:
            external = json.loads(external)
        except ValueError:
            external = None
    if not isinstance(external, dict) or not external.get("workflowId"):
        log.error("no externalId/workflowId in default-queue message %s: %s", message.message_id, payload)
        return
    workflow_id = external["workflowId"]
    task_id = external.get("taskId")
    task_ref_name = external.get("taskRefName")
    wf = store.load_workflow(workflow_id)
    if wf is None:
        log.error("default-queue message %s: no workflow %s", message.message_id, workflow_id)
        return
    pending = [t for t in wf.tasks if not t.terminal]
    if task_id:
        candidates = [t for t in pending if t.task_id == task_id]
    elif not task_ref_name:
        candidates = [t for t in pending if t.task_type == "WAIT"]
    else:
        candidates = [t for t in pending if params.strip_iteration(t.reference_task_name) == task_ref_name]
    if not candidates:
        log.error("default-queue message %s: no pending task (workflow %s, ref %s, id %s)",
                  message.message_id, workflow_id, task_ref_name, task_id)
        return
    task = candidates[0]
    output = dict(task.output_data or {})
    output.update(payload)
    try:
        executor.task_update(task_result={"workflowInstanceId": workflow_id, "taskId": task.task_id,
                                          "status": status, "outputData": output})
    except Exception as exc:  # noqa: BLE001 - transient ones are retried, others dropped as Conductor does
        if _is_transient(exc):
            raise RetryLater(str(exc)) from exc
        log.error("default-queue message %s: %s", message.message_id, exc)


# --- helpers ---------------------------------------------------------------------------------

def expand(value: Any) -> Any:
    """Conductor's JsonUtils.expand: strings inside maps and lists that hold JSON objects
    or arrays (trimmed text starting with ``{`` or ``[``) are replaced by the parsed
    value; a top-level string is parsed when it is JSON. Mutates and returns ``value``."""
    if isinstance(value, dict):
        for key, item in value.items():
            value[key] = _expand_item(item)
        return value
    if isinstance(value, list):
        for i, item in enumerate(value):
            value[i] = _expand_item(item)
        return value
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _expand_item(item: Any) -> Any:
    if isinstance(item, str):
        if item.strip().startswith(("{", "[")):
            try:
                return json.loads(item)
            except ValueError:
                return item
        return item
    if isinstance(item, (dict, list)):
        return expand(item)
    return item


class PayloadDocument(params.Document):
    """The resolution document of an event action: ``${a.b}`` is the JSONPath ``$.a.b``
    on the message payload (Conductor's ``ParametersUtils.replace(input, payload)``).
    Missing paths resolve to null."""

    __slots__ = ("payload",)

    def __init__(self, payload: Any):
        super().__init__(None, WorkflowEnvironment(snapshot=False))  # no workflow: every entry is read from the payload
        self.payload = payload if isinstance(payload, dict) else {}

    def entry(self, head: str) -> Any:
        return self.payload.get(head)


def event_execution_list(*, message_id: str | None = None, handler_name: str | None = None) -> list[dict]:
    """Recorded executions (oldest first), filtered by message and/or handler name."""
    qs = EventExecution.objects.order_by("id")
    if message_id is not None:
        qs = qs.filter(message_id=message_id)
    if handler_name is not None:
        qs = qs.filter(handler_name=handler_name)
    return [event_execution_json(row) for row in qs]
