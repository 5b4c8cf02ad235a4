"""Agent configuration -> WorkflowDef: the compile step of Conductor's Agents API.

Pure (no ORM, no clock): ``compile_agent(config)`` takes the AgentConfig JSON the SDK's
``AgentConfigSerializer`` sends (``POST /api/agent/compile|deploy|start``, camelCase) and
returns a ``Compiled`` with a normal WorkflowDef the engine runs, inspects, retries and
shows, the TaskDefs of its worker tasks and the names of the workers it needs. It follows
the shape of Conductor's ``AgentCompiler`` (``agentspan/.../compiler/``):

* ``{ref}_init_state`` (SET_VARIABLE): ``_stop_requested`` false, ``_signal_injection`` "";
* ``{ref}_loop`` (DO_WHILE, at most ``maxTurns`` iterations, 25 by default) around:
  ``{ref}_context`` (INLINE: the system instructions, the signals of ``/signal`` as
  ``[SIGNALS]...[/SIGNALS]``, the user's prompt), ``{ref}_llm`` (LLM_CHAT_COMPLETE with
  the agent's tools as ToolSpecs; the earlier turns come from the loop history, as
  Conductor's ChatCompleteTaskMapper gives them), ``{ref}_route`` (INLINE: ``tools``,
  ``final`` or ``transfer_to_<agent>``) and ``{ref}_dispatch`` (SWITCH):
  - ``tools``: the model's tool calls as a FORK_JOIN_DYNAMIC (``{ref}_tools``) + JOIN:
    a ``worker`` tool is a SIMPLE task named after the tool (the SDK's ``@tool`` worker
    polls it), a ``human`` tool (``human_tool``) a HUMAN task answered by ``/respond``;
  - ``final``: each output guardrail (``apps.agents.guardrails``: a SIMPLE task named
    after the guardrail, the SDK's ``@guardrail`` worker, input ``{content, iteration}``;
    a ``RegexGuardrail`` an INLINE script; an ``LLMGuardrail`` a judge) and its routing SWITCH:
    ``retry`` feeds the guardrail's message back to the model as a user message (the LLM
    task's ``participants``) and loops again, ``raise`` fails the workflow (TERMINATE),
    ``fix`` replaces the answer with the guardrail's ``fixed_output``;
  - ``transfer_to_<agent>`` (strategy ``handoff``): the chosen sub-agent, compiled the
    same way, as a SUB_WORKFLOW with its definition inline; the loop ends;
* the loop goes on while the model asked for tools, its answer was cut at the token
  limit (``finishReason`` LENGTH or MAX_TOKENS) or a guardrail asked for a retry,
  the iteration is below ``maxTurns``, ``/stop`` has not set ``_stop_requested``, and the
  ``stopWhen`` worker and the ``termination`` condition (INLINE) say continue;
* ``{ref}_output`` (INLINE): the workflow output ``{result, finishReason}``.

The WorkflowDef's ``metadata`` is ``{agent_sdk, classifier: "agent", agentDef}`` (the
``classifier`` filter of ``GET /api/metadata/workflow``); a sub-agent's inline definition
carries ``{agent_sdk, classifier: "agent"}``, so the UI shows its execution as an agent's.

The multi-agent strategies follow Conductor's MultiAgentCompiler; each sub-agent is a
SUB_WORKFLOW with its definition inline (it inherits the team's model), and the stream
shows each one started as a ``handoff``:

* ``sequential``: one after the other, each one's prompt the previous one's result
  (``{ref}_step_{i}_{agent}``);
* ``parallel``: all at once in a FORK_JOIN on the user's prompt; output ``{result:
  "[agent]: answer" joined by blank lines, subResults: {agent: answer}}``
  (``_compile_parallel``);
* ``router``: a loop in which a router (an agent's model in a SUB_WORKFLOW of its own,
  or the SDK's router function as a worker) reads the transcript and names the next
  sub-agent or ``DONE``; the team's model then writes the answer from the transcript
  (``synthesize``) (``_compile_router``);
* ``round_robin`` / ``random``: ``maxTurns`` turns, the sub-agents in definition order
  or at random (within ``allowedTransitions``), each reading the transcript ``[agent]:
  answer`` so far, which is the output (``_compile_rotation``);
* ``swarm``: the team's own agent first, then whichever agent the last one handed the
  conversation to with a ``{agent}_transfer_to_{peer}`` tool (or, with ``handoffs``
  conditions, the first condition that holds: ``strategies.swarm_handoffs``), until a
  turn hands over to nobody; then a synthesis (``_compile_swarm``);
* ``manual``: a person picks the agent of each turn through a HUMAN task answered with
  ``/respond`` (``strategies.compile_manual``);
* ``plan_execute``: a planner agent's plan compiled into a workflow and run, a fallback
  agent when that fails (``plans.compile_plan_execute``).

A team's own tools are ignored (as Conductor's compiler does; a swarm's own agent uses
them); ``stopWhen``/``termination`` on a sequential, parallel or router team are refused
(a rotation, a swarm and a manual team read them on the transcript: ``conversation_stops``).
Tool types other than those of ``apps.agents.tools``, ``codeExecution`` and ``cliConfig``
are refused with a 400 naming the field, never compiled half. Guardrails (every type, tool guardrails, a team's, ``onFail: human``) are
compiled by ``apps.agents.guardrails``; ``memory``, ``outputType``, ``requiredTools``,
``prefillTools``, ``callbacks`` and a sequential team's ``gate`` by ``apps.agents.options``.

The model is ``provider/model``: the provider is a configured LLM provider
(``CONDUCTOR_AI_<NAME>_BASE_URL``, docs/ai.md).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field

from apps.agents import guardrails, options
from apps.agents import tools as agent_tools
from apps.agents.base import NAME, TASK_DEF_DEFAULTS, parse_model, to_ref
from apps.agents.base import task_def as _task_def
from apps.agents.base import whole as _whole
from apps.core.errors import validation_failed

MAX_TURNS_DEFAULT = 25
TOOL_TYPES = {"worker": "SIMPLE", "human": "HUMAN"}
GUARDRAIL_TYPES = guardrails.GUARDRAIL_TYPES
STRATEGIES = (None, "handoff", "sequential", "parallel", "router", "round_robin", "random", "swarm", "manual",
              "plan_execute")
ROTATIONS = ("round_robin", "random")
TERMINATION_TYPES = ("text_mention", "stop_message", "max_message", "token_usage", "and", "or")
# what apps.agents.strategies adds when the app loads (AgentsConfig.ready): a strategy's
# compile(config, parent_model, task_defs) -> WorkflowDef, a team's check(config, path,
# errors, strategy), and a swarm's extend(config, workflow_def, task_defs) -> WorkflowDef
STRATEGY_COMPILERS: dict = {}
TEAM_CHECKS: list = []
SWARM_EXTENSIONS: list = []
WORKFLOW_INPUTS = ["prompt", "media", "session_id", "context"]


@dataclass
class Compiled:
    """What one agent configuration compiles to: ``workflow_def`` (camelCase WorkflowDef),
    ``task_defs`` (TaskDefs of its worker tasks, sub-agents included) and
    ``required_workers`` (the SIMPLE task names a worker must poll, sorted)."""

    workflow_def: dict
    task_defs: list[dict] = field(default_factory=list)
    required_workers: list[str] = field(default_factory=list)


class _Errors:
    def __init__(self):
        self.items: list[dict] = []

    def add(self, path: str, message: str, value=None) -> None:
        item = {"path": path, "message": message}
        if value is not None:
            item["invalidValue"] = value if isinstance(value, (str, int, float, bool)) else json.dumps(value)[:200]
        self.items.append(item)


def validate(config, path: str = "agentConfig", errors: _Errors | None = None, parent_model=None) -> list[dict]:
    """Every problem of an AgentConfig (sub-agents included) as Conductor's validation
    errors ``[{path, message, invalidValue?}]``; empty when it compiles."""
    errors = errors or _Errors()
    if not isinstance(config, dict):
        errors.add(path, "agentConfig must be a JSON object", config)
        return errors.items
    name = config.get("name")
    if not isinstance(name, str) or not NAME.match(name):
        errors.add(f"{path}.name", "name is required: letters, digits, '_', '-' or '.', at most 200", name)
    strategy = config.get("strategy")
    agents = config.get("agents") or []
    if not isinstance(agents, list):
        errors.add(f"{path}.agents", "agents must be a list of agent configurations", agents)
        agents = []
    if strategy not in STRATEGIES:
        errors.add(f"{path}.strategy", f"strategy {strategy!r} is not supported by this server "
                                       f"(supported: {', '.join(s for s in STRATEGIES if s)})", strategy)
    model = config.get("model") or parent_model
    if _needs_model(config, strategy) and parse_model(model) is None:
        errors.add(f"{path}.model", "model is required as 'provider/model' (e.g. openai/gpt-4o)", model)
    if strategy in STRATEGIES[1:]:
        _validate_team(config, path, errors, strategy, agents, model)
        for check in TEAM_CHECKS:
            check(config, path, errors, strategy)
    max_turns = config.get("maxTurns")
    if max_turns is not None and (not isinstance(max_turns, int) or isinstance(max_turns, bool) or max_turns < 1):
        errors.add(f"{path}.maxTurns", "maxTurns must be a positive integer", max_turns)
    timeout = config.get("timeoutSeconds")
    if timeout is not None and (not isinstance(timeout, int) or isinstance(timeout, bool) or timeout < 0):
        errors.add(f"{path}.timeoutSeconds", "timeoutSeconds must be a non-negative integer", timeout)
    instructions = config.get("instructions")
    if instructions is not None and not isinstance(instructions, str):
        errors.add(f"{path}.instructions", "instructions must be a string (prompt templates are not supported)",
                   instructions)
    tools = config.get("tools") or []
    if not isinstance(tools, list):
        errors.add(f"{path}.tools", "tools must be a list", tools)
        tools = []
    seen = set()
    for i, tool in enumerate(tools):
        tpath = f"{path}.tools[{i}]"
        if not isinstance(tool, dict):
            errors.add(tpath, "a tool must be an object", tool)
            continue
        tname = tool.get("name")
        if not isinstance(tname, str) or not NAME.match(tname):
            errors.add(f"{tpath}.name", "tool name is required: letters, digits, '_', '-' or '.'", tname)
        elif tname in seen:
            errors.add(f"{tpath}.name", f"tool {tname} is declared twice", tname)
        seen.add(tname)
        ttype = tool.get("toolType") or "worker"
        if ttype in agent_tools.SERVER_TOOL_TYPES:  # http, mcp, agent_tool, ... (apps.agents.tools)
            agent_tools.validate_tool(tool, tpath, errors, lambda sub, p: validate(sub, p, errors, model))
        elif ttype not in TOOL_TYPES:
            errors.add(f"{tpath}.toolType", agent_tools.refusal(ttype), ttype)
        schema = tool.get("inputSchema")
        if schema is not None and not isinstance(schema, dict):
            errors.add(f"{tpath}.inputSchema", "inputSchema must be a JSON Schema object", schema)
    guardrails.validate(config, path, errors, model)
    options.validate(config, path, errors)
    stop_when = config.get("stopWhen")
    if stop_when is not None and not (isinstance(stop_when, dict) and isinstance(stop_when.get("taskName"), str)):
        errors.add(f"{path}.stopWhen", "stopWhen must be {taskName}", stop_when)
    if config.get("termination") is not None:
        _validate_termination(config["termination"], f"{path}.termination", errors)
    for key in ("router", "allowedTransitions", "handoffs", "planner", "codeExecution", "cliConfig"):
        if config.get(key) and not (key == "router" and strategy == "router") \
                and not (key == "handoffs" and strategy == "swarm") \
                and not (key == "planner" and strategy == "plan_execute") \
                and not (key == "allowedTransitions" and strategy in (*ROTATIONS, "swarm")):
            errors.add(f"{path}.{key}", f"{key} is not supported by this server"
                       + (f" with strategy {strategy!r}" if key in ("router", "allowedTransitions") else ""))
    for i, sub in enumerate(agents):
        validate(sub, f"{path}.agents[{i}]", errors, model)
    return errors.items


def _needs_model(config: dict, strategy) -> bool:
    """Whether the agent itself calls a model: its own loop (no strategy, ``handoff``, a
    ``swarm``'s own agent), or a ``router`` team's synthesis (``synthesize``, true by default) or its router when
    that is neither a worker nor an agent with a model of its own. ``sequential``,
    ``parallel``, ``round_robin`` and ``random`` only run their sub-agents (which inherit
    the model)."""
    if strategy in (None, "handoff", "swarm"):
        return True
    if strategy != "router":
        return False
    router = config.get("router")
    own_router = isinstance(router, dict) and (isinstance(router.get("taskName"), str)
                                               or parse_model(router.get("model")) is not None)
    return config.get("synthesize") is not False or not own_router


def _validate_team(config: dict, path: str, errors: _Errors, strategy: str, agents: list, model) -> None:
    """The multi-agent part of an AgentConfig: at least one sub-agent, unique names (and
    task references), ``DONE`` reserved by a router, a swarm's sub-agents single agents,
    the router itself, the allowed transitions of a rotation or swarm (a team's output
    guardrails wrap it: ``apps.agents.guardrails.wrap_team``)."""
    if not agents and strategy != "plan_execute":  # a plan_execute harness has planner and fallback
        errors.add(f"{path}.agents", f"strategy {strategy} needs at least one sub-agent")
    if strategy in ("manual", "plan_execute") and guardrails.output_guardrails(config):
        # wrapped, the team would run in a sub-workflow, where /respond (a manual pick) and a
        # run's own plan do not reach it; not compiled rather than compiled half-working
        errors.add(f"{path}.guardrails", f"output guardrails on a {strategy} team are not supported by this server")
    seen: dict[str, str] = {}
    for i, sub in enumerate(agents):
        sub_name = sub.get("name") if isinstance(sub, dict) else None
        if not isinstance(sub_name, str):
            continue
        if to_ref(sub_name) in seen:
            errors.add(f"{path}.agents[{i}].name", f"sub-agent name {sub_name} is used twice in {config.get('name')} "
                                                   f"(as {seen[to_ref(sub_name)]}): each sub-agent needs its own name",
                       sub_name)
        seen.setdefault(to_ref(sub_name), sub_name)
        if strategy == "swarm" and (sub.get("agents") or sub_name == config.get("name")):
            errors.add(f"{path}.agents[{i}]", "a swarm's sub-agent is one agent (no team of its own, not named as "
                                              "the swarm) on this server", sub_name)
        if strategy == "router" and sub_name.lower() == "done":
            errors.add(f"{path}.agents[{i}].name", "DONE is the router's answer when the work is done: "
                                                   "rename the sub-agent", sub_name)
    if strategy in ("sequential", "parallel", "router"):
        for key in ("stopWhen", "termination"):
            if config.get(key) is not None:
                errors.add(f"{path}.{key}", f"{key} is not supported with strategy {strategy} "
                                            "(a round_robin, random or swarm team, or a single agent, reads it)")
    if strategy in (*ROTATIONS, "swarm") and isinstance(config.get("termination"), dict):
        _refuse_token_usage(config["termination"], f"{path}.termination", errors)
    router = config.get("router")
    if strategy == "router" and router is not None:
        if not isinstance(router, dict):
            errors.add(f"{path}.router", "router must be an agent configuration or {taskName}", router)
        elif "taskName" in router:
            if not isinstance(router["taskName"], str) or not NAME.match(router["taskName"]):
                errors.add(f"{path}.router.taskName", "the router worker's task name: letters, digits, '_', '-' "
                                                      "or '.'", router["taskName"])
        else:
            validate(router, f"{path}.router", errors, model)
    transitions = config.get("allowedTransitions")
    if strategy in (*ROTATIONS, "swarm") and transitions is not None:
        names = set(seen.values()) | ({config.get("name")} if strategy == "swarm" else set())
        if not isinstance(transitions, dict):
            errors.add(f"{path}.allowedTransitions", "allowedTransitions must map an agent name to the names "
                                                     "of the agents that may follow it", transitions)
            return
        for source, targets in transitions.items():
            if source not in names:
                errors.add(f"{path}.allowedTransitions.{source}", f"{source} is not a sub-agent of "
                                                                  f"{config.get('name')}", source)
            if not isinstance(targets, list) or any(t not in names for t in targets) \
                    or (not targets and strategy in ROTATIONS):
                errors.add(f"{path}.allowedTransitions.{source}", "a non-empty list of sub-agent names",
                           targets)


def _refuse_token_usage(t: dict, path: str, errors: _Errors) -> None:
    """A rotation's or a swarm's termination reads the transcript, not a model's token counts."""
    if t.get("type") == "token_usage":
        errors.add(f"{path}.type", "token_usage is not supported on a round_robin, random or swarm team "
                                   "(its termination reads the transcript)", "token_usage")
    for i, c in enumerate(t.get("conditions") or []):
        if isinstance(c, dict):
            _refuse_token_usage(c, f"{path}.conditions[{i}]", errors)


def _validate_termination(t, path: str, errors: _Errors) -> None:
    if not isinstance(t, dict) or t.get("type") not in TERMINATION_TYPES:
        errors.add(f"{path}.type", f"termination type must be one of {', '.join(TERMINATION_TYPES)}",
                   t.get("type") if isinstance(t, dict) else t)
        return
    for key in ("maxMessages", "maxTotalTokens", "maxPromptTokens", "maxCompletionTokens"):
        if t.get(key) is not None and not _whole(t[key]):
            errors.add(f"{path}.{key}", f"{key} must be an integer", t[key])
    if t["type"] in ("and", "or"):
        for i, c in enumerate(t.get("conditions") or []):
            _validate_termination(c, f"{path}.conditions[{i}]", errors)


def compile_agent(config: dict) -> Compiled:
    """Compile a validated-here AgentConfig. Errors: InvalidInput (400) with every
    problem, each naming its field (``agentConfig.tools[0].toolType``)."""
    problems = validate(config)
    if problems:
        raise validation_failed(problems)
    task_defs: dict[str, dict] = {}
    wf = _compile(config, None, task_defs)
    wf["metadata"] = {"agent_sdk": "conductor", "classifier": "agent", "agentDef": config}
    workers = sorted(task_defs)
    return Compiled(wf, [task_defs[n] for n in workers], workers)


def _workflow(config: dict, tasks: list, output: dict) -> dict:
    return {"name": config["name"], "version": 1, "schemaVersion": 2,
            "description": (config.get("description") or f"Agent {config['name']} (compiled agent)")[:500],
            "inputParameters": list(WORKFLOW_INPUTS), "tasks": tasks, "outputParameters": output,
            "timeoutPolicy": "TIME_OUT_WF", "timeoutSeconds": int(config.get("timeoutSeconds") or 0),
            "ownerEmail": TASK_DEF_DEFAULTS["ownerEmail"], "restartable": True}


def _compile(config: dict, parent_model, task_defs: dict) -> dict:
    if guardrails.wraps_team(config):
        return _compile_guarded_team(config, parent_model, task_defs)
    strategy = config.get("strategy")
    if strategy == "sequential":
        return options.gate_pipeline(config, _compile_sequential(config, parent_model, task_defs), task_defs)
    if strategy == "parallel":
        return _compile_parallel(config, parent_model, task_defs)
    if strategy == "router":
        return _compile_router(config, parent_model, task_defs)
    if strategy in ROTATIONS:
        return _compile_rotation(config, parent_model, task_defs)
    if strategy == "swarm":
        wf = _compile_swarm(config, parent_model, task_defs)
        for extend in SWARM_EXTENSIONS:
            wf = extend(config, wf, task_defs)
        return wf
    if strategy in STRATEGY_COMPILERS:
        return STRATEGY_COMPILERS[strategy](config, parent_model, task_defs)
    return _compile_loop(config, parent_model, task_defs)


def _compile_guarded_team(config: dict, parent_model, task_defs: dict) -> dict:
    """A team with output guardrails: the team compiled without them runs as the
    SUB_WORKFLOW ``{ref}_strategy`` that ``guardrails.wrap_team`` judges."""
    r = to_ref(config["name"])
    team = _compile(guardrails.unguarded(config), parent_model, task_defs)
    sub = _sub_workflow_task(f"{r}_strategy", {**team, "name": f"{config['name']}_strategy"},
                             f"${{{r}_strategy_prompt.output.result}}")
    tasks, output = guardrails.wrap_team(config, sub, config.get("model") or parent_model, task_defs,
                                         int(config.get("maxTurns") or MAX_TURNS_DEFAULT))
    return _workflow(config, tasks, output)


def _sub_workflow_task(ref: str, sub_def: dict, prompt: str) -> dict:
    # a sub-agent's execution is an agent's too (the UI's Agent tab reads the classifier)
    sub_def = {**sub_def, "metadata": {"agent_sdk": "conductor", "classifier": "agent"}}
    return {"name": sub_def["name"], "taskReferenceName": ref, "type": "SUB_WORKFLOW",
            "inputParameters": {"prompt": prompt, "media": "${workflow.input.media}",
                                "session_id": "${workflow.input.session_id}", "context": "${workflow.input.context}"},
            "subWorkflowParam": {"name": sub_def["name"], "version": 1, "workflowDefinition": sub_def}}


def _compile_sequential(config: dict, parent_model, task_defs: dict) -> dict:
    model = config.get("model") or parent_model
    r = to_ref(config["name"])
    tasks, prompt = [], "${workflow.input.prompt}"
    for i, sub in enumerate(config["agents"]):
        sub_def = _compile(sub, model, task_defs)
        ref = f"{r}_step_{i}_{to_ref(sub['name'])}"
        tasks.append(_sub_workflow_task(ref, sub_def, prompt))
        prompt = f"${{{ref}.output.result}}"
    return _workflow(config, tasks, {"result": prompt, "finishReason": "STOP"})


def _compile_parallel(config: dict, parent_model, task_defs: dict) -> dict:
    """Strategy ``parallel`` (Conductor's compileParallel): every sub-agent at once, each a
    SUB_WORKFLOW ``{ref}_parallel_{i}_{agent}`` in a branch of the FORK_JOIN ``{ref}_fork``
    on the user's prompt, joined by ``{ref}_fork_join``; ``{ref}_aggregate`` (INLINE)
    makes the output ``{result: "[agent]: answer" joined by blank lines, subResults:
    {agent: answer}, finishReason: "STOP"}`` (an empty answer is left out of ``result``)."""
    model = config.get("model") or parent_model
    r = to_ref(config["name"])
    branches, refs = [], {}
    for i, sub in enumerate(config["agents"]):
        ref = f"{r}_parallel_{i}_{to_ref(sub['name'])}"
        branches.append([_sub_workflow_task(ref, _compile(sub, model, task_defs), "${workflow.input.prompt}")])
        refs[sub["name"]] = ref
    aggregate = f"{r}_aggregate"
    tasks = [
        {"name": f"{r}_fork", "taskReferenceName": f"{r}_fork", "type": "FORK_JOIN", "forkTasks": branches},
        {"name": f"{r}_fork_join", "taskReferenceName": f"{r}_fork_join", "type": "JOIN", "joinOn": list(refs.values())},
        {"name": aggregate, "taskReferenceName": aggregate, "type": "INLINE", "inputParameters": {
            "evaluatorType": "javascript", "expression": AGGREGATE_SCRIPT, "agents": list(refs),
            "results": {name: f"${{{ref}.output.result}}" for name, ref in refs.items()}}},
    ]
    return _workflow(config, tasks, {"result": f"${{{aggregate}.output.result.result}}",
                                     "subResults": f"${{{aggregate}.output.result.subResults}}", "finishReason": "STOP"})


def _conversation_init(config: dict, r: str, extra: dict | None = None) -> dict:
    """``{ref}_init`` (SET_VARIABLE): the team's transcript ``conversation``, the user's
    prompt after the sub-agents' ``introduction`` lines (``[agent]: introduction``), and
    ``_stop_requested`` false (``/stop`` ends the team's loop after its current turn)."""
    intros = [f"[{sub['name']}]: {sub['introduction']}" for sub in config["agents"]
              if isinstance(sub.get("introduction"), str) and sub["introduction"]]
    conversation = "\n".join(intros) + "\n\n${workflow.input.prompt}" if intros else "${workflow.input.prompt}"
    return {"name": f"{r}_init", "taskReferenceName": f"{r}_init", "type": "SET_VARIABLE",
            "inputParameters": {"conversation": conversation, "_stop_requested": False, **(extra or {})}}


def _turn_tasks(r: str, ref: str, key: str, i: int, sub_def: dict, agent: str, extra: dict | None = None) -> list:
    """One sub-agent's turn in a team's loop: the SUB_WORKFLOW ``ref`` on the transcript so
    far, ``{r}_{key}concat_{i}`` (INLINE) appending ``[agent]: answer`` and
    ``{r}_{key}set_{i}`` (SET_VARIABLE) keeping it as ``conversation`` (``key``: ``"h"``
    for a router's turn, ``""`` for a rotation's, as Conductor names them)."""
    concat, setter = f"{r}_{key}concat_{i}", f"{r}_{key}set_{i}"
    return [_sub_workflow_task(ref, sub_def, "${workflow.variables.conversation}"),
            {"name": concat, "taskReferenceName": concat, "type": "INLINE", "inputParameters": {
                "evaluatorType": "javascript", "expression": CONCAT_SCRIPT, "agent": agent,
                "prev": "${workflow.variables.conversation}", "response": f"${{{ref}.output.result}}"}},
            {"name": setter, "taskReferenceName": setter, "type": "SET_VARIABLE",
             "inputParameters": {"conversation": f"${{{concat}.output.result}}", **(extra or {})}}]


def _team_loop(r: str, max_turns: int, body: list, cond: list) -> dict:
    loop_ref = f"{r}_loop"
    cond = [f"$.{loop_ref}['iteration'] < {max_turns}", "$._stop_requested != true", *cond]
    return {"name": loop_ref, "taskReferenceName": loop_ref, "type": "DO_WHILE",
            "inputParameters": {"_stop_requested": "${workflow.variables._stop_requested}"},
            "loopCondition": "if (" + " && ".join(cond) + ") { true; } else { false; }", "loopOver": body}


def _compile_router(config: dict, parent_model, task_defs: dict) -> dict:
    """Strategy ``router`` (Conductor's compileRouter): a loop in which the router picks
    the next sub-agent from the transcript, or ``DONE``:

    * ``{ref}_router``: a worker (``router: {taskName}``, the SDK's ``{agent}_router_fn``
      for a function; input ``{prompt, conversation}``, answer ``result`` or the SDK's
      ``selected_agent``), else a SUB_WORKFLOW ``{ref}_router_wf`` holding one
      LLM_CHAT_COMPLETE ``{ref}_router_llm`` (the router agent's model and instructions,
      else the team's, with the list of sub-agents; temperature 0) on the transcript, so
      no turn sees the earlier decisions as its own history;
    * ``{ref}_route_norm`` (INLINE): the answer as a sub-agent's name or ``DONE`` (case,
      quotes and markup ignored; a sentence naming exactly one sub-agent picks it;
      anything else is ``DONE``); ``{ref}_route_annotate`` + ``{ref}_route_set`` note
      ``[coordinator -> agent]`` in the transcript;
    * ``{ref}_switch``: the chosen sub-agent's turn (``{ref}_handoff_{i}_{agent}``,
      ``_turn_tasks``), ``DONE`` a NOOP;

    the loop stops on ``DONE``, at ``maxTurns`` (25) or on ``/stop``. Then ``{ref}_final``
    (LLM_CHAT_COMPLETE, unless ``synthesize`` is false) writes the answer from the
    transcript. Output ``{result, finishReason}``: the synthesis, else the transcript."""
    model = config.get("model") or parent_model
    r = to_ref(config["name"])
    agents = config["agents"]
    router, router_ref, norm = config.get("router"), f"{r}_router", f"{r}_route_norm"
    if isinstance(router, dict) and "taskName" in router:
        _task_def(router["taskName"], task_defs)
        router_task = {"name": router["taskName"], "taskReferenceName": router_ref, "type": "SIMPLE",
                       "inputParameters": {"prompt": "${workflow.variables.conversation}",
                                           "conversation": "${workflow.variables.conversation}"}}
    else:
        agent = router if isinstance(router, dict) else config
        provider, name = parse_model(agent.get("model") or model)
        roster = "".join(f"- {sub['name']}: {sub.get('description') or sub.get('instructions') or sub['name']}\n"
                         for sub in agents)
        system = ((agent.get("instructions") or "") + "\n\n").lstrip() + ROUTER_PROMPT.format(
            roster=roster, names=", ".join(sub["name"] for sub in agents))
        llm_ref = f"{router_ref}_llm"
        router_def = {"name": f"{router_ref}_wf", "version": 1, "schemaVersion": 2,
                      "description": f"Router of the agent {config['name']} (compiled agent)",
                      "inputParameters": ["conversation"], "outputParameters": {"result": f"${{{llm_ref}.output.result}}"},
                      "ownerEmail": TASK_DEF_DEFAULTS["ownerEmail"], "tasks": [{
                          "name": "LLM_CHAT_COMPLETE", "taskReferenceName": llm_ref, "type": "LLM_CHAT_COMPLETE",
                          "inputParameters": {"llmProvider": provider, "model": name, "temperature": 0,
                                              "messages": [{"role": "system", "message": system},
                                                           {"role": "user", "message": "${workflow.input.conversation}"}]}}],
                      "metadata": {"agent_sdk": "conductor", "classifier": "agent"}}
        router_task = {"name": router_def["name"], "taskReferenceName": router_ref, "type": "SUB_WORKFLOW",
                       "inputParameters": {"conversation": "${workflow.variables.conversation}"},
                       "subWorkflowParam": {"name": router_def["name"], "version": 1, "workflowDefinition": router_def}}
    cases = {}
    for i, sub in enumerate(agents):
        ref = f"{r}_handoff_{i}_{to_ref(sub['name'])}"
        cases[sub["name"]] = _turn_tasks(r, ref, "h", i, _compile(sub, model, task_defs), sub["name"])
    cases["DONE"] = [{"name": f"{r}_done", "taskReferenceName": f"{r}_done", "type": "NOOP"}]
    annotate = f"{r}_route_annotate"
    body = [
        router_task,
        {"name": norm, "taskReferenceName": norm, "type": "INLINE", "inputParameters": {
            "evaluatorType": "javascript", "expression": NORMALIZE_SCRIPT, "agents": [sub["name"] for sub in agents],
            "raw": f"${{{router_ref}.output.result}}", "selected": f"${{{router_ref}.output.selected_agent}}"}},
        {"name": annotate, "taskReferenceName": annotate, "type": "INLINE", "inputParameters": {
            "evaluatorType": "javascript", "expression": ANNOTATE_SCRIPT,
            "prev": "${workflow.variables.conversation}", "decision": f"${{{norm}.output.result}}"}},
        {"name": f"{r}_route_set", "taskReferenceName": f"{r}_route_set", "type": "SET_VARIABLE",
         "inputParameters": {"conversation": f"${{{annotate}.output.result}}"}},
        {"name": f"{r}_switch", "taskReferenceName": f"{r}_switch", "type": "SWITCH", "evaluatorType": "value-param",
         "expression": "switchCaseValue", "inputParameters": {"switchCaseValue": f"${{{norm}.output.result}}"},
         "decisionCases": cases, "defaultCase": []},
    ]
    tasks = [_conversation_init(config, r),
             _team_loop(r, int(config.get("maxTurns") or MAX_TURNS_DEFAULT), body, [f"$.{norm}['result'] != 'DONE'"])]
    return _workflow(config, tasks + _synthesis(config, model, r), _team_output(config, r))


def _synthesis(config: dict, model, r: str) -> list:
    """``{ref}_final`` (LLM_CHAT_COMPLETE) writing the team's answer from the transcript,
    the team's instructions first; none when ``synthesize`` is false."""
    if config.get("synthesize") is False:
        return []
    provider, name = parse_model(model)
    llm_input = {"llmProvider": provider, "model": name, "messages": [
        {"role": "system", "message": ((config.get("instructions") or "") + "\n\n").lstrip() + SYNTHESIS_PROMPT},
        {"role": "user", "message": "${workflow.variables.conversation}"}]}
    for key in ("temperature", "maxTokens"):
        if config.get(key) is not None:
            llm_input[key] = config[key]
    return [{"name": "LLM_CHAT_COMPLETE", "taskReferenceName": f"{r}_final", "type": "LLM_CHAT_COMPLETE",
             "inputParameters": llm_input}]


def _team_output(config: dict, r: str) -> dict:
    """``{result, finishReason}`` of a team with a synthesis: the synthesis, else the
    transcript."""
    if config.get("synthesize") is False:
        return {"result": "${workflow.variables.conversation}", "finishReason": "STOP"}
    return {"result": f"${{{r}_final.output.result}}", "finishReason": f"${{{r}_final.output.finishReason}}"}


def _compile_swarm(config: dict, parent_model, task_defs: dict) -> dict:
    """Strategy ``swarm`` (Conductor's compileSwarm): the team's own agent (its model,
    instructions and tools; index 0) and its sub-agents (1, 2, ...) pass the conversation
    to each other. Each one's turn is its own loop (``_compile_loop``) as a SUB_WORKFLOW
    ``{ref}_agent_{i}_{agent}`` on the transcript, with a tool
    ``{agent}_transfer_to_{peer}`` (argument ``message``) for each peer
    ``allowedTransitions`` allows (all when it is not given); ``{ref}_concat_{i}`` adds
    its answer and ``[agent -> peer]: message`` to the transcript. ``{ref}_handoff_check``
    (INLINE) makes the peer the active agent (variable ``active_agent``) and the loop goes
    on; a turn without a transfer ends it (as do ``maxTurns``, 25, and ``/stop``). Then
    ``{ref}_final`` (unless ``synthesize`` is false). Output ``{result, finishReason}``."""
    model = config.get("model") or parent_model
    r = to_ref(config["name"])
    own = {k: config[k] for k in ("name", "model", "instructions", "description", "tools", "temperature", "maxTokens")
           if config.get(k) is not None}
    team = [own, *config["agents"]]
    names = [agent["name"] for agent in team]
    transitions = config.get("allowedTransitions")
    cases = {}
    for i, agent in enumerate(team):
        peers = [p for p in names if p != agent["name"]
                 and (transitions is None or p in (transitions.get(agent["name"]) or []))]
        sub_def = _compile_loop(agent, model, task_defs, {f"{agent['name']}_transfer_to_{p}": p for p in peers})
        ref, concat, setter = f"{r}_agent_{i}_{to_ref(agent['name'])}", f"{r}_concat_{i}", f"{r}_set_{i}"
        cases[str(i)] = [
            _sub_workflow_task(ref, sub_def, "${workflow.variables.conversation}"),
            {"name": concat, "taskReferenceName": concat, "type": "INLINE", "inputParameters": {
                "evaluatorType": "javascript", "expression": SWARM_CONCAT_SCRIPT, "agent": agent["name"],
                "prev": "${workflow.variables.conversation}", "response": f"${{{ref}.output.result}}",
                **{key: f"${{{ref}.output.{key}}}" for key in ("is_transfer", "transfer_to", "transfer_message")}}},
            {"name": setter, "taskReferenceName": setter, "type": "SET_VARIABLE", "inputParameters": {
                "conversation": f"${{{concat}.output.result}}", "is_transfer": f"${{{ref}.output.is_transfer}}",
                "transfer_to": f"${{{ref}.output.transfer_to}}"}}]
    check = f"{r}_handoff_check"
    body = [
        {"name": f"{r}_switch", "taskReferenceName": f"{r}_switch", "type": "SWITCH", "evaluatorType": "value-param",
         "expression": "switchCaseValue", "inputParameters": {"switchCaseValue": "${workflow.variables.active_agent}"},
         "decisionCases": cases, "defaultCase": []},
        {"name": check, "taskReferenceName": check, "type": "INLINE", "inputParameters": {
            "evaluatorType": "javascript", "expression": SWARM_RESOLVE_SCRIPT,
            "indexes": {name: str(i) for i, name in enumerate(names)}, "active": "${workflow.variables.active_agent}",
            "is_transfer": "${workflow.variables.is_transfer}", "transfer_to": "${workflow.variables.transfer_to}"}},
        {"name": f"{r}_update_active", "taskReferenceName": f"{r}_update_active", "type": "SET_VARIABLE",
         "inputParameters": {"active_agent": f"${{{check}.output.result.active_agent}}"}},
    ]
    init = _conversation_init(config, r, {"active_agent": "0", "is_transfer": False, "transfer_to": ""})
    stops, stop_cond = conversation_stops(config, r, task_defs)
    loop = _team_loop(r, int(config.get("maxTurns") or MAX_TURNS_DEFAULT), body + stops,
                      [f"$.{check}['result'].handoff == true", *stop_cond])
    return _workflow(config, [init, loop, *_synthesis(config, model, r)], _team_output(config, r))


def _compile_rotation(config: dict, parent_model, task_defs: dict) -> dict:
    """Strategies ``round_robin`` and ``random`` (Conductor's compileRotation): a loop of
    ``maxTurns`` turns (25 by default) in which ``{ref}_select`` (INLINE) picks a sub-agent
    by its index, in definition order (``round_robin``, the first agent first) or at
    random, among those ``allowedTransitions`` lets follow the last one (kept in the
    variable ``last_agent``); ``{ref}_switch`` runs its turn (``{ref}_agent_{i}_{agent}``,
    ``_turn_tasks``) on the transcript. ``stopWhen`` (a worker, input ``{result:
    transcript, iteration}``) and ``termination`` (INLINE, on the transcript) may end it
    earlier, as ``/stop`` does. Output ``{result: the transcript, finishReason}``."""
    model = config.get("model") or parent_model
    r = to_ref(config["name"])
    agents, loop_ref = config["agents"], f"{r}_loop"
    transitions = config.get("allowedTransitions")
    index = {sub["name"]: i for i, sub in enumerate(agents)}
    follow = None if transitions is None else {str(index[a]): [index[b] for b in nxt] for a, nxt in transitions.items()}
    select = {"name": f"{r}_select", "taskReferenceName": f"{r}_select", "type": "INLINE", "inputParameters": {
        "evaluatorType": "javascript", "expression": RANDOM_SCRIPT if config["strategy"] == "random" else ROUND_ROBIN_SCRIPT,
        "count": len(agents), "iteration": f"${{{loop_ref}.output.iteration}}", "allowed": follow or {},
        "last": "${workflow.variables.last_agent}" if follow is not None else ""}}
    cases = {}
    for i, sub in enumerate(agents):
        ref = f"{r}_agent_{i}_{to_ref(sub['name'])}"
        cases[str(i)] = _turn_tasks(r, ref, "", i, _compile(sub, model, task_defs), sub["name"],
                                    {"last_agent": str(i)} if follow is not None else None)
    body = [select, {"name": f"{r}_switch", "taskReferenceName": f"{r}_switch", "type": "SWITCH",
                     "evaluatorType": "value-param", "expression": "switchCaseValue",
                     "inputParameters": {"switchCaseValue": f"${{{r}_select.output.result}}"},
                     "decisionCases": cases, "defaultCase": []}]
    stops, cond = conversation_stops(config, r, task_defs)
    init = _conversation_init(config, r, {"last_agent": ""} if follow is not None else None)
    tasks = [init, _team_loop(r, int(config.get("maxTurns") or MAX_TURNS_DEFAULT), body + stops, cond)]
    return _workflow(config, tasks, {"result": "${workflow.variables.conversation}", "finishReason": "STOP"})


def conversation_stops(config: dict, r: str, task_defs: dict) -> tuple[list, list]:
    """A team loop's ``stopWhen`` and ``termination`` read on the transcript (Conductor's
    compileStopWhenForConversation / compileTerminationForConversation): ``(tasks, loop
    conditions)``; ``{ref}_stop_when`` is the worker (input ``{result: transcript,
    iteration}``, its TaskDef added to ``task_defs``), ``{ref}_termination`` the INLINE."""
    loop_ref, tasks, cond = f"{r}_loop", [], []
    if config.get("stopWhen"):
        sw = config["stopWhen"]["taskName"]
        _task_def(sw, task_defs)
        tasks.append({"name": sw, "taskReferenceName": f"{r}_stop_when", "type": "SIMPLE", "inputParameters": {
            "result": "${workflow.variables.conversation}", "iteration": f"${{{loop_ref}.output.iteration}}"}})
        cond.append(f"$.{r}_stop_when['should_continue'] == true")
    if config.get("termination"):
        tasks.append({"name": f"{r}_termination", "taskReferenceName": f"{r}_termination", "type": "INLINE",
                      "inputParameters": {"evaluatorType": "javascript",
                                          "expression": termination_script(config["termination"]),
                                          "result": "${workflow.variables.conversation}",
                                          "iteration": f"${{{loop_ref}.output.iteration}}"}})
        cond.append(f"$.{r}_termination['result'] == true")
    return tasks, cond


AGGREGATE_SCRIPT = (
    "(function () { var sub = {}, parts = []; for (var i = 0; i < $.agents.length; i++) {"
    " var name = $.agents[i], v = ($.results || {})[name];"
    " var text = (v === null || v === undefined) ? '' : (typeof v === 'string' ? v : JSON.stringify(v));"
    " sub[name] = text; if (text !== '') { parts.push('[' + name + ']: ' + text); } }"
    " return {result: parts.join('\\n\\n'), subResults: sub}; })();")

CONCAT_SCRIPT = (
    "(function () { var r = $.response; r = (r === null || r === undefined) ? '' :"
    " (typeof r === 'string' ? r : JSON.stringify(r)); return $.prev + '\\n\\n[' + $.agent + ']: ' + r; })();")

ANNOTATE_SCRIPT = (
    "(function () { return ($.decision === 'DONE') ? $.prev : $.prev + '\\n\\n[coordinator -> ' + $.decision + ']';"
    " })();")

# a swarm turn: its answer (none for a turn that only called tools) and its transfer
SWARM_CONCAT_SCRIPT = (
    "(function () { var r = $.response; r = (r === null || r === undefined) ? '' :"
    " (typeof r === 'string' ? r : JSON.stringify(r)); if (r === '[]' || r === '{}') { r = ''; }"
    " var out = $.prev; if (r !== '') { out = out + '\\n\\n[' + $.agent + ']: ' + r; }"
    " var to = ($.transfer_to === null || $.transfer_to === undefined) ? '' : String($.transfer_to);"
    " if (($.is_transfer === true || $.is_transfer === 'true') && to !== '') {"
    " var m = ($.transfer_message === null || $.transfer_message === undefined) ? '' : String($.transfer_message);"
    " out = out + '\\n\\n[' + $.agent + ' -> ' + to + ']' + (m !== '' ? ': ' + m : ''); } return out; })();")

# the next active agent of a swarm: the one transferred to, else the turn was the last
SWARM_RESOLVE_SCRIPT = (
    "(function () { var to = ($.transfer_to === null || $.transfer_to === undefined) ? '' : String($.transfer_to);"
    " if (($.is_transfer === true || $.is_transfer === 'true') && $.indexes[to] !== undefined) {"
    " return {handoff: true, active_agent: $.indexes[to]}; } return {handoff: false, active_agent: String($.active)};"
    " })();")

# a swarm agent's last turn: the transfer tool it called (the route), with its message
TRANSFER_SCRIPT = (
    "(function () { var c = $.toolCalls || []; for (var i = 0; i < c.length; i++) {"
    " var p = c[i].inputParameters || {}; var n = p.method || c[i].name;"
    " if (n === $.route && $.targets[n] !== undefined) { return {is_transfer: true, transfer_to: $.targets[n],"
    " transfer_message: (p.message === null || p.message === undefined) ? '' : String(p.message)}; } }"
    " return {is_transfer: false, transfer_to: '', transfer_message: ''}; })();")

# a router's answer -> a sub-agent's name or DONE: exact (case-insensitive, markup and
# quotes around it ignored), else the one sub-agent named in it as a whole word (longer
# names first, so "dev" does not match inside "backend_dev"), else DONE. No regular
# expression is built from a name.
NORMALIZE_SCRIPT = (
    "(function () { var agents = $.agents; var raw = ($.selected !== null && $.selected !== undefined"
    " && $.selected !== '') ? $.selected : $.raw; if (raw === null || raw === undefined) { return 'DONE'; }"
    " var word = function (c) { return /[A-Za-z0-9_]/.test(c); };"
    " var s = String(typeof raw === 'string' ? raw : JSON.stringify(raw)).trim(), a = 0, b = s.length;"
    " while (a < b && !word(s.charAt(a))) { a++; } while (b > a && !word(s.charAt(b - 1))) { b--; }"
    " var low = s.substring(a, b).toLowerCase(); if (low === '') { return 'DONE'; }"
    " for (var i = 0; i < agents.length; i++) { if (low === agents[i].toLowerCase()) { return agents[i]; } }"
    " if (low === 'done') { return 'DONE'; }"
    " var order = agents.slice().sort(function (x, y) { return y.length - x.length; }), found = [];"
    " for (var j = 0; j < order.length; j++) { var n = order[j].toLowerCase(), at = low.indexOf(n), hit = false;"
    " while (at >= 0) { var end = at + n.length;"
    " if ((at === 0 || !word(low.charAt(at - 1))) && (end >= low.length || !word(low.charAt(end)))) {"
    " hit = true; low = low.substring(0, at) + new Array(n.length + 1).join('#') + low.substring(end); }"
    " at = low.indexOf(n, at + 1); } if (hit) { found.push(order[j]); } }"
    " return found.length === 1 ? found[0] : 'DONE'; })();")

# the next agent's index as a string: among those allowed after the last one (all when
# none is listed), round robin by the loop's turn (1, 2, ...: the first agent first) ...
ROUND_ROBIN_SCRIPT = (
    "(function () { var c = $.allowed[String($.last)]; var n = c ? c.length : $.count;"
    " var k = (Number($.iteration || 1) - 1) % n; return String(c ? c[k] : k); })();")
# ... or at random
RANDOM_SCRIPT = (
    "(function () { var c = $.allowed[String($.last)]; var n = c ? c.length : $.count;"
    " var k = Math.floor(Math.random() * n); return String(c ? c[k] : k); })();")

ROUTER_PROMPT = (
    "You coordinate a team of agents and decide who works next.\n\nThe agents:\n{roster}\n"
    "Read the conversation so far. If a part of the user's request that one of these agents can handle has not "
    "been answered yet, reply with the name of the agent that should handle it (one of: {names}). When every "
    "such part has been answered, reply DONE.\n\nReply with one word: an agent's name or DONE.")

SYNTHESIS_PROMPT = (
    "The agents of your team answered the user above. Write the final answer to the user from their work, "
    "keeping every detail they gave (code, figures, recommendations); organize it, do not shorten it.")


CONTEXT_SCRIPT = (
    "(function () { var m = []; if ($.instructions) { m.push({role: 'system', message: $.instructions}); }"
    " if ($.memory) { for (var k = 0; k < $.memory.length; k++) { m.push($.memory[k]); } }"
    " if ($.signals) { m.push({role: 'system', message: '[SIGNALS]\\n' + $.signals + '\\n[/SIGNALS]'}); }"
    " var p = $.prompt; m.push({role: 'user', message: (typeof p === 'string') ? p : JSON.stringify(p)});"
    " return m; })();")

ROUTE_SCRIPT = (
    "(function () { var c = $.toolCalls; if (c && c.length > 0) {"
    " for (var i = 0; i < c.length; i++) { var n = (c[i].inputParameters && c[i].inputParameters.method) || c[i].name;"
    " if (typeof n === 'string' && $.targets.indexOf(n) >= 0) { return n; } }"
    " return 'tools'; } return 'final'; })();")

OUTPUT_SCRIPT = (
    "(function () { var h = $.handoffs || {}; for (var k in h) { if (h[k] !== null && h[k] !== undefined) {"
    " return h[k]; } } if ($.fixed !== null && $.fixed !== undefined && $.fixed !== '') { return $.fixed; }"
    " if ($.result === null || $.result === undefined) { return ''; } return $.result; })();")


def _tool_spec(tool: dict) -> dict:
    ttype = tool.get("toolType") or "worker"
    return {"name": tool["name"], "type": TOOL_TYPES.get(ttype) or agent_tools.task_type(ttype),
            "description": tool.get("description") or "",
            "inputSchema": tool.get("inputSchema") or {"type": "object", "properties": {}}}


def _compile_loop(config: dict, parent_model, task_defs: dict, transfers: dict | None = None) -> dict:
    """One agent's loop (the module docstring). ``transfers`` (``{tool name: agent}``,
    strategy ``swarm``): tools that hand the conversation to a peer; calling one ends the
    loop (``{ref}_transfer_check`` adds ``is_transfer``, ``transfer_to`` and
    ``transfer_message`` to the output) instead of running a sub-agent."""
    name = config["name"]
    r = to_ref(name)
    provider, model = parse_model(config.get("model") or parent_model)
    loop_ref, llm_ref, route_ref = f"{r}_loop", f"{r}_llm", f"{r}_route"
    tools = config.get("tools") or []
    specs = [_tool_spec(t) for t in tools if agent_tools.listed(t)]
    for t in tools:
        if (t.get("toolType") or "worker") == "worker":
            _task_def(t["name"], task_defs, t.get("timeoutSeconds"))
    subs = config.get("agents") or [] if config.get("strategy") == "handoff" else []
    handoff_cases, handoff_refs = {}, {}
    for sub in subs:
        target = f"transfer_to_{sub['name']}"
        specs.append({"name": target, "type": "SIMPLE",
                      "description": f"Hand the conversation to {sub['name']}: "
                                     f"{sub.get('description') or sub.get('instructions') or ''}"[:1000],
                      "inputSchema": {"type": "object", "properties": {}}})
        sub_def = _compile(sub, config.get("model") or parent_model, task_defs)
        ref = f"{r}_handoff_{to_ref(sub['name'])}"
        handoff_cases[target] = [_sub_workflow_task(ref, sub_def, "${workflow.input.prompt}")]
        handoff_refs[sub["name"]] = f"${{{ref}.output.result}}"
    for tool_name, peer in (transfers or {}).items():
        specs.append({"name": tool_name, "type": "SIMPLE",
                      "description": f"Transfer the conversation to {peer}. Call at most one transfer tool a turn.",
                      "inputSchema": {"type": "object", "required": ["message"], "properties": {"message": {
                          "type": "string", "description": f"What {peer} should do next, with what it needs to know."}}}})
        noop = f"{r}_transfer_{to_ref(peer)}"
        handoff_cases[tool_name] = [{"name": noop, "taskReferenceName": noop, "type": "NOOP"}]

    server_tools = agent_tools.ServerTools(r, tools, lambda sub: _compile(sub, config.get("model") or parent_model,
                                                                           task_defs))
    llm_input = {"llmProvider": provider, "model": model, "messages": f"${{{r}_context.output.result}}"}
    llm_tools = server_tools.llm_tools(specs)
    if llm_tools:
        llm_input["tools"] = llm_tools
    for key in ("temperature", "maxTokens"):
        if config.get(key) is not None:
            llm_input[key] = config[key]

    guards = guardrails.compile_output(config, r, f"${{{llm_ref}.output.result}}",
                                       f"${{{loop_ref}.output.iteration}}", config.get("model") or parent_model,
                                       task_defs)
    guard_tasks, fixed = guards.tasks, guards.fixed

    loop_tasks = [
        {"name": f"{r}_context", "taskReferenceName": f"{r}_context", "type": "INLINE", "inputParameters": {
            "evaluatorType": "javascript", "expression": CONTEXT_SCRIPT,
            "instructions": config.get("instructions") or ("You are a helpful assistant." if specs else ""),
            "signals": "${workflow.variables._signal_injection}", "prompt": "${workflow.input.prompt}"}},
        {"name": "LLM_CHAT_COMPLETE", "taskReferenceName": llm_ref, "type": "LLM_CHAT_COMPLETE",
         "inputParameters": llm_input},
        {"name": route_ref, "taskReferenceName": route_ref, "type": "INLINE", "inputParameters": {
            "evaluatorType": "javascript", "expression": ROUTE_SCRIPT, "toolCalls": f"${{{llm_ref}.output.toolCalls}}",
            "targets": list(handoff_cases)}},
        {"name": f"{r}_dispatch", "taskReferenceName": f"{r}_dispatch", "type": "SWITCH",
         "evaluatorType": "value-param", "expression": "route",
         "inputParameters": {"route": f"${{{route_ref}.output.result}}"},
         "decisionCases": {
             "tools": [{"name": "FORK_JOIN_DYNAMIC", "taskReferenceName": f"{r}_tools", "type": "FORK_JOIN_DYNAMIC",
                        "dynamicForkTasksParam": "dynamicTasks", "dynamicForkTasksInputParamName": "dynamicTasksInput",
                        "inputParameters": {"dynamicTasks": f"${{{llm_ref}.output.toolCalls}}",
                                            "dynamicTasksInput": {}}},
                       {"name": "JOIN", "taskReferenceName": f"{r}_tools_join", "type": "JOIN"}],
             "final": guard_tasks or [{"name": f"{r}_answer", "taskReferenceName": f"{r}_answer", "type": "NOOP"}],
             **handoff_cases},
         "defaultCase": []},
    ]
    tool_case = server_tools.call_tasks(llm_ref)
    if tool_case:  # server-side tools: each call made into its task first (apps.agents.tools)
        loop_tasks[-1]["decisionCases"]["tools"] = tool_case
    retry_refs = guards.retry_refs + guardrails.gate_tools(config, r, llm_ref, loop_ref, config.get("model") or parent_model,
                                                           loop_tasks[-1], task_defs)
    if retry_refs:
        llm_input["participants"] = {ref: "user" for ref in retry_refs}
    loop_inputs = {"_stop_requested": "${workflow.variables._stop_requested}"}
    cond = [f"$.{loop_ref}['iteration'] < {int(config.get('maxTurns') or MAX_TURNS_DEFAULT)}",
            "$._stop_requested != true"]
    # an answer cut at the token limit goes on in the next turn, as Conductor's AgentCompiler
    go_on = [f"$.{llm_ref}['finishReason'] == 'LENGTH'", f"$.{llm_ref}['finishReason'] == 'MAX_TOKENS'",
             f"$.{route_ref}['result'] == 'tools'"] + guards.go_on()
    cond.append("(" + " || ".join(go_on) + ")")
    if config.get("stopWhen"):
        sw = config["stopWhen"]["taskName"]
        _task_def(sw, task_defs)
        loop_tasks.append({"name": sw, "taskReferenceName": f"{r}_stop_when", "type": "SIMPLE", "inputParameters": {
            "result": f"${{{llm_ref}.output.result}}", "iteration": f"${{{loop_ref}.output.iteration}}"}})
        cond.append(f"$.{r}_stop_when['should_continue'] == true")
    if config.get("termination"):
        loop_tasks.append({"name": f"{r}_termination", "taskReferenceName": f"{r}_termination", "type": "INLINE",
                           "inputParameters": {"evaluatorType": "javascript",
                                               "expression": termination_script(config["termination"]),
                                               "result": f"${{{llm_ref}.output.result}}",
                                               "iteration": f"${{{loop_ref}.output.iteration}}",
                                               "tokens": f"${{{llm_ref}.output.tokenUsed}}",
                                               "promptTokens": f"${{{llm_ref}.output.promptTokens}}",
                                               "completionTokens": f"${{{llm_ref}.output.completionTokens}}"}})
        cond.append(f"$.{r}_termination['result'] == true")
    tasks = [
        {"name": f"{r}_init_state", "taskReferenceName": f"{r}_init_state", "type": "SET_VARIABLE",
         "inputParameters": {"_stop_requested": False, "_signal_injection": "", "_fixed_output": None}},
        *server_tools.pre_tasks,
        {"name": loop_ref, "taskReferenceName": loop_ref, "type": "DO_WHILE", "inputParameters": loop_inputs,
         "loopCondition": "if (" + " && ".join(cond) + ") { true; } else { false; }", "loopOver": loop_tasks},
        {"name": f"{r}_output", "taskReferenceName": f"{r}_output", "type": "INLINE", "inputParameters": {
            "evaluatorType": "javascript", "expression": OUTPUT_SCRIPT, "result": f"${{{llm_ref}.output.result}}",
            "fixed": fixed or "", "handoffs": handoff_refs}},
    ]
    output = {"result": f"${{{r}_output.output.result}}", "finishReason": f"${{{llm_ref}.output.finishReason}}"}
    if transfers:
        check = f"{r}_transfer_check"
        tasks.append({"name": check, "taskReferenceName": check, "type": "INLINE", "inputParameters": {
            "evaluatorType": "javascript", "expression": TRANSFER_SCRIPT, "targets": transfers,
            "route": f"${{{route_ref}.output.result}}", "toolCalls": f"${{{llm_ref}.output.toolCalls}}"}})
        output.update({key: f"${{{check}.output.result.{key}}}" for key in ("is_transfer", "transfer_to",
                                                                          "transfer_message")})
    options.extend_loop(config, r, tasks, task_defs, int(config.get('maxTurns') or MAX_TURNS_DEFAULT))
    return _workflow(config, tasks, output)


def termination_script(t: dict) -> str:
    """A JavaScript program answering true while the agent may go on (Conductor's
    TerminationCompiler: text_mention, stop_message, max_message, token_usage, and/or).
    ``$.result`` is the model's last answer, ``$.iteration`` the turn, ``$.tokens`` /
    ``$.promptTokens`` / ``$.completionTokens`` its token counts."""
    return "(function () { var text = ($.result === null || $.result === undefined) ? '' :" \
           " (typeof $.result === 'string' ? $.result : JSON.stringify($.result)); return " \
           + _term_expr(t) + "; })();"


def _term_expr(t: dict) -> str:
    kind = t.get("type")
    if kind == "text_mention":
        needle = json.dumps(str(t.get("text") or ""))
        if t.get("caseSensitive"):
            return f"(text.indexOf({needle}) < 0)"
        return f"(text.toLowerCase().indexOf({needle}.toLowerCase()) < 0)"
    if kind == "stop_message":
        return f"(text.trim() !== {json.dumps(str(t.get('stopMessage') or ''))})"
    if kind == "max_message":
        return f"(($.iteration || 0) * 2 < {int(t.get('maxMessages') or 0)})"
    if kind == "token_usage":
        parts = []
        for key, var in (("maxTotalTokens", "tokens"), ("maxPromptTokens", "promptTokens"),
                         ("maxCompletionTokens", "completionTokens")):
            if t.get(key) is not None:
                parts.append(f"(($.{var} || 0) < {int(t[key])})")
        return "(" + (" && ".join(parts) or "true") + ")"
    # "and" stops when every condition says stop, so it goes on while any goes on;
    # "or" stops when one says stop, so it goes on while all go on
    inner = [_term_expr(c) for c in t.get("conditions") or []] or ["true"]
    return "(" + (" || " if kind == "and" else " && ").join(inner) + ")"


# the building blocks apps.agents.strategies compiles its teams with
compile_config = _compile
sub_agent_task = _sub_workflow_task
sub_agent_turn = _turn_tasks
team_loop = _team_loop
conversation_init = _conversation_init
workflow = _workflow
add_task_def = _task_def
refuse_token_usage = _refuse_token_usage
