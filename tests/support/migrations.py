"""Running migrations from a test: ``migrate(targets)`` to a point of the graph (forwards
or backwards) on the test database, ``migrate_to_latest()`` to put it back."""
from __future__ import annotations

from django.db import connection
from django.db.migrations.executor import MigrationExecutor


def migrate(targets: list[tuple[str, str]]):
    """Migrate to ``[(app_label, migration_name)]``; returns that state's app registry
    (``.get_model(app, Model)`` gives the historical models)."""
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


def migrate_to_latest() -> None:
    """Migrate every app forwards to its latest migration."""
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())
