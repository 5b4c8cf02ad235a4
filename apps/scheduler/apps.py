from django.apps import AppConfig


class SchedulerConfig(AppConfig):
    """Conductor's workflow scheduler (``/api/scheduler``); fires from the sweeper loop."""

    name = "apps.scheduler"
    label = "scheduler"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from apps.engine import sweeper
        from apps.scheduler.jobs import tick

        sweeper.add_tick_hook(tick)
