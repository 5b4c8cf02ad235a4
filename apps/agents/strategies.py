"""The multi-agent parts of the agent compiler that join ``apps.agents.compiler`` through
its hooks (``register``, called by ``AgentsConfig.ready``; this module imports the
compiler, never the other way round): strategy ``manual`` and a swarm's ``handoffs``
conditions (Conductor's ``MultiAgentCompiler.compileManual`` and ``compileSwarm``,
``agentspan/.../compiler/``). Pure (no ORM, no clock), like the compiler: WorkflowDef
dicts in, WorkflowDef dicts out.

* ``manual`` (``compile_manual``): a person picks the agent of each turn. A loop of
  ``maxTurns`` turns (25 by default) of ``{ref}_pick_agent`` (HUMAN: ``agent_options``
  ``{agent: index}``, the transcript ``conversation``, and Conductor's ``response_schema``
  ``{selected: one of the agents' names}``, answered with ``POST /api/agent/{id}/respond``
  ``{"selected": "<agent>"}``), ``{ref}_process_selection`` (INLINE: the answer's
  ``selected`` or ``agent``, a name or an index, as the agent's index; what the SDK's
  ``process_selection`` worker answers; an answer naming no agent runs no turn) and
  ``{ref}_switch`` running that agent's turn (``{ref}_agent_{i}_{agent}``, a SUB_WORKFLOW
  on the transcript, its answer added as ``[agent]: answer``). ``stopWhen`` and
  ``termination`` read the transcript, as a rotation's; ``/stop`` ends it after the turn.
  Output ``{result: the transcript, finishReason: "STOP"}``.
* swarm ``handoffs`` (``swarm_handoffs``): after each turn ``{ref}_handoff_check`` (INLINE)
  picks the next agent: a transfer tool the model called first, then the conditions in
  their order, the first that holds wins (a condition whose target is the agent that
  just spoke, or one ``allowedTransitions`` does not allow from it, is skipped); none:
  the swarm ends, as without conditions.

  - ``on_text_mention`` ``{text, target}``: the turn's answer contains ``text`` (case
    ignored);
  - ``on_tool_result`` ``{toolName, resultContains?, target}``: a call of that tool in the
    turn's last tool batch answered with a result containing ``resultContains`` (case
    ignored; any result when it is not given, as the SDK's ``OnToolResult``). The agent
    that owns the tool records its tool results (``{agent}_tool_results`` INLINE +
    ``{agent}_tool_results_set``) and ends its turn right after a batch that matched, so
    the handoff happens before its model speaks again (Conductor's
    ``returnAfterToolResults``); a batch that matched nothing lets it go on reading its
    tools' answers;
  - ``on_condition`` ``{taskName, target}``: the SDK's ``OnCondition`` callable, run by the
    SDK's ``{swarm}_handoff_check`` worker (a SIMPLE task ``{ref}_handoff_condition``,
    input ``{result, active_agent, conversation, is_transfer: false, transfer_to: ""}``,
    answer ``{handoff, active_agent}``); the condition holds when that worker hands off
    to its target.

Refused with a 400 naming the field (``validate_team``): conditions on a team that is
not a swarm, a type other than the three, a target that is not an agent of the swarm,
an ``on_text_mention`` without ``text``, an ``on_tool_result`` without ``toolName`` or
naming a tool no agent of the swarm has, an ``on_condition`` without ``taskName``; on a
manual team, a ``token_usage`` termination (it reads the transcript).
"""
from __future__ import annotations

from apps.agents import compiler as c

HANDOFF_TYPES = ("on_tool_result", "on_text_mention", "on_condition")


def _text(value) -> bool:
    return isinstance(value, str) and value.strip() != ""


