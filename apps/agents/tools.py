"""The server-side tool types of an agent: how the agent compiler (``apps.agents.compiler``)
turns the SDK's ``http_tool``, ``mcp_tool``, ``agent_tool``, ``wait_for_message_tool``,
``index_tool`` and ``search_tool`` into tasks of the agent loop, as Conductor's
``ToolCompiler`` and its ``enrichToolsScript`` do (``agentspan/.../compiler/``).

The model sees each tool as a ToolSpec ``{name, type, description, inputSchema}`` (``type``
Conductor's task type: HTTP, CALL_MCP_TOOL, SUB_WORKFLOW, PULL_WORKFLOW_MESSAGES,
LLM_INDEX_TEXT, LLM_SEARCH_INDEX). When it asks for tools, ``{ref}_enrich_tools`` (INLINE)
turns each of its calls into the task that runs it, with the configuration baked in at
compile time, and the FORK_JOIN_DYNAMIC ``{ref}_tools`` runs them at once:

* ``http`` (``config {url, method, headers, accept, contentType}``): an HTTP task; the
  model's arguments are the JSON body, or the query string for GET, HEAD, DELETE and
  OPTIONS. Output (what the model reads back): ``{response: {body, headers, statusCode,
  reasonPhrase}}``.
* ``mcp`` (``config {server_url, headers, tool_names, max_tools}``): the server's tools are
  discovered in the run, before the loop, as Conductor does: one LIST_MCP_TOOLS
  ``{ref}_list_mcp_{i}`` a server, then ``{ref}_mcp_prepare`` (INLINE) makes each tool a
  ToolSpec (only those of ``tool_names`` when it is given; a name already taken keeps its
  first owner) beside the agent's other tools and maps it to its server. A call is a
  CALL_MCP_TOOL ``{mcpServer, method, arguments, headers}``; output ``{content, isError}``.
* ``agent_tool`` (``config {agentConfig, retryCount, retryDelaySeconds, optional}``): the
  agent compiled as any agent and run as a SUB_WORKFLOW on the request
  (``request``/``prompt``/``message``/``input``/``query``, else the first text argument,
  else the user's prompt); its definition is inline (kept once in the variable
  ``_agent_tool_defs`` by ``{ref}_agent_tools``), not registered. Output: the sub-agent's
  ``{result, finishReason}``. Retried twice 2 s apart and optional unless configured.
* ``pull_workflow_messages`` (``config {batchSize, blocking}``): PULL_WORKFLOW_MESSAGES on
  the run's message queue; output ``{messages, count}``.
* ``rag_index`` / ``rag_search`` (``config {vectorDB, index, namespace,
  embeddingModelProvider, embeddingModel, maxResults, dimensions...}``): LLM_INDEX_TEXT /
  LLM_SEARCH_INDEX with the model's arguments (``text``, ``docId``, ``metadata`` /
  ``query``) under the configured ones (the model cannot pick another index).

A ``worker`` or ``human`` tool call goes through unchanged, and a call of a tool the agent
does not have becomes an INLINE answering ``{error, is_error: true}`` (Conductor's
"Unknown tool" guard) instead of a task no worker polls. Every tool task but a HUMAN and a
pull is ``optional`` (a failed call is an answer the model reads, as Conductor's).

Rules the tasks keep: an MCP server's origin must be in ``CONDUCTOR_AI_ALLOWED_ORIGINS``
(LIST_MCP_TOOLS and CALL_MCP_TOOL check it when they run); a header written ``${NAME}``
(the SDK's credential placeholder) becomes ``${workflow.secrets.NAME}``, which the HTTP and
MCP tasks resolve only for their call (only in the header: the definition writes it there)
and mask in what they store. What the model writes never names a secret: the enrich script
escapes ``${`` in the model's arguments (``$${``), so they reach the task as the literal
text and ``apps.metadata.secrets`` neither counts nor resolves them.

Media tools (``generate_image``, ``generate_audio``, ``generate_video``,
``generate_pdf``) and ``api`` (OpenAPI discovery, Conductor's LIST_API_TOOLS) are refused:
this server has none of those system tasks.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from urllib.parse import urlsplit

# the SDK's tool type -> the task type a call runs as (Conductor's ToolCompiler.TYPE_MAP)
SERVER_TOOL_TYPES = {"http": "HTTP", "mcp": "CALL_MCP_TOOL", "agent_tool": "SUB_WORKFLOW",
                     "pull_workflow_messages": "PULL_WORKFLOW_MESSAGES", "rag_index": "LLM_INDEX_TEXT",
                     "rag_search": "LLM_SEARCH_INDEX"}
MEDIA_TOOL_TYPES = ("generate_image", "generate_audio", "generate_video", "generate_pdf")
HTTP_METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS")
RAG_KEYS = ("vectorDB", "index", "embeddingModelProvider", "embeddingModel")
SUPPORTED = "worker, human, " + ", ".join(SERVER_TOOL_TYPES)
# the SDK's credential placeholder in a header: ${NAME}
CREDENTIAL = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_-]*(?:\.[A-Za-z0-9_.\-]+)?)\}")
TOOL_RETRIES = {"retryCount": 2, "retryLogic": "LINEAR_BACKOFF", "retryDelaySeconds": 2}


def refusal(tool_type) -> str:
    """The 400 message of a tool type this server does not compile."""
    if tool_type in MEDIA_TOOL_TYPES:
        return (f"toolType {tool_type!r} is not supported by this server: it has no {tool_type.upper()} "
                f"system task (media generation)")
    if tool_type == "api":
        return ("toolType 'api' is not supported by this server: it has no OpenAPI discovery "
                "(Conductor's LIST_API_TOOLS); declare each endpoint with http_tool")
    return f"toolType {tool_type!r} is not supported by this server (supported: {SUPPORTED})"


def _http_url(value) -> bool:
    return isinstance(value, str) and urlsplit(value).scheme in ("http", "https") and bool(urlsplit(value).hostname)


def _whole(value, least: int = 0) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= least


def _headers_ok(value) -> bool:
    return value is None or (isinstance(value, dict) and all(isinstance(v, (str, int, float)) for v in value.values()))


def validate_tool(tool: dict, path: str, errors, validate_agent: Callable[[dict, str], None]) -> None:
    """The configuration problems of one server-side tool (``tool['toolType']`` in
    ``SERVER_TOOL_TYPES``), each added to ``errors`` (``errors.add(path, message,
    value)``) naming its field (``agentConfig.tools[0].config.url``). ``validate_agent``
    validates an ``agent_tool``'s agent (sub-agent path given)."""
    ttype = tool["toolType"]
    config = tool.get("config")
    if not isinstance(config, dict):
        errors.add(f"{path}.config", f"a {ttype} tool needs its config object", config)
        return
    cpath = f"{path}.config"
    if ttype == "http":
        if not _http_url(config.get("url")):
            errors.add(f"{cpath}.url", "url must be an http(s) URL", config.get("url"))
        method = config.get("method") or "GET"
        if not isinstance(method, str) or method.upper() not in HTTP_METHODS:
            errors.add(f"{cpath}.method", f"method must be one of {', '.join(HTTP_METHODS)}", method)
        accept = config.get("accept")
        if accept is not None and not isinstance(accept, str) and not (
                isinstance(accept, list) and all(isinstance(a, str) for a in accept)):
            errors.add(f"{cpath}.accept", "accept must be a media type or a list of them", accept)
        if config.get("contentType") is not None and not isinstance(config["contentType"], str):
            errors.add(f"{cpath}.contentType", "contentType must be a media type", config["contentType"])
    elif ttype == "mcp":
        if not _http_url(config.get("server_url")):
            errors.add(f"{cpath}.server_url", "server_url must be the MCP server's http(s) URL",
                       config.get("server_url"))
        names = config.get("tool_names")
        if names is not None and not (isinstance(names, list) and all(isinstance(n, str) for n in names)):
            errors.add(f"{cpath}.tool_names", "tool_names must be a list of tool names", names)
    elif ttype == "agent_tool":
        sub = config.get("agentConfig")
        if not isinstance(sub, dict):
            errors.add(f"{cpath}.agentConfig", "an agent_tool needs the agent's configuration", sub)
        else:
            validate_agent(sub, f"{cpath}.agentConfig")
        for key in ("retryCount", "retryDelaySeconds"):
            if config.get(key) is not None and not _whole(config[key]):
                errors.add(f"{cpath}.{key}", f"{key} must be a non-negative integer", config[key])
        if config.get("optional") is not None and not isinstance(config["optional"], bool):
            errors.add(f"{cpath}.optional", "optional must be true or false", config["optional"])
    elif ttype == "pull_workflow_messages":
        if config.get("batchSize") is not None and not _whole(config["batchSize"], 1):
            errors.add(f"{cpath}.batchSize", "batchSize must be a positive integer", config["batchSize"])
        if config.get("blocking") is not None and not isinstance(config["blocking"], bool):
            errors.add(f"{cpath}.blocking", "blocking must be true or false", config["blocking"])
    else:  # rag_index, rag_search
        for key in RAG_KEYS:
            if not isinstance(config.get(key), str) or not config[key]:
                errors.add(f"{cpath}.{key}", f"a {ttype} tool needs {key}", config.get(key))
        if config.get("taskType") not in (None, SERVER_TOOL_TYPES[ttype]):
            errors.add(f"{cpath}.taskType", f"a {ttype} tool runs as {SERVER_TOOL_TYPES[ttype]}", config["taskType"])
        for key in ("maxResults", "dimensions", "chunkSize", "chunkOverlap"):
            if config.get(key) is not None and not _whole(config[key], 1 if key != "chunkOverlap" else 0):
                errors.add(f"{cpath}.{key}", f"{key} must be a positive integer", config[key])
    if not _headers_ok(config.get("headers")):
        errors.add(f"{cpath}.headers", "headers must map a header name to its value", config.get("headers"))


