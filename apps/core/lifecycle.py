"""The server process's stop on SIGTERM (or SIGINT), as daphne runs it.

``stopping`` (a ``threading.Event``) is set once the process has been asked to stop:
Twisted's "before shutdown" trigger, which daphne's SIGTERM/SIGINT handling fires;
``watch_server_shutdown()`` (called by ``conductor_web.asgi``) registers it. A request
that waits on the engine (``POST /api/workflow/execute``'s ``waitForSeconds``, a
signal's ``timeoutMillis``) checks it and answers at once with what it has, as when its
time runs out. Long polls are coroutines and end when daphne cancels them.

Once the reactor has stopped, Python joins the request threads before it exits. A
thread that was in a request when the event loop stopped can wait forever for the loop
(Django hands a request back and forth between its thread and the loop), so a watchdog
ends the process ``STOP_GRACE_SECONDS`` after the reactor's shutdown if such a thread
still holds it (logged as a warning with the threads' names). Every state change is a
committed transaction, so nothing is half-written; a caller whose connection closed
sends again, as the SDKs do.
"""
from __future__ import annotations

import logging
import os
import sys
import threading
import time

logger = logging.getLogger(__name__)

stopping = threading.Event()

# Seconds the request threads get to end after the reactor has stopped (then os._exit).
STOP_GRACE_SECONDS = float(os.environ.get("CONDUCTOR_STOP_GRACE_SECONDS") or 5)


def watch_server_shutdown() -> bool:
    """Register, on the Twisted reactor installed in this process (daphne's), the setting
    of ``stopping`` before its shutdown and the exit watchdog after it. Returns False
    (nothing registered) when no reactor is installed."""
    reactor = sys.modules.get("twisted.internet.reactor")
    if reactor is None or not hasattr(reactor, "addSystemEventTrigger"):
        return False
    reactor.addSystemEventTrigger("before", "shutdown", stopping.set)
    reactor.addSystemEventTrigger("after", "shutdown", _start_exit_watchdog)
    return True


def _start_exit_watchdog() -> None:
    threading.Thread(target=_exit_if_held, args=(STOP_GRACE_SECONDS,), name="stop-watchdog", daemon=True).start()


def _exit_if_held(grace_seconds: float) -> None:
    """After ``grace_seconds``, if the process is still here (a request thread holds
    the interpreter's exit), log which threads and end the process with status 0."""
    time.sleep(grace_seconds)
    held = [t.name for t in threading.enumerate()
            if not t.daemon and t is not threading.main_thread() and t.is_alive()]
    logger.warning("stopping: %d request thread(s) still running %.0f s after the server stopped "
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
