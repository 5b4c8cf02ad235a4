from django.apps import AppConfig


class UiConfig(AppConfig):
    """Operator pages; on start, hooks the engine's after-commit notifications to the
    live execution consumers (``apps.ui.live.on_workflow_changed``)."""

    name = "apps.ui"
    label = "ui"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        """Register the live-update listener with the engine's notify module."""
        from apps.engine import notify
        from apps.ui import live

        notify.add_listener(live.on_workflow_changed)
