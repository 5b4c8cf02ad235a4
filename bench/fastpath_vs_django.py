"""Why ``apps/api/fastpath.py`` exists, measured in process: Django's ``ASGIHandler`` (the
DRF views) against the fast path, on an empty queue (nothing but the poll itself).

    DJANGO_SETTINGS_MODULE=conductor_web.settings python bench/fastpath_vs_django.py N TIMEOUT_MS [M]

prints, for each path: N concurrent long polls of TIMEOUT_MS (wall time, latencies); with
M, also the cost of one empty poll (M sequential polls, timeout=0: wall and CPU time of
this process, with the load average, as wall time on a loaded machine says more about the
load than about the path) and the peak number of
threads while N long polls wait. Needs a migrated database (``manage.py migrate``).
"""
import asyncio, os, sys, time, json
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "conductor_web.settings")
import django
from django.core.asgi import get_asgi_application
django_app = get_asgi_application()
from apps.api.fastpath import worker_fast_path
fast_app = worker_fast_path(django_app)

async def call(app, path, query):
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET",
             "scheme": "http", "path": path, "raw_path": path.encode(), "query_string": query.encode(),
             "root_path": "", "headers": [(b"host", b"127.0.0.1")], "client": ("127.0.0.1", 1), "server": ("127.0.0.1", 80)}
    sent = False
    async def receive():
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": b"", "more_body": False}
        await asyncio.sleep(3600)
    status = {}
    async def send(msg):
        if msg["type"] == "http.response.start":
            status["code"] = msg["status"]
    t0 = time.monotonic()
    await app(scope, receive, send)
    return status.get("code"), time.monotonic() - t0

async def batch(app, n, timeout_ms, path):
    t0 = time.monotonic()
    res = await asyncio.gather(*[call(app, path, f"count=1&timeout={timeout_ms}&workerid=m{i}") for i in range(n)])
    return time.monotonic() - t0, res

async def main():
    n, timeout_ms = int(sys.argv[1]), int(sys.argv[2])
    path = "/api/tasks/poll/batch/measure_empty_queue"
    for label, app in (("django", django_app), ("fastpath", fast_app)):
        await batch(app, 1, 10, path)  # warm up
        wall, res = await batch(app, n, timeout_ms, path)
        print(f"{label}: {n} concurrent long polls of {timeout_ms} ms: wall {wall:.2f} s; statuses {sorted(set(r[0] for r in res))}; "
              f"latency min {min(r[1] for r in res):.2f} max {max(r[1] for r in res):.2f} s")

asyncio.run(main())

async def overhead(app, label, n):
    path = "/api/tasks/poll/batch/measure_empty_queue"
    t0, c0 = time.monotonic(), time.process_time()
    for i in range(n):
        await call(app, path, "count=1&timeout=0&workerid=o")
    dt, cpu = time.monotonic() - t0, time.process_time() - c0
    # wall time grows with the machine's load; the process's CPU time much less so
    print(f"{label}: {n} sequential empty polls (timeout=0): {dt / n * 1000:.2f} ms each, "
          f"{cpu / n * 1000:.2f} ms CPU each (load average {os.getloadavg()[0]:.1f})")

async def threads(app, label, n, timeout_ms):
    import threading
    path = "/api/tasks/poll/batch/measure_empty_queue"
    peak = 0
    async def watch():
        nonlocal peak
        while True:
            peak = max(peak, threading.active_count())
            await asyncio.sleep(0.05)
    w = asyncio.ensure_future(watch())
    base = threading.active_count()
    wall, res = await batch(app, n, timeout_ms, path)
    w.cancel()
    print(f"{label}: {n} concurrent long polls of {timeout_ms} ms: wall {wall:.2f} s, threads before {base}, peak {peak}")

if len(sys.argv) > 3:
    async def more():
        for label, app in (("django", django_app), ("fastpath", fast_app)):
            await overhead(app, label, int(sys.argv[3]))
        for label, app in (("django", django_app), ("fastpath", fast_app)):
            await threads(app, label, n=int(sys.argv[1]), timeout_ms=int(sys.argv[2]))
    asyncio.run(more())
