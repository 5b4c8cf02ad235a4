"""Guardrails of a compiled agent: validation and compilation (Conductor's GuardrailCompiler,
``agentspan/.../compiler/GuardrailCompiler.java``, and its HumanTaskBuilder).

Pure (no ORM, no clock), called from ``apps.agents.compiler`` through small hooks. A
guardrail is ``{name, guardrailType, position, onFail, maxRetries, ...}`` as the SDK's
``AgentConfigSerializer`` sends it; what it compiles to is a normal part of the agent's
WorkflowDef, so every verdict is a task the engine runs and the UI shows:

* the verdict (task reference ``{ref}_guardrail_{i}``; a tool guardrail's
  ``{ref}_tool_guardrail_{k}``), answering ``{passed, message, on_fail, fixed_output,
  guardrail_name, should_continue}``:

  - ``custom`` / ``external``: a SIMPLE task named ``taskName`` (the SDK's ``@guardrail``
    worker, or one a remote worker polls), input ``{content, iteration}``;
  - ``regex``: an INLINE script (the patterns as JavaScript regular expressions; it
    writes no fixed output, so its ``fix`` is ``raise``, as Conductor's script);
  - ``llm``: an LLM judge: a SUB_WORKFLOW ``{gref}_judge`` holding one LLM_CHAT_COMPLETE
    (the guardrail's model, its ``policy`` in Conductor's judge prompt, temperature 0,
    ``maxTokens``, 256 by default) whose answer ``{"passed": bool, "reason": str}`` the
    INLINE ``{gref}`` reads (an answer that is not such JSON fails the check, as
    Conductor's parser). The model call is a system task of its own workflow: nothing
    slow runs under the agent's lock, and no later turn sees an earlier verdict as its
    own history;

* its routing SWITCH ``{gref}_route`` on ``on_fail``: ``retry`` (INLINE ``{gref}_retry``,
  given to the model as a user message through the LLM task's ``participants``), ``raise``
  (TERMINATE, FAILED), ``fix`` (``fixed_output`` replaces the answer), ``human`` (below).
  A ``retry`` past ``maxRetries`` becomes ``raise`` (the worker, script or parser does it);

* ``onFail: human``: a HUMAN task ``{gref}_human`` (Conductor's guardrail review:
  ``response_schema`` ``{approved, edited_output, reason}``, the guardrail's message and
  the reviewed text in its input), answered by ``POST /api/agent/{id}/respond``:
  ``{"approved": true}`` keeps the answer, ``{"approved": false, "edited_output": "..."}``
  (or with ``approved`` true) replaces it, ``{"approved": false, "reason": "..."}`` fails
  the run with that reason. A free-text answer (``{"message": "looks good"}``) is read by
  the model (``{gref}_human_normalizer``, a SUB_WORKFLOW judge as above) into that shape;
  without a model it is a rejection.

Where guardrails run:

* an agent's ``output`` guardrails: in its loop, on an answer without tool calls (the
  ``final`` branch), in order; ``input`` guardrails of an agent are run by the SDK on the
  prompt before it starts the run (``AgentRuntime._check_input_guardrails``), and
  Conductor's compiler leaves them out: so does this one;
* a tool's guardrails of position ``input`` (``tools[i].guardrails``): before the tool
  runs, on the text of the turn's calls of that tool (``Tool: name`` and ``Arguments:
  {...}``, Conductor's ``formatToolCallsScript``); ``retry`` gives the message to the model
  and the turn's tools do not run, ``raise`` fails the run, ``human`` asks a person
  (approved: the tools run; rejected: the run fails). Their ``output`` guardrails judge a
  tool's result, which the SDK's tool worker does itself (``run_tool_task``); they are
  not compiled;
* a team's output guardrails (every strategy but ``handoff``, whose own loop runs them):
  the team runs as a SUB_WORKFLOW ``{ref}_strategy`` in a DO_WHILE ``{ref}_guardrail_loop``
  (Conductor's ``wrapWithGuardrails``) and the guardrails judge its ``result``; a retry
  runs the team again with the guardrail's message after the prompt, at most
  ``maxTurns`` times.
"""
from __future__ import annotations

from apps.agents import base

