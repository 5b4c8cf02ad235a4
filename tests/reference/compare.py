"""What the reference run compares, and how: a run's workflows reduced to the fields both
servers must agree on, with everything that legitimately differs between two servers
replaced or dropped (each rule says why), and a field-by-field difference of two such
reductions.

A "tree" is ``{label: workflow}``: ``main`` (the case's first run), each labelled run, and
below each run its sub-workflows (``main>ref#retryCount``) and failure workflow
(``main>failureWorkflow``), as far down as they go.
"""
from __future__ import annotations

import fnmatch
import re
from pathlib import Path
from typing import Any

# Workflow fields compared. Times (startTime, endTime, updateTime, lastRetriedTime...) are
# the servers' clocks; ownerApp, createdBy, event, taskToDomain echo the request; ids are
# renamed (below).
WORKFLOW_FIELDS = ("workflowName", "workflowVersion", "status", "reasonForIncompletion", "input", "output",
                   "variables", "correlationId", "failedReferenceTaskNames", "failedTaskNames")
# Task fields compared. Not compared: times and poll counts (clocks and polling rhythm),
# workerId (ours is the harness's, theirs the same; a system task's is the host name),
# queueWaitTime, seq (numbering; the order of the list is compared instead), executionNameSpace,
# isolationGroupId, rateLimit* and taskDefinition (the TaskDef as each server completes
# it with defaults; definitions are compared by the specs and the cases' behaviour).
TASK_FIELDS = ("taskType", "status", "retryCount", "retried", "inputData", "outputData", "reasonForIncompletion",
               "iteration", "callbackAfterSeconds", "startDelayInSeconds", "domain", "workflowTask.type")
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
# Keys of an HTTP task's response headers that name the moment or the connection, not the answer.
VOLATILE_HEADERS = {"date", "Date", "connection", "Connection", "keep-alive", "Keep-Alive"}


def _task_key(task: dict, seen: dict) -> str:
    base = f"{task['referenceTaskName']}#{task.get('retryCount', 0)}"
    n = seen.get(base, 0)
    seen[base] = n + 1
    return base if n == 0 else f"{base}@{n}"


def collect_tree(get_workflow, roots: dict[str, str]) -> tuple[dict[str, dict], dict[str, str]]:
    """``(tree, names)``: the raw workflows under ``roots`` (``{label: workflow id}``) and a
    map from every workflow and task id met to a stable name (``<wf:main>``,
    ``<task:main/ref#0>``), the same on both servers when they did the same thing.
    ``get_workflow(id)`` returns the workflow with its tasks, or None (removed)."""
    tree: dict[str, dict] = {}
    names: dict[str, str] = {}
    todo = list(roots.items())
    while todo:
        label, wid = todo.pop(0)
        if not wid or wid in names:
            continue
        wf = get_workflow(wid)
        names[wid] = f"<wf:{label}>"
        if wf is None:
            tree[label] = {"status": "(removed)"}
            continue
        tree[label] = wf
        seen: dict[str, int] = {}
        for task in wf.get("tasks") or []:
            key = _task_key(task, seen)
            names.setdefault(task["taskId"], f"<task:{label}/{key}>")
            sub = task.get("subWorkflowId") or (task.get("outputData") or {}).get("subWorkflowId")
            if task.get("taskType") == "SUB_WORKFLOW" and sub:
                todo.append((f"{label}>{key}", sub))
        failure = (wf.get("output") or {}).get("conductor.failure_workflow")
        if isinstance(failure, str) and UUID.fullmatch(failure):
            todo.append((f"{label}>failureWorkflow", failure))
    return tree, names


def _rename(value: Any, names: dict[str, str]) -> Any:
    """Ids replaced by their names everywhere (they are random per server); any other
    UUID-shaped string becomes ``<uuid>`` (an id of something outside the tree); the
    address of the case's HTTP stub (a port of its own per server) becomes ``<mock>``.
    A workflow inside a value (a failure workflow's ``failedWorkflow`` input) is reduced as
    the tree's workflows are: its times and internal fields are no more comparable there."""
    if isinstance(value, str):
        for literal, name in names.items():
            if literal.startswith("http") and literal in value:
                value = value.replace(literal, name)
        if UUID.search(value):
            return UUID.sub(lambda m: names.get(m.group(0), "<uuid>"), value)
        return value
    if isinstance(value, dict):
        if "workflowId" in value and "tasks" in value and "status" in value:
            return reduce_tree({"": value}, names)[""]
        out = {}
        for k, v in value.items():
            if k == "headers" and isinstance(v, dict):
                v = {hk: hv for hk, hv in v.items() if hk not in VOLATILE_HEADERS}
            out[k] = _rename(v, names)
        return out
    if isinstance(value, list):
        return [_rename(v, names) for v in value]
    return value


