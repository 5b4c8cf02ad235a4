from django.apps import AppConfig


class EngineConfig(AppConfig):
    name = "apps.engine"
    label = "engine"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        import sys

        # Register every task type module (one module per Conductor task type).
        from apps.engine import task_types  # noqa: F401

        if sys.argv[1:2] == ["qcluster"]:
            from apps.engine.jobs import start_sweeper_on_cluster_start

            start_sweeper_on_cluster_start()
