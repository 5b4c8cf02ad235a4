"""The agent configuration keys around an agent's loop, as Conductor's AgentCompiler and
MultiAgentCompiler read them (``agentspan/.../compiler/``): ``memory``, ``outputType``,
``requiredTools``, ``prefillTools``, ``callbacks`` and a sequential team's ``gate``.

Pure (no ORM, no clock), called from ``apps.agents.compiler`` through small hooks:
``validate`` adds the problems of these keys to the compiler's errors, ``extend_loop``
changes one compiled agent loop in place, ``gate_pipeline`` a compiled ``sequential`` team.

* ``memory`` ``{messages: [{role, message}], maxMessages?}`` (the SDK's
  ``ConversationMemory``): the messages go to the model on every turn between the
  system instructions and the user's prompt, as Conductor's ``buildLlmTask`` puts them
  (the last ``maxMessages`` of them when given). Roles ``system``, ``user``,
  ``assistant``; a ``tool_call`` (the SDK's ``tool_calls: [{name, taskReferenceName,
  input}]``) and its ``tool`` result (``taskReferenceName``, ``message``) are given to the
  model as the call and its result.
* ``outputType`` ``{schema, className}`` (structured output): the instructions end with
  Conductor's request for a JSON object of that schema (the schema shown as Conductor's
  ``simplifySchema`` writes it: ``{'city': str, 'temperature': float}``); an agent without
  tools asks its model for JSON (``jsonOutput``), so the result is an object, which the
  SDK reads into the ``output_type`` class.
* ``prefillTools`` ``[{toolName, arguments}]``: those worker tools (the agent's, or the
  SDK's ``my_tool.call(...)`` of a tool it does not list) run once before
  the loop (SIMPLE ``{ref}_prefill_{i}``, several in a FORK_JOIN ``{ref}_prefill_fork``),
  and their results go to the model as one system message ("# Pre-loaded context", each
  ``## tool(arguments)`` and its result), never as tool calls it could repeat.
* ``requiredTools`` ``[name]``: an answer given before every one of them was called is
  not final: the model is told ``You MUST call these tools before completing: ...`` (as a
  user message, INLINE ``{ref}_required_tools_reminder``) and the loop goes on, at most 3
  times (Conductor's outer loop runs at most 3 passes); the calls are counted in the
  workflow variable ``_tools_called``.
* ``callbacks`` ``[{position, taskName}]`` (the SDK's ``CallbackHandler`` workers): SIMPLE
  tasks ``{ref}_{position}`` with input ``{callback_position, agent_name, llm_result?,
  tool_calls?}``: ``before_agent`` before the loop, ``after_agent`` after it,
  ``before_model`` / ``after_model`` around each model call, ``before_tool`` /
  ``after_tool`` around the turn's tool calls. As in Conductor, their answers are not
  read back.
* ``gate`` on a sub-agent of a ``sequential`` team (``{type: "text_contains", text,
  caseSensitive}``, an INLINE script, or ``{taskName}``, the SDK's gate function as a
  worker; input ``{result}``, answer ``{decision: "continue" | "stop"}``): after that
  sub-agent's step, ``stop`` ends the pipeline (SWITCH ``{ref}_gate_switch_{i}``) and the
  team's result is the last step that ran. Elsewhere a gate is not read, as in
  Conductor's compiler.
"""
from __future__ import annotations

from apps.agents import base

MEMORY_ROLES = ("system", "user", "assistant", "tool_call", "tool")


CALLBACK_POSITIONS = ("before_agent", "after_agent", "before_model", "after_model", "before_tool", "after_tool")
REQUIRED_TOOLS_PASSES = 3

PREFILL_PREAMBLE = ("# Pre-loaded context\n\nThe following inputs were collected deterministically at the start of "
                    "this run and are provided here as static context. They are NOT callable tools in this "
                    "conversation \u2014 do not attempt to call any of them. If you need fresh information, use the "
                    "tools advertised in your tool list.\n\n")

# the names of the tools called so far, this turn's calls added
CALLED_SCRIPT = (
    "(function () { var seen = $.called || []; var c = $.toolCalls || []; var out = seen.slice();"
    " for (var i = 0; i < c.length; i++) { var n = c[i].name; if (out.indexOf(n) < 0) { out.push(n); } }"
    " return out; })();")

