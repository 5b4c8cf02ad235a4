"""A throwaway redis-server on 127.0.0.1 for the tests that need Redis (channels-redis,
the django-q2 Redis broker). Needs Debian's redis-server (``make test`` installs it)."""
from __future__ import annotations

import shutil
import socket
import subprocess
import time
from pathlib import Path

START_TIMEOUT_SECONDS = 10


def have_redis_server() -> bool:
    return shutil.which("redis-server") is not None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_redis(workdir: Path) -> tuple[subprocess.Popen, str]:
    """Start redis-server (no persistence) in ``workdir``; returns (process, URL of db 0)
    once it accepts connections. Raises RuntimeError if it does not within 10 s."""
    port = free_port()
    proc = subprocess.Popen(["redis-server", "--bind", "127.0.0.1", "--port", str(port), "--save", "",
                             "--appendonly", "no", "--dir", str(workdir)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return proc, f"redis://127.0.0.1:{port}/0"
        except OSError:
            time.sleep(0.05)
    stop_redis(proc)
    raise RuntimeError(f"redis-server did not listen on 127.0.0.1:{port}")


def stop_redis(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)
