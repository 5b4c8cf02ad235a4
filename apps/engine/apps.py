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
            import warnings

            from apps.engine.jobs import start_sweeper_on_cluster_start

            # One deliberate query at cluster start (queue a sweeper loop); Django warns
            # about any database access during app initialisation.
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", message="Accessing the database during app initialization")
                start_sweeper_on_cluster_start()