# Conductor's requiredToolsCheckScript, counting its reminders
REQUIRED_SCRIPT = (
    "(function () { var called = $.called || []; var missing = [];"
    " for (var i = 0; i < $.required.length; i++) { if (called.indexOf($.required[i]) < 0) { missing.push($.required[i]); } }"
    " var remind = missing.length > 0 && ($.reminders || 0) < $.passes;"
    " return {satisfied: missing.length === 0, missing: missing, remind: remind,"
    " reminders: ($.reminders || 0) + (remind ? 1 : 0),"
    " message: remind ? 'You MUST call these tools before completing: ' + missing.join(', ') : null}; })();")

GATE_TEXT_SCRIPT = (
    "(function () { var r = $.result; var content = (r === null || r === undefined) ? '' :"
    " (typeof r === 'string' ? r : JSON.stringify(r)); var sentinel = $.text;"
    " if (!$.caseSensitive) { content = content.toLowerCase(); sentinel = sentinel.toLowerCase(); }"
    " return {decision: content.indexOf(sentinel) >= 0 ? 'stop' : 'continue'}; })();")

PIPELINE_RESULT_SCRIPT = (
    "(function () { var r = $.results || []; for (var i = r.length - 1; i >= 0; i--) {"
    " if (r[i] !== null && r[i] !== undefined) { return r[i]; } } return ''; })();")


def validate(config: dict, path: str, errors) -> None:
    """Add to ``errors`` (the compiler's ``_Errors``) the problems of ``memory``,
    ``outputType``, ``requiredTools``, ``prefillTools``, ``callbacks`` and ``gate``, each
    naming its field."""
    _validate_memory(config, path, errors)
    other_tools = [t.get("name") for t in config.get("tools") or []
                   if isinstance(t, dict) and (t.get("toolType") or "worker") != "worker"]
    out = config.get("outputType")
    if out is not None and not (isinstance(out, dict) and isinstance(out.get("schema"), (dict, type(None)))):
        errors.add(f"{path}.outputType", "outputType must be {schema, className}", out)
    required = config.get("requiredTools")
    if required is not None:
        names = [t.get("name") for t in config.get("tools") or [] if isinstance(t, dict)]
        if not isinstance(required, list) or not all(isinstance(n, str) for n in required):
            errors.add(f"{path}.requiredTools", "requiredTools must be a list of tool names", required)
        else:
            for i, n in enumerate(required):
                if n not in names:
                    errors.add(f"{path}.requiredTools[{i}]", f"{n} is not a tool of {config.get('name')}", n)
    prefills = config.get("prefillTools")
    if prefills is not None:
        if not isinstance(prefills, list):
            errors.add(f"{path}.prefillTools", "prefillTools must be a list of {toolName, arguments}", prefills)
            prefills = []
        for i, p in enumerate(prefills):
            ppath = f"{path}.prefillTools[{i}]"
            name = p.get("toolName") if isinstance(p, dict) else p
            if not isinstance(name, str) or not base.NAME.match(name) or (name in other_tools):
                errors.add(f"{ppath}.toolName", "a prefill runs a worker tool (@tool) by its name", name)
            elif p.get("arguments") is not None and not isinstance(p["arguments"], dict):
                errors.add(f"{ppath}.arguments", "arguments must be an object", p["arguments"])
    callbacks = config.get("callbacks")
    if callbacks is not None:
        if not isinstance(callbacks, list):
            errors.add(f"{path}.callbacks", "callbacks must be a list of {position, taskName}", callbacks)
            callbacks = []
        seen = set()
        for i, cb in enumerate(callbacks):
            cpath = f"{path}.callbacks[{i}]"
            position = cb.get("position") if isinstance(cb, dict) else None
            if position not in CALLBACK_POSITIONS or position in seen:
                errors.add(f"{cpath}.position", f"position must be one of {', '.join(CALLBACK_POSITIONS)}, "
                                                "each at most once", position)
            seen.add(position)
            task_name = cb.get("taskName") if isinstance(cb, dict) else None
            if not isinstance(task_name, str) or not base.NAME.match(task_name):
                errors.add(f"{cpath}.taskName", "a callback needs its worker's task name", task_name)
    gate = config.get("gate")
    if gate is not None:
        if not isinstance(gate, dict):
            errors.add(f"{path}.gate", "gate must be {type: text_contains, text} or {taskName}", gate)
        elif "taskName" in gate:
            if not isinstance(gate["taskName"], str) or not base.NAME.match(gate["taskName"]):
                errors.add(f"{path}.gate.taskName", "the gate worker's task name", gate["taskName"])
        elif gate.get("type") != "text_contains":
            errors.add(f"{path}.gate.type", "gate type must be text_contains (or give the worker's taskName)",
                       gate.get("type"))
        elif not isinstance(gate.get("text"), str) or not gate["text"]:
            errors.add(f"{path}.gate.text", "a text_contains gate needs its text", gate.get("text"))