GUARDRAIL_TYPES = ("custom", "external", "regex", "llm")
ON_FAIL = ("retry", "raise", "fix", "human")
POSITIONS = ("input", "output")
JUDGE_MAX_TOKENS = 256

JUDGE_PROMPT = ("You are a content safety evaluator. Evaluate the following content against this policy:\n\n"
                "POLICY: {policy}\n\n"
                "Respond with ONLY a JSON object: {{\"passed\": true/false, \"reason\": \"...\"}}")

NORMALIZER_PROMPT = (
    "Convert the human's response into a JSON object:\n"
    "{\"approved\": <boolean>, \"edited_output\": <string or null>, \"reason\": <string or null>}\n\n"
    "Rules:\n"
    "- approved=true for: approve, yes, ok, LGTM, looks good, go ahead, etc.\n"
    "- approved=false for: reject, no, deny, not approved, etc.\n"
    "- If they provide corrected content, put it in edited_output.\n"
    "- If they give a reason for rejection, put it in reason.\n"
    "- If input is already valid JSON with these fields, return as-is.\n"
    "Output ONLY the JSON object.")

REVIEW_SCHEMA = {"type": "object", "required": ["approved"], "properties": {
    "approved": {"type": "boolean", "description": "Approve or reject the LLM output"},
    "edited_output": {"type": "string", "description": "Provide corrected output if editing"},
    "reason": {"type": "string", "description": "Reason for rejection"}}}
REVIEW_UI_SCHEMA = {"ui:order": ["approved", "edited_output", "reason"], "approved": {"ui:widget": "radio"},
                    "edited_output": {"ui:widget": "textarea"}}

ROUTE_SCRIPT = "(function () { return ($.passed === false) ? String($.on_fail || 'raise') : 'pass'; })();"

REGEX_SCRIPT = (
    "(function () { var c = $.content; var text = (c === null || c === undefined) ? '' :"
    " (typeof c === 'string' ? c : JSON.stringify(c)); var hit = false;"
    " for (var i = 0; i < $.patterns.length; i++) { if (new RegExp($.patterns[i]).test(text)) { hit = true; break; } }"
    " var failed = ($.mode === 'allow') ? !hit : hit;"
    " if (!failed) { return {passed: true, message: '', on_fail: 'pass', fixed_output: null,"
    " guardrail_name: $.name, should_continue: false}; }"
    " var onFail = $.onFail || 'raise'; if (onFail === 'retry' && ($.iteration || 0) >= $.maxRetries) { onFail = 'raise'; }"
    " if (onFail === 'fix') { onFail = 'raise'; }"
    " var msg = $.message || (($.mode === 'allow') ? 'Content did not match any allowed pattern.'"
    " : 'Content matched a blocked pattern.');"
    " return {passed: false, message: msg, on_fail: onFail, fixed_output: null, guardrail_name: $.name,"
    " should_continue: onFail === 'retry'}; })();")

# the judge's answer as a verdict (Conductor's llmGuardrailParserScript): JSON, possibly in
# a ``` fence or with text around it; anything else fails the check; "fix" is "raise" (a
# judge writes no fixed output)
JUDGE_PARSE_SCRIPT = (
    "(function () { var raw = $.llm_result; var data = null;"
    " if (raw !== null && typeof raw === 'object') { data = raw; } else if (typeof raw === 'string') {"
    " var s = raw.indexOf('{'); var e = raw.lastIndexOf('}');"
    " if (s >= 0 && e > s) { try { data = JSON.parse(raw.substring(s, e + 1)); } catch (x) { data = null; } } }"
    " if (data === null) { data = {passed: false, reason: 'Unparseable LLM response'}; }"
    " if (data.passed === true || data.passed === 'true') { return {passed: true, message: '', on_fail: 'pass',"
    " fixed_output: null, guardrail_name: $.name, should_continue: false}; }"
    " var onFail = $.onFail; if (onFail === 'retry' && ($.iteration || 0) >= $.maxRetries) { onFail = 'raise'; }"
    " if (onFail === 'fix') { onFail = 'raise'; }"
    " return {passed: false, message: String(data.reason || data.message || 'LLM guardrail failed'),"
    " on_fail: onFail, fixed_output: null, guardrail_name: $.name, should_continue: onFail === 'retry'}; })();")

