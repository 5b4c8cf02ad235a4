"""Writes and reads of EventHandlers (``/api/event``).

Shapes: handlers in and out are Conductor's EventHandler JSON: ``{name, event,
condition?, evaluatorType?, actions: [Action], active}`` where an Action is ``{action,
start_workflow?, complete_task?, fail_task?, expandInlineJSON, terminate_workflow?,
update_workflow_variables?, start_agent?}`` (snake_case action keys, as Conductor names
them). Unknown keys are dropped (Jackson ignores them); ``active`` defaults to False.
Times are epoch ms from the clock.
Errors: ``InvalidInput`` (400: bean validation with ``validationErrors``), ``Conflict``
(409) and ``NotFound`` (404) with Conductor's texts.
Source: EventResource, EventService (``@Valid EventHandler``), MetadataServiceImpl and the
SQL EventHandler DAOs (SqliteEventHandlerMetadataDAO, PostgresMetadataDAO).
"""
from __future__ import annotations

from typing import Any

from django.db import IntegrityError, transaction

from apps.core.clock import now_ms
from apps.core.errors import Conflict, InvalidInput, NotFound, validation_failed
from apps.core.fields import length_errors, name_errors
from apps.engine.evaluators import syntax_error
from apps.engine.task_types.event import external_event_error
from apps.metadata.models import EventHandler

# Conductor's EventHandler.Action.Type.
ACTION_TYPES = ("start_workflow", "complete_task", "fail_task", "terminate_workflow",
                "update_workflow_variables", "start_agent")

_START_WORKFLOW_KEYS = ("name", "version", "correlationId", "input", "taskToDomain")
_TASK_DETAILS_KEYS = ("workflowId", "taskRefName", "output", "taskId", "reasonForIncompletion")
_TERMINATE_KEYS = ("workflowId", "terminationReason")
_UPDATE_VARIABLES_KEYS = ("workflowId", "variables", "appendArray")


def _empty(value: Any) -> bool:
    return value is None or (isinstance(value, str) and value == "")


def validate_event_handler(handler: Any, path: str) -> list[dict]:
    """Conductor's bean validation of an EventHandler; returns ``[{path, message,
    invalidValue?}]`` (empty when valid). ``path`` is the method argument, e.g.
    ``addEventHandler.arg0``. Messages: ``Missing event handler name``, ``Missing event
    location``, ``No actions specified. Please specify at-least one action`` (plus
    ``must not be null`` for an explicit ``"actions": null``)."""
    if handler is None:
        return [{"path": path, "message": "EventHandler cannot be null."}]
    if not isinstance(handler, dict):
        raise InvalidInput("EventHandler must be a JSON object")
    errors: list[dict] = []
    for key, message in (("name", "Missing event handler name"), ("event", "Missing event location")):
        value = handler.get(key)
        if _empty(value):
            error = {"path": f"{path}.{key}", "message": message}
            if value is not None:
                error["invalidValue"] = value
            errors.append(error)
        elif not isinstance(value, str):
            raise InvalidInput(f"EventHandler {key} must be a string")
        else:  # a name is one URL path segment (DELETE /api/event/{name}), as for definitions
            check = name_errors if key == "name" else length_errors
            errors += check(value, f"metadata.EventHandler.{key}", f"{path}.{key}")
            problem = external_event_error(value) if key == "event" else None
            if problem:  # a broker queue (amqp:, nats:, kafka: ...) that cannot be used
                errors.append({"path": f"{path}.event", "message": problem, "invalidValue": value})
    errors += length_errors(handler.get("evaluatorType"), "metadata.EventHandler.evaluator_type",
                            f"{path}.evaluatorType")
    errors += condition_errors(handler.get("condition"), handler.get("evaluatorType"), f"{path}.condition")
    actions = handler.get("actions", [])
    if actions is None:
        errors.append({"path": f"{path}.actions", "message": "must not be null"})
    if not actions:
        errors.append({"path": f"{path}.actions",
                       "message": "No actions specified. Please specify at-least one action"})
    elif not isinstance(actions, list):
        raise InvalidInput("EventHandler actions must be a JSON array")
    else:
        for action in actions:
            if not isinstance(action, dict):
                raise InvalidInput("Each EventHandler action must be a JSON object")
            kind = action.get("action")
            if kind is not None and kind not in ACTION_TYPES:
                raise InvalidInput(f"Invalid action: {kind}. Must be one of {', '.join(ACTION_TYPES)}")
    return errors


def condition_errors(condition: Any, evaluator_type: Any, path: str) -> list[dict]:
    """A handler's ``condition`` must be a string and, unless ``evaluatorType`` is
    ``value-param`` (a key, not a script), a JavaScript expression that parses: one that
    does not would fail every message of the event (``evaluators.syntax_error``)."""
    if condition is None or condition == "":
        return []
    if not isinstance(condition, str):
        return [{"path": path, "message": "condition must be a string"}]
    if isinstance(evaluator_type, str) and evaluator_type.lower() == "value-param":
        return []
    problem = syntax_error(condition)
    if problem:
        return [{"path": path, "message": f"condition is not a valid expression: {problem}",
                 "invalidValue": condition[:200]}]
    return []


