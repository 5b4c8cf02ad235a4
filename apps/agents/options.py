"""The agent configuration keys around an agent's loop: ``memory`` (and, as they are
added, the other keys Conductor's AgentCompiler reads beside the loop itself).

Pure (no ORM, no clock), called from ``apps.agents.compiler`` through small hooks:
``validate`` adds the problems of these keys to the compiler's errors, ``extend_loop``
changes one compiled agent loop in place.

* ``memory`` ``{messages: [{role, message}], maxMessages?}`` (the SDK's
  ``ConversationMemory``): the messages go to the model on every turn between the
  system instructions and the user's prompt, as Conductor's ``buildLlmTask`` puts them
  (the last ``maxMessages`` of them when given). Roles ``system``, ``user``,
  ``assistant``; a ``tool_call`` (the SDK's ``tool_calls: [{name, taskReferenceName,
  input}]``) and its ``tool`` result (``taskReferenceName``, ``message``) are given to the
  model as the call and its result.
"""
from __future__ import annotations

MEMORY_ROLES = ("system", "user", "assistant", "tool_call", "tool")


def _c():
    from apps.agents import compiler

    return compiler


def validate(config: dict, path: str, errors) -> None:
    """Add the problems of ``memory`` to ``errors`` (the compiler's ``_Errors``)."""
    memory = config.get("memory")
    if memory is None:
        return
    mpath = f"{path}.memory"
    if not isinstance(memory, dict):
        errors.add(mpath, "memory must be {messages, maxMessages?}", memory)
        return
    messages = memory.get("messages")
    if messages is not None and not isinstance(messages, list):
        errors.add(f"{mpath}.messages", "messages must be a list of {role, message}", messages)
        messages = []
    for i, m in enumerate(messages or []):
        if not isinstance(m, dict) or m.get("role") not in MEMORY_ROLES:
            errors.add(f"{mpath}.messages[{i}].role", f"role must be one of {', '.join(MEMORY_ROLES)}",
                       m.get("role") if isinstance(m, dict) else m)
        elif m.get("message") is not None and not isinstance(m["message"], str):
            errors.add(f"{mpath}.messages[{i}].message", "message must be a string", m["message"])
    limit = memory.get("maxMessages")
    if limit is not None and not (_c()._whole(limit) and limit > 0):
        errors.add(f"{mpath}.maxMessages", "maxMessages must be a positive integer", limit)


def memory_messages(config: dict) -> list[dict]:
    """The agent's memory as the LLM task's messages (``[{role, message}]`` and
    ``tool_call`` / ``tool`` entries with ``toolCalls``); [] without memory."""
    memory = config.get("memory") or {}
    messages = list(memory.get("messages") or [])
    if memory.get("maxMessages"):
        messages = messages[-int(memory["maxMessages"]):]
    out = []
    for m in messages:
        role = m["role"]
        if role == "tool_call":
            calls = m.get("toolCalls") or [{"name": c.get("name"), "taskReferenceName": c.get("taskReferenceName"),
                                            "inputParameters": c.get("input") or c.get("inputParameters") or {}}
                                           for c in m.get("tool_calls") or [] if isinstance(c, dict)]
            out.append({"role": "tool_call", "message": "", "toolCalls": calls})
        elif role == "tool":
            ref = m.get("taskReferenceName") or m.get("toolCallId") or ""
            out.append({"role": "tool", "message": m.get("message") or "",
                        "toolCalls": m.get("toolCalls") or [{"taskReferenceName": ref, "output": m.get("message")}]})
        else:
            out.append({"role": role, "message": m.get("message") or ""})
    return out


def extend_loop(config: dict, r: str, tasks: list[dict]) -> None:
    """Change the compiled loop of agent ``config`` (its top-level ``tasks``, references
    prefixed ``r``) for the keys of this module."""
    context = _find(tasks, f"{r}_context")
    memory = memory_messages(config)
    if context is not None and memory:
        context["inputParameters"]["memory"] = memory


def _find(tasks: list[dict], ref: str) -> dict | None:
    """The WorkflowTask ``ref`` among ``tasks`` and their loops, branches and cases."""
    for t in tasks:
        if t.get("taskReferenceName") == ref:
            return t
        inner = list(t.get("loopOver") or []) + list(t.get("defaultCase") or [])
        for case in (t.get("decisionCases") or {}).values():
            inner += case
        for branch in t.get("forkTasks") or []:
            inner += branch
        found = _find(inner, ref) if inner else None
        if found is not None:
            return found
    return None