def secret_headers(headers) -> dict:
    """The SDK's ``${NAME}`` credential placeholders of a headers map as
    ``${workflow.secrets.NAME}`` (Conductor's secret references); other values as they
    are. ``{"Authorization": "Bearer ${TOKEN}"}`` -> ``{"Authorization": "Bearer
    ${workflow.secrets.TOKEN}"}``."""
    out = {}
    for key, value in (headers or {}).items():
        text = str(value)
        out[str(key)] = CREDENTIAL.sub(
            lambda m: m.group(0) if m.group(1).startswith("workflow.") else "${workflow.secrets." + m.group(1) + "}",
            text)
    return out


def escape(value):
    """A JSON value whose strings read the same after the engine resolves a task's input:
    ``${`` written ``$${`` (the escape of Conductor's ParametersUtils). What a compiled
    script receives this way is the configuration as compiled, not evaluated in the
    parent's context (a sub-agent's ``${workflow.input.prompt}`` stays its own)."""
    if isinstance(value, str):
        return value.replace("${", "$${")
    if isinstance(value, list):
        return [escape(v) for v in value]
    if isinstance(value, dict):
        return {k: escape(v) for k, v in value.items()}
    return value


def listed(tool: dict) -> bool:
    """Whether a tool is one ToolSpec of its own (an ``mcp`` tool is the server's tools,
    known when the run discovers them)."""
    return (tool.get("toolType") or "worker") != "mcp"


