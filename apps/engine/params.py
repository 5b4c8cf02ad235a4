"""``${...}`` parameter resolution, as Conductor's ``ParametersUtils.getTaskInputV2``.

Pure: input is a WorkflowState (and the task being scheduled); no ORM or clock.

Rules mirrored (docs/conductor-notes.md §4.1):
* The document has ``workflow`` (input, output, status, workflowId, variables, ...) and one
  entry per task reference (input, output, status, taskId, ...). Retries: the last attempt
  wins. Loop tasks are keyed by their reference without the ``__N`` suffix (latest wins).
* Paths are JSONPath (Jayway semantics) evaluated with python-jsonpath: a definite path
  gives its value or null when missing, an indefinite one (``..``, wildcards, filters) a list.
* A string that is exactly one ``${...}`` keeps the value's JSON type; references embedded
  in text are stringified the Java way (null -> ``null``, maps -> ``{a=1}``).
* ``$${x}`` is an escape for the literal ``${x}``; ``${}`` is the empty string.
* ``${CPEWF_TASK_ID}`` is the id of the task being scheduled; ``${workflow.env.X}``
  (``${workflow.env.X.json.path}`` into a JSON value) and other bare names are read from
  the environment the ``Document`` was given (``apps.metadata.environment.WorkflowEnvironment``:
  its ``get`` and ``system_parameter``; a plain mapping serves both). ``${workflow.secrets.X}``
  is left literal: it is resolved only where it is used (apps.metadata.secrets).
"""
from __future__ import annotations

import json
import re
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

import jsonpath

from apps.engine.state import TaskList, TaskState, WorkflowState, attempts_of, outputs_of

_NOT_FOUND = object()


_LOOP_SCOPE = re.compile(r"(__\d+)+$")


@lru_cache(maxsize=65536)
def split_ref(reference_task_name: str) -> tuple[str, str]:
    """``ref__2__3`` -> ``("ref", "__2__3")``: the definition reference and the loop scope."""
    m = _LOOP_SCOPE.search(reference_task_name)
    if not m:
        return reference_task_name, ""
    return reference_task_name[:m.start()], m.group(0)


def strip_iteration(reference_task_name: str) -> str:
    """``ref__3`` (or ``ref__2__3`` in nested loops) -> ``ref``. Only the trailing
    ``__<number>`` parts go, so a reference such as ``send__email`` stays whole (Conductor's
    TaskUtils.removeIterationFromTaskRefName, without its split on any ``__``)."""
    return split_ref(reference_task_name)[0]


def ref_suffix(reference_task_name: str) -> str:
    """The loop scope of a runtime reference: ``ref__2__3`` -> ``__2__3``; ``ref`` -> ``""``."""
    return split_ref(reference_task_name)[1]


def loop_scope(task: TaskState) -> str:
    """The loop scope of a task execution (empty outside DO_WHILE bodies)."""
    return ref_suffix(task.reference_task_name) if task.iteration else ""


def definition_ref(task: TaskState) -> str:
    """The WorkflowTask reference a task execution was made from (loop suffix removed)."""
    if task.iteration:
        return strip_iteration(task.reference_task_name)
    return task.reference_task_name


# --- a DO_WHILE's output, whole -----------------------------------------------------------------
#
# Conductor's DO_WHILE output holds every finished iteration's outputs ({"1": {ref: output},
# "2": ..., "iteration": n}). Rewriting that growing document on every update of a long loop
# made each update O(iterations), so while the loop runs its stored output keeps only the
# counter (``iteration``, ``loopIndex``, ``loopItem``) and the current iteration's key; the
# finished iterations are read from their body tasks when something looks at the whole
# output (the API, a ``${loop.output...}`` reference, a loopCondition reading them), and
# written into the stored output once, when the loop ends.


def iteration_key(key: Any) -> bool:
    """Whether an output key of a DO_WHILE names an iteration (``"1"``, ``"2"``, ...)."""
    return isinstance(key, str) and key.isdigit() and key[0] != "0"


