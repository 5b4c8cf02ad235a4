"""The status listeners' settings (``settings.CONDUCTOR``; environment variables in
docs/configuration.md), mirroring Conductor's properties:

* ``WORKFLOW_STATUS_LISTENER``: a comma list of Conductor's listener types,
  ``workflow_publisher`` (HTTP), ``queue_publisher`` (internal event queue) and
  ``archive`` (remove finished executions); several at once work as Conductor's
  ``composite`` type. Only definitions with ``workflowStatusListenerEnabled: true`` are
  reported, as in Conductor.
* ``TASK_STATUS_LISTENER``: ``task_publisher`` adds HTTP task notifications (for the
  tasks of those same workflows) for ``STATUS_NOTIFIER_SUBSCRIBED_TASK_STATUSES``.
* ``STATUS_NOTIFIER_*``: ``conductor.status-notifier.notification.*``: the URL, the
  endpoints appended to it for workflows and tasks, the subscribed statuses
  (workflows: default ``COMPLETED,TERMINATED``), the optional ``Prefer`` header, the
  request timeout (ms), the attempts before a delivery is given up and the first retry
  delay (ms, doubled per attempt up to ``LISTENER_MAX_RETRY_DELAY_MS``).
* ``QUEUE_PUBLISHER_*_QUEUE``: Conductor's ``_callbackSuccessQueue``,
  ``_callbackFailureQueue``, ``_callbackFinalizeQueue``; an event handler listens on
  ``conductor:<queue>``.
* ``ARCHIVE_DELAY_SECONDS``: how long a finished execution stays before it is removed.
"""
from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings


def _csv(value) -> tuple[str, ...]:
    if isinstance(value, (list, tuple)):
        items = value
    else:
        items = str(value or "").split(",")
    return tuple(s.strip() for s in items if str(s).strip())


def _join(url: str, endpoint: str) -> str:
    if not endpoint:
        return url
    return url.rstrip("/") + "/" + endpoint.lstrip("/")


@dataclass(frozen=True)
class ListenerConfig:
    """The listener settings in force (see the module docstring); times in ms."""

    http: bool
    queue: bool
    archive: bool
    tasks: bool
    workflow_url: str
    task_url: str
    workflow_statuses: tuple[str, ...]
    task_statuses: tuple[str, ...]
    prefer_header: str
    prefer_value: str
    timeout_ms: int
    max_attempts: int
    retry_delay_ms: int
    max_retry_delay_ms: int
    success_queue: str
    failure_queue: str
    finalize_queue: str
    archive_delay_ms: int

    @property
    def active(self) -> bool:
        return self.http or self.queue or self.archive or self.tasks

    def subscribes(self, event: str, status: str) -> bool:
        """Whether the HTTP publisher sends workflow ``event`` (Conductor's
        ``WorkflowEventType``): its name subscribed (``RUNNING`` for STARTED), or, for
        TERMINATED, the workflow's own status (FAILED, TIMED_OUT) subscribed."""
        key = "RUNNING" if event == "STARTED" else event
        return key in self.workflow_statuses or (event == "TERMINATED" and status in self.workflow_statuses)


def current() -> ListenerConfig:
    """The configuration in force (read from settings on each call: cheap, and tests
    may change settings)."""
    c = settings.CONDUCTOR
    types = set(_csv(c.get("WORKFLOW_STATUS_LISTENER", "")))
    url = c.get("STATUS_NOTIFIER_URL", "") or ""
    return ListenerConfig(
        http="workflow_publisher" in types and bool(url),
        queue="queue_publisher" in types,
        archive="archive" in types,
        tasks=c.get("TASK_STATUS_LISTENER", "") == "task_publisher" and bool(url),
        workflow_url=_join(url, c.get("STATUS_NOTIFIER_ENDPOINT_WORKFLOW", "") or ""),
        task_url=_join(url, c.get("STATUS_NOTIFIER_ENDPOINT_TASK", "") or ""),
        workflow_statuses=_csv(c.get("STATUS_NOTIFIER_SUBSCRIBED_WORKFLOW_STATUSES", "COMPLETED,TERMINATED"))
        or ("COMPLETED", "TERMINATED"),
        task_statuses=_csv(c.get("STATUS_NOTIFIER_SUBSCRIBED_TASK_STATUSES", "")),
        prefer_header=c.get("STATUS_NOTIFIER_HEADER_PREFER", "") or "",
        prefer_value=c.get("STATUS_NOTIFIER_HEADER_PREFER_VALUE", "") or "",
        timeout_ms=int(c.get("STATUS_NOTIFIER_TIMEOUT_MS", 2000)),
        max_attempts=int(c.get("STATUS_NOTIFIER_MAX_ATTEMPTS", 10)),
        retry_delay_ms=int(c.get("STATUS_NOTIFIER_RETRY_DELAY_MS", 1000)),
        max_retry_delay_ms=int(c.get("LISTENER_MAX_RETRY_DELAY_MS", 300_000)),
        success_queue=c.get("QUEUE_PUBLISHER_SUCCESS_QUEUE", "_callbackSuccessQueue"),
        failure_queue=c.get("QUEUE_PUBLISHER_FAILURE_QUEUE", "_callbackFailureQueue"),
        finalize_queue=c.get("QUEUE_PUBLISHER_FINALIZE_QUEUE", "_callbackFinalizeQueue"),
        archive_delay_ms=int(c.get("ARCHIVE_DELAY_SECONDS", 60)) * 1000,
    )


def retry_delay_ms(conf: ListenerConfig, attempts: int) -> int:
    """Delay before attempt ``attempts + 1``: the first delay doubled per attempt made,
    at most ``LISTENER_MAX_RETRY_DELAY_MS``."""
    return min(conf.max_retry_delay_ms, conf.retry_delay_ms * (2 ** max(0, attempts - 1)))