def validate_team(config: dict, path: str, errors, strategy: str) -> None:
    """The parts of a team only this module compiles: a swarm's ``handoffs`` and a manual
    team's termination. Adds Conductor's validation errors (``{path, message,
    invalidValue?}``) to ``errors`` (the compiler's error list); returns nothing."""
    if strategy == "manual" and isinstance(config.get("termination"), dict):
        c.refuse_token_usage(config["termination"], f"{path}.termination", errors)
    handoffs = config.get("handoffs")
    if strategy != "swarm" or not handoffs:
        return
    if not isinstance(handoffs, list):
        errors.add(f"{path}.handoffs", "handoffs must be a list of handoff conditions", handoffs)
        return
    agents = [a for a in config.get("agents") or [] if isinstance(a, dict)]
    names = {config.get("name")} | {a.get("name") for a in agents}
    tools = {t.get("name") for a in [config, *agents] for t in (a.get("tools") or []) if isinstance(t, dict)}
    for i, h in enumerate(handoffs):
        hpath = f"{path}.handoffs[{i}]"
        if not isinstance(h, dict):
            errors.add(hpath, "a handoff condition must be an object", h)
            continue
        kind = h.get("type")
        if kind not in HANDOFF_TYPES:
            errors.add(f"{hpath}.type", "SWARM handoff type must be on_tool_result, on_text_mention, or "
                                        "on_condition", kind)
            continue
        if h.get("target") not in names:
            errors.add(f"{hpath}.target", f"SWARM handoff target must name a swarm agent: {h.get('target')}",
                       h.get("target"))
        if kind == "on_text_mention" and not _text(h.get("text")):
            errors.add(f"{hpath}.text", "on_text_mention requires text", h.get("text"))
        if kind == "on_tool_result":
            if not _text(h.get("toolName")):
                errors.add(f"{hpath}.toolName", "on_tool_result requires toolName", h.get("toolName"))
            elif h["toolName"] not in tools:
                errors.add(f"{hpath}.toolName", f"no agent of the swarm has a tool {h['toolName']}", h["toolName"])
            if h.get("resultContains") is not None and not isinstance(h["resultContains"], str):
                errors.add(f"{hpath}.resultContains", "resultContains must be a string", h["resultContains"])
        if kind == "on_condition" and not (_text(h.get("taskName")) and c.NAME.match(h["taskName"])):
            errors.add(f"{hpath}.taskName", "on_condition requires a nonblank taskName", h.get("taskName"))


# --- manual --------------------------------------------------------------------------------

def compile_manual(config: dict, parent_model, task_defs: dict) -> dict:
    """Strategy ``manual`` (the module docstring): the WorkflowDef of a team whose next
    agent a person picks each turn through a HUMAN task."""
    model = config.get("model") or parent_model
    r = c.to_ref(config["name"])
    agents = config["agents"]
    names = [sub["name"] for sub in agents]
    pick, select = f"{r}_pick_agent", f"{r}_process_selection"
    human = {"name": pick, "taskReferenceName": pick, "type": "HUMAN", "inputParameters": {
        "__humanTaskDefinition": {"assignmentCompletionStrategy": "LEAVE_OPEN",
                                  "displayName": f"{config['name']}: Select next agent",
                                  "userFormTemplate": {"version": 0}},
        "response_schema": {"type": "object", "required": ["selected"], "properties": {"selected": {
            "type": "string", "title": "Select Agent", "enum": names,
            "description": "Choose which agent should respond next: " + ", ".join(names)}}},
        "response_ui_schema": {"ui:order": ["selected"], "selected": {"ui:widget": "select"}},
        "agent_options": {name: str(i) for i, name in enumerate(names)},
        "conversation": "${workflow.variables.conversation}"}}
    selection = {"name": select, "taskReferenceName": select, "type": "INLINE", "inputParameters": {
        "evaluatorType": "javascript", "expression": SELECTION_SCRIPT, "human_output": f"${{{pick}.output}}",
        "options": {name: str(i) for i, name in enumerate(names)}}}
    cases = {}
    for i, sub in enumerate(agents):
        ref = f"{r}_agent_{i}_{c.to_ref(sub['name'])}"
        cases[str(i)] = c.sub_agent_turn(r, ref, "", i, c.compile_config(sub, model, task_defs), sub["name"])
    switch = {"name": f"{r}_switch", "taskReferenceName": f"{r}_switch", "type": "SWITCH",
              "evaluatorType": "value-param", "expression": "switchCaseValue",
              "inputParameters": {"switchCaseValue": f"${{{select}.output.result.selected}}"},
              "decisionCases": cases, "defaultCase": []}
    stops, cond = c.conversation_stops(config, r, task_defs)
    loop = c.team_loop(r, int(config.get("maxTurns") or c.MAX_TURNS_DEFAULT), [human, selection, switch, *stops],
                        cond)
    return c.workflow(config, [c.conversation_init(config, r), loop],
                       {"result": "${workflow.variables.conversation}", "finishReason": "STOP"})