def loop_body_refs(loop: TaskState, blueprint) -> set[str]:
    """Every definition reference nested (at any depth) in the DO_WHILE ``loop``'s
    ``loopOver``: from ``blueprint`` (``apps.engine.blueprint.Blueprint`` of the
    execution's definition), or from the WorkflowTask stored on the task (a DO_WHILE
    made by a dynamic fork)."""
    from apps.engine.blueprint import Blueprint

    ref = definition_ref(loop)
    if blueprint is not None and blueprint.get(ref) is not None:
        return blueprint.nested_refs(ref)
    wt = loop.workflow_task or {}
    return Blueprint({"tasks": [wt]}).nested_refs(wt.get("taskReferenceName") or ref)


def _finished_range(loop: TaskState) -> range:
    """The finished iterations a DO_WHILE's whole output shows: those before the current
    one, without the ones ``keepLastN`` dropped."""
    out = loop.output_data or {}
    counter = out.get("iteration")
    if not isinstance(counter, int) or isinstance(counter, bool) or counter < 2:
        return range(0)
    first = 1
    keep = (loop.input_data or {}).get("keepLastN")
    if isinstance(keep, int) and not isinstance(keep, bool) and 0 < keep < counter:
        first = counter - keep + 1  # DoWhile._drop_old_iterations dropped 1..counter-keep
    return range(first, counter)


def loop_missing_iterations(loop: TaskState) -> bool:
    """Whether the stored output of the DO_WHILE ``loop`` leaves finished iterations
    (``_finished_range``) to its body tasks. Costs the size of the stored output, not
    the number of iterations."""
    finished = _finished_range(loop)
    if not finished:
        return False
    held = sum(1 for k in (loop.output_data or {}) if iteration_key(k) and int(k) in finished)
    return held < len(finished)


def loop_output(loop: TaskState, tasks, body_refs: set[str]) -> dict:
    """The whole output of the DO_WHILE ``loop`` as Conductor shows it: its stored output
    (counter, current iteration) plus ``"k": {ref: output}`` of each finished iteration
    it leaves out, from the latest attempt of each body task that ran with exactly that
    iteration's scope, in the order they first ran (a nested loop's own body tasks are
    in that loop's output, not here). ``tasks``: the execution's tasks (list or
    ``TaskList``, read by reference); ``body_refs``: ``loop_body_refs``. Returns the
    stored dict itself when nothing is missing, else a new dict (iteration keys last,
    in order)."""
    out = loop.output_data or {}
    if not loop_missing_iterations(loop):
        return out
    missing = [k for k in _finished_range(loop) if str(k) not in out]
    own = loop_scope(loop)
    refs = [f"{r}{own}__{k}" for k in missing for r in sorted(body_refs)]
    found = outputs_of(tasks, refs)  # narrow rows when many: only their outputs are read
    whole = {k: v for k, v in out.items() if not iteration_key(k)}
    stored = {int(k): v for k, v in out.items() if iteration_key(k)}
    for k in missing:
        stored[k] = None
    for k in sorted(stored):
        value = stored[k]
        if value is None:
            picked = []
            for r in body_refs:
                best = None
                attempts = found.get(f"{r}{own}__{k}") or []
                for t in attempts:
                    if t is not loop and t.iteration and (best is None or t.retry_count >= best.retry_count):
                        best = t
                if best is not None:
                    picked.append((attempts[0].seq, r, best))
            picked.sort(key=lambda item: item[0])
            value = {r: t.output_data for _seq, r, t in picked}
        whole[str(k)] = value
    return whole


def fill_loop_outputs(wf: WorkflowState, blueprint=None) -> None:
    """Give each unfinished DO_WHILE of ``wf`` (its tasks all loaded) its whole output
    (``loop_output``), for readers that show or compare executions."""
    loops = [t for t in wf.tasks if t.task_type == "DO_WHILE" and not t.terminal and loop_missing_iterations(t)]
    if not loops:
        return
    if blueprint is None:
        from apps.engine.blueprint import Blueprint
        blueprint = Blueprint(wf.definition or {})
    for t in loops:
        t.output_data = loop_output(t, wf.tasks, loop_body_refs(t, blueprint))


# A definite path of plain names (``a.b.c``): evaluated without JSONPath.
_DOTTED = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*\Z")