def _validate_memory(config: dict, path: str, errors) -> None:
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
    if limit is not None and not (base.whole(limit) and limit > 0):
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


def extend_loop(config: dict, r: str, tasks: list[dict], task_defs: dict, max_turns: int) -> None:
    """Change the compiled loop of agent ``config`` (its top-level ``tasks``, references
    prefixed ``r``, at most ``max_turns`` turns) for the keys of this module (the module
    docstring); ``task_defs`` gains the TaskDefs of the workers it adds."""
    context, llm = _find(tasks, f"{r}_context"), _find(tasks, f"{r}_llm")
    if context is None or llm is None:
        return
    messages = memory_messages(config)
    before = [_callback(config, r, "before_agent", None, task_defs)]
    prefills = config.get("prefillTools") or []
    if prefills:
        before += _prefill(config, r, messages, task_defs)
    if messages:
        context["inputParameters"]["memory"] = messages
    schema = (config.get("outputType") or {}).get("schema")
    if schema:
        has_tools = bool(llm["inputParameters"].get("tools"))
        text = simplify_schema(inline_refs(schema))
        instructions = context["inputParameters"].get("instructions") or ""
        if has_tools:
            instructions += ("\n\nWhen providing your final answer, respond with a JSON object matching this schema: "
                             f"{text}. Output only valid JSON.")
        else:
            instructions += ("\n\n" if instructions else "") + \
                f"Respond with a JSON object matching this schema: {text}. Output only valid JSON, no other text."
            llm["inputParameters"]["jsonOutput"] = True
        context["inputParameters"]["instructions"] = instructions
    loop = _find(tasks, f"{r}_loop")
    body = loop["loopOver"]
    llm_ref = llm["taskReferenceName"]
    at = body.index(llm)
    body[at + 1:at + 1] = [t for t in [_callback(config, r, "after_model", llm_ref, task_defs)] if t]
    body[at:at] = [t for t in [_callback(config, r, "before_model", llm_ref, task_defs)] if t]
    dispatch = _find(tasks, f"{r}_dispatch")
    tools_case = dispatch["decisionCases"].get("tools")
    if tools_case is not None:
        first = _callback(config, r, "before_tool", llm_ref, task_defs)
        last = _callback(config, r, "after_tool", llm_ref, task_defs)
        dispatch["decisionCases"]["tools"] = ([first] if first else []) + tools_case + ([last] if last else [])
    if config.get("requiredTools"):
        _require_tools(config, r, tasks, loop, llm, dispatch, max_turns)
    start = next(i for i, t in enumerate(tasks) if t is loop)
    after = _callback(config, r, "after_agent", llm_ref, task_defs)
    tasks[start + 1:start + 1] = [after] if after else []
    tasks[start:start] = [t for t in before if t]


def _callback(config: dict, r: str, position: str, llm_ref, task_defs: dict) -> dict | None:
    """Conductor's buildCallbackTask: the SIMPLE task of the callback at ``position``."""
    cb = next((cb for cb in config.get("callbacks") or [] if cb.get("position") == position), None)
    if cb is None:
        return None
    base.task_def(cb["taskName"], task_defs)
    inputs = {"callback_position": position, "agent_name": config["name"]}
    if llm_ref:
        inputs.update({"llm_result": f"${{{llm_ref}.output.result}}", "tool_calls": f"${{{llm_ref}.output.toolCalls}}"})
    return {"name": cb["taskName"], "taskReferenceName": f"{r}_{position}", "type": "SIMPLE", "inputParameters": inputs}


def _prefill(config: dict, r: str, messages: list, task_defs: dict) -> list:
    """The prefill tasks (before the loop) and their system message (added to ``messages``)."""
    tasks, text = [], PREFILL_PREAMBLE
    for i, p in enumerate(config["prefillTools"]):
        ref, args = f"{r}_prefill_{i}", p.get("arguments") or {}
        base.task_def(p["toolName"], task_defs)
        tasks.append({"name": p["toolName"], "taskReferenceName": ref, "type": "SIMPLE", "inputParameters": dict(args)})
        summary = ", ".join(f"{k}={v}" for k, v in args.items())
        text += f"## {p['toolName']}" + (f"({summary})" if summary else "") + f"\n\n${{{ref}.output.result}}\n\n"
    messages.append({"role": "system", "message": text})
    if len(tasks) > 1:
        return [{"name": f"{r}_prefill_fork", "taskReferenceName": f"{r}_prefill_fork", "type": "FORK_JOIN",
                 "forkTasks": [[t] for t in tasks]},
                {"name": f"{r}_prefill_join", "taskReferenceName": f"{r}_prefill_join", "type": "JOIN",
                 "joinOn": [t["taskReferenceName"] for t in tasks]}]
    return tasks


