"""AI and agent system tasks (Conductor OSS ``ai`` module): LLM_CHAT_COMPLETE,
LLM_TEXT_COMPLETE, LLM_GENERATE_EMBEDDINGS, LLM_INDEX_TEXT, LLM_STORE_EMBEDDINGS,
LLM_SEARCH_INDEX, LLM_SEARCH_EMBEDDINGS, LLM_GET_EMBEDDINGS, LIST_MCP_TOOLS and
CALL_MCP_TOOL.

Async system tasks: scheduling hands them to the django-q2 cluster, which calls the
provider or MCP server with no workflow lock held (``apps.ai.tasks``) and records the
result like a worker's update. A retry waits for its delay (``timer_at``: the sweeper
decides then and dispatches it; None once dispatched); a job lost to a crash is dispatched again once
``TIMEOUT_SECONDS`` + ``AI_REDISPATCH_GRACE_MS`` pass without an update. Default retries: see
``apps.metadata.validation.ai_task_def``.
"""
from __future__ import annotations

import json

from django.conf import settings

from apps.engine import params
from apps.engine.state import TaskState
from apps.engine.task_types import register
from apps.engine.task_types.base import TaskType
from apps.metadata import secrets

AI_TASK_TYPES = ("LLM_CHAT_COMPLETE", "LLM_TEXT_COMPLETE", "LLM_GENERATE_EMBEDDINGS", "LLM_INDEX_TEXT",
                 "LLM_STORE_EMBEDDINGS", "LLM_SEARCH_INDEX", "LLM_SEARCH_EMBEDDINGS", "LLM_GET_EMBEDDINGS",
                 "LIST_MCP_TOOLS", "CALL_MCP_TOOL")
MCP_TASK_TYPES = ("LIST_MCP_TOOLS", "CALL_MCP_TOOL")


class AiTask(TaskType):
    """One AI system task type; ``type_name`` selects the runner in ``apps.ai.tasks``."""

    is_async = True

    @staticmethod
    def _dispatch(d, task: TaskState) -> None:
        task.timer_at = None
        task.update_time = d.now
        d.act("run_system_task", task)

    def start(self, d, task: TaskState) -> None:
        if self.type_name == "LLM_CHAT_COMPLETE" and task.iteration:
            _add_loop_history(d, task)
        if task.timer_at is not None and task.timer_at > d.now:
            return  # a retry waiting for its delay: ``due_at`` brings the sweeper back
        self._dispatch(d, task)

    def execute(self, d, task: TaskState) -> bool:
        if task.status not in ("SCHEDULED", "IN_PROGRESS"):
            return False
        if task.status == "SCHEDULED" and task.timer_at is not None and d.now >= task.timer_at:
            self._dispatch(d, task)
            return True
        if task.timer_at is None and d.now >= self._deadline(d, task):
            self._dispatch(d, task)  # the job was lost (cluster crash): hand it out again
            return True
        return False

    def due_at(self, d, task: TaskState) -> int | None:
        return task.timer_at if task.timer_at is not None else self._deadline(d, task)

    @staticmethod
    def _deadline(d, task: TaskState) -> int:
        budget_ms = int(settings.CONDUCTOR_AI.get("TIMEOUT_SECONDS") or 45) * 1000
        grace_ms = int(d.config.get("AI_REDISPATCH_GRACE_MS", 30_000))
        return max(task.update_time, task.scheduled_time) + budget_ms + grace_ms

    def run_async(self, task: TaskState) -> dict:
        """Run the task (``apps.ai.tasks.run``). An MCP task gets the
        ``${workflow.secrets.NAME}`` its definition writes (a server's ``Authorization``
        header, say) put in for the call only, as an HTTP task does, and the values masked
        in what it stores; a missing secret fails it naming the secret."""
        from apps.ai.tasks import run

        if self.type_name not in MCP_TASK_TYPES or not secrets.references(task.input_data):
            return run(self.type_name, task.input_data)
        try:
            given_input, given = secrets.resolve(task.input_data, allowed=secrets.template_names(task.workflow_task),
                                                 template=(task.workflow_task or {}).get("inputParameters"))
        except (secrets.MissingSecret, secrets.SecretUnreadable) as exc:
            return {"status": "FAILED", "reasonForIncompletion": str(exc), "outputData": {}}
        result = run(self.type_name, given_input)
        return secrets.mask_result(result, given) if given else result


def _add_loop_history(d, task: TaskState) -> None:
    """Conductor's ChatCompleteTaskMapper history: a chat task inside a DO_WHILE gets the
    earlier iterations' answers appended to its ``messages``, as ``assistant`` messages,
    or, when an answer asked for tools, a ``tool_call`` + ``tool`` pair for each asked
    call whose task (reference = the call's ``taskReferenceName``, with or without the
    loop's ``__N``) completed. ``participants`` (``{taskReferenceName: role}``) adds the
    ``result`` of each completed iteration of those tasks as a message of that role, in
    the order the tasks ran (the agent compiler's guardrail feedback, as Conductor's)."""
    messages = task.input_data.get("messages")
    if messages is not None and not isinstance(messages, list):
        return
    ref = params.definition_ref(task)
    participants = task.input_data.get("participants")
    participants = participants if isinstance(participants, dict) else {}
    by_ref: dict[str, list[TaskState]] = {}
    for t in d.wf.tasks:
        by_ref.setdefault(t.reference_task_name, []).append(t)
        if t.iteration and params.definition_ref(t) != t.reference_task_name:
            by_ref.setdefault(params.definition_ref(t), []).append(t)  # a tool call made in a loop
    history: list[dict] = []
    for t in sorted(d.wf.tasks, key=lambda t: t.seq):
        if t.task_id == task.task_id or not t.terminal or not t.iteration:
            continue
        role = participants.get(params.definition_ref(t))
        if role and t.status in ("COMPLETED", "COMPLETED_WITH_ERRORS"):
            said = (t.output_data or {}).get("result") if isinstance(t.output_data, dict) else None
            if said is not None:
                history.append({"role": str(role), "message": said if isinstance(said, str) else json.dumps(said)})
            continue
        if params.definition_ref(t) != ref:
            continue
        output = t.output_data if isinstance(t.output_data, dict) else {}
        calls = output.get("toolCalls") if isinstance(output.get("toolCalls"), list) else []
        if calls:
            for call in calls:
                if not isinstance(call, dict):
                    continue
                for tool in by_ref.get(str(call.get("taskReferenceName")), []):
                    if tool.terminal and tool.status in ("COMPLETED", "COMPLETED_WITH_ERRORS"):
                        history.append({"role": "tool_call", "toolCalls": [call]})
                        history.append({"role": "tool", "toolCalls": [{
                            "taskReferenceName": call.get("taskReferenceName"), "name": tool.task_def_name,
                            "type": tool.task_type, "inputParameters": tool.input_data, "output": tool.output_data}]})
        elif output.get("result") is not None:
            result = output["result"]
            if isinstance(result, dict) and "response" in result:
                result = result["response"]
            history.append({"role": "assistant",
                            "message": result if isinstance(result, str) else json.dumps(result)})
    if history:
        task.input_data = {**task.input_data, "messages": list(messages or []) + history}


for _name in AI_TASK_TYPES:
    register(type(_name.title().replace("_", ""), (AiTask,), {"type_name": _name, "__module__": __name__}))