@lru_cache(maxsize=4096)
def _compile(path: str):
    """Compile ``a.b[0].c`` as ``$.a.b[0].c``; names that RFC 9535 shorthand refuses
    (dashes, spaces) are retried in bracket notation. Returns None if still invalid."""
    try:
        return jsonpath.compile("$." + path if not path.startswith("$") else path)
    except Exception:  # noqa: BLE001 - any parse error means "unresolvable"
        pass
    parts = re.split(r"\.(?![^\[]*\])", path)
    rebuilt = "$"
    for part in parts:
        m = re.match(r"^([^\[]*)(.*)$", part)
        name, rest = m.group(1), m.group(2)
        if name:
            rebuilt += "[" + json.dumps(name) + "]"
        rebuilt += rest
    try:
        return jsonpath.compile(rebuilt)
    except Exception:  # noqa: BLE001
        return None


def evaluate_path(path: str, document: dict) -> Any:
    """Evaluate one JSONPath (without ``$.``) against the document, Jayway style.

    Returns the value of a definite path (None if missing), or the list of matches of an
    indefinite path. Never raises (Conductor suppresses JSONPath exceptions).
    """
    if _DOTTED.match(path):
        # the common ``ref.output.key``: plain key look-ups, the value JSONPath gives
        value: Any = document
        for name in path.split("."):
            if not isinstance(value, dict) or name not in value:
                return None
            value = value[name]
        return value
    compiled = _compile(path)
    if compiled is None:
        return None
    try:
        matches = compiled.findall(document)
    except Exception:  # noqa: BLE001
        return None
    if compiled.singular_query():
        return matches[0] if matches else None
    return matches


def _task_entry(task: TaskState, wf: WorkflowState) -> dict:
    return {
        "input": task.input_data,
        "output": task.output_data,
        "taskType": task.task_type,
        "status": task.status,
        "referenceTaskName": task.reference_task_name,
        "retryCount": task.retry_count,
        "correlationId": wf.correlation_id,
        "pollCount": task.poll_count,
        "taskDefName": task.task_def_name,
        "scheduledTime": task.scheduled_time,
        "startTime": task.start_time,
        "endTime": task.end_time,
        "workflowInstanceId": task.workflow_id,
        "taskId": task.task_id,
        "reasonForIncompletion": task.reason_for_incompletion,
        "callbackAfterSeconds": task.callback_after_seconds,
        "workerId": task.worker_id,
        "iteration": loop_iteration(task),
    }


def loop_iteration(task: TaskState) -> int:
    """A task's ``iteration`` as Conductor shows it: for a DO_WHILE its own counter (the
    iteration running now, 1 in the first pass), for a loop body task the iteration it
    belongs to, else 0."""
    if task.task_type == "DO_WHILE":
        counter = (task.output_data or {}).get("iteration")
        if isinstance(counter, int) and not isinstance(counter, bool):
            return counter
    return task.iteration


def _workflow_entry(wf: WorkflowState) -> dict:
    return {
        "input": wf.input,
        "output": wf.output,
        "status": wf.status,
        "workflowId": wf.workflow_id,
        "parentWorkflowId": wf.parent_workflow_id,
        "parentWorkflowTaskId": wf.parent_workflow_task_id,
        "workflowType": wf.workflow_name,
        "version": wf.workflow_version,
        "correlationId": wf.correlation_id,
        "reasonForIncompletion": wf.reason_for_incompletion,
        "schemaVersion": wf.definition.get("schemaVersion", 2),
        "variables": wf.variables,
        "taskToDomain": wf.task_to_domain,
        "createTime": wf.create_time,
        "priority": wf.priority,
    }


