"""Shared test setup, kept small: subfolders add their own fixtures in their conftest.py.

The suite runs twice (``make test``): on SQLite (default settings, a file test database
in ``var/``) and on PostgreSQL (``DATABASE_URL`` set by ``scripts/with_postgres.sh``).
Tests marked ``@pytest.mark.postgres`` run only in the second pass.
"""
from __future__ import annotations

import os

import pytest

# The suite talks to the API without credentials: API authentication (on by default) is
# turned off here, before the settings load, so servers the e2e tests start inherit it;
# tests/auth turns it on where it is under test.
os.environ["CONDUCTOR_API_AUTH"] = "off"


def pytest_configure(config):
    from django.conf import settings

    settings.CONDUCTOR["API_AUTH"] = False


@pytest.fixture(scope="session", autouse=True)
def _queue_listener_closed(django_db_setup):
    """The PostgreSQL queue listener a long poll starts (``notify.start_queue_listener``)
    holds a connection to the test database: closed before pytest-django drops it."""
    yield
    from apps.engine import groupcommit, notify
    from apps.overview import rollup

    notify.stop_queue_listener()
    groupcommit.stop()
    rollup.stop_flusher(write=False)  # a test's leftover counts; its database is going


@pytest.fixture(autouse=True)
def _overview_flusher_stopped():
    """The Overview's flusher thread (``apps.overview.rollup``), started by a test's
    counts, ends with that test and drops what it did not write: a later test without
    database access would make its next write fail (pytest-django refuses it in every
    thread), and the failure's logged traceback, formatted while another thread parses
    Python (Python 3.11's ``traceback`` parses the failing line), has crashed
    ``ast.parse`` there (SystemError: AST constructor recursion depth mismatch)."""
    yield
    from apps.overview import rollup

    rollup.stop_flusher(write=False)


@pytest.fixture
def http_stub():
    """``http_stub(handler=None, http11=False) -> HttpStub``: a loopback HTTP server
    (tests/support/http_stub.py) closed when the test ends; as many as the test needs."""
    from tests.support.http_stub import HttpStub

    stubs: list[HttpStub] = []

    def make(handler=None, **options) -> HttpStub:
        stubs.append(HttpStub(handler, **options))
        return stubs[-1]

    yield make
    for stub in stubs:
        stub.close()


def db_vendor() -> str:
    """``"sqlite"`` or ``"postgresql"``: the engine the settings selected."""
    from django.db import connection

    return connection.vendor


def pytest_collection_modifyitems(config, items):
    if db_vendor() == "postgresql":
        return
    skip = pytest.mark.skip(reason="needs PostgreSQL: run `make test-pg` (or set DATABASE_URL=postgres://...)")
    for item in items:
        if item.get_closest_marker("postgres"):
            item.add_marker(skip)