RETRY_SCRIPT = ("(function () { return 'Your previous answer was rejected by the guardrail ' + $.name + ': '"
                " + $.message + '. Answer again, following it.'; })();")

# Conductor's humanValidateScript: a {approved: boolean|"yes"/"no", edited_output, reason}
# answer is read as is; anything else needs the normalizer
REVIEW_VALIDATE_SCRIPT = (
    "(function () { var raw = $.human_output; if (!raw) { return {needs_normalize: true, raw_text: ''}; }"
    " var text; if (typeof raw === 'string') { text = raw; } else if (typeof raw.message === 'string') {"
    " text = raw.message; } else if (typeof raw.result === 'string') { text = raw.result; } else {"
    " var p = []; for (var k in raw) { p.push(k + ': ' + JSON.stringify(raw[k])); } text = p.join(', '); }"
    " var a = (typeof raw === 'object') ? raw.approved : undefined;"
    " if (typeof a === 'string') { var l = a.toLowerCase().trim();"
    " a = (l === 'true' || l === 'yes' || l === 'y') ? true : (l === 'false' || l === 'no' || l === 'n') ? false : a; }"
    " if (typeof a === 'boolean') { return {needs_normalize: false, approved: a,"
    " edited_output: raw.edited_output || null, reason: raw.reason || null, raw_text: text}; }"
    " return {needs_normalize: true, raw_text: text}; })();")

# Conductor's humanProcessScript: approve, edit or reject
REVIEW_PROCESS_SCRIPT = (
    "(function () { var v = $.validated; var data = (v && v.needs_normalize === false) ? v : $.normalized;"
    " if (typeof data === 'string') { var s = data.indexOf('{'); var e = data.lastIndexOf('}');"
    " try { data = (s >= 0 && e > s) ? JSON.parse(data.substring(s, e + 1)) : {}; } catch (x) { data = {}; } }"
    " data = data || {};"
    " if (data.edited_output) { return {action: 'edit', result: data.edited_output}; }"
    " if (data.approved === true) { return {action: 'approve', result: $.llm_output}; }"
    " return {action: 'reject', reason: String(data.reason || 'Rejected by human reviewer')}; })();")

# Conductor's formatToolCallsScript, for the calls of one tool: "Tool: name\nArguments: {...}\n---"
TOOL_CALLS_SCRIPT = (
    "(function () { var c = $.toolCalls || []; var lines = [];"
    " for (var i = 0; i < c.length; i++) { var n = (c[i].inputParameters && c[i].inputParameters.method) || c[i].name;"
    " if (n !== $.tool) { continue; } var args = c[i].inputParameters || {}; var clean = {};"
    " for (var k in args) { if (k !== 'method' && k !== '_createdBy') { clean[k] = args[k]; } }"
    " lines.push('Tool: ' + n); lines.push('Arguments: ' + JSON.stringify(clean)); lines.push('---'); }"
    " return {called: lines.length > 0, text: lines.join('\\n')}; })();")

TEAM_PROMPT_SCRIPT = (
    "(function () { var p = $.prompt; var text = (typeof p === 'string') ? p : JSON.stringify(p);"
    " return $.feedback ? text + '\\n\\n' + $.feedback : text; })();")

TEAM_OUTPUT_SCRIPT = (
    "(function () { if ($.fixed !== null && $.fixed !== undefined && $.fixed !== '') { return $.fixed; }"
    " return ($.result === null || $.result === undefined) ? '' : $.result; })();")


# --- validation -----------------------------------------------------------------------

def validate(config: dict, path: str, errors, model) -> None:
    """Add to ``errors`` (the compiler's ``_Errors``) every problem of the agent's
    ``guardrails`` and of its tools' ``guardrails`` (``{path}.tools[i].guardrails[j]...``).
    ``model`` is the agent's (or inherited) ``provider/model``: a ``human`` review
    normalizes free text with it."""
    _validate_list(config.get("guardrails"), f"{path}.guardrails", errors, tool=False)
    tools = config.get("tools")
    for i, tool in enumerate(tools if isinstance(tools, list) else []):
        if isinstance(tool, dict) and tool.get("guardrails") is not None:
            _validate_list(tool["guardrails"], f"{path}.tools[{i}].guardrails", errors, tool=True)


