"""Fixtures of the event tests: an SDK-like client on a transactional database (so
after-commit hooks run), and helpers that run the event-processing job by hand (no
django-q2 cluster)."""
from __future__ import annotations

import pytest

from tests.factories import Api


@pytest.fixture
def api(transactional_db) -> Api:
    return Api()


def pending_message_ids() -> list[str]:
    from apps.engine.models import EventMessage

    return list(EventMessage.objects.filter(processed_time__isnull=True).order_by("created_time")
                .values_list("message_id", flat=True))


def drain() -> int:
    """Process every pending message as the cluster would; return how many."""
    from apps.engine.event_handlers import process_event_message_job

    done = 0
    for message_id in pending_message_ids():
        done += bool(process_event_message_job(message_id))
    return done


@pytest.fixture
def clock(monkeypatch):
    """Freeze the engine's clock at the real time; ``clock.advance(seconds)`` moves it."""
    from tests.factories import FakeClock

    return FakeClock().install(monkeypatch)
