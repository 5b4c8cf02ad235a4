"""DO_WHILE: run ``loopOver`` at least once, then again while ``loopCondition`` holds.

Body tasks of iteration N get the reference suffix ``__N`` (``__M__N`` when the loop is
itself inside a loop body at iteration M) and ``iteration`` N. The loop's own counter is
``output.iteration``; each finished iteration adds ``output["N"] = {ref: output}``. While
the loop runs, its stored output holds the counter and the current iteration only, and the
finished iterations are read from their body tasks by whoever looks at the whole output
(``params.loop_output``: the API, ``${loop.output...}``, a condition reading them); it is
written whole when the loop ends (complete, fail or cancel), so an update of a long loop
does not rewrite a document that grows with every iteration (issue #9).
``keepLastN`` (input) drops older iteration outputs and their task rows. List mode
(``items`` on the WorkflowTask, or ``_items`` in its input) iterates over a list with
``loopIndex``/``loopItem`` in the output, and continues while items remain (and the
condition, if any, holds); an empty list completes with ``iteration: 0``.
The condition is JavaScript over ``$`` = the loop's resolved input, plus ``$.<loopRef>`` =
the loop's output and ``$.<bodyRef>`` = each body task's latest output (references without
suffix). A failed body task (after its retries) fails the loop; a condition error is
FAILED_WITH_TERMINAL_ERROR ``Unable to evaluate condition %s, exception %s``.
The condition is evaluated outside the workflow's lock (``apps.engine.evaluation``): at the
end of an iteration the loop asks for it and waits IN_PROGRESS; the decide that receives
the value starts the next iteration or completes the loop (normally in the same request).
Source: DoWhile / DoWhileTaskMapper (docs/conductor-notes.md §5; cases 01, 03, 04).
"""
from __future__ import annotations

from apps.engine import evaluation, params
from apps.engine.evaluators import truthy
from apps.engine.state import TaskState
from apps.engine.task_types import register
from apps.engine.task_types.base import TaskType


class _Snapshot:
    """What ``params.loop_output`` reads of a loop task, fixed at the decide that asked
    (the task object itself may change before the evaluation runs)."""

    __slots__ = ("task_id", "reference_task_name", "iteration", "output_data", "input_data", "seq", "retry_count")

    def __init__(self, task: TaskState, output: dict):
        self.task_id = task.task_id
        self.reference_task_name = task.reference_task_name
        self.iteration = task.iteration
        self.output_data = output
        self.input_data = task.input_data
        self.seq = task.seq
        self.retry_count = task.retry_count


def _lean(output: dict) -> dict:
    """A running loop's stored output without its iteration keys."""
    return {k: v for k, v in output.items() if not params.iteration_key(k)}


def max_iterations(d) -> int:
    """Iterations a DO_WHILE may run (``CONDUCTOR["DO_WHILE_MAX_ITERATIONS"]``, from the
    decider's ``config``): a loop whose condition still holds after that many fails with
    a reason instead of running (or sitting RUNNING) forever."""
    return int(d.config.get("DO_WHILE_MAX_ITERATIONS", 1000))


