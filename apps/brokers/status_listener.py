"""The Kafka workflow status listener (Conductor's ``KafkaWorkflowStatusPublisher``,
``conductor.workflow-status-listener.type=kafka``), beside the HTTP, queue and archive
listeners of ``apps.listeners``.

On when ``WORKFLOW_STATUS_LISTENER`` lists ``kafka`` and ``KAFKA_BOOTSTRAP_SERVERS`` is
set; only definitions with ``workflowStatusListenerEnabled: true`` are reported. Each
workflow event (STARTED, RESTARTED, RERAN, COMPLETED, TERMINATED, FINALIZED, PAUSED,
RESUMED, RETRIED: ``apps.listeners.recorder.workflow_events``) becomes one Kafka record on
``KAFKA_STATUS_EVENT_TOPICS[event]`` (a ``EVENT=topic,...`` list), else
``KAFKA_STATUS_DEFAULT_TOPIC`` (``workflow-status-events``): key the workflow id (so one
workflow's events stay in order on one partition), value ``{"workflowName",
"eventType", "payload": WorkflowSummary}``. Rows go through the broker outbox, written
in the engine's transaction: a Kafka outage delays them, never drops them.
"""
from __future__ import annotations

import logging

from django.conf import settings

from apps.brokers import outbox
from apps.brokers.sinks import SinkInvalid
from apps.core.clock import now_ms
from apps.core.ids import new_id
from apps.listeners.recorder import workflow_events

log = logging.getLogger(__name__)


def _topics() -> dict[str, str]:
    value = settings.CONDUCTOR.get("KAFKA_STATUS_EVENT_TOPICS") or ""
    if isinstance(value, dict):
        return value
    pairs = (item.split("=", 1) for item in str(value).split(",") if "=" in item)
    return {k.strip(): v.strip() for k, v in pairs}


def enabled() -> bool:
    """Whether the Kafka status listener is on (module docstring)."""
    c = settings.CONDUCTOR
    types = {t.strip() for t in str(c.get("WORKFLOW_STATUS_LISTENER", "")).split(",")}
    return "kafka" in types and bool(c.get("KAFKA_BOOTSTRAP_SERVERS"))


def topic_for(event: str) -> str:
    """The topic of a workflow event."""
    return _topics().get(event) or settings.CONDUCTOR["KAFKA_STATUS_DEFAULT_TOPIC"]


def record(wf, previous: str | None, task_changes: list) -> None:
    """The transition recorder (``apps.engine.notify.add_transition_recorder``): one
    outbox row per workflow event of this saved change. Inside the engine's transaction,
    no I/O."""
    if not (wf.definition or {}).get("workflowStatusListenerEnabled") or not enabled():
        return
    events = workflow_events(previous, wf)
    if not events:
        return
    from apps.engine.representation import workflow_summary_json

    summary = workflow_summary_json(wf)
    now = now_ms()
    for event in events:
        try:
            outbox.write(key=new_id(), event=f"kafka:{topic_for(event)}", now=now, message_key=wf.workflow_id,
                         payload={"workflowName": wf.workflow_name, "eventType": event, "payload": summary})
        except SinkInvalid as exc:  # a topic setting that is no Kafka topic must not fail the decide
            log.error("kafka status listener: %s not published: %s", event, exc)