def _require_tools(config: dict, r: str, tasks: list, loop: dict, llm: dict, dispatch: dict, max_turns: int) -> None:
    """``requiredTools``: count the calls after each turn's JOIN, check them on a final
    answer, remind the model and go on (the module docstring)."""
    llm_ref = llm["taskReferenceName"]
    init = _find(tasks, f"{r}_init_state")
    init["inputParameters"].update({"_tools_called": [], "_required_missing": False, "_required_reminders": 0})
    join_list = _container(dispatch["decisionCases"]["tools"], f"{r}_tools_join")
    called, check, reminder = f"{r}_tools_called", f"{r}_required_tools_check", f"{r}_required_tools_reminder"
    join_list += [
        {"name": called, "taskReferenceName": called, "type": "INLINE", "inputParameters": {
            "evaluatorType": "javascript", "expression": CALLED_SCRIPT, "called": "${workflow.variables._tools_called}",
            "toolCalls": f"${{{llm_ref}.output.toolCalls}}"}},
        {"name": f"{called}_set", "taskReferenceName": f"{called}_set", "type": "SET_VARIABLE",
         "inputParameters": {"_tools_called": f"${{{called}.output.result}}", "_required_missing": False}}]
    final = dispatch["decisionCases"]["final"]
    dispatch["decisionCases"]["final"] = [
        {"name": check, "taskReferenceName": check, "type": "INLINE", "inputParameters": {
            "evaluatorType": "javascript", "expression": REQUIRED_SCRIPT, "required": list(config["requiredTools"]),
            "called": "${workflow.variables._tools_called}", "reminders": "${workflow.variables._required_reminders}",
            "passes": REQUIRED_TOOLS_PASSES}},
        {"name": f"{check}_set", "taskReferenceName": f"{check}_set", "type": "SET_VARIABLE", "inputParameters": {
            "_required_missing": f"${{{check}.output.result.remind}}",
            "_required_reminders": f"${{{check}.output.result.reminders}}"}},
        {"name": f"{r}_required_tools_switch", "taskReferenceName": f"{r}_required_tools_switch", "type": "SWITCH",
         "evaluatorType": "value-param", "expression": "switchCaseValue",
         "inputParameters": {"switchCaseValue": f"${{{check}.output.result.remind}}"},
         "decisionCases": {"true": [{"name": reminder, "taskReferenceName": reminder, "type": "INLINE",
                                     "inputParameters": {"evaluatorType": "javascript",
                                                         "expression": "(function () { return $.message; })();",
                                                         "message": f"${{{check}.output.result.message}}"}}]},
         "defaultCase": final}]
    llm["inputParameters"].setdefault("participants", {})[reminder] = "user"
    loop["inputParameters"]["_required_missing"] = "${workflow.variables._required_missing}"
    # a reminded turn goes on, within maxTurns and unless stopped
    inner = loop["loopCondition"][len("if ("):-len(") { true; } else { false; }")]
    loop["loopCondition"] = (f"if (({inner}) || ($.{loop['taskReferenceName']}['iteration'] < {max_turns}"
                             " && $._stop_requested != true && $._required_missing == true)) { true; } else { false; }")


