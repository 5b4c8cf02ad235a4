"""``conductor``: the operator command line, modelled on Conductor's CLI (conductor-cli).

It talks to the REST API only (httpx), so it works against any Conductor-compatible
server; it never imports Django. Base URL: ``--server``, else ``CONDUCTOR_SERVER_URL``,
else ``http://127.0.0.1:8080/api``; given with or without the trailing ``/api``
(``http://127.0.0.1:8080`` works too), as the TypeScript SDK accepts it. With ``CONDUCTOR_AUTH_KEY`` and ``CONDUCTOR_AUTH_SECRET``
set (an access key, as the SDKs read it), it trades them at ``POST /token`` for a token and
sends it as ``X-Authorization``, renewing it once when the server answers EXPIRED_TOKEN.

Commands (JSON on stdout unless noted)::

    conductor workflow create FILE.json [--force]        register a WorkflowDef (or a list)
    conductor workflow start -w NAME [--version N] [--correlation ID] [-i JSON | -f FILE] [--sync]
                                                         prints the workflow id (text)
    conductor workflow get-execution ID... [-c]          execution; -c/--complete adds tasks
    conductor workflow status ID...                      {workflowId, status, output, ...}
    conductor workflow search [TEXT] [-w NAME] [-s STATUS] [-c COUNT]
                              [--start-time-after T] [--start-time-before T] [-q QUERY]
    conductor workflow retry ID... [--resume-subworkflow-tasks]
    conductor workflow restart ID... [--use-latest]
    conductor workflow rerun ID [--task-id TID] [-i/--task-input JSON] [--workflow-input JSON]
                                [--correlation-id ID]  prints the workflow id (text)
    conductor workflow terminate ID... [--reason TEXT] [--trigger-failure-workflow]
    conductor workflow pause ID... / resume ID...
    conductor workflow delete-execution ID... [--archive]
    conductor taskDef list [--json]                      names in a table (text); --json: the TaskDefs
    conductor taskDef get NAME / create FILE.json
    conductor task list [-w WORKFLOW_ID] [-s STATUS] [-t TASK_TYPE] [-c COUNT] [--json]
                                                         one line per task (text); --json: Conductor's JSON
    conductor task complete WORKFLOW_ID REF [-o JSON]    complete the pending task with that reference
    conductor task fail WORKFLOW_ID REF [--reason TEXT] [-o JSON] [--terminal]
                                                         fail it (--terminal: no retry)
    conductor task get TASK_ID
    conductor task queues                                {queueName: size}
    conductor schedule list [-w WORKFLOW] / get NAME / create FILE.json / delete NAME...
    conductor schedule pause NAME... [--reason TEXT] / resume NAME...
    conductor schedule next CRON [-n N] [--start T] [--end T]   next slots (epoch ms and UTC; exit 1 if none)
    conductor schedule executions [NAME...] [-s STATE] [-c COUNT]  runs, newest first

Actions on executions (pause, resume, retry, ...) print one JSON line per id,
``{"workflowId": id, "result": "paused"}``; actions on schedules one line per name,
``{"name": name, "result": "paused"}``; ``task complete``/``fail`` print
``{"workflowId", "taskReferenceName", "taskId", "result": "completed"}``. Errors print Conductor's error message (and
its validation errors) on stderr and exit 1; usage errors exit 2. When the reader of
stdout goes away (``conductor task list | head``) it stops quietly with 141, the status
of a process that SIGPIPE ends, as other commands in a pipe do. Times for
``--start-time-*`` are epoch ms, ``YYYY-MM-DD``, ``YYYY-MM-DD HH:MM[:SS]`` or ISO-8601
(UTC unless an offset is given).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from datetime import datetime, timezone
from typing import Any

import httpx

DEFAULT_SERVER = "http://127.0.0.1:8080/api"
API_SUFFIX = "/api"
ENV_SERVER = "CONDUCTOR_SERVER_URL"
ENV_KEY, ENV_SECRET = "CONDUCTOR_AUTH_KEY", "CONDUCTOR_AUTH_SECRET"


class CliError(Exception):
    """A failure to report on stderr (``message``) with exit status ``code``."""

    def __init__(self, message: str, code: int = 1):
        super().__init__(message)
        self.message = message
        self.code = code


# --- HTTP -----------------------------------------------------------------------------------

def api_base(server: str) -> str:
    """The API base URL for a server URL given with or without its ``/api`` path
    (``http://h:8080``, ``http://h:8080/``, ``http://h:8080/api/`` all give
    ``http://h:8080/api``), as the TypeScript SDK reads ``CONDUCTOR_SERVER_URL``."""
    base = server.strip().rstrip("/")
    return base if base.endswith(API_SUFFIX) else base + API_SUFFIX


def _unauthorized_hint() -> str:
    """What to set when the server wants a key and none was given."""
    return (f"this server wants an access key: set {ENV_KEY} and {ENV_SECRET} "
            "(an operator makes one with `manage.py create_access_key NAME --role ROLE`; "
            "ROLE is read_only, worker, operator or admin)")

def _error_message(resp: httpx.Response) -> str:
    """Conductor's ``ErrorResponse.message`` (plus validation errors), else the body."""
    try:
        body = resp.json()
    except ValueError:
        body = None
    if isinstance(body, dict) and body.get("message"):
        lines = [str(body["message"])]
        for err in body.get("validationErrors") or []:
            path = err.get("path")
            lines.append(f"  - {path}: {err.get('message')}" if path else f"  - {err.get('message')}")
        return "\n".join(lines)
    text = resp.text.strip()
    return text or f"HTTP {resp.status_code}"


def _error_code(resp: httpx.Response) -> str | None:
    try:
        body = resp.json()
    except ValueError:
        return None
    return body.get("error") if isinstance(body, dict) else None


class Client:
    """Thin REST client: every call returns the decoded JSON, the text body, or None for
    an empty one; a non-2xx answer raises CliError with Conductor's message."""

    def __init__(self, server: str, timeout: float = 30.0, transport: httpx.BaseTransport | None = None,
                 key_id: str | None = None, key_secret: str | None = None):
        self.base = api_base(server)
        self.http = httpx.Client(timeout=timeout, transport=transport,
                                 headers={"Accept": "application/json, text/plain, */*"})
        self.key = (key_id, key_secret) if key_id and key_secret else None
        self.token: str | None = None

    def _authenticate(self) -> None:
        """Trade the access key for a token (``POST /token``); CliError when refused."""
        try:
            resp = self.http.post(self.base + "/token", json={"keyId": self.key[0], "keySecret": self.key[1]})
        except httpx.HTTPError as exc:
            raise CliError(f"Cannot reach the Conductor server at {self.base}: {exc}") from None
        if resp.status_code == 404:  # an open server: no credentials needed
            self.key = None
            return
        if resp.status_code >= 400:
            raise CliError(f"Authentication failed ({ENV_KEY}/{ENV_SECRET}): {_error_message(resp)}")
        self.token = resp.json()["token"]
        self.http.headers["X-Authorization"] = self.token

    def close(self) -> None:
        self.http.close()

    def call(self, method: str, path: str, *, params: dict | None = None, body: Any = None,
             json_body: bool = True) -> Any:
        clean = {k: v for k, v in (params or {}).items() if v is not None}
        for k, v in clean.items():
            if isinstance(v, bool):
                clean[k] = "true" if v else "false"
        kwargs: dict[str, Any] = {"params": clean}
        if body is not None:
            kwargs["content"] = json.dumps(body) if json_body else body
            kwargs["headers"] = {"Content-Type": "application/json"}
        if self.key and self.token is None:
            self._authenticate()
        try:
            resp = self.http.request(method, self.base + path, **kwargs)
            if resp.status_code == 401 and self.key and _error_code(resp) == "EXPIRED_TOKEN":
                self._authenticate()
                resp = self.http.request(method, self.base + path, **kwargs)
        except httpx.HTTPError as exc:
            raise CliError(f"Cannot reach the Conductor server at {self.base}: {exc}") from None
        if resp.status_code == 401 and not self.key:
            raise CliError(f"{_unauthorized_hint()}\n  server: {_error_message(resp)}")
        if resp.status_code >= 400:
            raise CliError(_error_message(resp))
        if not resp.content:
            return None
        if resp.headers.get("content-type", "").startswith("application/json"):
            return resp.json()
        return resp.text


# --- helpers ---------------------------------------------------------------------------------

def _print_json(data: Any) -> None:
    print(json.dumps(data, indent=2, ensure_ascii=False))


def _load_json_text(text: str, what: str) -> Any:
    try:
        return json.loads(text)
    except ValueError as exc:
        raise CliError(f"Invalid JSON in {what}: {exc}") from None


def _load_json_file(path: str, what: str) -> Any:
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except OSError as exc:
        raise CliError(f"Cannot read {what} {path}: {exc.strerror}") from None
    return _load_json_text(text, f"{what} {path}")


def _load_objects(path: str, what: str, model: str) -> list[dict]:
    """The JSON objects of a file holding one ``model`` object or a list of them."""
    data = _load_json_file(path, what)
    items = data if isinstance(data, list) else [data]
    if not items or not all(isinstance(d, dict) for d in items):
        raise CliError(f"The file must hold a {model} object or a list of them")
    return items


def _json_object(text: str | None, what: str) -> dict | None:
    if text is None:
        return None
    value = _load_json_text(text, what)
    if not isinstance(value, dict):
        raise CliError(f"{what} must be a JSON object")
    return value


def parse_time(value: str) -> int:
    """Epoch ms from epoch ms, ``YYYY-MM-DD``, ``YYYY-MM-DD HH:MM[:SS]``,
    ``MM/DD/YYYY`` or ISO-8601 text (naive times are UTC). CliError otherwise."""
    value = value.strip()
    if value.isdigit():
        return int(value)
    for fmt in ("%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M", "%Y-%m-%d", "%m/%d/%Y %H:%M:%S", "%m/%d/%Y"):
        try:
            dt = datetime.strptime(value, fmt).replace(tzinfo=timezone.utc)
            return int(dt.timestamp() * 1000)
        except ValueError:
            pass
    try:
        dt = datetime.fromisoformat(value)
    except ValueError:
        raise CliError(f"Unable to parse time '{value}'. Supported formats: YYYY-MM-DD HH:MM:SS, YYYY-MM-DD, "
                       "MM/DD/YYYY, ISO-8601, epoch milliseconds", code=2) from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return int(dt.timestamp() * 1000)


def _each(ids: list[str], action) -> int:
    """Run ``action(id)`` for every id; report failures on stderr and go on.
    Exit status 1 if any failed."""
    failed = 0
    for wid in ids:
        try:
            action(wid)
        except CliError as exc:
            failed += 1
            print(f"{wid}: {exc.message}", file=sys.stderr)
    return 1 if failed else 0


def _done(wid: str, result: str) -> None:
    print(json.dumps({"workflowId": wid, "result": result}))


# --- workflow commands -------------------------------------------------------------------------

def _cmd_workflow_create(c: Client, a) -> int:
    for d in _load_objects(a.file, "workflow definition", "WorkflowDef"):
        c.call("POST", "/metadata/workflow", params={"overwrite": bool(a.force)}, body=d)
        print(json.dumps({"name": d.get("name"), "version": d.get("version", 1), "result": "registered"}))
    return 0


def _cmd_workflow_start(c: Client, a) -> int:
    if a.input is not None and a.file is not None:
        raise CliError("Use either -i/--input or -f/--file, not both", code=2)
    name = a.workflow or a.name
    if not name:
        raise CliError("The workflow name is required (-w NAME)", code=2)
    if a.file is not None:
        data = _load_json_file(a.file, "input file")
        if not isinstance(data, dict):
            raise CliError("The input file must hold a JSON object")
    else:
        data = _json_object(a.input, "--input") if a.input is not None else {}
    if a.sync:
        request = {"name": name, "input": data, "correlationId": a.correlation}
        if a.version:
            request["version"] = a.version
        run = c.call("POST", f"/workflow/execute/{name}/{a.version or 0}",
                     params={"waitUntilTaskRef": a.wait_until or None, "waitForSeconds": a.wait_seconds},
                     body={k: v for k, v in request.items() if v is not None})
        _print_json(run)
        return 0
    wid = c.call("POST", f"/workflow/{name}", params={"version": a.version or None, "correlationId": a.correlation},
                 body=data)
    print(wid if isinstance(wid, str) else json.dumps(wid))
    return 0


def _cmd_workflow_get_execution(c: Client, a) -> int:
    def show(wid: str) -> None:
        wf = c.call("GET", f"/workflow/{wid}", params={"includeTasks": bool(a.complete)})
        if not a.complete and isinstance(wf, dict):
            wf.pop("workflowDefinition", None)
            wf.pop("tasks", None)
        _print_json(wf)
    return _each(a.ids, show)


def _cmd_workflow_status(c: Client, a) -> int:
    return _each(a.ids, lambda wid: _print_json(
        c.call("GET", f"/workflow/{wid}/status", params={"includeOutput": True, "includeVariables": True})))


def build_search_query(*, workflow: str | None = None, status: str | None = None, start_after: int | None = None,
                       start_before: int | None = None, query: str | None = None) -> str | None:
    """Conductor query text for the search flags (``workflowType IN (..) AND status IN
    (..) AND startTime>ms AND startTime<ms``), as conductor-cli builds it."""
    parts = []
    if workflow:
        parts.append(f"workflowType IN ({workflow})")
    if status:
        parts.append(f"status IN ({status.upper()})")
    if start_after is not None:
        parts.append(f"startTime>{start_after}")
    if start_before is not None:
        parts.append(f"startTime<{start_before}")
    if query:
        parts.append(query)
    return " AND ".join(parts) or None


def _cmd_workflow_search(c: Client, a) -> int:
    after = parse_time(a.start_time_after) if a.start_time_after else None
    before = parse_time(a.start_time_before) if a.start_time_before else None
    query = build_search_query(workflow=a.workflow, status=a.status, start_after=after, start_before=before,
                               query=a.query)
    result = c.call("GET", "/workflow/search", params={
        "start": a.start, "size": a.count, "freeText": a.text or "*", "sort": a.sort, "query": query})
    _print_json(result)
    return 0


def _cmd_workflow_retry(c: Client, a) -> int:
    def run(wid: str) -> None:
        c.call("POST", f"/workflow/{wid}/retry",
               params={"resumeSubworkflowTasks": True if a.resume_subworkflow_tasks else None}, body={})
        _done(wid, "retried")
    return _each(a.ids, run)


def _cmd_workflow_restart(c: Client, a) -> int:
    def run(wid: str) -> None:
        c.call("POST", f"/workflow/{wid}/restart", params={"useLatestDefinitions": True if a.use_latest else None},
               body={})
        _done(wid, "restarted")
    return _each(a.ids, run)


def _cmd_workflow_rerun(c: Client, a) -> int:
    request = {"reRunFromWorkflowId": a.id, "reRunFromTaskId": a.task_id, "correlationId": a.correlation_id,
               "taskInput": _json_object(a.task_input, "--task-input"),
               "workflowInput": _json_object(a.workflow_input, "--workflow-input")}
    wid = c.call("POST", f"/workflow/{a.id}/rerun", body={k: v for k, v in request.items() if v is not None})
    print(wid if isinstance(wid, str) else json.dumps(wid))
    return 0


def _cmd_workflow_terminate(c: Client, a) -> int:
    def run(wid: str) -> None:
        c.call("DELETE", f"/workflow/{wid}", params={
            "reason": a.reason, "triggerFailureWorkflow": True if a.trigger_failure_workflow else None})
        _done(wid, "terminated")
    return _each(a.ids, run)


def _cmd_workflow_pause(c: Client, a) -> int:
    def run(wid: str) -> None:
        c.call("PUT", f"/workflow/{wid}/pause", body={})
        _done(wid, "paused")
    return _each(a.ids, run)


def _cmd_workflow_resume(c: Client, a) -> int:
    def run(wid: str) -> None:
        c.call("PUT", f"/workflow/{wid}/resume", body={})
        _done(wid, "resumed")
    return _each(a.ids, run)


def _cmd_workflow_delete_execution(c: Client, a) -> int:
    def run(wid: str) -> None:
        c.call("DELETE", f"/workflow/{wid}/remove", params={"archiveWorkflow": bool(a.archive)})
        _done(wid, "deleted")
    return _each(a.ids, run)


# --- taskDef and task commands --------------------------------------------------------------------

def print_table(headers: list[str], rows: list[list[Any]]) -> None:
    """Print ``rows`` under ``headers`` in columns two spaces apart (cells as text,
    ``None`` as empty; the last column is not padded)."""
    cells = [headers] + [["" if v is None else str(v) for v in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    for r in cells:
        print("  ".join([v.ljust(w) for v, w in zip(r[:-1], widths)] + [r[-1]]).rstrip())


def _cmd_taskdef_list(c: Client, a) -> int:
    defs = c.call("GET", "/metadata/taskdefs")
    if a.json:
        _print_json(defs)
        return 0
    print_table(["NAME", "RETRIES", "TIMEOUT_S", "DESCRIPTION"],
                [[d.get("name"), d.get("retryCount"), d.get("timeoutSeconds"), _short(d.get("description"), 60)]
                 for d in sorted(defs or [], key=lambda d: str(d.get("name")))])
    return 0


def _short(text: Any, limit: int) -> str | None:
    """``text`` on one line, cut to ``limit`` characters (``…`` marks a cut)."""
    if text is None:
        return None
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[:limit - 1] + "…"


TASK_COLUMNS = ["REF", "TASK_TYPE", "STATUS", "ATTEMPT", "TASK_ID", "REASON"]


def _task_row(t: dict) -> list[Any]:
    return [t.get("referenceTaskName"), t.get("taskType"), t.get("status"), t.get("retryCount"), t.get("taskId"),
            _short(t.get("reasonForIncompletion"), 60)]


def _cmd_taskdef_get(c: Client, a) -> int:
    _print_json(c.call("GET", f"/metadata/taskdefs/{a.name}"))
    return 0


def _cmd_taskdef_create(c: Client, a) -> int:
    data = _load_json_file(a.file, "task definition")
    defs = data if isinstance(data, list) else [data]
    c.call("POST", "/metadata/taskdefs", body=defs)
    for d in defs:
        print(json.dumps({"name": d.get("name") if isinstance(d, dict) else None, "result": "registered"}))
    return 0


def _cmd_task_list(c: Client, a) -> int:
    statuses = {s.strip().upper() for s in (a.status or "").split(",") if s.strip()}
    if a.workflow_id:
        wf = c.call("GET", f"/workflow/{a.workflow_id}", params={"includeTasks": True})
        tasks = wf.get("tasks", []) if isinstance(wf, dict) else []
        if statuses:
            tasks = [t for t in tasks if t.get("status") in statuses]
        if a.task_type:
            tasks = [t for t in tasks if a.task_type in (t.get("taskType"), t.get("taskDefName"))]
        if a.json:
            _print_json(tasks)
        else:
            print_table(TASK_COLUMNS, [_task_row(t) for t in tasks])
        return 0
    parts = []
    if a.task_type:
        parts.append(f"taskType IN ({a.task_type})")
    if statuses:
        parts.append(f"status IN ({','.join(sorted(statuses))})")
    result = c.call("GET", "/tasks/search", params={
        "start": 0, "size": a.count, "freeText": "*", "sort": "updateTime:DESC",
        "query": " AND ".join(parts) or None})
    if a.json:
        _print_json(result)
    else:
        print_table(TASK_COLUMNS + ["WORKFLOW_ID"],
                    [_task_row(t)[:-1] + [_short(t.get("reasonForIncompletion"), 40), t.get("workflowId")]
                     for t in (result or {}).get("results", [])])
    return 0


def pending_task(workflow: dict, ref: str) -> dict:
    """The task of ``workflow`` (Conductor's Workflow JSON with ``tasks``) with reference
    ``ref`` that has not ended (SCHEDULED or IN_PROGRESS, the latest attempt); CliError
    naming the workflow's tasks when there is none."""
    tasks = workflow.get("tasks") or []
    pending = [t for t in tasks if t.get("referenceTaskName") == ref and t.get("status") in ("SCHEDULED", "IN_PROGRESS")]
    if pending:
        return max(pending, key=lambda t: (t.get("seq") or 0, t.get("retryCount") or 0))
    seen = ", ".join(f"{t.get('referenceTaskName')} {t.get('status')}" for t in tasks) or "none"
    raise CliError(f"Workflow {workflow.get('workflowId')} has no SCHEDULED or IN_PROGRESS task with reference "
                   f"'{ref}' (its tasks: {seen})")


def _finish_task(c: Client, a, status: str, result: str) -> int:
    """Complete or fail the pending task ``a.ref`` of ``a.workflow_id`` with ``POST /tasks``
    (a TaskResult, the worker role's call)."""
    output = _json_object(a.output, "--output") or {}
    workflow = c.call("GET", f"/workflow/{a.workflow_id}", params={"includeTasks": True})
    task = pending_task(workflow, a.ref)
    body = {"workflowInstanceId": a.workflow_id, "taskId": task["taskId"], "status": status, "outputData": output}
    if getattr(a, "reason", None):
        body["reasonForIncompletion"] = a.reason
    c.call("POST", "/tasks", body=body)
    print(json.dumps({"workflowId": a.workflow_id, "taskReferenceName": a.ref, "taskId": task["taskId"],
                      "result": result}))
    return 0


def _cmd_task_complete(c: Client, a) -> int:
    return _finish_task(c, a, "COMPLETED", "completed")


def _cmd_task_fail(c: Client, a) -> int:
    return _finish_task(c, a, "FAILED_WITH_TERMINAL_ERROR" if a.terminal else "FAILED", "failed")


def _cmd_task_get(c: Client, a) -> int:
    _print_json(c.call("GET", f"/tasks/{a.task_id}"))
    return 0


def _cmd_task_queues(c: Client, a) -> int:
    _print_json(c.call("GET", "/tasks/queue/all"))
    return 0


# --- schedule commands ----------------------------------------------------------------------------

def _each_schedule(names: list[str], action, result: str) -> int:
    def run(name: str) -> None:
        action(name)
        print(json.dumps({"name": name, "result": result}))
    return _each(names, run)


def _cmd_schedule_list(c: Client, a) -> int:
    _print_json(c.call("GET", "/scheduler/schedules", params={"workflowName": a.workflow}))
    return 0


def _cmd_schedule_get(c: Client, a) -> int:
    _print_json(c.call("GET", f"/scheduler/schedules/{a.name}"))
    return 0


def _cmd_schedule_create(c: Client, a) -> int:
    for d in _load_objects(a.file, "schedule", "WorkflowSchedule"):
        saved = c.call("POST", "/scheduler/schedules", body=d)
        print(json.dumps({"name": saved.get("name"), "nextRunTime": saved.get("nextRunTime"), "result": "saved"}))
    return 0


def _cmd_schedule_delete(c: Client, a) -> int:
    return _each_schedule(a.names, lambda n: c.call("DELETE", f"/scheduler/schedules/{n}"), "deleted")


def _cmd_schedule_pause(c: Client, a) -> int:
    return _each_schedule(a.names, lambda n: c.call("PUT", f"/scheduler/schedules/{n}/pause",
                                                    params={"reason": a.reason}), "paused")


def _cmd_schedule_resume(c: Client, a) -> int:
    return _each_schedule(a.names, lambda n: c.call("PUT", f"/scheduler/schedules/{n}/resume"), "resumed")


def _cmd_schedule_next(c: Client, a) -> int:
    times = c.call("GET", "/scheduler/nextFewSchedules", params={
        "cronExpression": a.cron, "limit": a.count,
        "scheduleStartTime": parse_time(a.start) if a.start else None,
        "scheduleEndTime": parse_time(a.end) if a.end else None})
    if not times:  # a cron that matches no date (February 30), or none in the window
        window = " between --start and --end" if a.start or a.end else ""
        print(f"no slot: {a.cron!r} never fires{window}", file=sys.stderr)
        return 1
    for t in times:
        print(json.dumps({"time": t, "utc": datetime.fromtimestamp(t / 1000, tz=timezone.utc).isoformat()}))
    return 0


def _cmd_schedule_executions(c: Client, a) -> int:
    clauses = []
    if a.names:
        clauses.append(f"scheduleName IN ({','.join(a.names)})")
    if a.state:
        clauses.append(f"state IN ({a.state})")
    _print_json(c.call("GET", "/scheduler/search/executions",
                       params={"query": " AND ".join(clauses) or None, "size": a.count}))
    return 0


# --- parser ----------------------------------------------------------------------------------------

def _group(groups, name: str, help_text: str):
    """Add the command group ``name`` (``conductor <name> COMMAND``); returns its
    sub-command collection."""
    commands = groups.add_parser(name, help=help_text).add_subparsers(dest="command", metavar="COMMAND")
    commands.required = True
    return commands


def _on_ids(commands, name: str, help_text: str, func) -> argparse.ArgumentParser:
    """Add the sub-command ``name`` over one or more execution ids (``ID...``) run by
    ``func``; returns its parser for further options."""
    s = commands.add_parser(name, help=help_text)
    s.add_argument("ids", nargs="+", metavar="ID")
    s.set_defaults(func=func)
    return s


def build_parser() -> argparse.ArgumentParser:
    """The argparse tree of every command (see the module doc)."""
    p = argparse.ArgumentParser(prog="conductor", description="Operate a Conductor server over its REST API.")
    p.add_argument("--server", default=None,
                   help=f"API base URL (default: ${ENV_SERVER} or {DEFAULT_SERVER})")
    p.add_argument("--timeout", type=float, default=30.0, help="HTTP timeout in seconds (default 30)")
    groups = p.add_subparsers(dest="group", metavar="{workflow,taskDef,task,schedule}")
    groups.required = True

    w = _group(groups, "workflow", "workflow definitions and executions")

    s = w.add_parser("create", help="register a WorkflowDef from a JSON file")
    s.add_argument("file")
    s.add_argument("--force", action="store_true", help="overwrite an existing name+version")
    s.set_defaults(func=_cmd_workflow_create)

    s = w.add_parser("start", help="start an execution; prints its id")
    s.add_argument("name", nargs="?", help="workflow name (or -w)")
    s.add_argument("-w", "--workflow", help="workflow name")
    s.add_argument("--version", type=int, default=None, help="version (default: latest)")
    s.add_argument("--correlation", help="correlation id")
    s.add_argument("-i", "--input", help="input as a JSON object")
    s.add_argument("-f", "--file", help="file with the input JSON object")
    s.add_argument("--sync", action="store_true", help="wait for the result (POST /workflow/execute)")
    s.add_argument("-u", "--wait-until", help="with --sync: task reference(s) to wait for")
    s.add_argument("--wait-seconds", type=int, default=None, help="with --sync: seconds to wait (server default 10)")
    s.set_defaults(func=_cmd_workflow_start)

    s = _on_ids(w, "get-execution", "show executions", _cmd_workflow_get_execution)
    s.add_argument("-c", "--complete", action="store_true", help="include tasks and the definition")

    _on_ids(w, "status", "status, output and variables of executions", _cmd_workflow_status)

    s = w.add_parser("search", help="search executions (newest first)")
    s.add_argument("text", nargs="?", help="free text (default *)")
    s.add_argument("-w", "--workflow", help="workflow name(s), comma separated")
    s.add_argument("-s", "--status", help="status(es), comma separated")
    s.add_argument("-c", "--count", type=int, default=10, help="page size (default 10)")
    s.add_argument("--start", type=int, default=0, help="offset of the first result")
    s.add_argument("--start-time-after", "--start-time", dest="start_time_after",
                   help="started after (epoch ms or date)")
    s.add_argument("--start-time-before", "--end-time", dest="start_time_before",
                   help="started before (epoch ms or date)")
    s.add_argument("-q", "--query", help="extra condition(s) in Conductor's query syntax")
    s.add_argument("--sort", default="startTime:DESC", help="sort, e.g. startTime:DESC (default)")
    s.set_defaults(func=_cmd_workflow_search)

    s = _on_ids(w, "retry", "retry the failed tasks of terminal executions", _cmd_workflow_retry)
    s.add_argument("--resume-subworkflow-tasks", action="store_true")

    s = _on_ids(w, "restart", "restart terminal executions from the beginning", _cmd_workflow_restart)
    s.add_argument("--use-latest", action="store_true", help="use the latest workflow and task definitions")

    s = w.add_parser("rerun", help="re-run an execution, optionally from one task")
    s.add_argument("id", metavar="ID")
    s.add_argument("--task-id", help="task id to re-run from")
    s.add_argument("-i", "--task-input", help="new input of that task (JSON object)")
    s.add_argument("--workflow-input", help="new workflow input (JSON object)")
    s.add_argument("--correlation-id", help="new correlation id")
    s.set_defaults(func=_cmd_workflow_rerun)

    s = _on_ids(w, "terminate", "terminate executions", _cmd_workflow_terminate)
    s.add_argument("--reason", help="reason recorded on the execution")
    s.add_argument("--trigger-failure-workflow", action="store_true", help="start the failureWorkflow")

    _on_ids(w, "pause", "pause executions", _cmd_workflow_pause)

    _on_ids(w, "resume", "resume paused executions", _cmd_workflow_resume)

    s = _on_ids(w, "delete-execution", "remove executions", _cmd_workflow_delete_execution)
    s.add_argument("-a", "--archive", action="store_true", help="archive (only terminal executions)")

    t = _group(groups, "taskDef", "task definitions")
    s = t.add_parser("list", help="all TaskDefs: names in a table (--json: the definitions)")
    s.add_argument("--json", action="store_true", help="print the TaskDefs as JSON")
    s.set_defaults(func=_cmd_taskdef_list)
    s = t.add_parser("get", help="one TaskDef")
    s.add_argument("name")
    s.set_defaults(func=_cmd_taskdef_get)
    s = t.add_parser("create", help="register TaskDefs from a JSON file (object or list)")
    s.add_argument("file")
    s.set_defaults(func=_cmd_taskdef_create)

    t = _group(groups, "task", "task executions and queues")
    s = t.add_parser("list", help="tasks of an execution (-w), else a task search")
    s.add_argument("-w", "--workflow-id", help="execution whose tasks to list")
    s.add_argument("-s", "--status", help="status(es), comma separated")
    s.add_argument("-t", "--task-type", help="task type or name")
    s.add_argument("-c", "--count", type=int, default=20, help="page size of the search (default 20)")
    s.add_argument("--json", action="store_true", help="print Conductor's JSON instead of a table")
    s.set_defaults(func=_cmd_task_list)
    for name, func, help_text in (("complete", _cmd_task_complete, "complete a workflow's pending task by reference"),
                                  ("fail", _cmd_task_fail, "fail a workflow's pending task by reference")):
        s = t.add_parser(name, help=help_text)
        s.add_argument("workflow_id", metavar="WORKFLOW_ID")
        s.add_argument("ref", metavar="REF", help="taskReferenceName")
        s.add_argument("-o", "--output", help="the task's output (JSON object)")
        if name == "fail":
            s.add_argument("--reason", help="reasonForIncompletion")
            s.add_argument("--terminal", action="store_true", help="FAILED_WITH_TERMINAL_ERROR: no retry")
        s.set_defaults(func=func)
    s = t.add_parser("get", help="one task execution")
    s.add_argument("task_id", metavar="TASK_ID")
    s.set_defaults(func=_cmd_task_get)
    s = t.add_parser("queues", help="size of every task queue")
    s.set_defaults(func=_cmd_task_queues)

    t = _group(groups, "schedule", "workflow schedules (/api/scheduler)")
    s = t.add_parser("list", help="all schedules, or those of one workflow")
    s.add_argument("-w", "--workflow", help="workflow name")
    s.set_defaults(func=_cmd_schedule_list)
    s = t.add_parser("get", help="one schedule")
    s.add_argument("name")
    s.set_defaults(func=_cmd_schedule_get)
    s = t.add_parser("create", help="create or update schedules from a JSON file (object or list)")
    s.add_argument("file")
    s.set_defaults(func=_cmd_schedule_create)
    s = t.add_parser("delete", help="delete schedules")
    s.add_argument("names", nargs="+", metavar="NAME")
    s.set_defaults(func=_cmd_schedule_delete)
    s = t.add_parser("pause", help="pause schedules")
    s.add_argument("names", nargs="+", metavar="NAME")
    s.add_argument("--reason", help="reason recorded on the schedule")
    s.set_defaults(func=_cmd_schedule_pause)
    s = t.add_parser("resume", help="resume paused schedules")
    s.add_argument("names", nargs="+", metavar="NAME")
    s.set_defaults(func=_cmd_schedule_resume)
    s = t.add_parser("next", help="the next slots of a cron expression (server zone)")
    s.add_argument("cron", help="Spring cron, six fields, e.g. '0 0 9 * * MON-FRI'")
    s.add_argument("-n", "--count", type=int, default=5, help="how many (at most 5)")
    s.add_argument("--start", help="not before (epoch ms or date)")
    s.add_argument("--end", help="not after (epoch ms or date)")
    s.set_defaults(func=_cmd_schedule_next)
    s = t.add_parser("executions", help="runs of schedules, newest first")
    s.add_argument("names", nargs="*", metavar="NAME")
    s.add_argument("-s", "--state", help="EXECUTED and/or FAILED, comma separated")
    s.add_argument("-c", "--count", type=int, default=20, help="page size (default 20)")
    s.set_defaults(func=_cmd_schedule_executions)
    return p


EXIT_BROKEN_PIPE = 128 + 13  # as if ended by SIGPIPE


def main(argv: list[str] | None = None, *, transport: httpx.BaseTransport | None = None) -> int:
    """Entry point of the ``conductor`` console script; returns the exit status
    (0 ok, 1 server/IO error with Conductor's message on stderr, 2 usage error, 141 when
    stdout's reader went away). ``transport`` lets tests route requests in-process
    (httpx.WSGITransport)."""
    try:
        return _run(argv, transport)
    except BrokenPipeError:
        # The reader of stdout is gone (``| head``): nothing left to tell it. Point stdout
        # at /dev/null so the flush at interpreter exit does not raise (and print) again.
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        return EXIT_BROKEN_PIPE


def _run(argv: list[str] | None, transport: httpx.BaseTransport | None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse: --help (0) or a usage error (2)
        return int(exc.code or 0)
    server = args.server or os.environ.get(ENV_SERVER) or DEFAULT_SERVER
    client = Client(server, timeout=args.timeout, transport=transport,
                    key_id=os.environ.get(ENV_KEY), key_secret=os.environ.get(ENV_SECRET))
    try:
        return args.func(client, args)
    except CliError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        return exc.code
    finally:
        client.close()


if __name__ == "__main__":
    sys.exit(main())