class Document:
    """The lazily built resolution document of one workflow (``workflow`` + task refs).
    ``env`` is what ``${workflow.env.X}`` and bare names read (module doc; the engine
    passes a ``WorkflowEnvironment``; none by default: this module reads no process state)."""

    __slots__ = ("wf", "env", "blueprint", "_cache", "_refs", "_loops")

    def __init__(self, wf: WorkflowState, env: Mapping[str, str] | None = None, blueprint=None):
        self.wf = wf
        self.env = env if env is not None else {}
        self.blueprint = blueprint  # apps.engine.blueprint.Blueprint of wf.definition, when known
        self._cache: dict[str, Any] = {}
        self._refs: dict[str, TaskState] | None = None
        self._loops: dict[str, TaskState] = {}  # running DO_WHILEs entered with their lean output

    def _by_reference(self, head: str) -> tuple[bool, TaskState | None]:
        """``(answered, task)``: the latest task made from WorkflowTask ``head`` read by
        reference from a partly loaded ``TaskList`` (``answered`` False: scan them all).
        Outside loops that is the latest attempt of ``head`` itself; in a DO_WHILE body
        (one level) the one of the loop's current or previous iteration."""
        tasks = self.wf.tasks
        if not isinstance(tasks, TaskList) or tasks.complete:
            return False, None
        exact = attempts_of(tasks, (head,))[head]
        if exact:
            return True, exact[-1]
        bp = self.blueprint
        if bp is None or bp.get(head) is None:
            return False, None
        owner = bp.loop_owner(head)
        if owner is None:
            return True, None  # a WorkflowTask of the definition that has not run
        owner_ref = owner.get("taskReferenceName")
        if bp.loop_owner(owner_ref) is not None:
            return False, None
        loops = attempts_of(tasks, (owner_ref,))[owner_ref]
        if not loops:
            return True, None
        counter = int((loops[-1].output_data or {}).get("iteration") or 0)
        for k in (counter, counter - 1):
            ref = f"{head}__{k}"
            found = attempts_of(tasks, (ref,))[ref]
            if found:
                return True, found[-1]
        return False, None

    def entry(self, head: str) -> Any:
        """The document entry named ``head`` (``workflow`` or a task reference), or _NOT_FOUND."""
        if head in self._cache:
            return self._cache[head]
        if head == "workflow":
            value = _workflow_entry(self.wf)
        else:
            answered, task = self._by_reference(head) if self._refs is None else (False, None)
            if answered:
                value = self._task_value(head, task) if task is not None else _NOT_FOUND
                self._cache[head] = value
                return value
            if self._refs is None:
                refs: dict[str, TaskState] = {}
                for task in self.wf.tasks:  # ordered by seq: the last attempt wins
                    key = definition_ref(task)
                    refs[key] = task
                self._refs = refs
            task = self._refs.get(head)
            value = self._task_value(head, task) if task is not None else _NOT_FOUND
        self._cache[head] = value
        return value

    def _task_value(self, head: str, task: TaskState) -> dict:
        if task.task_type == "DO_WHILE" and not task.terminal and loop_missing_iterations(task):
            self._loops[head] = task
        return _task_entry(task, self.wf)

    def lean_loop(self, head: str) -> bool:
        """Whether the entry ``head`` is a running DO_WHILE whose stored output leaves
        finished iterations to its body tasks (``loop_output``)."""
        return head in self._loops

    def whole_entry(self, head: str) -> dict:
        """The entry ``head`` of a running DO_WHILE with its whole output (``loop_output``)."""
        from apps.engine.blueprint import Blueprint

        task = self._loops.pop(head)
        blueprint = self.blueprint if self.blueprint is not None else Blueprint(self.wf.definition or {})
        value = {**self._cache[head], "output": loop_output(task, self.wf.tasks, loop_body_refs(task, blueprint))}
        self._cache[head] = value
        return value


_HEAD = re.compile(r"^([^.\[]+)")
_FIELD = re.compile(r"^\.([A-Za-z_][A-Za-z0-9_]*)(?=$|[.\[])")


def _lean_enough(expr: str, head: str, lean_output: dict) -> bool:
    """Whether ``expr`` (``head...``) reads only what a running DO_WHILE's stored output
    holds: a field other than ``output``, or ``output.<name>`` of a stored non-iteration
    key (``${loop.output.iteration}``)."""
    rest = expr[len(head):].strip()
    m = _FIELD.match(rest)
    if m is None:
        return False
    if m.group(1) != "output":
        return True
    m = _FIELD.match(rest[m.end():])
    return m is not None and m.group(1) in lean_output and not iteration_key(m.group(1))


