"""Fixtures of the alert tests: the status-listener tests' SDK-like client, engine clock
and loopback webhook receiver; e-mail goes to Django's locmem backend (pytest-django's)."""
from tests.listeners.conftest import api, clock, receiver  # noqa: F401 - the same fixtures