def gate_pipeline(config: dict, wf: dict, task_defs: dict) -> dict:
    """A compiled ``sequential`` team ``wf`` with its sub-agents' gates: after a gated
    step, INLINE (or SIMPLE) ``{ref}_gate_{i}`` and SWITCH ``{ref}_gate_switch_{i}``
    whose ``continue`` case holds the rest of the pipeline; ``{ref}_pipeline_result``
    (INLINE) makes the result the last step's that ran. Unchanged without gates."""
    agents = config.get("agents") or []
    if not any(isinstance(a.get("gate"), dict) for a in agents):
        return wf
    r = base.to_ref(config["name"])
    steps = list(wf["tasks"])
    results = [f"${{{t['taskReferenceName']}.output.result}}" for t in steps]
    nested: list = []
    for i in range(len(steps) - 1, -1, -1):
        gate = agents[i].get("gate") if i < len(agents) else None
        if isinstance(gate, dict) and nested:
            gref, prev = f"{r}_gate_{i}", results[i]
            if "taskName" in gate:
                base.task_def(gate["taskName"], task_defs)
                gate_task = {"name": gate["taskName"], "taskReferenceName": gref, "type": "SIMPLE",
                             "inputParameters": {"result": prev}}
                decision = f"${{{gref}.output.decision}}"
            else:
                gate_task = {"name": gref, "taskReferenceName": gref, "type": "INLINE", "inputParameters": {
                    "evaluatorType": "javascript", "expression": GATE_TEXT_SCRIPT, "result": prev,
                    "text": gate["text"], "caseSensitive": gate.get("caseSensitive") is not False}}
                decision = f"${{{gref}.output.result.decision}}"
            nested = [gate_task, {"name": f"{r}_gate_switch_{i}", "taskReferenceName": f"{r}_gate_switch_{i}",
                                  "type": "SWITCH", "evaluatorType": "value-param", "expression": "switchCaseValue",
                                  "inputParameters": {"switchCaseValue": decision},
                                  "decisionCases": {"continue": nested}, "defaultCase": []}]
        nested = [steps[i]] + nested
    pick = f"{r}_pipeline_result"
    nested.append({"name": pick, "taskReferenceName": pick, "type": "INLINE", "inputParameters": {
        "evaluatorType": "javascript", "expression": PIPELINE_RESULT_SCRIPT, "results": results}})
    return {**wf, "tasks": nested, "outputParameters": {**wf["outputParameters"],
                                                        "result": f"${{{pick}.output.result}}"}}


def simplify_schema(node) -> str:
    """A JSON Schema as Conductor's ``simplifySchema`` shows it to a model:
    ``{'name': str, 'tags': [str], 'note': str | None}``."""
    if not isinstance(node, dict):
        return str(node)
    kind = node.get("type")
    if kind == "array":
        return "[" + simplify_schema(node["items"]) + "]" if isinstance(node.get("items"), dict) else "list"
    if kind == "object" or "properties" in node:
        props = node.get("properties")
        if isinstance(props, dict):
            return "{" + ", ".join(f"'{k}': {simplify_schema(v)}" for k, v in props.items()) + "}"
        return "object"
    simple = {"string": "str", "integer": "int", "number": "float", "boolean": "bool", "null": "None"}
    if kind in simple:
        return simple[kind]
    if isinstance(node.get("anyOf"), list):
        parts = [simplify_schema(v) for v in node["anyOf"]]
        parts = [p for p in parts if p != "None"] + ["None"]
        return " | ".join(dict.fromkeys(parts))
    if "enum" in node:
        return str(node["enum"])
    return kind if isinstance(kind, str) else "any"


def inline_refs(schema: dict) -> dict:
    """``schema`` with every ``{"$ref": "#/$defs/Name"}`` replaced by that definition and
    ``$defs`` dropped (Conductor's ``inlineRefs``; Pydantic writes nested models so)."""
    defs = schema.get("$defs") if isinstance(schema.get("$defs"), dict) else {}

    def resolve(node, depth=0):
        if depth > 20:
            return node
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/") and isinstance(defs.get(ref[8:]), dict):
                return resolve(defs[ref[8:]], depth + 1)
            return {k: resolve(v, depth + 1) for k, v in node.items() if k != "$defs"}
        if isinstance(node, list):
            return [resolve(v, depth + 1) for v in node]
        return node

    return resolve(schema)


def _container(tasks: list[dict], ref: str) -> list[dict] | None:
    """The list (a loop body, a branch, a case) that holds the WorkflowTask ``ref``."""
    if any(t.get("taskReferenceName") == ref for t in tasks):
        return tasks
    for t in tasks:
        lists = [t.get("loopOver") or [], t.get("defaultCase") or []]
        lists += list((t.get("decisionCases") or {}).values()) + list(t.get("forkTasks") or [])
        for inner in lists:
            found = _container(inner, ref)
            if found is not None:
                return found
    return None


def _find(tasks: list[dict], ref: str) -> dict | None:
    """The WorkflowTask ``ref`` among ``tasks`` and their loops, branches and cases."""
    holder = _container(tasks, ref)
    return next(t for t in holder if t.get("taskReferenceName") == ref) if holder is not None else None
