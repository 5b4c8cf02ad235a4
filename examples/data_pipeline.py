"""Data pipeline: the system-task example of the "dynamic workflows in Python" article.

System tasks the server runs by itself mixed with ``@worker_task`` workers on one chain:

1. ``HttpTask`` ``fetch_data``: ``GET`` the records API, with the header
   ``Authorization: Bearer ${workflow.input.api_key}`` (resolved by the server);
2. ``JsonJQTask`` ``transform``: reshape the records with jq;
3. ``enrich_records`` (worker): add a tier to every record;
4. ``WaitTask`` ``cooldown``: pause 5 seconds;
5. ``save_to_database`` (worker): upsert the records into SQLite and answer the count,
   the workflow's ``stored`` output.

Differences from the article, so that it runs as written against any server:

* the article's URI is ``https://api.example.com/records``; here it is the workflow input
  ``url`` (``${workflow.input.url}``). ``main()`` takes it from ``RECORDS_API_URL``, or,
  when that is not set, serves ``SAMPLE_RECORDS`` itself on 127.0.0.1 (``serve_records``);
* the API answers ``{"records": [{"id", "metrics": {"total"}}, ...]}``. The jq input is the
  task's whole input map, in which ``records`` is that body (``fetch.output("response.body")``),
  so the article's ``.body.records | ...`` finds nothing; the script here starts at
  ``.records.records`` and keeps the article's ``map({id: .id, value: .metrics.total})``.

    make run                                   # server on http://127.0.0.1:8080
    export CONDUCTOR_SERVER_URL=http://127.0.0.1:8080/api
    python examples/data_pipeline.py           # or RECORDS_API_URL=... RECORDS_API_KEY=...

The SQLite file is ``PIPELINE_DB`` (default: ``data_pipeline_example.sqlite3`` in the
system's temporary folder).

No ``from __future__ import annotations`` here: the SDK maps task input to worker
arguments by their annotations and needs real types, not strings.
"""
import json
import os
import sqlite3
import sys
import tempfile
import threading
import time
from contextlib import closing, contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import List

from conductor.client.automator.task_handler import TaskHandler
from conductor.client.configuration.configuration import Configuration
from conductor.client.orkes_clients import OrkesClients
from conductor.client.worker.worker_task import worker_task
from conductor.client.workflow.conductor_workflow import ConductorWorkflow
from conductor.client.workflow.executor.workflow_executor import WorkflowExecutor
from conductor.client.workflow.task.http_task import HttpTask
from conductor.client.workflow.task.json_jq_task import JsonJQTask
from conductor.client.workflow.task.wait_task import WaitTask

try:  # imported from the repository root (the tests), or run as python examples/<name>.py
    from examples.registration import register_unless_present
except ImportError:
    from registration import register_unless_present

WORKFLOW_NAME = "data_pipeline"
WORKFLOW_VERSION = 1
JQ_SCRIPT = ".records.records | map({id: .id, value: .metrics.total})"
GOLD_THRESHOLD = 100
TERMINAL_STATUSES = ("COMPLETED", "FAILED", "TIMED_OUT", "TERMINATED")

SAMPLE_RECORDS = {
    "records": [
        {"id": "rec-1", "name": "north", "metrics": {"total": 120, "count": 4}},
        {"id": "rec-2", "name": "south", "metrics": {"total": 45, "count": 2}},
        {"id": "rec-3", "name": "east", "metrics": {"total": 300, "count": 9}},
    ]
}


def database_path() -> str:
    return os.environ.get("PIPELINE_DB") or os.path.join(tempfile.gettempdir(), "data_pipeline_example.sqlite3")


@worker_task(task_definition_name="enrich_records")
def enrich_records(records: List[dict]) -> dict:
    enriched = [{**record, "tier": "gold" if (record.get("value") or 0) >= GOLD_THRESHOLD else "standard"}
                for record in records or []]
    return {"enriched": enriched}


@worker_task(task_definition_name="save_to_database")
def save_to_database(records: List[dict]) -> dict:
    records = list(records or [])
    with closing(sqlite3.connect(database_path(), timeout=30)) as db, db:
        db.execute("CREATE TABLE IF NOT EXISTS records (id TEXT PRIMARY KEY, value REAL, tier TEXT)")
        db.executemany("INSERT OR REPLACE INTO records (id, value, tier) VALUES (?, ?, ?)",
                       [(r.get("id"), r.get("value"), r.get("tier")) for r in records])
    return {"count": len(records), "database": database_path()}