def _field(obj: dict, dotted: str) -> Any:
    for part in dotted.split("."):
        if not isinstance(obj, dict):
            return None
        obj = obj.get(part)
    return obj


def reduce_tree(tree: dict[str, dict], names: dict[str, str]) -> dict[str, dict]:
    """The compared fields of each workflow, ids renamed; tasks keyed ``ref#retryCount``
    (``@n`` for a second task of that ref and attempt, as a loop's) in server order."""
    out: dict[str, dict] = {}
    for label, wf in tree.items():
        reduced: dict[str, Any] = {f: wf.get(f) for f in WORKFLOW_FIELDS if f in wf}
        for key in ("failedReferenceTaskNames", "failedTaskNames"):  # sets in Conductor
            if isinstance(reduced.get(key), list):
                reduced[key] = sorted(reduced[key])
        tasks: dict[str, dict] = {}
        seen: dict[str, int] = {}
        for task in wf.get("tasks") or []:
            tasks[_task_key(task, seen)] = {f: _field(task, f) for f in TASK_FIELDS}
        if "tasks" in wf:
            reduced["tasks"] = tasks
        out[label] = _rename(reduced, names)
    return out


def _equal(a: Any, b: Any) -> bool:
    """JSON equality where 5 and 5.0 are one number (Python's ``==`` already) but a
    boolean is not a number (``True == 1`` in Python; ``_diff`` passes None for a
    missing key, so null equals missing there)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return a == b


def _absent_like(value: Any) -> bool:
    """A field one server leaves out and the other sends empty: no difference a client sees."""
    return value is None or value == {} or value == [] or value == ""


def diff(ours: Any, theirs: Any, path: str = "") -> list[tuple[str, Any, Any]]:
    """``[(path, ours, theirs)]`` for each leaf that differs. Maps key by key, lists
    element by element; a task map also reports a different order as ``path(order)``."""
    if isinstance(ours, dict) and isinstance(theirs, dict):
        out = []
        if path.endswith("tasks") and list(ours) != list(theirs) and set(ours) == set(theirs):
            out.append((path + "(order)", list(ours), list(theirs)))
        for key in list(ours) + [k for k in theirs if k not in ours]:
            a, b = ours.get(key), theirs.get(key)
            if key not in theirs and path.endswith("tasks"):
                out.append((f"{path}.{key}", _brief(a), "(absent)"))
            elif key not in ours and path.endswith("tasks"):
                out.append((f"{path}.{key}", "(absent)", _brief(b)))
            elif _absent_like(a) and _absent_like(b):
                continue
            else:
                out += diff(a, b, f"{path}.{key}" if path else key)
        return out
    if isinstance(ours, list) and isinstance(theirs, list) and len(ours) == len(theirs):
        out = []
        for i, (a, b) in enumerate(zip(ours, theirs)):
            out += diff(a, b, f"{path}[{i}]")
        return out
    return [] if _equal(ours, theirs) else [(path, ours, theirs)]


def _brief(task: Any) -> Any:
    if isinstance(task, dict) and "status" in task:
        return f"{task.get('taskType')} {task['status']}"
    return task


# --- documented differences ---------------------------------------------------------------------

def documented_patterns(doc: Path) -> list[tuple[str, str]]:
    """``[(pattern, why)]`` from the table of docs/differences.md: the first cell of each
    row holds one or more backquoted globs over ``<scenario> <field path>``, the last cell
    the reason."""
    out = []
    for line in doc.read_text().splitlines():
        if not line.startswith("| `"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        out += [(pattern, cells[-1]) for pattern in re.findall(r"`([^`]+)`", cells[0])]
    return out


def documented(scenario: str, path: str, patterns: list[tuple[str, str]]) -> str | None:
    """The documented pattern that covers this difference, or None."""
    subject = f"{scenario} {path}"
    for pattern, _why in patterns:
        if fnmatch.fnmatchcase(subject, pattern):
            return pattern
    return None
