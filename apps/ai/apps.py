from django.apps import AppConfig


class AiConfig(AppConfig):
    """AI and agent system tasks: LLM providers, MCP client, vector store."""

    name = "apps.ai"
    label = "ai"
    default_auto_field = "django.db.models.BigAutoField"
