"""The server process's stop on SIGTERM (or SIGINT), as ``conductor_web.serve`` runs it.

``stopping`` (a ``threading.Event``) is set once the process has been asked to stop:
``begin_stop()``, which the server (``conductor_web.serve``) calls from its signal handling before it stops
accepting. A request that waits on the engine (``POST /api/workflow/execute``'s
``waitForSeconds``, a signal's ``timeoutMillis``, a long poll) checks it and answers at
once with what it has, as when its time runs out; the callbacks registered with
``on_stop`` (the long polls' wake-up, ``apps.engine.notify``) run then too.

Once the event loop has stopped, Python joins the request threads before it exits. A
thread that was in a request when the event loop stopped can wait forever for the loop
(Django hands a request back and forth between its thread and the loop), so a watchdog
(``start_exit_watchdog``) ends the process ``STOP_GRACE_SECONDS`` after the server's own grace period if such a
thread still holds it (logged as a warning with the threads' names). Every state change
is a committed transaction, so nothing is half-written; a caller whose connection closed
sends again, as the SDKs do.
"""
from __future__ import annotations

import logging
import os
import sys
import threading
import time
from collections.abc import Callable

logger = logging.getLogger(__name__)

stopping = threading.Event()

# Seconds the request threads get to end after the server's own grace period (then os._exit).
STOP_GRACE_SECONDS = float(os.environ.get("CONDUCTOR_STOP_GRACE_SECONDS") or 5)
_stop_callbacks: list[Callable[[], None]] = []


def on_stop(fn: Callable[[], None]) -> None:
    """Register ``fn()`` to run once, in the thread that calls ``begin_stop`` (the
    server's event loop thread), when the process is asked to stop. It must not block."""
    _stop_callbacks.append(fn)


def begin_stop() -> None:
    """The process is asked to stop: set ``stopping`` and run the ``on_stop`` callbacks
    (each one's error is logged, not raised). A second call does nothing."""
    if stopping.is_set():
        return
    stopping.set()
    for fn in list(_stop_callbacks):
        try:
            fn()
        except Exception:  # noqa: BLE001 - one callback's failure must not hold the stop
            logger.exception("stopping: a stop callback failed")


def start_exit_watchdog(server_grace_seconds: float = 0) -> None:
    """Start the exit watchdog (a daemon thread): ``server_grace_seconds +
    STOP_GRACE_SECONDS`` seconds from now, if the process is still here, it logs the
    threads that hold it and ends it with status 0 (``os._exit``)."""
    threading.Thread(target=_exit_if_held, args=(server_grace_seconds + STOP_GRACE_SECONDS,),
                     name="stop-watchdog", daemon=True).start()


def _exit_if_held(grace_seconds: float) -> None:
    """After ``grace_seconds``, if the process is still here (the server or a request
    thread holds the interpreter's exit), log which threads and end the process with
    status 0."""
    time.sleep(grace_seconds)
    held = [t.name for t in threading.enumerate()
            if not t.daemon and t is not threading.main_thread() and t.is_alive()]
    logger.warning("stopping: %d request thread(s) still running %.0f s after the stop began "
                   "(%s); exiting without them", len(held), grace_seconds, ", ".join(held))
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    # os._exit, not sys.exit: sys.exit in this thread ends only this thread, and the
    # interpreter's normal exit joins every non-daemon thread, which is exactly what is
    # stuck. os._exit is the documented way to end the process without waiting for them
    # (no atexit handlers, no buffer flushes: both done just above). The private-name
    # scan (tests/architecture/test_imports.py) accepts it by name.
    os._exit(0)
