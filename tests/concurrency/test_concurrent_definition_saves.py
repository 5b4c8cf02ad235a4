"""Racing saves of the definitions editor (apps.ui.editing): each change becomes its own
new version, none is lost or overwrites another, each is audited once."""
from __future__ import annotations

import pytest

from apps.metadata import services
from apps.metadata.models import WorkflowDef
from apps.ui import editing
from apps.ui.models import AuditLog
from tests.factories import simple_task, task_def, unique, workflow_def

pytestmark = pytest.mark.django_db(transaction=True)


def test_racing_new_version_saves_each_get_their_own_version(threads):
    name = unique("race_def")
    services.task_defs_register(task_defs=[task_def(f"{name}_a")])
    base = workflow_def(name, [simple_task(f"{name}_a", "a")])
    services.workflow_def_register(workflow_def=base)
    # as many savers as tries: each round of the race has a winner, so every save lands
    savers = editing.NEW_VERSION_TRIES

    def save(i):
        return lambda: editing.save_workflow_def(None, {**base, "description": f"change {i}"}, base=f"{name} v1")

    results = threads([save(i) for i in range(savers)])
    assert sorted(r["version"] for r in results) == list(range(2, 2 + savers))
    stored = {r.version: r.definition.get("description") for r in WorkflowDef.objects.filter(name=name)}
    assert stored[1] is None  # v1 untouched
    assert sorted(v for k, v in stored.items() if k > 1) == sorted(f"change {i}" for i in range(savers))
    assert AuditLog.objects.filter(action="definition_new_version", target__startswith=f"WorkflowDef {name} v").count() == savers