def _pick(value: Any, keys: tuple[str, ...], defaults: dict | None = None) -> Any:
    if not isinstance(value, dict):
        return value
    out = {}
    for key in keys:
        if value.get(key) is not None:
            out[key] = value[key]
        elif defaults and key in defaults:
            out[key] = defaults[key]
    return out


def normalize_action(action: dict) -> dict:
    """An Action with Conductor's fields only, in Conductor's order, ``expandInlineJSON``
    defaulted to False and the ``input``/``output`` maps defaulted to ``{}``."""
    out: dict[str, Any] = {}
    if action.get("action") is not None:
        out["action"] = action["action"]
    if action.get("start_workflow") is not None:
        out["start_workflow"] = _pick(action["start_workflow"], _START_WORKFLOW_KEYS, {"input": {}})
    for key in ("complete_task", "fail_task"):
        if action.get(key) is not None:
            out[key] = _pick(action[key], _TASK_DETAILS_KEYS, {"output": {}})
    out["expandInlineJSON"] = bool(action.get("expandInlineJSON") or False)
    if action.get("terminate_workflow") is not None:
        out["terminate_workflow"] = _pick(action["terminate_workflow"], _TERMINATE_KEYS)
    if action.get("update_workflow_variables") is not None:
        out["update_workflow_variables"] = _pick(action["update_workflow_variables"], _UPDATE_VARIABLES_KEYS)
    if action.get("start_agent") is not None:
        out["start_agent"] = action["start_agent"]
    return out


def normalize_event_handler(handler: dict) -> dict:
    """The EventHandler JSON as stored and returned: ``name, event, condition?, actions,
    active, evaluatorType?`` (Conductor's field order; nulls omitted)."""
    out: dict[str, Any] = {"name": handler["name"], "event": handler["event"]}
    if handler.get("condition") is not None:
        out["condition"] = handler["condition"]
    out["actions"] = [normalize_action(a) for a in handler.get("actions") or []]
    out["active"] = bool(handler.get("active") or False)
    if handler.get("evaluatorType") is not None:
        out["evaluatorType"] = handler["evaluatorType"]
    return out


def _columns(definition: dict) -> dict:
    return {
        "event": definition["event"],
        "condition": definition.get("condition") or "",
        "evaluator_type": definition.get("evaluatorType") or "",
        "actions": definition["actions"],
        "active": definition["active"],
        "definition": definition,
    }


def _checked(handler: Any, path: str) -> dict:
    errors = validate_event_handler(handler, path)
    if errors:
        raise validation_failed(errors)
    return normalize_event_handler(handler)


def event_handler_create(*, handler: Any) -> None:
    """Register a new EventHandler (``POST /api/event``).

    Errors: validation 400 (path ``addEventHandler.arg0...``); Conflict
    ``EventHandler with name %s already exists!``.
    Side effects: inserts one ``EventHandler`` row.
    """
    definition = _checked(handler, "addEventHandler.arg0")
    now = now_ms()
    try:
        with transaction.atomic():
            if EventHandler.objects.filter(pk=definition["name"]).exists():
                raise Conflict(f"EventHandler with name {definition['name']} already exists!")
            EventHandler.objects.create(name=definition["name"], create_time=now, update_time=now,
                                        **_columns(definition))
    except IntegrityError as exc:
        raise Conflict(f"EventHandler with name {definition['name']} already exists!") from exc


def event_handler_update(*, handler: Any) -> None:
    """Replace an existing EventHandler (``PUT /api/event``); matched by name.

    Errors: validation 400 (path ``updateEventHandler.arg0...``); NotFound
    ``EventHandler with name %s not found!``.
    """
    definition = _checked(handler, "updateEventHandler.arg0")
    updated = EventHandler.objects.filter(pk=definition["name"]).update(update_time=now_ms(), **_columns(definition))
    if not updated:
        raise NotFound(f"EventHandler with name {definition['name']} not found!")


def event_handler_delete(*, name: str) -> None:
    """Remove an EventHandler (``DELETE /api/event/{name}``).

    Errors: NotFound ``EventHandler with name %s not found!``.
    """
    deleted, _ = EventHandler.objects.filter(pk=name).delete()
    if not deleted:
        raise NotFound(f"EventHandler with name {name} not found!")



def event_handler_list() -> list[dict]:
    """Every EventHandler (``GET /api/event``), ordered by name."""
    return [row.definition for row in EventHandler.objects.only("definition")]


def event_handler_list_for_event(*, event: str, active_only: bool = True) -> list[dict]:
    """The EventHandlers whose ``event`` equals ``event`` exactly, ordered by name; only
    active ones unless ``active_only`` is False (``GET /api/event/{event}?activeOnly``,
    Conductor's default is true)."""
    qs = EventHandler.objects.filter(event=event)
    if active_only:
        qs = qs.filter(active=True)
    return [row.definition for row in qs.only("definition")]
