"""Strategy ``plan_execute``: a planner agent writes a plan, the server compiles it into a
workflow and runs it; a fallback agent takes over when there is no plan, it does not
compile, or it fails (Conductor's ``MultiAgentCompiler.compilePlanExecute`` and its
``PLAN_AND_COMPILE`` task, ``agentspan/.../runtime/``). Pure (no ORM, no clock);
``apps.agents.strategies.register`` adds it to the compiler.

The harness (``compile_plan_execute``, for an agent ``h``; the SDK's
``plans.plan_execute(name, tools=..., planner_instructions=..., fallback_instructions=...)``):

* ``h_planner``: the planner agent (SUB_WORKFLOW, the harness's model when it has none),
  prompted with the user's prompt, the ``## Available tools`` (the harness's worker tools)
  and the ``## Plan schema`` it must answer with, in a fenced ```json block;
* ``h_extract_json`` (INLINE): the plan: ``workflow.input.static_plan`` when the run got
  one (the SDK's ``runtime.run(harness, prompt, plan=Plan(...))``), else the last
  ```json fence of the planner's answer (else its whole answer, when that is JSON);
* ``h_plan_and_compile`` (INLINE, ``PLAN_COMPILER_SCRIPT``): the plan as a WorkflowDef
  ``pe_h_plan`` (``compile_plan`` below), or an ``error``;
* ``h_compile_gate`` (SWITCH): a plan that did not compile goes to the fallback agent
  (``h_compile_fallback``), else ``h_plan_exec`` runs it (SUB_WORKFLOW, its definition
  the compiled one, ``optional`` so a failed plan reaches ``h_exec_route``), and a plan
  that did not complete goes to the fallback agent (``h_fallback``); without a fallback
  agent, either ends the run FAILED (TERMINATE);
* ``h_output_select`` (INLINE): the output ``{result, finishReason}``: the plan's last
  tool answer (``result``), or the fallback agent's.

A plan (the SDK's ``conductor.ai.agents.plans.Plan``) compiles to a normal WorkflowDef:
its ``steps`` in ``depends_on`` order (a cycle is an error), each operation a SIMPLE task
named after its tool (the SDK's ``@tool`` worker runs it) with the ``args`` as input, a
``{"$ref": "<step>"}`` anywhere in them the whole output of that step (which the step
must list in ``depends_on``); ``parallel: true`` runs a step's operations in a FORK_JOIN
and its output is the list of theirs. ``validation`` tools run after the steps; a
validation passes when its ``success_condition`` (a JavaScript expression, ``$`` the
tool's answer, run in an INLINE as any script) is true, or, without one, unless its output
has ``passed: false`` or is text containing ``ERROR``; then ``on_success`` runs, or
``on_failure`` and the plan ends FAILED (``Plan validation failed``). A ``generate`` operation
(arguments a model writes at run time) is an LLM_CHAT_COMPLETE (``jsonOutput``; the
``instructions``, its ``context`` with its ``$ref`` resolved, and the ``output_schema``
example object whose keys become the tool's arguments), an INLINE that parses its answer
and a SWITCH that runs the tool, or ends the plan FAILED (``LLM output rejected for
<tool>: ...``) when the answer is not a JSON object. Refused with a 400 naming the field: a harness
without ``planner``, ``planSource``, ``plannerContext``.
"""
from __future__ import annotations

from apps.agents import compiler as c

