"""Index of a WorkflowDef's task tree: find a WorkflowTask by reference and the next
WorkflowTask to run after it. Pure; built from the definition snapshot of an execution.

Traversal mirrors Conductor's ``WorkflowDef.getNextTask`` / ``WorkflowTask.next``:
* the next task is the following entry of the same list;
* after the last task of a SWITCH/DECISION case: the task after the SWITCH;
* after the last task of a fork branch: the task after the FORK (its JOIN, which is
  already scheduled, so nothing new runs);
* after the last task of a DO_WHILE ``loopOver``: the DO_WHILE itself (re-evaluated);
* after a TERMINATE: nothing.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class _Slot:
    container: list      # the list holding the task
    index: int           # its position there
    owner: dict | None   # the operator owning the list (None at the top level)
    kind: str            # "root" | "case" | "fork" | "loop"
    case: str | None = None  # the case key ("__default__" for defaultCase) when kind == "case"


class Blueprint:
    """Lookup tables over one WorkflowDef dict (camelCase)."""

    __slots__ = ("definition", "tasks", "by_ref", "_slots")

    def __init__(self, definition: dict):
        self.definition = definition
        self.tasks: list[dict] = definition.get("tasks") or []
        self.by_ref: dict[str, dict] = {}
        self._slots: dict[str, _Slot] = {}
        self._index(self.tasks, None, "root")

    def _index(self, tasks: list, owner: dict | None, kind: str, case: str | None = None) -> None:
        for i, task in enumerate(tasks):
            ref = task.get("taskReferenceName")
            if ref is None:
                continue
            self.by_ref[ref] = task
            self._slots[ref] = _Slot(tasks, i, owner, kind, case)
            for case_name, branch in (task.get("decisionCases") or {}).items():
                self._index(branch or [], task, "case", case_name)
            if task.get("defaultCase"):
                self._index(task["defaultCase"], task, "case", "__default__")
            for branch in task.get("forkTasks") or []:
                self._index(branch or [], task, "fork")
            if task.get("loopOver"):
                self._index(task["loopOver"], task, "loop")

    def get(self, reference_task_name: str) -> dict | None:
        """The WorkflowTask with this (definition) reference, or None."""
        return self.by_ref.get(reference_task_name)

    def next_task(self, reference_task_name: str) -> dict | None:
        """The WorkflowTask that follows the given reference, or None at the end."""
        task = self.by_ref.get(reference_task_name)
        if task is None or task.get("type") == "TERMINATE":
            return None
        return self._after(reference_task_name)

    def _after(self, reference_task_name: str) -> dict | None:
        slot = self._slots.get(reference_task_name)
        if slot is None:
            return None
        if slot.index + 1 < len(slot.container):
            return slot.container[slot.index + 1]
        if slot.kind == "root":
            return None
        if slot.kind == "loop":
            return slot.owner
        # end of a SWITCH case or a fork branch: continue after the operator
        return self._after(slot.owner["taskReferenceName"])

    def loop_owner(self, reference_task_name: str) -> dict | None:
        """The innermost DO_WHILE whose ``loopOver`` (at any depth) holds this reference."""
        slot = self._slots.get(reference_task_name)
        while slot is not None and slot.owner is not None:
            if slot.kind == "loop":
                return slot.owner
            slot = self._slots.get(slot.owner["taskReferenceName"])
        return None

    def contains(self, owner_ref: str, reference_task_name: str) -> bool:
        """Whether ``reference_task_name`` is nested (at any depth) inside ``owner_ref``."""
        slot = self._slots.get(reference_task_name)
        while slot is not None and slot.owner is not None:
            if slot.owner.get("taskReferenceName") == owner_ref:
                return True
            slot = self._slots.get(slot.owner["taskReferenceName"])
        return False

    def case_of(self, reference_task_name: str) -> tuple[str, str] | None:
        """``(switch reference, case key)`` of the innermost SWITCH/DECISION case holding
        this reference (``"__default__"`` for the defaultCase), or None."""
        slot = self._slots.get(reference_task_name)
        while slot is not None and slot.owner is not None:
            if slot.kind == "case":
                return slot.owner["taskReferenceName"], slot.case or ""
            slot = self._slots.get(slot.owner["taskReferenceName"])
        return None

    def nested_refs(self, owner_ref: str) -> set[str]:
        """Every reference nested (at any depth) inside the operator ``owner_ref``."""
        return {ref for ref in self.by_ref if self.contains(owner_ref, ref)}