def data_pipeline_workflow(executor: WorkflowExecutor, register: bool = True) -> ConductorWorkflow:
    """Build ``data_pipeline`` v1 (fetch >> transform >> enrich >> cooldown >> store) and register it."""
    workflow = ConductorWorkflow(name=WORKFLOW_NAME, version=WORKFLOW_VERSION, executor=executor)

    # HTTP task: fetch data from an external API (no worker needed)
    fetch = HttpTask(task_ref_name="fetch_data", http_input={
        "uri": workflow.input("url"),
        "method": "GET",
        "headers": {"Authorization": ["Bearer ${workflow.input.api_key}"]},
    })

    # JQ Transform: reshape the response (no worker needed)
    transform = JsonJQTask(
        task_ref_name="transform",
        script=JQ_SCRIPT,
    )
    transform.input_parameters.update({
        "records": fetch.output("response.body"),
    })

    # Custom worker: run business logic
    enrich = enrich_records(
        task_ref_name="enrich",
        records=transform.output("result"),
    )

    # Wait: pause for 5 seconds before the next step
    cooldown = WaitTask(task_ref_name="cooldown", wait_for_seconds=5)

    # Custom worker: store results
    store = save_to_database(task_ref_name="store", records=enrich.output("enriched"))

    workflow >> fetch >> transform >> enrich >> cooldown >> store
    workflow.output_parameters({"stored": store.output("count")})
    if register:
        register_unless_present(executor, workflow)
    return workflow


@contextmanager
def serve_records(body: dict = SAMPLE_RECORDS, path: str = "/records"):
    """Serve ``body`` as JSON on ``GET http://127.0.0.1:<free port><path>`` while the
    block runs; yield ``(url, requests)``, ``requests`` being the ``(path, headers)`` of
    every request received."""
    requests = []
    payload = json.dumps(body).encode()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - http.server's naming
            requests.append((self.path, dict(self.headers)))
            if self.path.split("?")[0] != path:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}{path}", requests
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def wait_for_completion(executor: WorkflowExecutor, workflow_id: str, timeout_seconds: float = 60):
    """Poll the execution until it ends or ``timeout_seconds`` pass; return the last read."""
    deadline = time.monotonic() + timeout_seconds
    while True:
        workflow = executor.get_workflow(workflow_id=workflow_id, include_tasks=False)
        if workflow is not None and workflow.status in TERMINAL_STATUSES:
            return workflow
        if time.monotonic() >= deadline:
            return workflow
        time.sleep(0.25)


def run_pipeline(executor: WorkflowExecutor, config: Configuration, url: str, api_key: str):
    workflow = data_pipeline_workflow(executor)
    workflow_id = workflow.start_workflow_with_input(workflow_input={"url": url, "api_key": api_key})
    print(f"Started workflow: {workflow_id}")
    done = wait_for_completion(executor, workflow_id)
    print(f"Status: {done.status if done else None}")
    print(f"Output: {done.output if done else None}")
    print(f"View: {config.ui_host}/execution/{workflow_id}")
    return done


def main() -> int:
    config = Configuration()  # CONDUCTOR_SERVER_URL, default http://localhost:8080/api
    clients = OrkesClients(configuration=config)
    executor = clients.get_workflow_executor()
    api_key = os.environ.get("RECORDS_API_KEY", "demo-key")

    task_handler = TaskHandler(workers=[], configuration=config, scan_for_annotated_workers=True)
    task_handler.start_processes()
    try:
        if os.environ.get("RECORDS_API_URL"):
            done = run_pipeline(executor, config, os.environ["RECORDS_API_URL"], api_key)
        else:
            with serve_records() as (url, _requests):
                print(f"Serving sample records at {url}")
                done = run_pipeline(executor, config, url, api_key)
    finally:
        task_handler.stop_processes()
    return 0 if done is not None and done.status == "COMPLETED" else 1


if __name__ == "__main__":
    sys.exit(main())
