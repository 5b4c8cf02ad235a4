"""Structured logs: the engine's context on every log line, and a JSON formatter.

``log_context(workflowId=..., taskId=..., taskType=..., workerId=...)`` binds fields for
the code running inside it (a ``contextvars`` value: per thread and per asyncio task);
``ContextFilter`` copies them onto every log record, so each engine log line names the
execution, task and worker it is about. With ``LOG_FORMAT=json`` (settings) the console
handler writes one JSON object per line::

    {"time": "2026-12-01T03:40:00.123Z", "level": "ERROR", "logger": "apps.engine.jobs",
     "message": "...", "workflowId": "...", "taskId": "...", "taskType": "HTTP",
     "workerId": "...", "exc": "Traceback ..."}

Fields not bound are left out; ``exc`` only when the record carries an exception.
"""
from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

FIELDS = ("workflowId", "taskId", "taskType", "workerId")
_context: ContextVar[dict] = ContextVar("conductor_log_context", default={})


@contextmanager
def log_context(**fields: str | None) -> Iterator[None]:
    """Bind the given fields (None values are skipped) for the log lines inside."""
    token = _context.set({**_context.get(), **{k: v for k, v in fields.items() if v is not None}})
    try:
        yield
    finally:
        _context.reset(token)



class ContextFilter(logging.Filter):
    """Put the bound fields on each record (attributes named as in ``FIELDS``)."""

    def filter(self, record: logging.LogRecord) -> bool:
        for key, value in _context.get().items():
            setattr(record, key, value)
        return True


class NoTraceback(logging.Filter):
    """Drop the traceback of a record: for loggers whose message says it all, such as
    ``django.security.DisallowedHost`` (a request with a Host header not in
    ALLOWED_HOSTS: a client's mistake or a scanner, answered 400, one line logged)."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.exc_info = None
        record.exc_text = None
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object per record: time (UTC, ms), level, logger, message, the context
    fields present on the record, and ``exc`` (the formatted traceback) if any."""

    def format(self, record: logging.LogRecord) -> str:
        out = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key in FIELDS:
            value = getattr(record, key, None)
            if value is not None:
                out[key] = value
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        return json.dumps(out, default=str)
