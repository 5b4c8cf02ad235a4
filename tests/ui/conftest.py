"""Fixtures of the operator UI tests: users with each permission, signed-in clients and
a registered example definition."""
from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission, User

from apps.metadata import services
from tests.factories import simple_task, task_def, unique, workflow_def


def make_user(username: str, *perms: str, superuser: bool = False) -> User:
    """A user with the given ``ui.*`` permission codenames."""
    if superuser:
        return User.objects.create_superuser(username, f"{username}@example.com", "pw")
    user = User.objects.create_user(username, f"{username}@example.com", "pw")
    for codename in perms:
        user.user_permissions.add(Permission.objects.get(content_type__app_label="ui", codename=codename))
    return User.objects.get(pk=user.pk)


@pytest.fixture
def viewer(db) -> User:
    return make_user("viewer", "view_executions")


@pytest.fixture
def operator(db) -> User:
    return make_user("operator", "operate_workflows")


@pytest.fixture
def nobody(db) -> User:
    return make_user("nobody")


@pytest.fixture
def viewer_client(client, viewer):
    client.force_login(viewer)
    return client


@pytest.fixture
def operator_client(client, operator):
    client.force_login(operator)
    return client


def register_chain(name: str | None = None, refs=("a", "b")) -> str:
    """Register a workflow of SIMPLE tasks (one task type per ref) and return its name."""
    name = name or unique("ui_wf")
    types = {ref: f"{name}_{ref}" for ref in refs}
    services.task_defs_register(task_defs=[task_def(t) for t in types.values()])
    services.workflow_def_register(workflow_def=workflow_def(
        name, [simple_task(types[r], r, {"x": "${workflow.input.x}"}) for r in refs],
        inputParameters=["x", "y"]), overwrite=True)
    return name


@pytest.fixture
def chain(db) -> str:
    return register_chain()