# the person's answer -> {selected: the agent's index as a string}: its ``selected`` (or
# ``agent``), a name or an index; an answer naming no agent selects nothing (no turn)
SELECTION_SCRIPT = (
    "(function () { var h = $.human_output; var s = null;"
    " if (h !== null && typeof h === 'object') { s = (h.selected !== undefined && h.selected !== null)"
    " ? h.selected : h.agent; } else { s = h; }"
    " if (s === null || s === undefined) { return {selected: '0'}; } s = String(s).trim();"
    " if ($.options[s] !== undefined) { return {selected: $.options[s]}; }"
    " for (var k in $.options) { if ($.options[k] === s) { return {selected: s}; } }"
    " return {selected: 'none'}; })();")


# --- swarm handoff conditions ---------------------------------------------------------------

def swarm_handoffs(config: dict, wf: dict, task_defs: dict) -> dict:
    """A compiled swarm (``compiler._compile_swarm``) with its ``handoffs`` conditions (the
    module docstring); ``wf`` unchanged when it has none. Adds the SDK's
    ``{swarm}_handoff_check`` TaskDef to ``task_defs`` when an ``on_condition`` needs it."""
    handoffs = config.get("handoffs") or []
    if not handoffs:
        return wf
    r = c.to_ref(config["name"])
    init, loop = _by_ref(wf["tasks"], f"{r}_init"), _by_ref(wf["tasks"], f"{r}_loop")
    switch, check = _by_ref(loop["loopOver"], f"{r}_switch"), _by_ref(loop["loopOver"], f"{r}_handoff_check")
    names = [config["name"], *(sub["name"] for sub in config["agents"])]
    transitions = config.get("allowedTransitions")
    rules = [{"type": h["type"], "target": h["target"], "toolName": h.get("toolName"),
              "resultContains": h.get("resultContains"), "text": h.get("text")} for h in handoffs]
    init["inputParameters"].update({"last_response": "", "_last_tool_results": []})
    team = [config, *config["agents"]]
    for i, agent in enumerate(team):
        turn, setter = switch["decisionCases"][str(i)][0], switch["decisionCases"][str(i)][-1]
        setter["inputParameters"].update({"last_response": f"${{{turn['taskReferenceName']}.output.result}}",
                                          "_last_tool_results": f"${{{turn['taskReferenceName']}.output.tool_results}}"})
        own = {t["name"] for t in agent.get("tools") or []}
        watched = [rule for rule in rules if rule["type"] == "on_tool_result" and rule["toolName"] in own
                   and rule["target"] != agent["name"]
                   and (transitions is None or rule["target"] in (transitions.get(agent["name"]) or []))]
        if watched:
            _watch_tool_results(turn["subWorkflowParam"]["workflowDefinition"], c.to_ref(agent["name"]), watched)
    inputs = check["inputParameters"]
    inputs.update({"expression": HANDOFF_RESOLVE_SCRIPT, "names": names, "rules": rules, "allowed": transitions,
                   "result": "${workflow.variables.last_response}",
                   "tool_results": "${workflow.variables._last_tool_results}"})
    if any(rule["type"] == "on_condition" for rule in rules):
        worker, ref = f"{config['name']}_handoff_check", f"{r}_handoff_condition"
        c.add_task_def(worker, task_defs)
        condition = {"name": worker, "taskReferenceName": ref, "type": "SIMPLE", "inputParameters": {
            "result": "${workflow.variables.last_response}", "active_agent": "${workflow.variables.active_agent}",
            "conversation": "${workflow.variables.conversation}", "is_transfer": False, "transfer_to": ""}}
        loop["loopOver"].insert(loop["loopOver"].index(check), condition)
        inputs["condition"] = f"${{{ref}.output}}"
    return wf


def _watch_tool_results(sub_def: dict, r: str, rules: list) -> None:
    """Make a swarm agent's own loop record its last tool batch as ``_last_tool_results``
    ``[{name, output}]`` (its output ``tool_results``) and end after a batch one of
    ``rules`` (its ``on_tool_result`` conditions) matches."""
    loop = _by_ref(sub_def["tasks"], f"{r}_loop")
    dispatch = _by_ref(loop["loopOver"], f"{r}_dispatch")
    results, setter = f"{r}_tool_results", f"{r}_tool_results_set"
    dispatch["decisionCases"]["tools"] += [
        {"name": results, "taskReferenceName": results, "type": "INLINE", "inputParameters": {
            "evaluatorType": "javascript", "expression": TOOL_RESULTS_SCRIPT, "rules": rules,
            "toolCalls": f"${{{r}_llm.output.toolCalls}}", "join": f"${{{r}_tools_join.output}}"}},
        {"name": setter, "taskReferenceName": setter, "type": "SET_VARIABLE", "inputParameters": {
            "_last_tool_results": f"${{{results}.output.result.results}}",
            "_tool_handoff": f"${{{results}.output.result.matched}}"}}]
    _by_ref(sub_def["tasks"], f"{r}_init_state")["inputParameters"].update(
        {"_last_tool_results": [], "_tool_handoff": False})
    loop["inputParameters"]["_tool_handoff"] = "${workflow.variables._tool_handoff}"
    condition = loop["loopCondition"]
    if not condition.startswith("if ("):  # compiler._compile_loop's form
        raise RuntimeError(f"unexpected loopCondition of {r}_loop: {condition[:80]}")
    loop["loopCondition"] = "if ($._tool_handoff != true && " + condition[len("if ("):]
    sub_def["outputParameters"]["tool_results"] = "${workflow.variables._last_tool_results}"


