"""A2A system tasks (Conductor's ``A2AWorkers``): AGENT (call a remote A2A agent),
GET_AGENT_CARD and CANCEL_AGENT. Their inputs and outputs: ``apps.a2a.tasks``.

Async system tasks, as HTTP and the AI tasks: scheduling hands them to the django-q2
cluster, which calls the remote agent with no workflow lock held and records the result
like a worker's update. An AGENT whose remote task is still running answers IN_PROGRESS
with ``callbackAfterSeconds`` (its poll interval, or the push backstop): the decide that
comes ``callbackAfterSeconds`` after its last update (``due_at`` brings the sweeper; a
push to ``/api/a2a/callback/{taskId}`` brings it at once) hands it to the cluster again,
which polls ``tasks/get``. A job lost to a crash is handed out again
``A2A_REDISPATCH_MS`` (60 s) after its dispatch; the task's lease keeps a duplicate from
running twice. When the workflow ends while an AGENT waits, the remote task is canceled
after commit (best effort, as Conductor's).
"""
from __future__ import annotations

from apps.engine.state import TaskState
from apps.engine.task_types import register
from apps.engine.task_types.base import TaskType

A2A_TASK_TYPES = ("AGENT", "GET_AGENT_CARD", "CANCEL_AGENT")
CANCEL_REMOTE = "cancel_remote_agent"


class A2ATask(TaskType):
    """One A2A task type; ``type_name`` selects the runner in ``apps.a2a.tasks``."""

    is_async = True

    @staticmethod
    def _dispatch(d, task: TaskState) -> None:
        task.update_time = d.now
        d.act("run_system_task", task)

    def start(self, d, task: TaskState) -> None:
        self._dispatch(d, task)

    def execute(self, d, task: TaskState) -> bool:
        if task.status in ("SCHEDULED", "IN_PROGRESS") and d.now >= self._next(d, task):
            self._dispatch(d, task)
            return True
        return False

    def due_at(self, d, task: TaskState) -> int | None:
        if task.status not in ("SCHEDULED", "IN_PROGRESS"):
            return None
        return self._next(d, task)

    @staticmethod
    def _next(d, task: TaskState) -> int:
        """When the task goes to the cluster again: ``callbackAfterSeconds`` after its last
        update while it waits on a remote task, else ``A2A_REDISPATCH_MS`` after its dispatch
        (a lost job)."""
        last = max(task.update_time, task.scheduled_time)
        if task.status == "IN_PROGRESS" and task.callback_after_seconds:
            return last + task.callback_after_seconds * 1000
        return last + int(d.config.get("A2A_REDISPATCH_MS", 60_000))

    def cancel(self, d, task: TaskState) -> None:
        if self.type_name == "AGENT" and (task.output_data or {}).get("taskId"):
            d.act(CANCEL_REMOTE, task)

    def run_async(self, task: TaskState) -> dict:
        from apps.a2a.tasks import run

        return run(self.type_name, task)


for _name in A2A_TASK_TYPES:
    register(type(_name.title().replace("_", "") + "Task", (A2ATask,), {"type_name": _name, "__module__": __name__}))
