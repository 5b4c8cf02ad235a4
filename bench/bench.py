"""Core-engine benchmark: N workflows of 3 SIMPLE tasks driven over HTTP like SDK workers.

What it does
  1. (``--start-server``) creates a fresh database (SQLite file in a temp dir, or a new
     PostgreSQL database on the server of ``--pg-url``/``DATABASE_URL``), migrates it and
     starts the server on 127.0.0.1 on a free port: ``conductor-web``, the product's
     ``python -m conductor_web.serve`` (one process, or K accepting on one port with
     ``--reuse-port``); for comparison ``uvicorn --workers K``, ``gunicorn -k UvicornWorker
     -w K``, granian or daphne (K processes on one shared listening socket; the product's
     server before 2026-12-07), from ``--server-python``. Otherwise it targets ``--url``.
  2. registers TaskDefs bench_a, bench_b, bench_c (retryCount 0) and the WorkflowDef
     ``bench_wf`` (a -> b -> c, each task's input ``x`` = the previous output ``x``; the
     workflow output ``x`` = input + 3, checked for every workflow).
  3. starts M worker threads (in P client processes) that behave like the Conductor SDK's
     TaskRunner: ``GET /api/tasks/poll/batch/{type}?workerid&count&timeout=100``, then
     ``POST /api/tasks/update-v2`` with the result, running the task that update-v2 hands
     back directly and polling only when it hands back none (204). httpx, keep-alive.
  4. warm-up, then starts N workflows (``POST /api/workflow``, bounded concurrency) and
     waits until the last one completes: workflows/s, task transitions/s (completed task
     updates per second) and start-to-completion latency (server ``endTime - createTime``
     from ``GET /api/workflow/{id}?includeTasks=false``, and client submit -> last update).
  5. the server's CPU while the workers idle-poll (``--idle-s``), then the "lone workflow":
     L workflows run one at a time with the workers idle-polling; p50/p99.
  6. stops exactly the processes it started (by PID) and drops what it created.

Every wait is bounded; ``--deadline`` is a hard limit for the whole run.
Prints one JSON line (prefix-free, starts with ``{``) and one human line (starts with ``#``).
See bench/README.md for the commands and results.
"""
from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import queue as queue_mod
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

from cpu_meter import _children_map, postmaster_pid, tree_cpu_s

REPO = Path(__file__).resolve().parent.parent
TASK_TYPES = ("bench_a", "bench_b", "bench_c")
LAST_TYPE = TASK_TYPES[-1]
WF_NAME = "bench_wf"
HEADERS = {"Content-Type": "application/json", "Accept": "application/json"}

PHASE_WARMUP, PHASE_MAIN, PHASE_LONE = 0, 1, 2
PHASE_NAMES = ("warmup", "main", "lone")


# --- small helpers -------------------------------------------------------------------------

def pct(data: list[float], p: float) -> float | None:
    """Nearest-rank percentile (the peers' formula)."""
    if not data:
        return None
    s = sorted(data)
    k = max(0, min(len(s) - 1, int(round(p / 100.0 * len(s) + 0.5)) - 1))
    return s[k]


def rnd(v: float | None, nd: int = 1) -> float | None:
    return None if v is None else round(v, nd)


def summary(data: list[float]) -> dict:
    return {"p50": rnd(pct(data, 50)), "p90": rnd(pct(data, 90)), "p99": rnd(pct(data, 99)),
            "mean": rnd(statistics.mean(data)) if data else None, "count": len(data)}


def emit(out: dict, json_out: str | None) -> None:
    """Print ``out`` as one JSON line and append that line to the file ``json_out`` (if given):
    the format bench/summarize.py reads."""
    line = json.dumps(out)
    print(line, flush=True)
    if json_out:
        with open(json_out, "a") as f:
            f.write(line + "\n")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def machine_cpu() -> tuple[float, float]:
    """(busy, total) jiffies of the whole machine from /proc/stat."""
    try:
        vals = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    except (OSError, ValueError):
        return 0.0, 0.0
    idle = vals[3] + (vals[4] if len(vals) > 4 else 0)
    return float(sum(vals) - idle), float(sum(vals))


def machine_info() -> dict:
    mem_kb = 0
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem_kb = int(line.split()[1])
    except OSError:
        pass
    cpu = ""
    try:
        cpu = next((ln.split(":", 1)[1].strip() for ln in Path("/proc/cpuinfo").read_text().splitlines()
                    if ln.startswith("model name")), "")
    except OSError:
        pass
    return {"nproc": os.cpu_count(), "ram_gib": round(mem_kb / 1024 / 1024, 1), "cpu": cpu,
            "python": sys.version.split()[0]}