def task_type(tool_type: str) -> str:
    """The task type a call of a server-side tool runs as (the ToolSpec's ``type``)."""
    return SERVER_TOOL_TYPES[tool_type]


class ServerTools:
    """The server-side tools of one agent loop (``_compile_loop``): ``llm_tools(specs)``
    gives the LLM task its ``tools`` (and builds the MCP discovery), ``pre_tasks`` run
    before the loop, ``call_tasks(llm_ref)`` are the ``tools`` case of the loop's
    dispatch (None when the agent has only worker and human tools: the loop keeps its
    plain FORK_JOIN_DYNAMIC). ``compile_agent(config) -> WorkflowDef`` compiles an
    ``agent_tool``'s agent."""

    def __init__(self, r: str, tools: list, compile_agent: Callable[[dict], dict]):
        self.r = r
        self.tools = [t for t in tools if isinstance(t, dict)]
        self.server = [t for t in self.tools if (t.get("toolType") or "worker") in SERVER_TOOL_TYPES]
        self.mcp = [t for t in self.server if t["toolType"] == "mcp"]
        self.compile_agent = compile_agent
        self.pre_tasks: list[dict] = []
        self.mcp_config: object = {}

    def llm_tools(self, specs: list[dict]):
        """The LLM task's ``tools``: ``specs`` as they are, or, with MCP tools, the
        reference to ``{ref}_mcp_prepare``'s merged list (the discovery tasks are added to
        ``pre_tasks``). None when there is no tool at all."""
        if not self.mcp:
            return specs or None
        servers: dict[str, dict] = {}
        for tool in self.mcp:  # one discovery a server; its tools: those any mcp_tool names, or all
            cfg = tool["config"]
            entry = servers.setdefault(cfg["server_url"], {"mcpServer": cfg["server_url"], "toolNames": [],
                                                           "headers": secret_headers(cfg.get("headers"))})
            names = cfg.get("tool_names")
            entry["toolNames"] = None if names is None or entry["toolNames"] is None \
                else sorted(set(entry["toolNames"]) | set(names))
        prepare = f"{self.r}_mcp_prepare"
        inputs = {"evaluatorType": "javascript", "expression": MCP_PREPARE_SCRIPT, "static": escape(specs),
                  "servers": escape(list(servers.values()))}
        for i, server in enumerate(servers.values()):
            ref = f"{self.r}_list_mcp_{i}"
            list_input = {"mcpServer": server["mcpServer"]}
            if server["headers"]:
                list_input["headers"] = server["headers"]
            self.pre_tasks.append({"name": "LIST_MCP_TOOLS", "taskReferenceName": ref, "type": "LIST_MCP_TOOLS",
                                   "inputParameters": list_input})
            inputs[f"discovered_{i}"] = f"${{{ref}.output.tools}}"
        self.pre_tasks.append({"name": prepare, "taskReferenceName": prepare, "type": "INLINE",
                               "inputParameters": inputs})
        self.mcp_config = f"${{{prepare}.output.result.mcpConfig}}"
        return f"${{{prepare}.output.result.tools}}"

    def call_tasks(self, llm_ref: str) -> list[dict] | None:
        """``{ref}_enrich_tools`` (INLINE: each tool call -> the task that runs it) and the
        FORK_JOIN_DYNAMIC ``{ref}_tools`` + JOIN ``{ref}_tools_join`` running them; None
        without server-side tools."""
        if not self.server:
            return None
        r = self.r
        http, agents, rag, wmq, defs = {}, {}, {}, {}, {}
        for tool in self.server:
            name, ttype, cfg = tool["name"], tool["toolType"], tool["config"]
            if ttype == "http":
                http[name] = {"url": cfg["url"], "method": (cfg.get("method") or "GET").upper(),
                              "headers": secret_headers(cfg.get("headers")),
                              "accept": cfg.get("accept") or "application/json",
                              "contentType": cfg.get("contentType") or "application/json"}
            elif ttype == "agent_tool":
                sub_def = self.compile_agent(cfg["agentConfig"])
                sub_def = {**sub_def, "metadata": {"agent_sdk": "conductor", "classifier": "agent"}}
                key = f"t{len(defs)}"
                defs[key] = sub_def
                agents[name] = {"name": sub_def["name"], "definition": f"${{workflow.variables._agent_tool_defs.{key}}}",
                                "retryCount": cfg.get("retryCount", TOOL_RETRIES["retryCount"]),
                                "retryDelaySeconds": cfg.get("retryDelaySeconds", TOOL_RETRIES["retryDelaySeconds"]),
                                "optional": cfg.get("optional", True)}
            elif ttype == "pull_workflow_messages":
                wmq[name] = {"batchSize": cfg.get("batchSize") or 1, "blocking": cfg.get("blocking", True)}
            elif ttype in ("rag_index", "rag_search"):
                rag[name] = {"taskType": SERVER_TOOL_TYPES[ttype],
                             "config": {k: v for k, v in cfg.items() if k not in ("taskType", "credentials")}}
        if defs:
            self.pre_tasks.append({"name": f"{r}_agent_tools", "taskReferenceName": f"{r}_agent_tools",
                                   "type": "SET_VARIABLE", "inputParameters": {"_agent_tool_defs": escape(defs)}})
        known = [t["name"] for t in self.tools if (t.get("toolType") or "worker") in ("worker", "human")]
        enrich = f"{r}_enrich_tools"
        return [
            {"name": enrich, "taskReferenceName": enrich, "type": "INLINE", "inputParameters": {
                "evaluatorType": "javascript", "expression": ENRICH_SCRIPT,
                "toolCalls": f"${{{llm_ref}.output.toolCalls}}", "prompt": "${workflow.input.prompt}",
                "sessionId": "${workflow.input.session_id}", "known": escape(known), "http": escape(http),
                "mcp": self.mcp_config, "agents": escape(agents), "rag": escape(rag), "wmq": escape(wmq),
                "retries": TOOL_RETRIES}},
            {"name": "FORK_JOIN_DYNAMIC", "taskReferenceName": f"{r}_tools", "type": "FORK_JOIN_DYNAMIC",
             "dynamicForkTasksParam": "dynamicTasks", "dynamicForkTasksInputParamName": "dynamicTasksInput",
             "inputParameters": {"dynamicTasks": f"${{{enrich}.output.result}}", "dynamicTasksInput": {}}},
            {"name": "JOIN", "taskReferenceName": f"{r}_tools_join", "type": "JOIN"},
        ]


