"""Engine tests through the API with real commits (on_commit hooks run: a child ending
decides its parent, as in production)."""
from __future__ import annotations

import pytest

from tests.factories import Api, FakeClock


@pytest.fixture
def api(transactional_db) -> Api:
    return Api()


@pytest.fixture
def clock(monkeypatch) -> FakeClock:
    return FakeClock().install(monkeypatch)


@pytest.fixture
def operator_user(transactional_db):
    """A UI user who may run actions (``ui.operate_workflows``)."""
    from django.contrib.auth.models import Permission, User

    user = User.objects.create_user("history-operator", password="x")
    user.user_permissions.add(Permission.objects.get(content_type__app_label="ui", codename="operate_workflows"))
    return user
