"""What the task panel shows for AI tasks (LLM_* and MCP), read from the task's input and
output: the conversation as role + text, tools offered, tool calls asked, the answer,
``finishReason`` and token usage; for MCP the server, tool, arguments and content.

``ai_summary(task) -> dict | None``: None for other task types. Texts are cut at
``TEXT_CHARS`` characters (the full payloads stay in Input/Output and the downloads).
"""
from __future__ import annotations

import json

TEXT_CHARS = 4000
LLM_TYPES = {"LLM_CHAT_COMPLETE", "LLM_TEXT_COMPLETE"}
MCP_TYPES = {"LIST_MCP_TOOLS", "CALL_MCP_TOOL"}


def _text(value) -> str:
    text = value if isinstance(value, str) else json.dumps(value, indent=2, default=str)
    return text if len(text) <= TEXT_CHARS else text[:TEXT_CHARS] + "…"


def _args(call: dict) -> dict:
    params = dict(call.get("inputParameters") or {}) if isinstance(call, dict) else {}
    params.pop("method", None)
    return params


def _llm(inp: dict, out: dict, task_type: str) -> dict:
    messages = []
    if inp.get("instructions"):
        messages.append({"role": "system", "text": _text(inp["instructions"])})
    if task_type == "LLM_TEXT_COMPLETE" and (inp.get("prompt") or inp.get("promptName")):
        messages.append({"role": "prompt", "text": _text(inp.get("prompt") or inp.get("promptName"))})
    for m in inp.get("messages") or []:
        if not isinstance(m, dict):
            continue
        calls = [c for c in (m.get("toolCalls") or []) if isinstance(c, dict)] if isinstance(m.get("toolCalls"), list) else []
        text = m.get("message") if m.get("message") is not None else m.get("content")
        if m.get("role") == "tool" and calls:
            text = "\n".join(f"{c.get('name')}: {_text(c.get('output'))}" for c in calls)
        elif m.get("role") == "tool_call" and calls:
            text = "\n".join(f"{c.get('name')}({json.dumps(_args(c), default=str)})" for c in calls)
        messages.append({"role": str(m.get("role") or "user"), "text": _text(text if text is not None else "")})
    return {
        "kind": "llm", "provider": inp.get("llmProvider"), "model": inp.get("model"),
        "jsonOutput": bool(inp.get("jsonOutput")), "promptVariables": inp.get("promptVariables") or {},
        "messages": messages,
        "tools": [t.get("name") for t in inp.get("tools") or [] if isinstance(t, dict)],
        "toolCalls": [{"name": c.get("name"), "arguments": _args(c)} for c in out.get("toolCalls") or []
                      if isinstance(c, dict)],
        "result": None if out.get("result") is None else _text(out["result"]),
        "finishReason": out.get("finishReason"),
        "tokens": {"prompt": out.get("promptTokens"), "completion": out.get("completionTokens"),
                   "total": out.get("tokenUsed")} if "tokenUsed" in out else None,
    }


def _mcp(inp: dict, out: dict, task_type: str) -> dict:
    content = [_text(c.get("parsed") if c.get("parsed") is not None else (c.get("text") or c.get("data") or ""))
               for c in out.get("content") or [] if isinstance(c, dict)]
    return {"kind": "mcp", "server": inp.get("mcpServer"), "method": inp.get("method"),
            "arguments": inp.get("arguments") if task_type == "CALL_MCP_TOOL" else None,
            "tools": [t.get("name") for t in out.get("tools") or [] if isinstance(t, dict)],
            "isError": out.get("isError"), "content": content}


def ai_summary(task) -> dict | None:
    """The panel's AI section for one task execution, or None."""
    inp = task.input_data if isinstance(task.input_data, dict) else {}
    out = task.output_data if isinstance(task.output_data, dict) else {}
    if task.task_type in LLM_TYPES:
        return _llm(inp, out, task.task_type)
    if task.task_type in MCP_TYPES:
        return _mcp(inp, out, task.task_type)
    return None