def _validate_list(guardrails, path: str, errors, *, tool: bool) -> None:
    if guardrails is None:
        return
    if not isinstance(guardrails, list):
        errors.add(path, "guardrails must be a list", guardrails)
        return
    for i, g in enumerate(guardrails):
        gpath = f"{path}[{i}]"
        if not isinstance(g, dict):
            errors.add(gpath, "a guardrail must be an object", g)
            continue
        gtype = g.get("guardrailType") or "custom"
        if gtype not in GUARDRAIL_TYPES:
            errors.add(f"{gpath}.guardrailType", f"guardrailType {gtype!r} is not supported "
                                                 f"(supported: {', '.join(GUARDRAIL_TYPES)})", gtype)
        position = g.get("position") or "output"
        if position not in POSITIONS:
            errors.add(f"{gpath}.position", "position must be input or output", position)
        on_fail = g.get("onFail") or "retry"
        if on_fail not in ON_FAIL:
            errors.add(f"{gpath}.onFail", f"onFail must be one of {', '.join(ON_FAIL)}", on_fail)
        elif on_fail == "human" and position == "input" and not tool:
            errors.add(f"{gpath}.onFail", "onFail human is only valid for an output guardrail (input guardrails "
                                          "run in the SDK before the run starts)", on_fail)
        elif on_fail == "fix" and tool and position == "input":
            errors.add(f"{gpath}.onFail", "fix replaces an answer: a tool guardrail judges a tool call "
                                          "(use retry, raise or human)", on_fail)
        name = g.get("name")
        if name is not None and not isinstance(name, str):
            errors.add(f"{gpath}.name", "name must be a string", name)
        if g.get("maxRetries") is not None and not base.whole(g["maxRetries"]):
            errors.add(f"{gpath}.maxRetries", "maxRetries must be an integer", g["maxRetries"])
        if gtype == "regex":
            patterns = g.get("patterns")
            if not isinstance(patterns, list) or not patterns or not all(isinstance(p, str) for p in patterns):
                errors.add(f"{gpath}.patterns", "a regex guardrail needs a list of patterns", patterns)
            if (g.get("mode") or "block") not in ("block", "allow"):
                errors.add(f"{gpath}.mode", "mode must be block or allow", g.get("mode"))
        elif gtype == "llm":
            if base.parse_model(g.get("model")) is None:
                errors.add(f"{gpath}.model", "an llm guardrail needs its model as 'provider/model'", g.get("model"))
            if not isinstance(g.get("policy"), str) or not g["policy"].strip():
                errors.add(f"{gpath}.policy", "an llm guardrail needs its policy (text)", g.get("policy"))
            tokens = g.get("maxTokens")
            if tokens is not None and not (base.whole(tokens) and tokens > 0):
                errors.add(f"{gpath}.maxTokens", "maxTokens must be a positive integer", tokens)
        elif gtype in ("custom", "external"):
            task_name = g.get("taskName") or name
            if not isinstance(task_name, str) or not base.NAME.match(task_name):
                errors.add(f"{gpath}.taskName", "a guardrail needs a worker task name", task_name)


def output_guardrails(config: dict) -> list[dict]:
    """The guardrails the server runs on an agent's answer (position ``output``)."""
    return [g for g in config.get("guardrails") or [] if (g.get("position") or "output") == "output"]


def wraps_team(config: dict) -> bool:
    """Whether ``config`` is a team (any strategy but ``handoff``) with output guardrails,
    compiled by ``wrap_team``."""
    return config.get("strategy") not in (None, "handoff") and bool(output_guardrails(config))


# --- compilation ----------------------------------------------------------------------

class Compiled:
    """The guardrail part of one loop: ``tasks`` (verdicts and routing, in order),
    ``loop_refs`` (``$.``-expressions of each verdict for a loop condition), ``retry_refs``
    (the retry messages' references, for ``participants``), ``fixed`` (the expression of
    a fixed or human-edited answer, or "")."""

    def __init__(self):
        self.tasks: list[dict] = []
        self.loop_refs: list[str] = []
        self.retry_refs: list[str] = []
        self.fixed = ""

    def go_on(self) -> list[str]:
        """Loop-condition terms: a verdict that asked for a retry."""
        return [f"$.{g}['on_fail'] == 'retry' && $.{g}['passed'] === false" for g in self.loop_refs]


