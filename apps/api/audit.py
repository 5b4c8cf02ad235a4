"""Every API write lands in the audit log (``apps.ui.models.AuditLog``, shown at
``/audit/`` and in the admin) with the application that made it.

One row per write call once it is answered: ``username`` is ``app:<application>`` (the
access key's application, ``apps.api.auth.Principal``) or ``anonymous`` when API
authentication is off; ``action`` is ``api:<METHOD> <route>`` (e.g. ``api:POST
/api/workflow``, ``api:DELETE /api/metadata/taskdefs/{name}``), ``target`` the path,
``params`` the query parameters and the key id, ``ok`` whether the answer was below 400
and ``message`` the status code (with Conductor's error message on a refusal).

Writes are every call but GET/HEAD/OPTIONS, plus the GETs that act (the scheduler's
pause/resume and admin switches). Polls are reads of a queue and are not recorded. A
worker's task results and log lines (the calls only the ``worker`` role needs) are the
data plane, several per second per worker, and are already recorded on the task
(``workerId``, ``updateTime``, its logs): they are audited only with
``CONDUCTOR_AUDIT_WORKER_WRITES=on``.
"""
from __future__ import annotations

import logging

from django.conf import settings
from django.db import connection, transaction

log = logging.getLogger(__name__)
_READS = frozenset({"GET", "HEAD", "OPTIONS"})
_NOT_AUDITED = frozenset({"/api/token"})


def is_audited(method: str, path: str) -> bool:
    """Whether ``method path`` (path with ``/api``) is a write the audit log records."""
    from apps.api.auth import required_role
    from apps.api.models import ROLE_READ_ONLY, ROLE_WORKER

    if not path.startswith("/api/") or path in _NOT_AUDITED or path.startswith("/api/tasks/poll"):
        return False
    needed = required_role(method, path)
    if method in _READS and needed == ROLE_READ_ONLY:
        return False
    if needed == ROLE_WORKER:
        return bool(settings.CONDUCTOR.get("AUDIT_WORKER_WRITES", False))
    return True


def record_api_write(principal, method: str, path: str, route: str | None, query: dict, status: int,
                     message: str = "") -> None:
    """Write the audit row of one answered API write (see the module doc). ``principal``
    is an ``auth.Principal`` or None (auth off); ``route`` the URL pattern (path when
    unknown); ``query`` ``{name: [values]}``. Never raises: a failure to audit is logged.
    Its own transaction on PostgreSQL commits without waiting for the WAL flush (a
    database crash may lose the last rows, never the write they record)."""
    from apps.ui.models import AuditLog

    params = {k: (v[0] if len(v) == 1 else v) for k, v in query.items()}
    # a caller's transaction (its commit must stay durable) is left as it is
    own_commit = not connection.in_atomic_block
    if principal is not None:
        params["keyId"] = principal.key_id
    try:
        with transaction.atomic():
            if own_commit and connection.vendor == "postgresql":
                # best effort: the answer is not held up by the WAL flush of its audit row
                with connection.cursor() as cursor:
                    cursor.execute("SET LOCAL synchronous_commit = off")
            AuditLog.objects.create(
                user=None, username=f"app:{principal.name}"[:150] if principal is not None else "anonymous",
                action=f"api:{method} {route or path}"[:64], target=path[:255], params=params, ok=status < 400,
                message=(f"{status} {message}".strip())[:2000])
    except Exception:  # noqa: BLE001 - the call was answered; its audit row is best effort
        log.exception("could not audit %s %s", method, path)


def route_of(request) -> str | None:
    """The URL pattern a Django request matched, as ``/api/workflow/{name_or_id}``."""
    import re

    match = getattr(request, "resolver_match", None)
    if match is None or not match.route:
        return None
    return "/" + re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", match.route)
