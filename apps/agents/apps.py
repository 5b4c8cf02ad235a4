from django.apps import AppConfig


class AgentsConfig(AppConfig):
    """Conductor's Agents API (``/api/agent/*``): agent configurations compiled into
    WorkflowDefs that the engine runs (docs/agents.md)."""

    name = "apps.agents"
    label = "agents"
    verbose_name = "Agents"

    def ready(self):
        # strategy manual and a swarm's handoffs conditions join the compiler
        from apps.agents import strategies

        strategies.register()