def _by_ref(tasks: list, ref: str) -> dict:
    """The task of ``ref`` among ``tasks`` (the compiler's own output: one is there)."""
    return next(t for t in tasks if t["taskReferenceName"] == ref)


_TEXT = ("var text = function (v) { if (v === null || v === undefined) { return ''; }"
         " return (typeof v === 'string') ? v : JSON.stringify(v); };"
         " var holds = function (r, x) { return x && x.name === r.toolName && (r.resultContains === null"
         " || r.resultContains === undefined || text(x.output).toLowerCase()"
         ".indexOf(String(r.resultContains).toLowerCase()) >= 0); };")

# one swarm agent's last tool batch: [{name, output}] and whether an on_tool_result rule holds
TOOL_RESULTS_SCRIPT = (
    "(function () { " + _TEXT + " var calls = $.toolCalls || [], join = $.join || {}, out = [], matched = false;"
    " for (var i = 0; i < calls.length; i++) { var call = calls[i] || {}; var p = call.inputParameters || {};"
    " var o = join[call.taskReferenceName]; out.push({name: p.method || call.name,"
    " output: (o === undefined) ? null : o}); }"
    " for (var j = 0; j < $.rules.length; j++) { for (var k = 0; k < out.length; k++) {"
    " if (holds($.rules[j], out[k])) { matched = true; } } }"
    " return {results: out, matched: matched}; })();")

# the next active agent of a swarm with conditions: a transfer first, then the first rule
# that holds (its target neither the agent that spoke nor one it may not hand to)
HANDOFF_RESOLVE_SCRIPT = (
    "(function () { " + _TEXT +
    " var active = ($.active === null || $.active === undefined) ? '0' : String($.active);"
    " var to = ($.transfer_to === null || $.transfer_to === undefined) ? '' : String($.transfer_to);"
    " if (($.is_transfer === true || $.is_transfer === 'true') && $.indexes[to] !== undefined) {"
    " return {handoff: true, active_agent: $.indexes[to]}; }"
    " var me = $.names[Number(active)], said = text($.result).toLowerCase(), tools = $.tool_results || [];"
    " var rules = $.rules || [], cond = $.condition || {};"
    " for (var i = 0; i < rules.length; i++) { var r = rules[i], target = $.indexes[r.target], hit = false;"
    " if (target === undefined || target === active) { continue; }"
    " if ($.allowed && ($.allowed[me] || []).indexOf(r.target) < 0) { continue; }"
    " if (r.type === 'on_text_mention') { hit = said.indexOf(String(r.text).toLowerCase()) >= 0; }"
    " else if (r.type === 'on_tool_result') { for (var j = 0; j < tools.length; j++) {"
    " if (holds(r, tools[j])) { hit = true; break; } } }"
    " else if (r.type === 'on_condition') { hit = (cond.handoff === true || cond.handoff === 'true')"
    " && String(cond.active_agent) === target; }"
    " if (hit) { return {handoff: true, active_agent: target}; } }"
    " return {handoff: false, active_agent: active}; })();")

def register() -> None:
    """Add ``manual``, ``plan_execute`` (``apps.agents.plans``), the team checks and the
    swarm's conditions to the compiler (once; ``AgentsConfig.ready``)."""
    from apps.agents import plans

    c.STRATEGY_COMPILERS.update({"manual": compile_manual, "plan_execute": plans.compile_plan_execute})
    for check in (validate_team, plans.validate_harness):
        if check not in c.TEAM_CHECKS:
            c.TEAM_CHECKS.append(check)
    if swarm_handoffs not in c.SWARM_EXTENSIONS:
        c.SWARM_EXTENSIONS.append(swarm_handoffs)