def _name(g: dict, default: str) -> str:
    return g.get("name") or g.get("taskName") or default


def _judge_workflow(ref: str, model: str, system: str, content: str, max_tokens: int | None,
                    description: str) -> dict:
    """A SUB_WORKFLOW task ``ref`` running one LLM_CHAT_COMPLETE (temperature 0) on
    ``[system, user: content]``; its output ``result`` is the model's answer."""
    provider, name = base.parse_model(model)
    llm_ref = f"{ref}_llm"
    llm_input = {"llmProvider": provider, "model": name, "temperature": 0,
                 "messages": [{"role": "system", "message": system},
                              {"role": "user", "message": "${workflow.input.content}"}]}
    if max_tokens:
        llm_input["maxTokens"] = max_tokens
    definition = {"name": ref, "version": 1, "schemaVersion": 2, "description": description,
                  "inputParameters": ["content"], "outputParameters": {"result": f"${{{llm_ref}.output.result}}"},
                  "ownerEmail": base.TASK_DEF_DEFAULTS["ownerEmail"],
                  "tasks": [{"name": "LLM_CHAT_COMPLETE", "taskReferenceName": llm_ref, "type": "LLM_CHAT_COMPLETE",
                             "inputParameters": llm_input}],
                  "metadata": {"agent_sdk": "conductor", "classifier": "agent"}}
    return {"name": ref, "taskReferenceName": ref, "type": "SUB_WORKFLOW",
            "inputParameters": {"content": content},
            "subWorkflowParam": {"name": ref, "version": 1, "workflowDefinition": definition}}


def _verdict(g: dict, gref: str, content: str, iteration: str, task_defs: dict) -> tuple[list, str, str]:
    """The tasks of one guardrail's verdict: ``(tasks, output path, loop-condition ref)``."""
    gtype = g.get("guardrailType") or "custom"
    on_fail = g.get("onFail") or ("raise" if gtype == "llm" else "retry")
    name = _name(g, gref)
    max_retries = int(g.get("maxRetries") if g.get("maxRetries") is not None else 3)
    if gtype == "regex":
        return [{"name": name, "taskReferenceName": gref, "type": "INLINE", "inputParameters": {
            "evaluatorType": "javascript", "expression": REGEX_SCRIPT, "content": content, "iteration": iteration,
            "name": name, "patterns": g["patterns"], "mode": g.get("mode") or "block",
            "message": g.get("message") or "", "onFail": on_fail, "maxRetries": max_retries}}], \
            f"{gref}.output.result", f"{gref}['result']"
    if gtype == "llm":
        judge = _judge_workflow(f"{gref}_judge", g["model"], JUDGE_PROMPT.format(policy=g["policy"]), content,
                                int(g.get("maxTokens") or JUDGE_MAX_TOKENS), f"LLM guardrail {name} (compiled agent)")
        parse = {"name": name, "taskReferenceName": gref, "type": "INLINE", "inputParameters": {
            "evaluatorType": "javascript", "expression": JUDGE_PARSE_SCRIPT,
            "llm_result": f"${{{gref}_judge.output.result}}", "iteration": iteration, "name": name,
            "onFail": on_fail, "maxRetries": max_retries}}
        return [judge, parse], f"{gref}.output.result", f"{gref}['result']"
    task_name = g.get("taskName") or g.get("name")
    base.task_def(task_name, task_defs)
    return [{"name": task_name, "taskReferenceName": gref, "type": "SIMPLE",
             "inputParameters": {"content": content, "iteration": iteration}}], f"{gref}.output", gref


