from django.apps import AppConfig


class AgentsConfig(AppConfig):
    """Conductor's Agents API (``/api/agent/*``): agent configurations compiled into
    WorkflowDefs that the engine runs (docs/agents.md)."""

    name = "apps.agents"
    label = "agents"
    verbose_name = "Agents"