PLAN_SCHEMA = (
    "## Plan schema\n\n"
    "Your final response MUST end with a ```json fenced block containing a single JSON object with this shape:\n\n"
    "```json\n"
    "{\n"
    "  \"steps\": [\n"
    "    {\n"
    "      \"id\": \"<unique step id>\",\n"
    "      \"depends_on\": [\"<other step id>\"],\n"
    "      \"parallel\": false,\n"
    "      \"operations\": [{\"tool\": \"<tool>\", \"args\": {<literal arg map>}}]\n"
    "    }\n"
    "  ],\n"
    "  \"validation\": [{\"tool\": \"<validator tool>\", \"args\": {}}],\n"
    "  \"on_success\": [{\"tool\": \"<tool>\", \"args\": {}}],\n"
    "  \"on_failure\": [{\"tool\": \"<tool>\", \"args\": {}}]\n"
    "}\n"
    "```\n\n"
    "Rules:\n"
    "- Every operations[].tool and validation[].tool MUST be from the Available tools list above. Other names "
    "fail plan validation and route to the fallback.\n"
    "- An argument {\"$ref\": \"<step id>\"} is the whole output of that step; list the step in depends_on.\n"
    "- \"parallel\": true runs that step's operations concurrently.\n"
    "- validation, on_success and on_failure are optional.\n"
    "- The JSON must parse cleanly. Match brackets and escape strings.\n")


def plan_workflow_name(harness: str) -> str:
    """The compiled plan's WorkflowDef name (Conductor's ``planWorkflowName``): ``pe_`` +
    the harness's name with non-word characters as ``_`` + ``_plan``."""
    return f"pe_{c.to_ref(harness)}_plan"


def validate_harness(config: dict, path: str, errors, strategy: str) -> None:
    """A ``plan_execute`` harness's own fields: ``planner`` (an agent configuration,
    required) and ``fallback`` (optional) are validated as agents under their paths; the
    fields it does not compile are refused. Adds to ``errors``; returns nothing."""
    if strategy != "plan_execute":
        return
    model = config.get("model")
    planner = config.get("planner")
    if not isinstance(planner, dict):
        errors.add(f"{path}.planner", "PLAN_EXECUTE strategy requires planner=<Agent> on the parent agent", planner)
    else:
        c.validate(planner, f"{path}.planner", errors, model)
    if config.get("fallback") is not None:
        if not isinstance(config["fallback"], dict):
            errors.add(f"{path}.fallback", "fallback must be an agent configuration", config["fallback"])
        else:
            c.validate(config["fallback"], f"{path}.fallback", errors, model)
    for key in ("planSource", "plannerContext", "stopWhen", "termination"):
        if config.get(key):
            errors.add(f"{path}.{key}", f"{key} is not supported with strategy plan_execute by this server")
    fb_turns = config.get("fallbackMaxTurns")
    if fb_turns is not None and not (isinstance(fb_turns, int) and not isinstance(fb_turns, bool) and fb_turns > 0):
        errors.add(f"{path}.fallbackMaxTurns", "fallbackMaxTurns must be a positive integer", fb_turns)


def _tools_block(tools: list) -> str:
    lines = []
    for t in tools:
        props = ((t.get("inputSchema") or {}).get("properties") or {})
        args = ", ".join(f"{k}: {(v or {}).get('type', 'any')}" for k, v in props.items()) if isinstance(props, dict) else ""
        lines.append(f"- {t['name']}({args}): {t.get('description') or ''}".rstrip(": "))
    return "## Available tools\n\n" + "\n".join(lines) if lines else ""


def plan_tools(config: dict) -> list:
    """The harness's tools a plan may call: its ``worker`` tools (a plan's operation is a
    SIMPLE task its worker runs; other tool types are not offered to the planner and a plan
    naming one does not compile)."""
    return [t for t in config.get("tools") or [] if isinstance(t, dict) and (t.get("toolType") or "worker") == "worker"]


def compile_inputs(config: dict, parent_model=None) -> dict:
    """The plan compiler's inputs for a harness (the same for a run and for
    ``POST /agent/inspect-plan``): ``workflowName``, ``model`` (``provider/model`` of a
    ``generate`` operation without one: the harness's, else its planner's),
    ``knownToolNames`` (the harness's tools; empty: any), ``harnessTimeoutSeconds``."""
    planner = config.get("planner") if isinstance(config.get("planner"), dict) else {}
    return {"workflowName": plan_workflow_name(config["name"]),
            "model": config.get("model") or parent_model or planner.get("model") or "",
            "knownToolNames": [t["name"] for t in plan_tools(config)],
            "harnessTimeoutSeconds": int(config.get("timeoutSeconds") or 0)}