def _review(g: dict, gref: str, content: str, out: str, model, *, tool: bool) -> list:
    """The ``human`` case: HUMAN ``{gref}_human``, validate, normalize (a model reads a
    free-text answer), process, then approve / edit / reject."""
    human = f"{gref}_human"
    validate_ref, norm_ref, process_ref = f"{human}_validate", f"{human}_normalizer", f"{human}_process"
    tasks = [
        {"name": human, "taskReferenceName": human, "type": "HUMAN", "inputParameters": {
            "__humanTaskDefinition": {"assignmentCompletionStrategy": "LEAVE_OPEN",
                                      "displayName": f"{_name(g, gref)} Guardrail Review",
                                      "userFormTemplate": {"version": 0}},
            "response_schema": REVIEW_SCHEMA, "response_ui_schema": REVIEW_UI_SCHEMA,
            "tool_name": human, "guardrail_message": f"${{{out}.message}}",
            "guardrail_name": _name(g, gref), "llm_output": content}},
        {"name": validate_ref, "taskReferenceName": validate_ref, "type": "INLINE", "inputParameters": {
            "evaluatorType": "javascript", "expression": REVIEW_VALIDATE_SCRIPT, "human_output": f"${{{human}.output}}"}},
    ]
    review_model = g.get("model") or model
    normalized = None  # without a model, an answer that is not {approved, ...} is a rejection
    if base.parse_model(review_model) is not None:
        normalized = f"${{{norm_ref}.output.result}}"
        tasks.append({"name": f"{human}_normalize_switch", "taskReferenceName": f"{human}_normalize_switch",
                      "type": "SWITCH", "evaluatorType": "value-param", "expression": "switchCaseValue",
                      "inputParameters": {"switchCaseValue": f"${{{validate_ref}.output.result.needs_normalize}}"},
                      "decisionCases": {"true": [_judge_workflow(
                          norm_ref, review_model, NORMALIZER_PROMPT, f"${{{validate_ref}.output.result.raw_text}}",
                          None, f"Review reader of {_name(g, gref)} (compiled agent)")]},
                      "defaultCase": []})
    tasks.append({"name": process_ref, "taskReferenceName": process_ref, "type": "INLINE", "inputParameters": {
        "evaluatorType": "javascript", "expression": REVIEW_PROCESS_SCRIPT,
        "validated": f"${{{validate_ref}.output.result}}", "normalized": normalized,
        "llm_output": content}})
    reject = {"name": f"{human}_reject", "taskReferenceName": f"{human}_reject", "type": "TERMINATE",
              "inputParameters": {"terminationStatus": "FAILED",
                                  "terminationReason": f"${{{process_ref}.output.result.reason}}"}}
    approve = {"name": f"{human}_approve", "taskReferenceName": f"{human}_approve", "type": "SET_VARIABLE",
               "inputParameters": {"_human_approved": True}}
    cases = {"approve": [approve]}
    if not tool:  # an edited answer replaces the model's
        cases["edit"] = [{"name": f"{human}_edit", "taskReferenceName": f"{human}_edit", "type": "SET_VARIABLE",
                          "inputParameters": {"_fixed_output": f"${{{process_ref}.output.result.result}}"}}]
    tasks.append({"name": f"{human}_action", "taskReferenceName": f"{human}_action", "type": "SWITCH",
                  "evaluatorType": "value-param", "expression": "switchCaseValue",
                  "inputParameters": {"switchCaseValue": f"${{{process_ref}.output.result.action}}"},
                  "decisionCases": cases, "defaultCase": [reject]})
    return tasks


def _route(g: dict, gref: str, out: str, content: str, model, *, tool: bool, retry_extra: list | None = None) -> tuple[dict, str]:
    """The routing SWITCH ``{gref}_route`` of one verdict; returns ``(switch, retry ref)``."""
    name = _name(g, gref)
    retry_ref = f"{gref}_retry"
    cases = {
        "retry": [{"name": retry_ref, "taskReferenceName": retry_ref, "type": "INLINE", "inputParameters": {
            "evaluatorType": "javascript", "name": name, "message": f"${{{out}.message}}",
            "expression": RETRY_SCRIPT}}] + list(retry_extra or []),
        "raise": [{"name": f"{gref}_fail", "taskReferenceName": f"{gref}_fail", "type": "TERMINATE",
                   "inputParameters": {"terminationStatus": "FAILED",
                                       "terminationReason": f"Guardrail {name} failed: ${{{out}.message}}"}}],
    }
    if not tool:
        cases["fix"] = [{"name": f"{gref}_fix", "taskReferenceName": f"{gref}_fix", "type": "SET_VARIABLE",
                         "inputParameters": {"_fixed_output": f"${{{out}.fixed_output}}"}}]
    cases["human"] = _review(g, gref, content, out, model, tool=tool)
    return {"name": f"{gref}_route", "taskReferenceName": f"{gref}_route", "type": "SWITCH",
            "evaluatorType": "javascript", "expression": ROUTE_SCRIPT,
            "inputParameters": {"passed": f"${{{out}.passed}}", "on_fail": f"${{{out}.on_fail}}"},
            "decisionCases": cases, "defaultCase": []}, retry_ref


