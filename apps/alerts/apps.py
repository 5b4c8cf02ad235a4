from django.apps import AppConfig


class AlertsConfig(AppConfig):
    """Alert rules (ours): conditions over executions and queues evaluated by the
    sweeper, incidents opened once and resolved, notified by webhook and e-mail."""

    name = "apps.alerts"
    label = "alerts"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from apps.alerts import evaluation
        from apps.engine import sweeper

        sweeper.add_tick_hook(evaluation.tick)
