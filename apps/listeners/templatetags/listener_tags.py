"""``{% listener_settings definition as ls %}``: what the status listeners will do for a
workflow definition, for the definition page."""
from __future__ import annotations

from django import template

from apps.listeners import config

register = template.Library()


@register.simple_tag
def listener_settings(definition: dict) -> dict:
    """``{"enabled", "publishers": [...], "workflow_statuses", "task_statuses",
    "workflow_url", "task_url"}`` for ``definition`` (a WorkflowDef dict)."""
    conf = config.current()
    publishers = [name for name, on in (("HTTP (workflow_publisher)", conf.http), ("task_publisher", conf.tasks),
                                        ("queue_publisher", conf.queue), ("archive", conf.archive)) if on]
    return {"enabled": bool((definition or {}).get("workflowStatusListenerEnabled")), "publishers": publishers,
            "workflow_statuses": ", ".join(conf.workflow_statuses), "task_statuses": ", ".join(conf.task_statuses),
            "workflow_url": conf.workflow_url if conf.http else "", "task_url": conf.task_url if conf.tasks else ""}