def compile_output(config: dict, r: str, content: str, iteration: str, model, task_defs: dict,
                   retry_extra=None) -> Compiled:
    """The output guardrails of agent ``config`` (task reference prefix ``r``) judging
    ``content`` (an expression), ``iteration`` the loop counter's expression."""
    out = Compiled()
    for i, g in enumerate(config.get("guardrails") or []):
        if (g.get("position") or "output") != "output":
            continue  # the SDK runs input guardrails on the prompt before the run starts
        gref = f"{r}_guardrail_{i}"
        tasks, path, loop_ref = _verdict(g, gref, content, iteration, task_defs)
        switch, retry_ref = _route(g, gref, path, content, model, tool=False,
                                   retry_extra=retry_extra(gref) if retry_extra else None)
        out.tasks += tasks + [switch]
        out.loop_refs.append(loop_ref)
        out.retry_refs.append(retry_ref)
        out.fixed = "${workflow.variables._fixed_output}"
    return out


def gate_tools(config: dict, r: str, llm_ref: str, loop_ref: str, model, dispatch: dict, task_defs: dict) -> list[str]:
    """Put the ``input`` guardrails of the agent's tools in front of the ``tools`` case of
    ``dispatch`` (the loop's SWITCH ``{ref}_dispatch``). Returns the retry references (for
    the LLM task's ``participants``). For each tool with such guardrails, INLINE
    ``{ref}_tool_calls_{m}`` writes the text of the turn's calls of that tool and a SWITCH
    ``{ref}_tool_check_{m}`` runs its verdicts only when the model called it; a retry sets
    ``_tool_blocked``, and the SWITCH ``{ref}_tool_gate`` runs the tools unless it is set."""
    cases = dispatch["decisionCases"]
    guarded = [t for t in config.get("tools") or []
               if [g for g in t.get("guardrails") or [] if (g.get("position") or "output") == "input"]]
    if not guarded or "tools" not in cases:
        return []
    retry_refs: list[str] = []
    tasks = [{"name": f"{r}_tool_gate_reset", "taskReferenceName": f"{r}_tool_gate_reset", "type": "SET_VARIABLE",
              "inputParameters": {"_tool_blocked": False}}]
    iteration = f"${{{loop_ref}.output.iteration}}"
    block = [{"name": f"{r}_tool_block", "type": "SET_VARIABLE", "inputParameters": {"_tool_blocked": True}}]
    k = 0
    for m, tool in enumerate(guarded):
        calls = f"{r}_tool_calls_{m}"
        content = f"${{{calls}.output.result.text}}"
        check = []
        for g in tool["guardrails"]:
            if (g.get("position") or "output") != "input":
                continue  # the SDK's tool worker judges the tool's result
            gref = f"{r}_tool_guardrail_{k}"
            verdict, path, _loop_ref = _verdict(g, gref, content, iteration, task_defs)
            extra = [{**block[0], "taskReferenceName": f"{gref}_block"}]
            switch, retry_ref = _route(g, gref, path, content, model, tool=True, retry_extra=extra)
            check += verdict + [switch]
            retry_refs.append(retry_ref)
            k += 1
        tasks.append({"name": calls, "taskReferenceName": calls, "type": "INLINE", "inputParameters": {
            "evaluatorType": "javascript", "expression": TOOL_CALLS_SCRIPT, "tool": tool["name"],
            "toolCalls": f"${{{llm_ref}.output.toolCalls}}"}})
        tasks.append({"name": f"{r}_tool_check_{m}", "taskReferenceName": f"{r}_tool_check_{m}", "type": "SWITCH",
                      "evaluatorType": "value-param", "expression": "switchCaseValue",
                      "inputParameters": {"switchCaseValue": f"${{{calls}.output.result.called}}"},
                      "decisionCases": {"true": check}, "defaultCase": []})
    tasks.append({"name": f"{r}_tool_gate", "taskReferenceName": f"{r}_tool_gate", "type": "SWITCH",
                  "evaluatorType": "value-param", "expression": "switchCaseValue",
                  "inputParameters": {"switchCaseValue": "${workflow.variables._tool_blocked}"},
                  "decisionCases": {"true": []}, "defaultCase": cases["tools"]})
    cases["tools"] = tasks
    return retry_refs


