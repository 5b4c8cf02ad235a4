from django.apps import AppConfig


class EngineConfig(AppConfig):
    name = "apps.engine"
    label = "engine"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Register every task type module (one module per Conductor task type).
        from apps.engine import task_types  # noqa: F401
