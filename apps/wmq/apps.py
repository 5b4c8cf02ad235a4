from django.apps import AppConfig


class WmqConfig(AppConfig):
    """Conductor's workflow message queue: ``POST /api/workflow/{id}/messages`` and the
    ``PULL_WORKFLOW_MESSAGES`` system task; messages are rows (``WorkflowMessage``)."""

    name = "apps.wmq"
    label = "wmq"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from apps.engine import notify
        from apps.wmq import queue

        notify.add_transition_recorder(queue.drop_on_end)