def unguarded(config: dict) -> dict:
    """``config`` without its output guardrails: the team ``wrap_team`` runs."""
    return {**config, "guardrails": [g for g in config.get("guardrails") or []
                                     if (g.get("position") or "output") != "output"]}


def wrap_team(config: dict, strategy_task: dict, model, task_defs: dict, max_turns: int) -> tuple[list, dict]:
    """A team with output guardrails (Conductor's ``wrapWithGuardrails``): the team
    (``unguarded(config)``, compiled) runs as ``strategy_task``, the SUB_WORKFLOW
    ``{ref}_strategy`` whose prompt is ``${{ref}_strategy_prompt.output.result}``, inside
    the DO_WHILE ``{ref}_guardrail_loop`` (at most ``max_turns`` passes); its prompt is the
    user's prompt followed by the last retry message; the guardrails judge its ``result``.
    Returns the WorkflowDef's ``(tasks, outputParameters)``: ``{result, finishReason,
    subResults?}``, the result the fixed or human-edited one when there is one."""
    r = base.to_ref(config["name"])
    loop_ref, strategy, prompt = f"{r}_guardrail_loop", strategy_task["taskReferenceName"], f"{r}_strategy_prompt"
    content = f"${{{strategy}.output.result}}"

    def feedback(gref):
        return [{"name": f"{gref}_feedback", "taskReferenceName": f"{gref}_feedback", "type": "SET_VARIABLE",
                 "inputParameters": {"_guardrail_feedback": f"${{{gref}_retry.output.result}}"}}]

    guards = compile_output(config, r, content, f"${{{loop_ref}.output.iteration}}", model, task_defs,
                            retry_extra=feedback)
    body = [{"name": prompt, "taskReferenceName": prompt, "type": "INLINE", "inputParameters": {
                "evaluatorType": "javascript", "expression": TEAM_PROMPT_SCRIPT, "prompt": "${workflow.input.prompt}",
                "feedback": "${workflow.variables._guardrail_feedback}"}},
            {"name": f"{r}_guardrail_reset", "taskReferenceName": f"{r}_guardrail_reset", "type": "SET_VARIABLE",
             "inputParameters": {"_guardrail_feedback": ""}},
            strategy_task] + guards.tasks
    cond = f"$.{loop_ref}['iteration'] < {max_turns} && (" + " || ".join(guards.go_on()) + ")"
    output_ref = f"{r}_output"
    tasks = [{"name": f"{r}_guardrail_init", "taskReferenceName": f"{r}_guardrail_init", "type": "SET_VARIABLE",
              "inputParameters": {"_fixed_output": None, "_guardrail_feedback": "", "_stop_requested": False}},
             {"name": loop_ref, "taskReferenceName": loop_ref, "type": "DO_WHILE", "inputParameters": {},
              "loopCondition": "if (" + cond + ") { true; } else { false; }", "loopOver": body},
             {"name": output_ref, "taskReferenceName": output_ref, "type": "INLINE", "inputParameters": {
                 "evaluatorType": "javascript", "expression": TEAM_OUTPUT_SCRIPT, "result": content,
                 "fixed": guards.fixed}}]
    output = {"result": f"${{{output_ref}.output.result}}", "finishReason": f"${{{strategy}.output.finishReason}}"}
    if config.get("strategy") == "parallel":
        output["subResults"] = f"${{{strategy}.output.subResults}}"
    return tasks, output
