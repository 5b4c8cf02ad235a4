"""jq evaluation with a time and a memory limit.

The jq binding runs a program in C without returning to Python, so a thread cannot stop
it: ``last(range(0;50000000))`` held a server for 27 s. Programs run here in helper
processes (``python -m apps.engine.jq_sandbox`` started in ``PROJECT_ROOT``, so a helper
runs this very code whatever the server's working directory; one line of JSON per request
and per answer on stdin/stdout, compiled programs cached). A program that does not answer
within ``time_limit`` seconds has its process killed and fails with a reason; the helper's
address space is capped at ``MEMORY_LIMIT_BYTES``. Idle helpers are kept for the next
evaluation (at most ``MAX_IDLE``); a helper starts with ``HELPER_ENVIRONMENT`` only, so
``$ENV`` shows nothing of the server; a process that forks (the django-q2 cluster) starts its
own helpers instead of sharing its parent's pipes.
"""
from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import threading
import time
from pathlib import Path

MEMORY_LIMIT_BYTES = 1 << 30
MAX_IDLE = 4
DEFAULT_TIME_LIMIT_SECONDS = 5.0
# The directory holding ``apps/``: the helper's working directory. ``python -m`` looks
# for ``apps`` in the working directory first, so a server started elsewhere (another
# checkout, a service manager's ``/``) would run another copy of this module, or none.
PROJECT_ROOT = Path(__file__).resolve().parents[2]
# The whole environment of a helper: jq's ``$ENV`` and ``env`` read the process's
# variables, so a helper inherits none of the server's (SECRET_KEY, DATABASE_URL, ...).
HELPER_ENVIRONMENT = {"LC_ALL": "C.UTF-8", "PYTHONIOENCODING": "utf-8"}


class JqError(Exception):
    """The program failed (compile or runtime error), ran out of time or of memory; the
    message is the reason shown on the task."""


class _Helper:
    def __init__(self):
        self.proc = subprocess.Popen([sys.executable, "-m", "apps.engine.jq_sandbox"], cwd=PROJECT_ROOT,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     close_fds=True, env=HELPER_ENVIRONMENT)
        self.buffer = b""

    def ask(self, request: bytes, deadline: float) -> dict:
        self.proc.stdin.write(request)
        self.proc.stdin.flush()
        fd = self.proc.stdout.fileno()
        while b"\n" not in self.buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError
            ready, _, _ = select.select([fd], [], [], remaining)
            if ready:
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    raise EOFError
                self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return json.loads(line)

    def kill(self) -> None:
        try:
            self.proc.kill()
            self.proc.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            pass


_idle: list[_Helper] = []
_owner_pid = os.getpid()
_lock = threading.Lock()


def _checkout() -> _Helper:
    global _owner_pid
    with _lock:
        if os.getpid() != _owner_pid:  # forked: the inherited helpers belong to the parent
            _idle.clear()
            _owner_pid = os.getpid()
        while _idle:
            helper = _idle.pop()
            if helper.proc.poll() is None:
                return helper
    return _Helper()


def _checkin(helper: _Helper) -> None:
    with _lock:
        if os.getpid() == _owner_pid and len(_idle) < MAX_IDLE:
            _idle.append(helper)
            return
    helper.kill()


def evaluate(expression: str, data, time_limit: float = DEFAULT_TIME_LIMIT_SECONDS) -> list:
    """All values ``expression`` (jq) produces for ``data`` (JSON). Errors: JqError with
    jq's message, ``jq expression not evaluated within N seconds, interrupted.`` or
    ``jq evaluation ran out of memory``."""
    request = json.dumps({"q": expression, "input": data}, default=str).encode() + b"\n"
    helper = _checkout()
    try:
        answer = helper.ask(request, time.monotonic() + time_limit)
    except TimeoutError:
        helper.kill()
        raise JqError(f"jq expression not evaluated within {time_limit:g} seconds, interrupted.") from None
    except (EOFError, OSError, ValueError):
        helper.kill()
        raise JqError("jq evaluation ran out of memory or crashed") from None
    _checkin(helper)
    if "error" in answer:
        raise JqError(answer["error"])
    return answer["ok"]


# --- the helper process ----------------------------------------------------------------------

def _serve() -> None:  # pragma: no cover - runs in the helper process
    import resource
    from functools import lru_cache

    import jq

    try:
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT_BYTES, MEMORY_LIMIT_BYTES))
    except (ValueError, OSError):
        pass
    compile_ = lru_cache(maxsize=256)(jq.compile)
    for line in sys.stdin.buffer:
        try:
            request = json.loads(line)
            answer = {"ok": compile_(request["q"]).input_value(request["input"]).all()}
        except MemoryError:
            answer = {"error": "jq evaluation ran out of memory"}
        except Exception as exc:  # noqa: BLE001 - every failure is the task's reason
            answer = {"error": str(exc) or exc.__class__.__name__}
        try:
            out = json.dumps(answer)
        except (TypeError, ValueError) as exc:
            out = json.dumps({"error": f"jq result is not JSON: {exc}"})
        sys.stdout.write(out + "\n")
        sys.stdout.flush()


if __name__ == "__main__":  # pragma: no cover
    _serve()
