from django.apps import AppConfig


class ListenersConfig(AppConfig):
    """Conductor's workflow and task status listeners (HTTP publisher, queue publisher,
    archiving): transitions recorded in the engine's transaction, delivered by the cluster."""

    name = "apps.listeners"
    label = "listeners"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from apps.engine import notify, sweeper
        from apps.listeners import delivery, recorder

        notify.add_transition_recorder(recorder.record)
        sweeper.add_tick_hook(delivery.kick)