def compile_plan(config: dict, plan) -> dict:
    """``POST /agent/inspect-plan``: what a run of the harness ``config`` would compile
    ``plan`` (a Plan's dict, or its JSON text) to, without running it: Conductor's
    ``InspectResult`` ``{workflowDef (null on error), error, warnings, stats: {stepCount,
    taskCount}}``, by the same script a run uses (``PLAN_COMPILER_SCRIPT``)."""
    from apps.engine.evaluators import EvaluationError, evaluate

    try:
        out = evaluate("javascript", PLAN_COMPILER_SCRIPT, {**compile_inputs(config), "planJson": plan})
    except EvaluationError as e:  # a runaway or oversized plan: Conductor's internal-error answer
        out = {"error": f"Compiler internal error: {e}"}
    return {"workflowDef": out.get("workflowDef"), "error": out.get("error"), "warnings": out.get("warnings") or [],
            "stats": out.get("stats") or {}}


def compile_plan_execute(config: dict, parent_model, task_defs: dict) -> dict:
    """Strategy ``plan_execute`` (the module docstring): the harness's WorkflowDef; the
    harness's tools' TaskDefs go to ``task_defs`` (the plan's SIMPLE tasks need them)."""
    model = config.get("model") or parent_model
    p = c.to_ref(config["name"])
    tools = plan_tools(config)
    for t in tools:
        c.add_task_def(t["name"], task_defs, t.get("timeoutSeconds"))
    prompt = "\n\n".join(part for part in ("${workflow.input.prompt}", _tools_block(tools), PLAN_SCHEMA) if part)
    planner_ref, extract, pac = f"{p}_planner", f"{p}_extract_json", f"{p}_plan_and_compile"
    planner = c.compile_config(config["planner"], model, task_defs)
    tasks = [
        c.sub_agent_task(planner_ref, planner, prompt),
        {"name": extract, "taskReferenceName": extract, "type": "INLINE", "inputParameters": {
            "evaluatorType": "javascript", "expression": EXTRACT_SCRIPT, "staticPlan": "${workflow.input.static_plan}",
            "raw": f"${{{planner_ref}.output.result}}"}},
        {"name": pac, "taskReferenceName": pac, "type": "INLINE", "inputParameters": {
            "evaluatorType": "javascript", "expression": PLAN_COMPILER_SCRIPT, **compile_inputs(config, parent_model),
            "planJson": f"${{{extract}.output.result.plan}}"}},
    ]
    fallback = config.get("fallback")
    if fallback is not None and config.get("fallbackMaxTurns"):
        fallback = {**fallback, "maxTurns": config["fallbackMaxTurns"]}
    fallback_def = c.compile_config(fallback, model, task_defs) if fallback is not None else None

    def fallback_branch(prefix: str, failure: str) -> list:
        if fallback_def is None:
            return [{"name": f"{prefix}_term", "taskReferenceName": f"{prefix}_term", "type": "TERMINATE",
                     "inputParameters": {"terminationStatus": "FAILED", "terminationReason": failure}}]
        note, ref = f"{prefix}_fb_prompt", f"{prefix}_fallback"
        return [{"name": note, "taskReferenceName": note, "type": "INLINE", "inputParameters": {
                    "evaluatorType": "javascript", "expression": FALLBACK_PROMPT_SCRIPT,
                    "prompt": "${workflow.input.prompt}", "plan": f"${{{extract}.output.result.text}}",
                    "failure": failure}},
                c.sub_agent_task(ref, fallback_def, f"${{{note}.output.result}}"),
                {"name": f"{ref}_set", "taskReferenceName": f"{ref}_set", "type": "SET_VARIABLE",
                 "inputParameters": {"final_result": f"${{{ref}.output.result}}"}}]

    exec_ref, status = f"{p}_plan_exec", f"{p}_exec_status"
    run_plan = [
        {"name": plan_workflow_name(config["name"]), "taskReferenceName": exec_ref, "type": "SUB_WORKFLOW",
         "optional": True, "inputParameters": {"prompt": "${workflow.input.prompt}",
                                               "session_id": "${workflow.input.session_id}",
                                               "context": "${workflow.input.context}", "media": "${workflow.input.media}"},
         "subWorkflowParam": {"name": plan_workflow_name(config["name"]), "version": 1,
                              "workflowDefinition": f"${{{pac}.output.result.workflowDef}}"}},
        {"name": status, "taskReferenceName": status, "type": "INLINE", "inputParameters": {
            "evaluatorType": "javascript", "status": f"${{{exec_ref}.status}}",
            "expression": "(function () { return ($.status === 'COMPLETED') ? 'success' : 'failed'; })();"}},
        {"name": f"{p}_exec_route", "taskReferenceName": f"{p}_exec_route", "type": "SWITCH",
         "evaluatorType": "value-param", "expression": "switchCaseValue",
         "inputParameters": {"switchCaseValue": f"${{{status}.output.result}}"},
         "decisionCases": {"failed": fallback_branch(p, "Plan execution failed: "
                                                         f"${{{exec_ref}.reasonForIncompletion}}")},
         "defaultCase": [{"name": f"{p}_exec_success_set", "taskReferenceName": f"{p}_exec_success_set",
                          "type": "SET_VARIABLE", "inputParameters": {"final_result": f"${{{exec_ref}.output.result}}"}}]},
    ]
    tasks.append({"name": f"{p}_compile_gate", "taskReferenceName": f"{p}_compile_gate", "type": "SWITCH",
                  "evaluatorType": "javascript", "inputParameters": {"error": f"${{{pac}.output.result.error}}"},
                  "expression": "($.error !== null && $.error !== undefined && $.error !== '') ? 'compile_failed' : 'ok'",
                  "decisionCases": {"compile_failed": fallback_branch(
                      f"{p}_compile", f"Plan compilation failed: ${{{pac}.output.result.error}}")},
                  "defaultCase": run_plan})
    select = f"{p}_output_select"
    tasks.append({"name": select, "taskReferenceName": select, "type": "INLINE", "inputParameters": {
        "evaluatorType": "javascript", "r": "${workflow.variables.final_result}",
        "expression": "(function () { var r = $.r; if (r === null || r === undefined) { return ''; }"
                      " return (typeof r === 'object') ? JSON.stringify(r) : String(r); })();"}})
    return c.workflow(config, tasks, {"result": f"${{{select}.output.result}}", "finishReason": "STOP"})