def _resolve_expression(expr: str, doc: Document, task_id: str | None) -> Any:
    expr = expr.strip()
    if not expr:
        return ""
    if expr == "CPEWF_TASK_ID":
        return task_id
    m = _HEAD.match(expr)
    head = m.group(1).strip() if m else expr
    if head == "workflow" and expr.startswith("workflow.env."):
        return env_variable(doc.env, expr[len("workflow.env."):])
    if head == "workflow" and expr.startswith("workflow.secrets."):
        return "${" + expr + "}"  # left literal, as Conductor stores it
    entry = doc.entry(head)
    if doc.lean_loop(head) and not _lean_enough(expr, head, entry["output"]):
        entry = doc.whole_entry(head)
    if entry is _NOT_FOUND:
        if head == expr:
            reader = getattr(doc.env, "system_parameter", None)
            return reader(head) if reader is not None else doc.env.get(head)
        return None
    if head == expr:
        return entry
    return evaluate_path(expr, {head: entry})


def env_variable(env, ref: str) -> Any:
    """``${workflow.env.<ref>}``: the variable named by ``ref`` up to its first dot, and
    the JSON path after it read from its value parsed as JSON (None when the value is not
    JSON), as Conductor's ParametersUtils.resolveWithOptionalJsonPath."""
    name, dot, path = ref.partition(".")
    value = env.get(name)
    if not dot or value is None:
        return value
    try:
        return evaluate_path(path, json.loads(value))
    except ValueError:
        return None


def java_string(value: Any) -> str:
    """Java ``toString`` of a JSON value, as Conductor embeds values in text."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}={java_string(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(java_string(v) for v in value) + "]"
    return str(value)


def _find_refs(text: str) -> list[tuple[int, int]]:
    """Spans ``(start, end)`` of each top-level ``${...}`` with balanced braces, skipping
    the ``$${`` escape."""
    spans = []
    i = 0
    n = len(text)
    while i < n - 1:
        if text[i] == "$" and text[i + 1] == "{":
            if i > 0 and text[i - 1] == "$":
                i += 2
                continue
            depth = 0
            j = i + 1
            while j < n:
                if text[j] == "{":
                    depth += 1
                elif text[j] == "}":
                    depth -= 1
                    if depth == 0:
                        break
                j += 1
            if j >= n:
                break
            spans.append((i, j + 1))
            i = j + 1
        else:
            i += 1
    return spans


def resolve_string(text: str, doc: Document, task_id: str | None = None) -> Any:
    """Resolve the references in one string (whole-string refs keep their JSON type)."""
    if "${" not in text:
        return text
    spans = _find_refs(text)
    if not spans:
        return text.replace("$${", "${")
    if len(spans) == 1 and spans[0] == (0, len(text)):
        inner = text[2:-1]
        if "${" in inner:
            inner = java_string(resolve_string(inner, doc, task_id))
        return _resolve_expression(inner, doc, task_id)
    out = []
    last = 0
    for start, end in spans:
        out.append(text[last:start])
        inner = text[start + 2:end - 1]
        if "${" in inner:
            inner = java_string(resolve_string(inner, doc, task_id))
        out.append(java_string(_resolve_expression(inner, doc, task_id)))
        last = end
    out.append(text[last:])
    return "".join(out).replace("$${", "${")


def resolve_value(value: Any, doc: Document, task_id: str | None = None) -> Any:
    """Resolve references anywhere in a JSON value (maps, lists, nested lists); non-string
    leaves pass through unchanged. Returns a new value; the input is not modified."""
    if isinstance(value, str):
        return resolve_string(value, doc, task_id)
    if isinstance(value, dict):
        return {k: resolve_value(v, doc, task_id) for k, v in value.items()}
    if isinstance(value, list):
        return [resolve_value(v, doc, task_id) for v in value]
    return value


def resolve_task_input(input_parameters: dict, wf: WorkflowState, *, task_def: dict | None = None,
                       task_id: str | None = None, doc: Document | None = None) -> dict:
    """Resolve a WorkflowTask's ``inputParameters`` into a task's ``inputData``.

    ``task_def.inputTemplate`` keys are added when absent, and a key that resolved to null
    falls back to its template value (Conductor's getTaskInputV2).
    """
    doc = doc or Document(wf)
    params = dict(input_parameters or {})
    template = (task_def or {}).get("inputTemplate") or {}
    for key, default in template.items():
        params.setdefault(key, default)
    resolved = resolve_value(params, doc, task_id)
    for key, default in template.items():
        if resolved.get(key) is None:
            resolved[key] = default
    return resolved