@register
class DoWhile(TaskType):
    type_name = "DO_WHILE"
    has_task_def = False

    def map(self, d, workflow_task, retry_count):
        task = d.new_task(workflow_task, retry_count=retry_count)
        task.task_def_name = workflow_task.get("name") or "DO_WHILE"
        task.status = "IN_PROGRESS"
        task.start_time = d.now
        task.output_data = {}
        return [task]

    # --- helpers -------------------------------------------------------------------------

    @staticmethod
    def _scope(task: TaskState, counter: int) -> str:
        return f"{params.loop_scope(task)}__{counter}"

    def _items(self, d, task: TaskState) -> list | None:
        wt = d.workflow_task_of(task)
        expr = wt.get("items")
        value = None
        if isinstance(expr, str) and expr.strip():
            value = params.resolve_value(expr, d.document())
        elif "_items" in (wt.get("inputParameters") or {}):
            value = task.input_data.get("_items")
        else:
            return None
        if value is None:
            return []
        return value if isinstance(value, list) else [value]

    def _start_iteration(self, d, task: TaskState, counter: int, items: list | None) -> None:
        wt = d.workflow_task_of(task)
        # finished iterations stay in their body tasks (``params.loop_output``)
        task.output_data = {**_lean(task.output_data), "iteration": counter}
        if items is not None:
            task.output_data["loopIndex"] = counter - 1
            if counter - 1 < len(items):
                task.output_data["loopItem"] = items[counter - 1]
        body = wt.get("loopOver") or []
        if body:
            d.schedule(d.map_in_scope(body[0], self._scope(task, counter), counter))

    def _body_tasks(self, d, task: TaskState, nested: set[str], scope: str | None) -> dict[str, TaskState]:
        """Latest attempt per runtime reference of this loop's body tasks (``scope``:
        only that iteration and the loops nested in it; None: every iteration)."""
        own = params.loop_scope(task)
        out: dict[str, TaskState] = {}
        for t in d.wf.tasks:
            if t is task or not t.iteration:
                continue
            base, suffix = params.split_ref(t.reference_task_name)
            if base not in nested:
                continue
            if scope is not None and not (suffix == scope or suffix.startswith(scope + "__")):
                continue
            if scope is None and not suffix.startswith(own + "__"):
                continue
            prev = out.get(t.reference_task_name)
            if prev is None or t.retry_count >= prev.retry_count:
                out[t.reference_task_name] = t
        return out

    def _scope_tasks(self, d, task: TaskState, nested: set[str], scope: str) -> dict[str, TaskState]:
        """``_body_tasks`` of one iteration, read by reference (``d.attempts_of``) instead
        of by a scan of every task: exact when no DO_WHILE is nested in the body (then
        each body task of the iteration has the reference ``<ref><scope>``)."""
        if any((d.blueprint.get(r) or {}).get("type") == "DO_WHILE" for r in nested):
            return self._body_tasks(d, task, nested, scope)
        found = []
        for attempts in d.attempts_of(r + scope for r in nested).values():
            best = None
            for t in attempts:
                if t is not task and t.iteration and (best is None or t.retry_count >= best.retry_count):
                    best = t
            if best is not None:
                found.append((attempts[0].seq, best))
        found.sort(key=lambda pair: pair[0])  # as the scan: in the order the references first ran
        return {t.reference_task_name: t for _seq, t in found}

    def _iteration_complete(self, d, task: TaskState, relevant: dict[str, TaskState], scope: str) -> bool:
        wt = d.workflow_task_of(task)
        loop_ref = wt.get("taskReferenceName")
        for body_wt in wt.get("loopOver") or []:
            t = relevant.get(body_wt["taskReferenceName"] + scope)
            if t is None or not t.terminal:
                return False
        if any(not t.terminal for t in relevant.values()):
            return False
        for t in relevant.values():
            if params.ref_suffix(t.reference_task_name) != scope or not d.get_type(t.task_type).continues_after(d, t):
                continue
            nxt = d.blueprint.next_task(params.strip_iteration(t.reference_task_name))
            if nxt is None or nxt.get("taskReferenceName") == loop_ref:
                continue
            if d.blueprint.contains(loop_ref, nxt["taskReferenceName"]) and \
                    (nxt["taskReferenceName"] + scope) not in relevant:
                return False  # a successor inside the body is not scheduled yet
        return True

    def _condition_input(self, d, task: TaskState, nested: set[str], items: list | None, counter: int,
                         current: dict[str, TaskState]) -> dict:
        """The condition's ``$``: the loop's input, resolved again now (Conductor's
        DoWhile.evaluateCondition calls getTaskInputV2 at each evaluation, so an input
        reading ``${workflow.variables.x}`` sees the variable's present value), the loop's
        own output under its reference, each body reference's latest output,
        loopIndex/loopItem."""
        bindings = dict(task.input_data)
        declared = d.workflow_task_of(task).get("inputParameters")
        if declared:
            bindings.update(params.resolve_task_input(declared, d.wf, task_id=task.task_id, doc=d.document()))
        bindings[task.reference_task_name] = task.output_data
        bindings[params.strip_iteration(task.reference_task_name)] = task.output_data
        # the latest iteration's task of each body reference wins: pick those first, so
        # only their outputs are read (decoded), not every past iteration's. When every
        # body reference ran in this iteration (``current``, no nested loop) those are it;
        # otherwise older iterations are searched too.
        latest: dict[str, TaskState] = {}
        same_scope = all(params.ref_suffix(ref) == self._scope(task, counter) for ref in current)
        if same_scope and {params.strip_iteration(ref) for ref in current} == nested:
            body = current
        else:
            body = self._body_tasks(d, task, nested, None)
        for t in body.values():
            latest[params.strip_iteration(t.reference_task_name)] = t
        for ref, t in latest.items():
            bindings[ref] = t.output_data
        if items is not None:
            bindings["loopIndex"] = counter - 1
            if counter - 1 < len(items):
                bindings["loopItem"] = items[counter - 1]
        return bindings

    # --- the operator ----------------------------------------------------------------------

    def execute(self, d, task: TaskState) -> bool:
        wt = d.workflow_task_of(task)
        counter = int(task.output_data.get("iteration") or 0)
        items = self._items(d, task)
        if counter == 0:
            if items is not None and not items:
                task.output_data = {"iteration": 0}
                return self._done(d, task, "COMPLETED")
            self._start_iteration(d, task, 1, items)
            return True

        loop_ref = wt["taskReferenceName"]
        nested = d.blueprint.nested_refs(loop_ref)
        scope = self._scope(task, counter)
        relevant = self._scope_tasks(d, task, nested, scope)
        before = dict(task.output_data)
        iteration_output = {}
        failure = None
        for ref, t in relevant.items():
            if params.ref_suffix(ref) != scope:
                continue
            iteration_output[params.strip_iteration(ref)] = t.output_data
            if t.terminal and not t.successful:
                failure = t.reason_for_incompletion or f"{ref} {t.status}"
                break
        task.output_data = {**_lean(task.output_data), str(counter): iteration_output}
        keep_last = task.input_data.get("keepLastN")
        if isinstance(keep_last, int) and not isinstance(keep_last, bool) and keep_last > 0 and counter > keep_last:
            self._drop_old_iterations(d, task, nested, counter - keep_last)
        if failure is not None:
            task.reason_for_incompletion = failure
            return self._done(d, task, "FAILED")
        if not self._iteration_complete(d, task, relevant, scope):
            return task.output_data != before

        condition = wt.get("loopCondition")
        if items is not None and counter >= len(items):
            go_on = False  # the list is done: the condition is not evaluated
        elif not (condition and (items is None or condition.strip())):
            go_on = items is not None  # list mode without a condition runs every item
        else:
            result, asked = self._evaluated_condition(d, task, condition,
                                                      self._condition_input(d, task, nested, items, counter, relevant),
                                                      nested)
            if result is None:  # asked for: the decide that gets the result carries on
                return task.output_data != before or asked
            if result.error is not None:
                task.reason_for_incompletion = f"Unable to evaluate condition {condition}, exception {result.error}"
                return self._done(d, task, "FAILED_WITH_TERMINAL_ERROR")
            go_on = truthy(result.value)
        if go_on:
            cap = max_iterations(d)
            if counter >= cap:
                task.reason_for_incompletion = (
                    f"DO_WHILE {loop_ref} reached the limit of {cap} iterations with its loopCondition still true "
                    "(CONDUCTOR_DO_WHILE_MAX_ITERATIONS)")
                return self._done(d, task, "FAILED_WITH_TERMINAL_ERROR")
            self._start_iteration(d, task, counter + 1, items)
            return True
        return self._done(d, task, "COMPLETED")

    @staticmethod
    def _evaluated_condition(d, task: TaskState, condition: str, bindings: dict,
                             nested: set[str]) -> tuple[evaluation.Evaluated | None, bool]:
        """``(result, asked)``: the value of ``condition`` over ``bindings`` once the
        executor evaluated it outside the lock, else None, and whether this call asked for
        it (the task changed). ``evaluation_key`` remembers what was asked (and
        ``update_time`` when), so another decide meanwhile does not ask again before the
        time limit plus grace has passed. The loop's own output is bound as stored (the
        counter and the current iteration); a script that reads a finished iteration, or
        enumerates the output, is run again with the whole output (``whole``, assembled
        from the body tasks outside the lock): the key names the same evaluation, as the
        finished iterations are fixed by the counter."""
        digest = evaluation.key(evaluation.JS, None, condition, bindings)
        lean = whole = None
        if params.loop_missing_iterations(task):
            lean = tuple(dict.fromkeys((task.reference_task_name, params.strip_iteration(task.reference_task_name))))
            tasks, stored = d.wf.tasks, task.output_data
            probe = _Snapshot(task, stored)

            def whole() -> dict:
                output = params.loop_output(probe, tasks, nested)
                return {name: output for name in lean}
        due = (task.evaluation_key != digest or d.redispatch_evaluations
               or d.now >= evaluation.redispatch_at(task.update_time, evaluation.JS, d.config))
        newly = due and task.task_id not in d.asked
        result = d.evaluation_result(task, evaluation.JS, condition, bindings, ask=due, digest=digest,
                                     lean=lean, whole=whole)
        if result is not None:
            task.evaluation_key = ""
            return result, False
        if newly:
            task.evaluation_key = digest
            task.update_time = d.now
        return None, newly

    @staticmethod
    def _whole_output(d, task: TaskState) -> dict:
        if d.speculative:
            # the run-ahead's snapshot is never saved: a later evaluation that binds this
            # loop's output gets a key the locked decide does not match, and is asked again
            return task.output_data
        return params.loop_output(task, d.wf.tasks, d.blueprint.nested_refs(d.workflow_task_of(task)["taskReferenceName"]))

    def cancel(self, d, task: TaskState) -> None:
        task.output_data = self._whole_output(d, task)  # the loop ends: its output is written whole

    def _done(self, d, task: TaskState, status: str) -> bool:
        task.output_data = self._whole_output(d, task)  # the loop ends: its output is written whole
        task.status = status
        task.end_time = d.now
        task.update_time = d.now
        return True

    def _drop_old_iterations(self, d, task: TaskState, nested: set[str], up_to: int) -> None:
        own = params.loop_scope(task)
        for k in [k for k in task.output_data if params.iteration_key(k) and int(k) <= up_to]:
            task.output_data.pop(k)
        old_scopes = tuple(f"{own}__{k}" for k in range(1, up_to + 1))
        doomed = [t for t in d.wf.tasks if params.strip_iteration(t.reference_task_name) in nested and
                  any(params.ref_suffix(t.reference_task_name) == s or
                      params.ref_suffix(t.reference_task_name).startswith(s + "__") for s in old_scopes)]
        for t in doomed:
            d.remove_task(t)