# MCP discovery: the agent's other ToolSpecs, then each server's tools (within its
# toolNames) as CALL_MCP_TOOL specs; mcpConfig maps each discovered name to its server
MCP_PREPARE_SCRIPT = (
    "(function () { var specs = ($.static || []).slice(), taken = {}, cfg = {};"
    " for (var s = 0; s < specs.length; s++) { taken[specs[s].name] = true; }"
    " var servers = $.servers || [];"
    " for (var i = 0; i < servers.length; i++) { var found = $['discovered_' + i] || [], only = servers[i].toolNames;"
    " for (var j = 0; j < found.length; j++) { var t = found[j]; if (!t || typeof t.name !== 'string' || taken[t.name]) {"
    " continue; } if (only && only.indexOf(t.name) < 0) { continue; } taken[t.name] = true;"
    " specs.push({name: t.name, type: 'CALL_MCP_TOOL', description: t.description || '',"
    " inputSchema: t.inputSchema || {type: 'object', properties: {}}});"
    " cfg[t.name] = {mcpServer: servers[i].mcpServer, headers: servers[i].headers || {}}; } }"
    " return {tools: specs, mcpConfig: cfg}; })();")

# each tool call of the model -> the task that runs it (Conductor's enrichToolsScript)
ENRICH_SCRIPT = (
    "(function () {"
    " var open = '$' + '{';"  # never written whole: the engine would read it as an expression
    " var esc = function (v) { if (typeof v === 'string') { return v.split(open).join('$' + open); }"
    " if (Array.isArray(v)) { return v.map(esc); } if (v !== null && typeof v === 'object') { var o = {};"
    " for (var k in v) { o[k] = esc(v[k]); } return o; } return v; };"
    " var http = $.http || {}, mcp = $.mcp || {}, agents = $.agents || {}, rag = $.rag || {}, wmq = $.wmq || {};"
    " var known = $.known || [], calls = $.toolCalls || [], out = [];"
    " var retry = function (t, r) { t.retryCount = r.retryCount; t.retryLogic = 'LINEAR_BACKOFF';"
    " t.retryDelaySeconds = r.retryDelaySeconds; return t; };"
    " for (var i = 0; i < calls.length; i++) { var tc = calls[i] || {}, p = tc.inputParameters || {};"
    " var n = (typeof p.method === 'string' && p.method) || tc.name, ref = tc.taskReferenceName || (n + '_' + i);"
    " var args = {}; for (var a in p) { if (a !== 'method') { args[a] = esc(p[a]); } } var t;"
    " if (http[n]) { var h = http[n], uri = h.url, bodyless = ['GET', 'HEAD', 'DELETE', 'OPTIONS'].indexOf(h.method) >= 0;"
    " var req = {uri: uri, method: h.method, headers: h.headers || {}, accept: h.accept, contentType: h.contentType,"
    " connectionTimeOut: 30000, readTimeOut: 30000};"
    " if (bodyless) { var qs = []; for (var q in args) { var v = args[q]; if (v === null || v === undefined || v === '') {"
    " continue; } var vs = Array.isArray(v) ? v : [v]; for (var x = 0; x < vs.length; x++) {"
    " qs.push(encodeURIComponent(q) + '=' + encodeURIComponent(typeof vs[x] === 'object' ? JSON.stringify(vs[x])"
    " : String(vs[x]))); } } if (qs.length) { req.uri = uri + (uri.indexOf('?') >= 0 ? '&' : '?') + qs.join('&'); } }"
    " else { req.body = args; }"
    " t = retry({name: n, taskReferenceName: ref, type: 'HTTP', optional: true, inputParameters: {http_request: req}},"
    " $.retries); }"
    " else if (mcp[n]) { t = retry({name: 'call_mcp_tool', taskReferenceName: ref, type: 'CALL_MCP_TOOL', optional: true,"
    " inputParameters: {mcpServer: mcp[n].mcpServer, method: n, arguments: args, headers: mcp[n].headers || {}}},"
    " $.retries); }"
    " else if (agents[n]) { var g = agents[n], req2 = '';"
    " var keys = ['request', 'prompt', 'message', 'input', 'query'];"
    " for (var k2 = 0; k2 < keys.length && !req2; k2++) { if (typeof args[keys[k2]] === 'string') { req2 = args[keys[k2]]; } }"
    " if (!req2) { for (var k3 in args) { if (typeof args[k3] === 'string' && args[k3]) { req2 = args[k3]; break; } } }"
    " if (!req2) { req2 = esc($.prompt || ''); }"
    " t = {name: g.name, taskReferenceName: ref, type: 'SUB_WORKFLOW', optional: g.optional,"
    " retryCount: g.retryCount, retryLogic: 'LINEAR_BACKOFF', retryDelaySeconds: g.retryDelaySeconds,"
    " subWorkflowParam: {name: g.name, version: 1, workflowDefinition: g.definition},"
    " inputParameters: {prompt: req2, session_id: esc($.sessionId || '')}}; }"
    " else if (rag[n]) { var m = {}; for (var a2 in args) { m[a2] = args[a2]; }"
    " for (var c in rag[n].config) { m[c] = rag[n].config[c]; }"
    " t = retry({name: rag[n].taskType.toLowerCase(), taskReferenceName: ref, type: rag[n].taskType, optional: true,"
    " inputParameters: m}, $.retries); }"
    " else if (wmq[n]) { t = {name: n, taskReferenceName: ref, type: 'PULL_WORKFLOW_MESSAGES', retryCount: 0,"
    " inputParameters: {batchSize: wmq[n].batchSize, blocking: wmq[n].blocking}}; }"
    " else if (known.indexOf(n) >= 0) { t = {}; for (var f in tc) { t[f] = tc[f]; } t.inputParameters = esc(p);"
    " out.push(t); continue; }"
    " else { t = {name: 'unknown_tool', taskReferenceName: ref, type: 'INLINE', optional: true, inputParameters: {"
    " evaluatorType: 'javascript', expression: '(function () { return {error: $.errorMessage, is_error: true}; })();',"
    " errorMessage: esc('Unknown tool \\'' + n + '\\'. Available tools: '"
    " + known.concat(Object.keys(http), Object.keys(mcp), Object.keys(agents), Object.keys(rag), Object.keys(wmq))"
    ".join(', '))}}; }"
    " t.inputParameters._agent_tool_name = esc(n); out.push(t); }"
    " return out; })();")