def workflow_def() -> dict:
    tasks = []
    prev = None
    for i, t in enumerate(TASK_TYPES):
        ref = t + "_ref"
        src = "${workflow.input.x}" if prev is None else "${" + prev + ".output.x}"
        tasks.append({"name": t, "taskReferenceName": ref, "type": "SIMPLE", "inputParameters": {"x": src}})
        prev = ref
    return {"name": WF_NAME, "version": 1, "schemaVersion": 2, "tasks": tasks,
            "outputParameters": {"x": "${" + prev + ".output.x}"}, "timeoutSeconds": 0,
            "inputParameters": ["x"], "ownerEmail": "bench@example.com"}


def task_defs() -> list[dict]:
    return [{"name": t, "retryCount": 0, "timeoutSeconds": 0, "responseTimeoutSeconds": 600,
             "ownerEmail": "bench@example.com"} for t in TASK_TYPES]


# --- worker side (runs in client processes) ------------------------------------------------

class Stats:
    """Per-thread counters, merged by the parent. Latencies in ms, per phase."""

    def __init__(self):
        self.updates = [0, 0, 0]
        self.polls = [0, 0, 0]
        self.empty_polls = [0, 0, 0]
        self.v2_next = [0, 0, 0]          # update-v2 answered with a next task
        self.errors = 0
        self.last_error = ""
        self.poll_ms: list[list[float]] = [[], [], []]      # polls that returned tasks
        self.update_ms: list[list[float]] = [[], [], []]

    def as_dict(self) -> dict:
        return {k: v for k, v in self.__dict__.items()}


def worker_thread(base_url: str, task_type: str, worker_id: str, batch: int, poll_timeout_ms: int,
                  sdk_backoff: bool, stop_evt, phase, deadline: float, done_q, stats: Stats) -> None:
    """One SDK-like worker thread for one task type (see module doc, step 3)."""
    poll_path = f"/api/tasks/poll/batch/{task_type}"
    params = {"workerid": worker_id, "count": str(batch), "timeout": str(poll_timeout_ms)}
    pending: deque = deque()
    empty_streak = 0
    with httpx.Client(base_url=base_url, headers=HEADERS, timeout=httpx.Timeout(15.0),
                      limits=httpx.Limits(max_connections=1, max_keepalive_connections=1)) as client:
        while not stop_evt.is_set() and time.time() < deadline:
            ph = phase.value
            try:
                if not pending:
                    t0 = time.perf_counter()
                    r = client.get(poll_path, params=params)
                    dt = (time.perf_counter() - t0) * 1000
                    stats.polls[ph] += 1
                    if r.status_code != 200:
                        stats.errors += 1
                        stats.last_error = f"poll {r.status_code} {r.text[:200]}"
                        time.sleep(0.05)
                        continue
                    got = [t for t in (r.json() or []) if t.get("taskId")]
                    if not got:
                        stats.empty_polls[ph] += 1
                        if sdk_backoff:  # the SDK sleeps 1, 2, 4 ... ms up to poll_interval (100 ms)
                            time.sleep(min(2 ** empty_streak, 100) / 1000)
                            empty_streak += 1
                        continue
                    empty_streak = 0
                    stats.poll_ms[ph].append(dt)
                    pending.extend(got)
                task = pending.popleft()
                x = (task.get("inputData") or {}).get("x")
                result = {"workflowInstanceId": task["workflowInstanceId"], "taskId": task["taskId"],
                          "workerId": worker_id, "status": "COMPLETED",
                          "outputData": {"x": (x if isinstance(x, int) else 0) + 1}, "extendLease": False}
                t0 = time.perf_counter()
                r = client.post("/api/tasks/update-v2", content=json.dumps(result))
                dt = (time.perf_counter() - t0) * 1000
                if r.status_code not in (200, 204):
                    stats.errors += 1
                    stats.last_error = f"update-v2 {r.status_code} {r.text[:200]}"
                    continue
                t_done = time.time()
                stats.updates[ph] += 1
                stats.update_ms[ph].append(dt)
                if task_type == LAST_TYPE:
                    done_q.put((task["workflowInstanceId"], t_done))
                if r.status_code == 200 and r.content.strip():
                    nxt = r.json()
                    if isinstance(nxt, dict) and nxt.get("taskId"):
                        stats.v2_next[ph] += 1
                        pending.append(nxt)
            except httpx.HTTPError as exc:
                stats.errors += 1
                stats.last_error = f"{type(exc).__name__}: {exc}"
                time.sleep(0.05)


