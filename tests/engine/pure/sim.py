"""A pure in-memory driver of the decider for operator tests (no DB, no HTTP).

``Sim(definition, input, task_defs)`` starts an execution; ``complete(ref, output)`` /
``fail(ref, reason)`` act as a worker on the pending task with that runtime reference;
``advance(ms)`` moves the clock and decides (timers). Children of SUB_WORKFLOW tasks are
not simulated here (the API tests cover them).
"""
from __future__ import annotations

import random

from apps.core.ids import new_id
from apps.engine.decider import decide
from apps.engine.evaluation import decide_in_memory
from apps.engine.state import WorkflowState
from apps.metadata.validation import normalize_workflow_def, with_task_definitions


class Sim:
    def __init__(self, definition: dict, input: dict | None = None, task_defs: dict | None = None,
                 now: int = 1_000_000):
        self.now = now
        self.task_defs = task_defs or {}
        definition = with_task_definitions(normalize_workflow_def(definition), self.task_defs)
        self.wf = WorkflowState(workflow_id=new_id(), workflow_name=definition["name"],
                                workflow_version=definition.get("version", 1), status="RUNNING",
                                definition=definition, input=input or {}, create_time=now, update_time=now,
                                variables=dict(definition.get("variables") or {}))
        self.outcomes = []
        self.decide()

    def decide(self):
        """Decide, running the evaluations the decide asks for (scripts, jq) and deciding
        again with their results, as the executor does outside the lock; returns the
        first outcome (every outcome is kept in ``outcomes``)."""
        outs = decide_in_memory(lambda evaluated: decide(
            self.wf, now_ms=self.now, new_id=new_id, rng=random.Random(1), task_def_lookup=self.task_defs.get,
            evaluated=evaluated))
        self.outcomes.extend(outs)
        return outs[0]

    # --- queries
    def task(self, ref: str):
        t = self.wf.task_by_ref(ref)
        assert t is not None, f"no task {ref}; have {self.refs()}"
        return t

    def refs(self) -> list[str]:
        return [t.reference_task_name for t in self.wf.tasks]

    def statuses(self) -> dict[str, str]:
        return {t.reference_task_name: t.status for t in self.wf.tasks}

    def pending_worker_refs(self) -> list[str]:
        return [t.reference_task_name for t in self.wf.tasks if t.status == "SCHEDULED" and t.queue_name]

    # --- worker actions
    def _finish(self, ref: str, status: str, output: dict | None, reason: str | None = None):
        t = self.task(ref)
        assert t.status in ("SCHEDULED", "IN_PROGRESS"), (ref, t.status)
        t.status = status
        t.output_data = output or {}
        t.reason_for_incompletion = reason
        t.start_time = t.start_time or self.now
        t.end_time = self.now
        t.update_time = self.now
        return self.decide()

    def complete(self, ref: str, output: dict | None = None):
        return self._finish(ref, "COMPLETED", output)

    def fail(self, ref: str, reason: str = "boom", terminal: bool = False):
        return self._finish(ref, "FAILED_WITH_TERMINAL_ERROR" if terminal else "FAILED", {}, reason)

    def advance(self, ms: int):
        self.now += ms
        return self.decide()
