"""What the execution page's Agent tab shows for a compiled agent (a WorkflowDef whose
``metadata.classifier`` is ``"agent"``, apps/agents): the run as a conversation, read from
the same derivation of the durable history as the agent stream (``apps.agents.stream.derive``),
each event enriched with the task it was made from.

``agent_run(workflow_id) -> dict``::

    {"agentName", "status", "prompt", "instructions",
     "entries": [                                     # oldest first
        {"kind": "model", "turn": 1, "taskId", "status", "model", "text", "toolCalls": [{name, arguments}],
         "finishReason", "tokens": {"prompt", "completion", "total"} | None},
        {"kind": "tool", "taskId", "name", "args", "result"},          # a @tool worker completed
        {"kind": "human", "taskId", "name", "question", "answer", "status"},  # a HUMAN step
        {"kind": "guardrail", "name", "passed", "retry", "review", "message"},  # review: a person decides
        {"kind": "handoff", "target", "taskId", "status", "executionId"},    # the sub-agent's execution
        {"kind": "done", "answer"} | {"kind": "error", "reason"}],
     "tokens": {"prompt", "completion", "total"}}     # summed over the turns (integers)

Texts and JSON values are cut at ``apps.ui.ai_panel.TEXT_CHARS`` characters; the page
escapes everything (it is model and user text). Errors: NotFound for an unknown execution.
"""
from __future__ import annotations

import json

from apps.agents import stream
from apps.ui.ai_panel import TEXT_CHARS, ai_summary


def is_agent(definition) -> bool:
    """Whether an execution's definition snapshot is a compiled agent."""
    meta = definition.get("metadata") if isinstance(definition, dict) else None
    return isinstance(meta, dict) and meta.get("classifier") == "agent"


def _cut(value):
    """A string as is, any other value as indented JSON, cut at TEXT_CHARS characters."""
    text = value if isinstance(value, str) else json.dumps(value, indent=2, default=str)
    return text if len(text) <= TEXT_CHARS else text[:TEXT_CHARS] + "…"


def _tokens(total: dict, tokens: dict | None) -> None:
    for key in ("prompt", "completion", "total"):
        value = (tokens or {}).get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            total[key] += int(value)


def _answer(output) -> str:
    if isinstance(output, dict) and "result" in output:
        output = output["result"]
    return _cut(output if output is not None else "")


def agent_run(workflow_id: str) -> dict:
    """The Agent tab's document for one execution (shape in the module docstring)."""
    wf, events = stream.derive(workflow_id)
    entries: list[dict] = []
    humans: dict[str, dict] = {}
    pending_tools: dict[str, dict] = {}
    totals = {"prompt": 0, "completion": 0, "total": 0}
    instructions = None
    turn = 0
    for data, task in events:
        kind = data["type"]
        if kind == "thinking":
            turn += 1
            ai = ai_summary(task) or {}
            if instructions is None:
                instructions = next((m["text"] for m in ai.get("messages") or [] if m["role"] == "system"), None)
            _tokens(totals, ai.get("tokens"))
            entries.append({"kind": "model", "turn": turn, "taskId": task.task_id, "status": task.status,
                            "model": ai.get("model"), "text": ai.get("result"), "toolCalls": [
                                {"name": c["name"], "arguments": _cut(c["arguments"])} for c in ai.get("toolCalls") or []],
                            "finishReason": ai.get("finishReason"), "tokens": ai.get("tokens")})
        elif kind == "waiting" or (task is not None and task.task_type == "HUMAN" and kind in ("tool_call", "tool_result")):
            entry = humans.get(task.task_id)
            if entry is None:
                pending = data.get("pendingTool") or {}
                entry = humans[task.task_id] = {
                    "kind": "human", "taskId": task.task_id, "name": pending.get("tool_name") or task.task_def_name,
                    "question": _cut(pending.get("parameters") if pending else data.get("args")), "answer": None}
                entries.append(entry)
            if kind == "tool_result":
                entry["answer"] = _cut(data.get("result"))
            entry["status"] = task.status
        elif kind == "tool_call":
            pending_tools[task.task_id] = {"kind": "tool", "taskId": task.task_id, "name": data.get("toolName"),
                                           "args": _cut(data.get("args") or {}), "result": None}
        elif kind == "tool_result":
            entry = pending_tools.pop(task.task_id, None) or {
                "kind": "tool", "taskId": task.task_id, "name": data.get("toolName"), "args": None}
            entry["result"] = _cut(data.get("result"))
            entries.append(entry)
        elif kind in ("guardrail_pass", "guardrail_fail", "message"):
            entries.append({"kind": "guardrail", "name": data.get("guardrailName"), "passed": kind == "guardrail_pass",
                            "retry": kind == "message" and data.get("onFail") != "human",
                            "review": data.get("onFail") == "human", "message": _cut(data.get("content") or "")})
        elif kind == "handoff":
            output = task.output_data if isinstance(task.output_data, dict) else {}
            entries.append({"kind": "handoff", "target": data.get("target"), "taskId": task.task_id,
                            "status": task.status, "executionId": task.sub_workflow_id or output.get("subWorkflowId")})
        elif kind == "done":
            entries.append({"kind": "done", "answer": _answer(data.get("output"))})
        elif kind == "error":
            entries.append({"kind": "error", "reason": _cut(data.get("content") or "")})
    prompt = wf.input.get("prompt") if isinstance(wf.input, dict) else None
    return {"agentName": wf.workflow_name, "status": wf.status,
            "prompt": None if prompt is None else _cut(prompt), "instructions": instructions,
            "entries": entries, "tokens": totals}
