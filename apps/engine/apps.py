from django.apps import AppConfig


class EngineConfig(AppConfig):
    name = "apps.engine"
    label = "engine"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        import sys

        # Register every task type module (one module per Conductor task type).
        from apps.engine import task_types  # noqa: F401

        # PostgreSQL hands jsonb back decoded: with the engine's faster decoder
        from psycopg.types.json import set_json_loads

        from apps.engine.store import loads

        set_json_loads(loads)

        if sys.argv[1:2] == ["qcluster"]:
            from django_q.signals import post_spawn

            from apps.engine.cluster import start_sweeper_thread

            # every worker process of the cluster runs a candidate sweeper thread
            post_spawn.connect(start_sweeper_thread, dispatch_uid="conductor-sweeper-thread")
