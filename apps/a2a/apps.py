from django.apps import AppConfig


class A2aConfig(AppConfig):
    """Agent2Agent (A2A, protocol 0.3): workflows served as A2A agents (``/api/a2a/workflow``)
    and the AGENT, GET_AGENT_CARD, CANCEL_AGENT system tasks calling remote agents."""

    name = "apps.a2a"
    label = "a2a"
    default_auto_field = "django.db.models.BigAutoField"