# the plan to compile: the run's static plan, else the planner's last ```json fence (else
# its whole answer); ``text``: the planner's answer, for the fallback agent
EXTRACT_SCRIPT = (
    "(function () { var raw = $.raw; var text = (raw === null || raw === undefined) ? '' :"
    " (typeof raw === 'string' ? raw : JSON.stringify(raw));"
    " if ($.staticPlan !== null && $.staticPlan !== undefined && $.staticPlan !== '') {"
    " return {plan: $.staticPlan, text: text}; }"
    " if (raw !== null && typeof raw === 'object') { return {plan: raw, text: text}; }"
    " var open = text.lastIndexOf('```json'); if (open >= 0) { var body = text.substring(open + 7);"
    " var close = body.indexOf('```'); return {plan: (close >= 0 ? body.substring(0, close) : body).trim(), text: text}; }"
    " return {plan: text.trim(), text: text}; })();")

FALLBACK_PROMPT_SCRIPT = (
    "(function () { return String($.prompt) + '\\n\\nPlan:\\n' + ($.plan || '(none)') + '\\n\\nWhat went wrong:\\n'"
    " + String($.failure); })();")

# the plan (a JSON object, or its text) -> {workflowDef, workflowName, error, warnings,
# stats}; inputs workflowName, knownToolNames, harnessTimeoutSeconds, planJson
PLAN_COMPILER_SCRIPT = r"""(function () {
var name = $.workflowName, warnings = [], errors = [], D = '$' + '{';
var fail = function (msg) { return {workflowDef: null, workflowName: name, error: msg, warnings: warnings, stats: {}}; };
var plan = $.planJson;
if (typeof plan === 'string') { if (plan.trim() === '') { return fail('No JSON plan found'); }
  try { plan = JSON.parse(plan); } catch (e) { return fail('Invalid plan JSON: ' + e.message); } }
if (plan === null || typeof plan !== 'object' || Array.isArray(plan)) { return fail('Plan must be a JSON object'); }
var steps = plan.steps;
if (!Array.isArray(steps) || steps.length === 0) { return fail('Plan must have a non-empty steps array'); }
var known = $.knownToolNames || [], byId = {};
var isObj = function (v) { return v !== null && typeof v === 'object' && !Array.isArray(v); };
var isRef = function (v) { return isObj(v) && typeof v['$ref'] === 'string' && Object.keys(v).length === 1; };
var refsIn = function (v, out) {
  if (Array.isArray(v)) { v.forEach(function (x) { refsIn(x, out); }); }
  else if (isRef(v)) { out.push(v['$ref']); }
  else if (isObj(v)) { Object.keys(v).forEach(function (k) { refsIn(v[k], out); }); }
  return out; };
var SCHEMA_KEYS = ['$schema', 'properties', 'required', 'additionalProperties', 'definitions', '$defs', '$ref',
  'allOf', 'anyOf', 'oneOf', 'patternProperties'];
var shapeOf = function (g) {  // a generate op's output_schema: an example object, null (any), or an error text
  var raw = (g.output_schema === undefined || g.output_schema === null) ? '{}' : g.output_schema, v;
  if (isObj(raw)) { v = raw; } else { try { v = JSON.parse(String(raw)); } catch (e) { return null; } }
  if (!isObj(v)) { return 'output_schema must be a JSON object'; }
  for (var i = 0; i < SCHEMA_KEYS.length; i++) { if (v[SCHEMA_KEYS[i]] !== undefined) {
    return 'output_schema looks like a JSON Schema: use an instance-shape example object instead'; } }
  return v; };
var checkTool = function (where, call) {
  var tool = (call && typeof call.tool === 'string') ? call.tool : '';
  if (tool === '') { errors.push(where + ' missing tool'); }
  else if (known.length && known.indexOf(tool) < 0) { errors.push(where + " uses unknown tool '" + tool + "'"); }
  if (call && call.args !== undefined && call.args !== null && !isObj(call.args)) { errors.push(where + ' args must be an object'); } };
steps.forEach(function (s, i) {
  if (!isObj(s)) { errors.push('Step at index ' + i + ' is not an object'); return; }
  var id = (s.id === undefined || s.id === null || s.id === '') ? '' : String(s.id);
  if (id === '') { id = 'step_' + i; warnings.push('Auto-generated id for step at index ' + i + ': ' + id); }
  s.id = id;
  if (byId[id]) { errors.push('Duplicate step id: ' + id); }
  byId[id] = s; });
if (errors.length) { return fail('Plan validation: ' + errors.join('; ')); }
steps.forEach(function (s) {
  var ops = s.operations;
  if (!Array.isArray(ops) || ops.length === 0) { errors.push('Step ' + s.id + ' has no operations'); s.operations = []; }
  else { ops.forEach(function (op, oi) { var where = 'Step ' + s.id + ' op ' + oi;
    checkTool(where, op);
    if (op && op.generate !== undefined && op.generate !== null) {
      if (!isObj(op.generate) || typeof op.generate.instructions !== 'string') { errors.push(where + ' generate needs instructions'); }
      else { var shape = shapeOf(op.generate); if (typeof shape === 'string') { errors.push(where + ': ' + shape); } } }
    else if (!op || op.args === undefined || op.args === null) { errors.push(where + ' needs args or generate'); } }); }
  var deps = [];
  (Array.isArray(s.depends_on) ? s.depends_on : []).forEach(function (d) { d = String(d);
    if (byId[d]) { if (deps.indexOf(d) < 0) { deps.push(d); } } else { warnings.push('Step ' + s.id + ' dropped unknown dep: ' + d); } });
  s.depends_on = deps;
  refsIn(s.operations, []).forEach(function (t) {
    if (!byId[t]) { errors.push('Step ' + s.id + " has $ref to unknown step '" + t + "'"); }
    else if (t === s.id) { errors.push('Step ' + s.id + " has self-referential $ref to '" + t + "'"); }
    else if (deps.indexOf(t) < 0) { errors.push('Step ' + s.id + " $refs step '" + t + "' but does not declare it in depends_on"); } }); });
var lists = {};
['validation', 'on_success', 'on_failure'].forEach(function (key) {
  var list = plan[key] === undefined || plan[key] === null ? [] : plan[key];
  if (!Array.isArray(list)) { errors.push(key + ' must be a list'); list = []; }
  list.forEach(function (v, vi) { var where = key + ' ' + vi; checkTool(where, v);
    if (v && v.success_condition !== undefined && v.success_condition !== null && v.success_condition !== '') {
      if (key !== 'validation' || typeof v.success_condition !== 'string') { errors.push(where + ' success_condition must be a JavaScript expression'); }
      else if (v.success_condition.indexOf(D) >= 0) { errors.push(where + ' success_condition may not hold a template'); }
      else { try { new Function('$', 'return (' + v.success_condition + ');'); }
        catch (e) { errors.push(where + ' has unsafe success_condition: ' + e.message); } } }
    if (refsIn(v && v.args, []).length) { errors.push(where + ' args may not hold a $ref'); } });
  lists[key] = list; });
if (errors.length) { return fail('Plan validation: ' + errors.join('; ')); }
var order = [], state = {}, cycle = null;
var visit = function (s, path) {
  if (cycle !== null || state[s.id] === 2) { return; }
  if (state[s.id] === 1) { cycle = path.slice(path.indexOf(s.id)).concat([s.id]).join(' -> '); return; }
  state[s.id] = 1; path.push(s.id);
  s.depends_on.forEach(function (d) { visit(byId[d], path); });
  path.pop(); state[s.id] = 2; order.push(s); };
steps.forEach(function (s) { visit(s, []); });
if (cycle !== null) { return fail('Cycle in depends_on: ' + cycle); }
var tasks = [], outputs = {}, n = 0, last = null;
var uid = function (base) { var r = base + '_' + n; n++; return r; };
var resolve = function (v) {
  if (Array.isArray(v)) { return v.map(resolve); }
  if (isRef(v)) { return outputs[v['$ref']]; }
  if (isObj(v)) { var o = {}; Object.keys(v).forEach(function (k) { o[k] = resolve(v[k]); }); return o; }
  return v; };
var simple = function (call, ref) { return {name: call.tool, taskReferenceName: ref, type: 'SIMPLE', inputParameters: resolve(call.args || {})}; };
var model = String($.model || ''), cut = model.indexOf('/');
// an operation as [tasks, the ref of its tool task]; a generate op: its arguments from a model
var chainOf = function (op, safe) {
  if (op.generate === undefined || op.generate === null) { var r = uid('s_' + safe); return [[simple(op, r)], r]; }
  var g = op.generate, m = (typeof g.model === 'string' && g.model.indexOf('/') > 0) ? g.model : model, k = m.indexOf('/');
  var llm = uid('llm_' + safe), parse = uid('p_' + safe), tool = uid('t_' + safe), gate = uid('pgate_' + safe), term = uid('p_term_' + safe);
  var shape = shapeOf(g), args = {};
  if (shape === null) { args._args = D + parse + '.output.result}'; }
  else { Object.keys(shape).forEach(function (key) { args[key] = D + parse + '.output.result.' + key + '}'; }); }
  var context = (g.context === undefined || g.context === null) ? null : resolve(g.context);
  var user = g.instructions + (context === null ? '' : '\n\nContext:\n' + (typeof context === 'string' ? context : JSON.stringify(context)))
    + '\n\nRespond as json.';
  var schemaText = (typeof g.output_schema === 'string') ? g.output_schema : JSON.stringify(g.output_schema || {});
  return [[
    {name: 'LLM_CHAT_COMPLETE', taskReferenceName: llm, type: 'LLM_CHAT_COMPLETE', inputParameters: {
      llmProvider: m.substring(0, k), model: m.substring(k + 1), temperature: (typeof g.temperature === 'number') ? g.temperature : 0,
      maxTokens: (typeof g.max_tokens === 'number') ? g.max_tokens : 4096, jsonOutput: true, messages: [
        {role: 'system', message: 'Output ONLY valid JSON matching this shape: ' + schemaText + '. No markdown fences, no explanation, just the JSON object.'},
        {role: 'user', message: user}]}},
    {name: parse, taskReferenceName: parse, type: 'INLINE', inputParameters: {evaluatorType: 'javascript',
      llmOut: D + llm + '.output.result}', expression: PARSE}},
    {name: gate, taskReferenceName: gate, type: 'SWITCH', evaluatorType: 'javascript',
      expression: "($.parsed !== null && typeof $.parsed === 'object' && $.parsed.__parse_error === true) ? 'err' : 'ok'",
      inputParameters: {parsed: D + parse + '.output.result}'}, decisionCases: {
        ok: [{name: op.tool, taskReferenceName: tool, type: 'SIMPLE', inputParameters: args}],
        err: [{name: term, taskReferenceName: term, type: 'TERMINATE', inputParameters: {terminationStatus: 'FAILED',
          terminationReason: 'LLM output rejected for ' + op.tool + ': ' + D + parse + '.output.result.reason}'}}]},
      defaultCase: []}], tool]; };
var CONDITION = "(function () { var d = $.toolOut;"
  + " if (d !== null && typeof d === 'object' && d.result !== undefined && Object.keys(d).length === 1) { d = d.result; }"
  + " if (typeof d === 'string') { try { d = JSON.parse(d); } catch (e) { } }"
  + " try { return (new Function('$', 'return (' + $.condition + ');'))(d) ? {passed: true}"
  + " : {passed: false, reason: 'success_condition is false'}; }"
  + " catch (e) { return {passed: false, reason: 'condition error: ' + e.message}; } })();";
var PARSE = "(function () { var o = $.llmOut; if (o !== null && typeof o === 'object' && !Array.isArray(o)) { return o; }"
  + " var t = (o === null || o === undefined) ? '' : String(o); t = t.trim();"
  + " if (t.indexOf('```') === 0) { t = t.replace(/^```[a-zA-Z]*/, '').replace(/```$/, '').trim(); }"
  + " try { var v = JSON.parse(t); if (v !== null && typeof v === 'object' && !Array.isArray(v)) { return v; }"
  + " return {__parse_error: true, reason: 'not a JSON object'}; }"
  + " catch (e) { return {__parse_error: true, reason: 'invalid JSON: ' + e.message}; } })();";
order.forEach(function (s) {
  var safe = s.id.replace(/[^A-Za-z0-9_]/g, '_');
  if (s.parallel === true && s.operations.length > 1) {
    var fork = uid('fork_' + safe), refs = [], ends = [];
    var branches = s.operations.map(function (op) { var ch = chainOf(op, safe); refs.push(ch[1]);
      ends.push(ch[0][ch[0].length - 1].taskReferenceName); return ch[0]; });
    var agg = uid('agg_' + safe);
    tasks.push({name: fork, taskReferenceName: fork, type: 'FORK_JOIN', forkTasks: branches});
    tasks.push({name: fork + '_join', taskReferenceName: fork + '_join', type: 'JOIN', joinOn: ends});
    tasks.push({name: agg, taskReferenceName: agg, type: 'INLINE', inputParameters: {evaluatorType: 'javascript',
      outputs: refs.map(function (r) { return D + r + '.output}'; }), expression: '(function () { return $.outputs; })();'}});
    outputs[s.id] = D + agg + '.output.result}'; last = outputs[s.id];
  } else {
    s.operations.forEach(function (op) { var ch = chainOf(op, safe); ch[0].forEach(function (t) { tasks.push(t); });
      outputs[s.id] = D + ch[1] + '.output}'; last = D + ch[1] + '.output.result}'; });
  } });
var status = 'completed';
if (lists.validation.length) {
  var checks = [];
  lists.validation.forEach(function (v) { var r = uid('val'); tasks.push(simple(v, r));
    if (typeof v.success_condition !== 'string' || v.success_condition === '') { checks.push(D + r + '.output}'); return; }
    var e = uid('val_eval');  // $ of the condition: the tool's answer (its result, parsed when JSON)
    tasks.push({name: e, taskReferenceName: e, type: 'INLINE', inputParameters: {evaluatorType: 'javascript',
      toolOut: D + r + '.output}', condition: v.success_condition, expression: CONDITION}});
    checks.push(D + e + '.output.result}'); });
  var vagg = uid('val_agg');
  tasks.push({name: vagg, taskReferenceName: vagg, type: 'INLINE', inputParameters: {evaluatorType: 'javascript', checks: checks,
    expression: "(function () { for (var i = 0; i < $.checks.length; i++) { var d = $.checks[i];"
      + " if (d !== null && typeof d === 'object' && d.result !== undefined && Object.keys(d).length === 1) { d = d.result; }"
      + " if (d === null || d === undefined) { return 'failed'; }"
      + " if (typeof d === 'object' && d.passed === false) { return 'failed'; }"
      + " if (typeof d === 'string' && d.indexOf('ERROR') >= 0) { return 'failed'; } } return 'passed'; })();"}});
  var ok = lists.on_success.map(function (a) { return simple(a, uid('ok')); });
  if (!ok.length) { var noop = uid('ok_noop'); ok.push({name: noop, taskReferenceName: noop, type: 'SET_VARIABLE', inputParameters: {_validation: 'passed'}}); }
  var bad = lists.on_failure.map(function (a) { return simple(a, uid('fail')); });
  var term = uid('term');
  bad.push({name: term, taskReferenceName: term, type: 'TERMINATE', inputParameters: {terminationStatus: 'FAILED', terminationReason: 'Plan validation failed'}});
  var vsw = uid('vsw');
  tasks.push({name: vsw, taskReferenceName: vsw, type: 'SWITCH', evaluatorType: 'value-param', expression: 'switchCaseValue',
    inputParameters: {switchCaseValue: D + vagg + '.output.result}'}, decisionCases: {passed: ok, failed: bad}, defaultCase: []});
  status = D + vagg + '.output.result}'; }
var def = {name: name, version: 1, schemaVersion: 2, tasks: tasks, outputParameters: {result: last, status: status},
  timeoutPolicy: 'TIME_OUT_WF', timeoutSeconds: $.harnessTimeoutSeconds || 0, ownerEmail: 'agents@conductor-web.local'};
return {workflowDef: def, workflowName: name, error: null, warnings: warnings, stats: {stepCount: steps.length, taskCount: tasks.length}};
})();"""