def worker_process(base_url: str, threads: list[tuple[str, str]], batch: int, poll_timeout_ms: int,
                   sdk_backoff: bool, stop_evt, phase, deadline: float, done_q, result_q) -> None:
    """A client process running one SDK-like thread per (task_type, worker_id)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    all_stats = []
    ts = []
    for task_type, worker_id in threads:
        st = Stats()
        all_stats.append(st)
        th = threading.Thread(target=worker_thread, daemon=True,
                              args=(base_url, task_type, worker_id, batch, poll_timeout_ms, sdk_backoff,
                                    stop_evt, phase, deadline, done_q, st))
        th.start()
        ts.append(th)
    for th in ts:
        th.join(timeout=max(1.0, deadline - time.time() + 20))
    result_q.put([s.as_dict() for s in all_stats])


# --- server management ---------------------------------------------------------------------

class Server:
    """Database + server processes this run created; ``stop()`` undoes exactly that."""

    def __init__(self, args):
        self.args = args
        self.procs: list[subprocess.Popen] = []
        self.tmp = Path(tempfile.mkdtemp(prefix="conductor-bench-"))
        self.pg_admin_url: str | None = None
        self.pg_db: str | None = None
        self.url = ""
        self.listen_sock: socket.socket | None = None
        self.description = ""
        self.app_dir = Path(args.app_dir).resolve()

    # database
    def database_url(self) -> str:
        if self.args.db == "sqlite":
            return f"sqlite:///{self.tmp / 'bench.sqlite3'}"
        import psycopg
        from psycopg import sql
        base = self.args.pg_url or os.environ.get("PG_URL") or os.environ.get("DATABASE_URL")
        if not base:
            raise SystemExit("--db postgres needs --pg-url (or PG_URL/DATABASE_URL): a server URL with a database to connect to")
        self.pg_admin_url = base
        self.pg_db = f"cwbench_{os.getpid()}_{uuid.uuid4().hex[:6]}"
        with psycopg.connect(base, autocommit=True) as c:
            c.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(self.pg_db)))
        head, _, _ = base.rpartition("/")
        query = ""
        if "?" in base:
            query = "?" + base.split("?", 1)[1]
        return f"{head}/{self.pg_db}{query}"

    def env(self, database_url: str) -> dict:
        env = dict(os.environ)
        env.update({
            "PYTHONPATH": str(self.app_dir) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else ""),
            "DJANGO_SETTINGS_MODULE": "conductor_web.settings",
            "DATABASE_URL": database_url,
            "CONDUCTOR_VAR_DIR": str(self.tmp),
            "LOG_LEVEL": "WARNING",
            "APP_LOG_LEVEL": "WARNING",
            "DEBUG": "False",
            "PYTHONUNBUFFERED": "1",
            # a loopback server of our own, as `make run` on 127.0.0.1: no API tokens
            "CONDUCTOR_API_AUTH": "off",
        })
        if self.args.asgi_threads:
            env["ASGI_THREADS"] = str(self.args.asgi_threads)
        for kv in self.args.server_env:
            k, _, v = kv.partition("=")
            env[k] = v
        return env

    def start(self) -> None:
        a = self.args
        py = a.server_python or sys.executable
        self.db_url = self.database_url()
        env = self.env(self.db_url)
        subprocess.run([py, str(self.app_dir / "manage.py"), "migrate", "-v", "0", "--no-input"], env=env,
                       cwd=self.app_dir, check=True, timeout=300)
        app = "conductor_web.asgi:application"
        log = open(self.tmp / "server.log", "ab")
        k = a.server_procs
        if a.server == "conductor-web":
            # the product's own server command (conductor_web/serve.py: uvicorn); K processes
            # accept on one port with SO_REUSEPORT (the kernel spreads connections)
            port = free_port()
            base = [py, "-m", "conductor_web.serve", "--host", "127.0.0.1", "--port", str(port)]
            if a.access_log:
                base.append("--access-log")
            if k > 1:
                base.append("--reuse-port")
            cmds = [(base, ()) for _ in range(k)]
        elif a.server == "daphne":
            base = [py, "-m", "daphne", "-v", "0"]
            if a.access_log:
                base = [py, "-m", "daphne", "-v", "1", "--access-log", str(self.tmp / "access.log")]
            if k == 1:
                port = free_port()
                cmds = [(base + ["-b", "127.0.0.1", "-p", str(port), app], ())]
            else:
                # K daphne processes accept on one listening socket (the kernel spreads connections)
                s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                s.bind(("127.0.0.1", 0))
                s.listen(1024)
                s.set_inheritable(True)
                self.listen_sock = s
                port = s.getsockname()[1]
                cmds = [(base + ["--fd", str(s.fileno()), app], (s.fileno(),)) for _ in range(k)]
        elif a.server == "uvicorn":
            port = free_port()
            cmd = [py, "-m", "uvicorn", app, "--host", "127.0.0.1", "--port", str(port), "--workers", str(k),
                   "--log-level", "warning", "--no-access-log", "--lifespan", "off"]
            cmds = [(cmd, ())]
        elif a.server == "granian":
            port = free_port()
            cmd = [py, "-m", "granian", "--interface", "asginl", "--host", "127.0.0.1", "--port", str(port),
                   "--workers", str(k), "--loop", "uvloop", "--log-level", "warning", "--ws",
                   app]
            cmds = [(cmd, ())]
        elif a.server == "gunicorn":
            port = free_port()
            worker_class = a.gunicorn_worker_class
            cmd = [py, "-m", "gunicorn", app, "-k", worker_class, "-w", str(k), "-b", f"127.0.0.1:{port}",
                   "--log-level", "warning", "--graceful-timeout", "5", "--keep-alive", "75"]
            cmds = [(cmd, ())]
        elif a.server == "gunicorn-wsgi":
            # not the product's server (no WebSocket): measures the API without the ASGI sync<->async hops
            port = free_port()
            cmd = [py, "-m", "gunicorn", "conductor_web.wsgi:application", "-k", "gthread", "--threads",
                   str(a.wsgi_threads), "-w", str(k), "-b", f"127.0.0.1:{port}", "--log-level", "warning",
                   "--graceful-timeout", "5", "--keep-alive", "75"]
            cmds = [(cmd, ())]
        else:
            raise SystemExit(f"unknown --server {a.server}")
        for cmd, fds in cmds:
            self.procs.append(subprocess.Popen(cmd, env=env, cwd=self.app_dir, stdout=log, stderr=subprocess.STDOUT,
                                               pass_fds=fds, start_new_session=True))
        if self.listen_sock is not None:
            self.listen_sock.close()  # the children hold it now
            self.listen_sock = None
        self.url = f"http://127.0.0.1:{port}"
        self.description = f"{a.server}x{k}" + (f" ASGI_THREADS={a.asgi_threads}" if a.asgi_threads else "") + \
            (f" threads={a.wsgi_threads}" if a.server == "gunicorn-wsgi" else "")
        self.wait_healthy()

    def wait_healthy(self, timeout: float = 60) -> None:
        """Wait until ``GET /health`` answers 200; raises RuntimeError (with the log's tail) if a
        started process exits first or ``timeout`` seconds pass."""
        deadline = time.time() + timeout
        while True:
            for p in self.procs:
                if p.poll() is not None:
                    raise RuntimeError(f"server process {p.pid} exited with {p.returncode}:\n{self.log_tail()}")
            try:
                if httpx.get(self.url + "/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.time() > deadline:
                raise RuntimeError(f"server did not answer /health within {timeout:.0f} s:\n{self.log_tail()}")
            time.sleep(0.2)

    def pids(self) -> list[int]:
        """PIDs of the server processes that run the app (children of a uvicorn/gunicorn master too)."""
        out = []
        for p in self.procs:
            out.append(p.pid)
            try:
                kids = Path(f"/proc/{p.pid}/task/{p.pid}/children").read_text().split()
                out.extend(int(c) for c in kids)
            except OSError:
                pass
        return out

    def log_tail(self, n: int = 40) -> str:
        try:
            return "\n".join((self.tmp / "server.log").read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return ""

    def stop(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in self.procs:
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(timeout=5)
        self.procs = []
        if self.pg_db and self.pg_admin_url:
            import psycopg
            from psycopg import sql
            try:
                with psycopg.connect(self.pg_admin_url, autocommit=True) as c:
                    c.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(self.pg_db)))
            except psycopg.Error as exc:
                print(f"# could not drop database {self.pg_db}: {exc}", file=sys.stderr)
            self.pg_db = None
        if not self.args.keep:
            shutil.rmtree(self.tmp, ignore_errors=True)


# --- the benchmark -------------------------------------------------------------------------

class Bench:
    def __init__(self, args, base_url: str, server: Server | None):
        self.a = args
        self.url = base_url
        self.server = server
        self.t_begin = time.time()
        self.deadline = self.t_begin + args.deadline
        ctx = mp.get_context("spawn")
        self.ctx = ctx
        self.stop_evt = ctx.Event()
        self.phase = ctx.Value("i", PHASE_WARMUP, lock=False)
        self.done_q = ctx.Queue()
        self.result_q = ctx.Queue()
        self.procs: list = []
        self.done_at: dict[str, float] = {}
        self._local = threading.local()
        self.on_main = lambda starting: None  # hook around the main run (profiling)
        self.cpu: dict = {}
        self.load_before: list[str] = []
        self.idle_server_cpu_pct: float | None = None

    def remaining(self) -> float:
        return self.deadline - time.time()

    def server_pids(self) -> list[int]:
        """The processes whose CPU counts as the server's: those we started, or the
        ``--server-pid`` processes of a server given by ``--url`` (none: not measured)."""
        return [pr.pid for pr in self.server.procs] if self.server else list(self.a.server_pid)

    def client(self) -> httpx.Client:
        c = getattr(self._local, "client", None)
        if c is None:
            c = httpx.Client(base_url=self.url, headers=HEADERS, timeout=httpx.Timeout(30.0))
            self._local.client = c
        return c

    def register(self) -> None:
        c = self.client()
        r = c.post("/api/metadata/taskdefs", content=json.dumps(task_defs()))
        r.raise_for_status()
        r = c.put("/api/metadata/workflow", content=json.dumps([workflow_def()]))
        r.raise_for_status()

    def start_workers(self) -> None:
        a = self.a
        m = a.workers
        p = max(1, min(a.worker_procs or min(3, m), m))
        plan: list[list[tuple[str, str]]] = [[] for _ in range(p)]
        host = socket.gethostname()
        for i in range(m):
            task_type = TASK_TYPES[i % len(TASK_TYPES)]
            plan[i % p].append((task_type, f"{host}-bench-{i}"))
        for threads in plan:
            proc = self.ctx.Process(target=worker_process, daemon=True,
                                    args=(self.url, threads, a.batch, a.poll_timeout_ms, a.sdk_backoff,
                                          self.stop_evt, self.phase, self.deadline, self.done_q, self.result_q))
            proc.start()
            self.procs.append(proc)

    def stop_workers(self) -> list[dict]:
        self.stop_evt.set()
        stats: list[dict] = []
        for _ in self.procs:
            try:
                stats.extend(self.result_q.get(timeout=30))
            except queue_mod.Empty:
                break
        for proc in self.procs:
            proc.join(timeout=10)
            if proc.is_alive():
                proc.terminate()
                proc.join(timeout=5)
        return stats

    def drain(self, timeout: float) -> None:
        try:
            wf_id, t = self.done_q.get(timeout=timeout)
        except queue_mod.Empty:
            return
        self.done_at.setdefault(wf_id, t)
        while True:
            try:
                wf_id, t = self.done_q.get_nowait()
            except queue_mod.Empty:
                return
            self.done_at.setdefault(wf_id, t)

    def start_one(self, i: int) -> tuple[int, str, float]:
        t = time.time()
        r = self.client().post("/api/workflow", content=json.dumps({"name": WF_NAME, "version": 1, "input": {"x": i}}))
        if r.status_code != 200:
            raise RuntimeError(f"start failed: {r.status_code} {r.text[:300]}")
        return i, r.text.strip().strip('"'), t

    def wait_for(self, ids: set[str], deadline: float) -> bool:
        while time.time() < deadline:
            if ids.issubset(self.done_at.keys()):
                return True
            self.drain(min(0.2, max(0.0, deadline - time.time())))
        return ids.issubset(self.done_at.keys())

    def run_batch(self, n: int, concurrency: int, limit: float) -> dict:
        """Start n workflows with bounded concurrency and wait for all; returns timings."""
        started: list[tuple[int, str, float]] = []
        t0 = time.time()
        with ThreadPoolExecutor(max_workers=concurrency) as pool:
            futures = [pool.submit(self.start_one, i) for i in range(n)]
            for f in futures:
                started.append(f.result(timeout=max(1.0, limit - time.time())))
                self.drain(0)
        t_sub = time.time()
        ids = {s[1] for s in started}
        complete = self.wait_for(ids, limit)
        t_end = max((self.done_at[i] for i in ids if i in self.done_at), default=time.time())
        return {"started": started, "t0": t0, "t_submitted": t_sub, "t_end": t_end, "complete": complete,
                "ids": ids}

    def fetch(self, ids: list[str]) -> dict[str, dict]:
        def get(wf_id):
            r = self.client().get(f"/api/workflow/{wf_id}", params={"includeTasks": "false"})
            return wf_id, (r.json() if r.status_code == 200 else {"status": f"HTTP {r.status_code}"})
        with ThreadPoolExecutor(max_workers=4) as pool:
            return dict(pool.map(get, ids))

    def run(self) -> dict:
        a = self.a
        self.register()
        self.start_workers()
        # warm-up: a few workflows through every path (connections, imports, caches)
        self.phase.value = PHASE_WARMUP
        warm = self.run_batch(a.warmup, min(4, a.start_concurrency), min(self.deadline, time.time() + 120))
        if not warm["complete"]:
            raise RuntimeError("warm-up workflows did not complete in 120 s")
        time.sleep(0.3)

        # main run
        self.phase.value = PHASE_MAIN
        self.load_before = Path("/proc/loadavg").read_text().split()[:3]
        self.on_main(True)
        server_pids = self.server_pids()
        client_pids = [pr.pid for pr in self.procs]
        pm = postmaster_pid(a.pg_data) if a.db == "postgres" else None

        def snapshot():
            kids = _children_map()
            return (sum(tree_cpu_s(x, kids) for x in server_pids), sum(tree_cpu_s(x, kids) for x in client_pids),
                    tree_cpu_s(pm, kids) if pm else 0.0, machine_cpu(), os.times())
        cpu0 = snapshot()
        main = self.run_batch(a.workflows, a.start_concurrency, self.deadline - a.lone * 0.5 - 30)
        cpu1 = snapshot()
        self.on_main(False)
        busy = cpu1[3][0] - cpu0[3][0]
        total = cpu1[3][1] - cpu0[3][1]
        own = (cpu1[4].user + cpu1[4].system) - (cpu0[4].user + cpu0[4].system)  # this process (the starter)
        self.cpu = {"server_s": round(cpu1[0] - cpu0[0], 2),
                    "client_s": round(cpu1[1] - cpu0[1] + own, 2),
                    "postgres_s": round(cpu1[2] - cpu0[2], 2) if pm else None,
                    "machine_busy_pct": round(100 * busy / total, 1) if total else None}
        wall = main["t_end"] - main["t0"]
        main_ids = [s[1] for s in main["started"]]
        n_done = sum(1 for i in main_ids if i in self.done_at)

        # idle cost: server CPU while the M workers long-poll empty queues
        time.sleep(0.5)
        server_pids = self.server_pids()
        kids = _children_map()
        idle0 = (sum(tree_cpu_s(x, kids) for x in server_pids), time.monotonic())
        time.sleep(a.idle_s)
        kids = _children_map()
        idle1 = (sum(tree_cpu_s(x, kids) for x in server_pids), time.monotonic())
        self.idle_server_cpu_pct = (round(100 * (idle1[0] - idle0[0]) / (idle1[1] - idle0[1]), 1)
                                    if server_pids else None)

        # lone workflows: one at a time, workers idle-polling
        self.phase.value = PHASE_LONE
        lone: list[tuple[int, str, float]] = []
        lone_client_ms: list[float] = []
        lone_limit = self.deadline - 20
        for k in range(a.lone):
            if time.time() > lone_limit:
                break
            time.sleep(a.lone_gap_ms / 1000)
            i, wf_id, t = self.start_one(10_000_000 + k)
            lone.append((i, wf_id, t))
            if not self.wait_for({wf_id}, min(lone_limit, time.time() + 10)):
                break
            lone_client_ms.append((self.done_at[wf_id] - t) * 1000)

        worker_stats = self.stop_workers()

        # server-side timestamps and correctness
        recs = self.fetch(main_ids + [w for _, w, _ in lone])
        inputs = {w: i for i, w, _ in main["started"] + lone}
        bad = [w for w, r in recs.items()
               if r.get("status") != "COMPLETED" or (r.get("output") or {}).get("x") != inputs[w] + 3]
        srv_lat = [recs[w]["endTime"] - recs[w]["createTime"] for w in main_ids
                   if recs[w].get("status") == "COMPLETED"]
        cli_lat = [(self.done_at[w] - t) * 1000 for _, w, t in main["started"] if w in self.done_at]
        lone_srv = [recs[w]["endTime"] - recs[w]["createTime"] for _, w, _ in lone
                    if recs[w].get("status") == "COMPLETED"]
        return self.report(main, wall, n_done, srv_lat, cli_lat, lone_client_ms, lone_srv, bad, worker_stats)

    def cpu_report(self, transitions: int) -> dict:
        """CPU seconds of the main run by group, and ms per task transition (total = server +
        client + PostgreSQL cluster when measured; the figure to compare across engines on a
        shared machine, see bench/README.md)."""
        c = dict(self.cpu)
        if not c:
            return c
        total = c["server_s"] + c["client_s"] + (c["postgres_s"] or 0.0)
        c["total_s"] = round(total, 2)
        c["server_ms_per_transition"] = _per(c["server_s"], transitions)
        c["client_ms_per_transition"] = _per(c["client_s"], transitions)
        c["postgres_ms_per_transition"] = _per(c["postgres_s"], transitions)
        c["total_ms_per_transition"] = _per(total, transitions)
        return c

    def report(self, main, wall, n_done, srv_lat, cli_lat, lone_cli, lone_srv, bad, worker_stats) -> dict:
        a = self.a
        n = a.workflows
        merged = {"updates": [0, 0, 0], "polls": [0, 0, 0], "empty_polls": [0, 0, 0], "v2_next": [0, 0, 0],
                  "errors": 0}
        poll_ms: list[float] = []
        upd_ms: list[float] = []
        lone_upd_ms: list[float] = []
        last_error = ""
        for st in worker_stats:
            for key in ("updates", "polls", "empty_polls", "v2_next"):
                merged[key] = [x + y for x, y in zip(merged[key], st[key])]
            merged["errors"] += st["errors"]
            last_error = st["last_error"] or last_error
            poll_ms += st["poll_ms"][PHASE_MAIN]
            upd_ms += st["update_ms"][PHASE_MAIN]
            lone_upd_ms += st["update_ms"][PHASE_LONE]
        transitions = merged["updates"][PHASE_MAIN]
        out = {
            "system": a.system,
            "db": a.db if self.server or a.server_pid else "external",
            "server": self.server.description if self.server else a.url,
            "server_procs": a.server_procs if self.server else None,
            "asgi_threads": a.asgi_threads,
            "workers": a.workers, "worker_procs": len(self.procs), "batch": a.batch,
            "poll_timeout_ms": a.poll_timeout_ms, "sdk_backoff": a.sdk_backoff,
            "start_concurrency": a.start_concurrency,
            "n": n, "steps": len(TASK_TYPES), "completed": n_done, "bad": len(bad),
            "submit_s": round(main["t_submitted"] - main["t0"], 3), "wall_s": round(wall, 3),
            "workflows_per_s": round(n_done / wall, 1) if wall > 0 else None,
            "step_transitions_per_s": round(transitions / wall, 1) if wall > 0 else None,
            "lat_create_to_end_ms": summary(srv_lat),
            "lat_submit_to_done_ms": summary(cli_lat),
            "lone": {"runs": len(lone_cli), "client_ms": summary(lone_cli), "server_ms": summary(lone_srv)},
            "idle_server_cpu_pct": self.idle_server_cpu_pct,
            "client": {"polls": merged["polls"][PHASE_MAIN], "empty_polls": merged["empty_polls"][PHASE_MAIN],
                       "updates": transitions, "update_v2_next": merged["v2_next"][PHASE_MAIN],
                       "errors": merged["errors"], "last_error": last_error or None,
                       "poll_with_tasks_ms": summary(poll_ms), "update_v2_ms": summary(upd_ms),
                       "lone_update_v2_ms": summary(lone_upd_ms)},
            "cpu_main_run": self.cpu_report(transitions),
            "loadavg_before": " ".join(self.load_before),
            "app_commit": _app_commit(self.server.app_dir if self.server else None),
            "machine": machine_info(),
        }
        return out


def _per(x: float | None, n: int) -> float | None:
    return round(1000 * x / n, 2) if x is not None and n else None


def _app_commit(app_dir: Path | None) -> str | None:
    """The commit of the served tree: ``.commit`` of a `git archive` copy, else git's HEAD."""
    if app_dir is None:
        return None
    marker = app_dir / ".commit"
    if marker.exists():
        return marker.read_text().strip()
    try:
        return subprocess.run(["git", "-C", str(app_dir), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, timeout=10).stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def human(o: dict) -> str:
    lone = o["lone"]
    return (f"# {o['system']} {o['db']} {o['server']} M={o['workers']}x{o['worker_procs']}p batch={o['batch']}: "
            f"{o['completed']}/{o['n']} workflows in {o['wall_s']} s = {o['workflows_per_s']} wf/s, "
            f"{o['step_transitions_per_s']} task transitions/s; latency p50 {o['lat_create_to_end_ms']['p50']} ms "
            f"p99 {o['lat_create_to_end_ms']['p99']} ms; lone workflow p50 {lone['client_ms']['p50']} ms "
            f"(server {lone['server_ms']['p50']} ms, n={lone['runs']}); "
            f"CPU {o['cpu_main_run'].get('total_ms_per_transition')} ms/transition; "
            f"idle polling {o['idle_server_cpu_pct']} % CPU; bad={o['bad']} errors={o['client']['errors']}; "
            f"load {o['loadavg_before']}")


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    g = p.add_argument_group("target")
    g.add_argument("--url", help="benchmark a running server (base URL without /api)")
    g.add_argument("--start-server", action="store_true", help="create a DB and start our own server")
    g.add_argument("--server-pid", type=int, action="append", default=[], metavar="PID",
                   help="with --url: a process of that server (with its children) whose CPU is measured; "
                        "--db then names its store (postgres: the cluster of --pg-data is measured too)")
    g.add_argument("--system", default="conductor-web", help="the name of the system in the JSON line")
    g.add_argument("--db", choices=("sqlite", "postgres"), default="sqlite")
    g.add_argument("--pg-url", help="PostgreSQL server URL with an existing database to connect to "
                                    "(default $PG_URL or $DATABASE_URL); a new database is created beside it")
    g.add_argument("--pg-data", default=os.environ.get("BENCH_PG_DATA"),
                   help="data dir of the PostgreSQL cluster, to count its CPU (bench/with_pg.sh sets BENCH_PG_DATA)")
    g.add_argument("--server", choices=("conductor-web", "daphne", "uvicorn", "granian", "gunicorn", "gunicorn-wsgi"),
                   default="conductor-web",
                   help="conductor-web = the product's server (python -m conductor_web.serve: uvicorn); gunicorn = gunicorn with UvicornWorker (ASGI); gunicorn-wsgi = gthread WSGI workers "
                        "(API only, for comparison); daphne/gunicorn/granian need --server-python of a venv that has them")
    g.add_argument("--wsgi-threads", type=int, default=16, help="threads per gunicorn-wsgi worker")
    g.add_argument("--server-procs", type=int, default=1, help="K server processes")
    g.add_argument("--asgi-threads", type=int, default=0, help="ASGI_THREADS for daphne (0 = unset)")
    g.add_argument("--server-python", help="python of the venv that serves (default: this one)")
    g.add_argument("--app-dir", default=str(REPO),
                   help="project tree to serve (default: this checkout; e.g. a `git archive` of one commit)")
    g.add_argument("--gunicorn-worker-class", default="uvicorn_worker.UvicornWorker")
    g.add_argument("--server-env", action="append", default=[], metavar="K=V", help="extra server env var")
    g.add_argument("--access-log", action="store_true", help="let the server write an access log (off by default)")
    g.add_argument("--keep", action="store_true", help="keep the temp dir (server log, SQLite file)")
    g = p.add_argument_group("load")
    g.add_argument("--workflows", "-n", type=int, default=1000, help="N workflows in the main run")
    g.add_argument("--workers", "-m", type=int, default=6, help="M worker threads in all (spread over the 3 task types)")
    g.add_argument("--worker-procs", type=int, default=0, help="client processes for the workers (0 = min(3, M))")
    g.add_argument("--batch", type=int, default=1, help="count= of each batch poll")
    g.add_argument("--poll-timeout-ms", type=int, default=100, help="timeout= of each batch poll (long poll)")
    g.add_argument("--sdk-backoff", action="store_true",
                   help="sleep 1,2,4..100 ms after each empty poll, as the SDK's TaskRunner does")
    g.add_argument("--start-concurrency", type=int, default=4, help="concurrent POST /api/workflow")
    g.add_argument("--warmup", type=int, default=20)
    g.add_argument("--lone", type=int, default=50, help="lone-workflow runs (sequential)")
    g.add_argument("--lone-gap-ms", type=int, default=100, help="idle time before each lone workflow")
    g.add_argument("--idle-s", type=float, default=3.0,
                   help="seconds of idle polling over which the server's CPU is measured (before the lone runs)")
    g.add_argument("--deadline", type=float, default=900, help="hard limit for the whole run, s")
    g = p.add_argument_group("output")
    g.add_argument("--json-out", help="append the JSON line to this file")
    g.add_argument("--profile", metavar="DIR",
                   help="record the server processes with py-spy during the main run (collapsed stacks in DIR)")
    g.add_argument("--profile-rate", type=int, default=100, help="py-spy samples per second")
    g.add_argument("--profile-gil", action="store_true", help="py-spy --gil: only samples holding the GIL (CPU)")
    g.add_argument("--py-spy", default=shutil.which("py-spy") or "/tmp/bench-tools/bin/py-spy")
    a = p.parse_args(argv)
    if not a.url and not a.start_server:
        p.error("give --start-server or --url")
    if a.workers < 1 or a.workflows < 1:
        p.error("--workers and --workflows must be >= 1")
    return a


def stop_profilers(profilers: list[subprocess.Popen]) -> None:
    """Stop the py-spy recorders we started (SIGINT makes py-spy write its output)."""
    for prof in profilers:
        if prof.poll() is None:
            prof.send_signal(signal.SIGINT)
    for prof in profilers:
        try:
            prof.wait(timeout=30)
        except subprocess.TimeoutExpired:
            prof.kill()
            prof.wait(timeout=5)
    profilers.clear()


def main(argv=None) -> int:
    a = parse_args(argv)
    server = None
    profilers: list[subprocess.Popen] = []
    rc = 1
    bench = None
    try:
        if a.start_server:
            server = Server(a)
            server.start()
            url = server.url
        else:
            url = a.url.rstrip("/")
            if url.endswith("/api"):
                url = url[:-4]
        bench = Bench(a, url, server)
        if a.profile and server:
            os.makedirs(a.profile, exist_ok=True)
            tag = f"{a.db}-{server.description.replace(' ', '_').replace('=', '')}-m{a.workers}"

            def on_main(starting: bool) -> None:
                if starting:
                    for pid in server.pids():
                        profilers.append(subprocess.Popen(
                            [a.py_spy, "record", "--nonblocking", "--threads", "--format", "raw"] +
                            (["--gil"] if a.profile_gil else []) + [
                             "--rate", str(a.profile_rate), "-p", str(pid),
                             "-o", os.path.join(a.profile, f"{tag}-{pid}.txt"), "-d", str(int(a.deadline))],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
                else:
                    stop_profilers(profilers)
            bench.on_main = on_main
        out = bench.run()
        emit(out, a.json_out)
        print(human(out), flush=True)
        rc = 0 if out["completed"] == a.workflows and out["bad"] == 0 else 1
    finally:
        stop_profilers(profilers)
        if bench is not None and bench.procs and not bench.stop_evt.is_set():
            bench.stop_workers()
        if server is not None:
            server.stop()
    return rc


if __name__ == "__main__":
    sys.exit(main())
