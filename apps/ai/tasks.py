"""The work of each AI system task, run by the django-q2 cluster (``TaskType.run_async``)
with no lock or transaction held. Each function takes the task's resolved input (a dict,
Conductor's input names) and returns a TaskResult-like dict
``{status, outputData, reasonForIncompletion?}``.

Inputs and outputs mirror Conductor OSS's ``ai`` module (``LLMWorkers``,
``VectorDBWorkers``, ``MCPWorkers``):

* ``LLM_CHAT_COMPLETE``: ``llmProvider``, ``model``, ``messages`` ``[{role, message,
  toolCalls?}]``, ``instructions`` (a system message put first), ``userInput`` (the user
  message when ``messages`` is empty), ``promptVariables`` (``${name}`` placeholders in
  instructions and messages), ``tools``, ``jsonOutput``, ``temperature``, ``topP``,
  ``maxTokens``, ``stopWords``. Output ``LLMResponse``: ``result`` (the text, or the
  object when the text is a JSON object), ``finishReason``, ``toolCalls``,
  ``tokenUsed``, ``promptTokens``, ``completionTokens``, ``media``.
* ``LLM_TEXT_COMPLETE``: ``prompt`` (or ``promptName``, taken as the prompt text as
  Conductor OSS does) with ``promptVariables``; same output.
* ``LLM_GENERATE_EMBEDDINGS``: ``llmProvider``, ``model``, ``text``, ``dimensions`` ->
  ``result`` (list of floats).
* ``LLM_INDEX_TEXT``: ``vectorDB``, ``index``, ``namespace`` (default ``docId``),
  ``docId``, ``text``, ``metadata``, ``embeddingModelProvider``, ``embeddingModel``.
* ``LLM_STORE_EMBEDDINGS``: ``vectorDB``, ``index``, ``namespace``, ``embeddings``,
  ``id`` (default a new UUID), ``metadata`` -> ``result`` (rows stored).
* ``LLM_SEARCH_INDEX`` (``query`` embedded first) / ``LLM_SEARCH_EMBEDDINGS``
  (``embeddings``) / ``LLM_GET_EMBEDDINGS`` (deprecated alias): ``maxResults``
  (default 1, as Conductor's LLMWorkerInput) -> ``result`` ``[{docId, parentDocId,
  text, score, metadata}]`` best first (cosine similarity).
* ``LIST_MCP_TOOLS``: ``mcpServer``, ``headers`` -> ``tools``.
* ``CALL_MCP_TOOL``: ``mcpServer``, ``method``, ``arguments`` (or, without it, every
  other input key), ``headers`` -> ``content``, ``isError``.

Failures: an ``AIError`` becomes FAILED (retried per the TaskDef) or, when terminal,
FAILED_WITH_TERMINAL_ERROR, with the error as ``reasonForIncompletion``.
"""
from __future__ import annotations

import json
import math
import re
import uuid

from apps.ai.providers import AIError, ChatRequest, get_provider
from apps.core.clock import now_ms

PLACEHOLDER = re.compile(r"\$\{(.*?)\}")
CONTROL_KEYS = {"mcpServer", "method", "headers", "arguments", "llmProvider", "model", "integrationName",
                "integrationNames", "asyncComplete", "_createdBy"}


def fill_prompt(text, variables: dict | None):
    """Replace ``${name}`` with ``variables[name]`` (strings and numbers as they are,
    anything else as JSON); unknown names stay (Conductor's StringTemplate.fString)."""
    if not isinstance(text, str) or not variables:
        return text

    def one(match):
        value = variables.get(match.group(1))
        if value is None:
            return match.group(0)
        if isinstance(value, (str, int, float)) and not isinstance(value, bool):
            return str(value)
        return json.dumps(value)

    return PLACEHOLDER.sub(one, text)


def _number(value, name: str, kind=float):
    if value is None or value == "":
        return None
    try:
        return kind(value)
    except (TypeError, ValueError):
        raise AIError(f"{name} must be a number, not {value!r}", terminal=True) from None


def _parse_result(text: str | None, json_output: bool):
    """Conductor's tryToConvertToJSON: a JSON object (optionally in a ```json fence)
    becomes an object; with ``jsonOutput`` anything else fails the task."""
    if text is None or text == "":
        return text
    candidate = text.strip()
    if candidate.startswith("```"):
        candidate = re.sub(r"^```[a-zA-Z]*\s*", "", candidate)
        candidate = re.sub(r"\s*```$", "", candidate)
    try:
        parsed = json.loads(candidate)
    except ValueError as exc:
        if json_output:
            raise AIError(json.dumps({"error": f"the model's answer is not JSON: {exc}", "response": text})) from None
        return text
    if isinstance(parsed, dict):
        return parsed
    if json_output:
        raise AIError(json.dumps({"error": "the model's answer is not a JSON object", "response": text}))
    return text


def _end_with_user(messages: list[dict]) -> list[dict]:
    """Conductor's ensureLastMessageIsFromUser: a trailing assistant message becomes a user
    message asking to continue it; after any other non-user message (system, tool_call,
    tool) a user message asks to continue."""
    if not messages or (messages[-1].get("role") or "user") == "user":
        return messages
    last = messages[-1]
    if last.get("role") == "assistant":
        text = last.get("message")
        prompt = (f"You were saying:\n\n{text}\n\nPlease continue where you left off."
                  if isinstance(text, str) and text.strip() else "Please continue where you left off.")
        return messages[:-1] + [{"role": "user", "message": prompt}]
    return messages + [{"role": "user", "message": "Please continue where you left off."}]


def _chat(inp: dict, messages: list[dict]) -> dict:
    messages = _end_with_user(messages)
    provider = get_provider(inp.get("llmProvider") or inp.get("integrationName"))
    model = inp.get("model")
    if not model:
        raise AIError("model is required", terminal=True)
    tools = [t for t in (inp.get("tools") or []) if isinstance(t, dict)]
    stop = inp.get("stopWords") or inp.get("stopSequences")
    json_output = bool(inp.get("jsonOutput"))
    request = ChatRequest(model=str(model), messages=messages, tools=tools, json_output=json_output,
                          max_tokens=_number(inp.get("maxTokens"), "maxTokens", int),
                          temperature=_number(inp.get("temperature"), "temperature"),
                          top_p=_number(inp.get("topP"), "topP"),
                          stop=list(stop) if isinstance(stop, list) else None)
    answer = provider.chat(request)
    output = {"result": _parse_result(answer.text, json_output and not answer.tool_calls), "media": [],
              "finishReason": answer.finish_reason, "tokenUsed": answer.total_tokens,
              "promptTokens": answer.prompt_tokens, "completionTokens": answer.completion_tokens}
    if answer.tool_calls:
        output["toolCalls"] = answer.tool_calls
    return output


def chat_complete(inp: dict) -> dict:
    variables = inp.get("promptVariables") if isinstance(inp.get("promptVariables"), dict) else {}
    raw = inp.get("messages") or []
    if not isinstance(raw, list):
        raise AIError("messages must be a list of {role, message}", terminal=True)
    messages = []
    for m in raw:
        if not isinstance(m, dict):
            raise AIError(f"each message must be an object with role and message, not {m!r}", terminal=True)
        m = dict(m)
        if m.get("message") is None and isinstance(m.get("content"), str):
            m["message"] = m["content"]
        m["message"] = fill_prompt(m.get("message"), variables)
        messages.append(m)
    if not messages and inp.get("userInput"):
        messages.append({"role": "user", "message": fill_prompt(str(inp["userInput"]), variables)})
    instructions = fill_prompt(inp.get("instructions"), variables)
    if instructions:
        messages.insert(0, {"role": "system", "message": instructions})
    if not messages:
        raise AIError("No messages: give messages, userInput or instructions", terminal=True)
    return _chat(inp, messages)


def text_complete(inp: dict) -> dict:
    variables = inp.get("promptVariables") if isinstance(inp.get("promptVariables"), dict) else {}
    prompt = inp.get("promptName") if inp.get("promptName") is not None else inp.get("prompt")
    if not prompt:
        raise AIError("prompt is required", terminal=True)
    messages = [{"role": "system", "message": fill_prompt(str(prompt), variables)},
                {"role": "user", "message": "use the instructions given to generate the response."}]
    return _chat(inp, messages)


def _embed(provider_name, model, text, dimensions) -> list[float]:
    if not isinstance(text, str) or not text.strip():
        raise AIError("No input text provided to generate embeddings", terminal=True)
    if not model:
        raise AIError("embedding model is required", terminal=True)
    vector = get_provider(provider_name).embed(str(model), text, _number(dimensions, "dimensions", int))
    if not vector:
        raise AIError("the provider returned an empty embedding")
    return vector


def generate_embeddings(inp: dict) -> dict:
    return {"result": _embed(inp.get("llmProvider"), inp.get("model"), inp.get("text"), inp.get("dimensions"))}


def _scope(inp: dict) -> tuple[str, str, str]:
    vector_db, index = inp.get("vectorDB"), inp.get("index")
    if not vector_db or not index:
        raise AIError("vectorDB and index are required", terminal=True)
    namespace = inp.get("namespace")
    if namespace is None:
        namespace = inp.get("docId") or ""
    return str(vector_db), str(index), str(namespace)


def _vector(value, name: str) -> list[float]:
    if not isinstance(value, list) or not value:
        raise AIError(f"{name} must be a non-empty list of numbers", terminal=True)
    try:
        return [float(x) for x in value]
    except (TypeError, ValueError):
        raise AIError(f"{name} must be a non-empty list of numbers", terminal=True) from None


def store_vector(vector_db: str, index: str, namespace: str, doc_id: str, parent_doc_id: str, text: str,
                 embedding: list[float], metadata) -> int:
    """Insert or replace one stored vector; returns 1 (rows written)."""
    from apps.ai.models import VectorDocument

    VectorDocument.objects.update_or_create(
        vector_db=vector_db, index=index, namespace=namespace, doc_id=doc_id,
        defaults={"parent_doc_id": parent_doc_id, "text": text or "", "embedding": embedding,
                  "dimensions": len(embedding), "metadata": metadata if isinstance(metadata, dict) else {},
                  "updated_ms": now_ms()})
    return 1


def cosine(a: list[float], b: list[float]) -> float:
    """Cosine similarity of two equal-length vectors (0.0 when either is all zeros)."""
    dot = sum(x * y for x, y in zip(a, b))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm else 0.0


def search_vectors(vector_db: str, index: str, namespace: str, query: list[float], max_results: int) -> list[dict]:
    """The ``max_results`` stored vectors of one scope most similar to ``query`` (same
    dimension only), best first: IndexedDoc dicts ``{docId, parentDocId, text, score,
    metadata}``."""
    from apps.ai.models import VectorDocument

    rows = VectorDocument.objects.filter(vector_db=vector_db, index=index, namespace=namespace,
                                         dimensions=len(query)).values_list(
        "doc_id", "parent_doc_id", "text", "embedding", "metadata")
    scored = [(cosine(query, emb), doc_id, parent, text, meta) for doc_id, parent, text, emb, meta in rows]
    scored.sort(key=lambda r: (-r[0], r[1]))
    return [{"docId": doc_id, "parentDocId": parent or None, "text": text, "score": score, "metadata": meta or {}}
            for score, doc_id, parent, text, meta in scored[:max(1, max_results)]]


def index_text(inp: dict) -> dict:
    doc_id = inp.get("docId")
    if not doc_id:
        raise AIError("docId is empty", terminal=True)
    vector_db, index, namespace = _scope(inp)
    text = inp.get("text")
    vector = _embed(inp.get("embeddingModelProvider") or inp.get("llmProvider"),
                    inp.get("embeddingModel") or inp.get("model"), text, inp.get("dimensions"))
    store_vector(vector_db, index, namespace, str(doc_id), str(doc_id), text, vector, inp.get("metadata"))
    return {}


def store_embeddings(inp: dict) -> dict:
    vector_db, index, namespace = _scope(inp)
    vector = _vector(inp.get("embeddings"), "embeddings")
    doc_id = str(inp.get("id") or inp.get("docId") or uuid.uuid4())
    return {"result": store_vector(vector_db, index, namespace, doc_id, "", "", vector, inp.get("metadata"))}


def _max_results(inp: dict) -> int:
    value = inp.get("maxResults", inp.get("llmMaxResults"))
    return _number(value, "maxResults", int) or 1


def search_embeddings(inp: dict) -> dict:
    vector_db, index, namespace = _scope(inp)
    return {"result": search_vectors(vector_db, index, namespace, _vector(inp.get("embeddings"), "embeddings"),
                                     _max_results(inp))}


def search_index(inp: dict) -> dict:
    vector_db, index, namespace = _scope(inp)
    query = _embed(inp.get("embeddingModelProvider") or inp.get("llmProvider"),
                   inp.get("embeddingModel") or inp.get("model"), inp.get("query"), inp.get("dimensions"))
    return {"result": search_vectors(vector_db, index, namespace, query, _max_results(inp))}


def list_mcp_tools(inp: dict) -> dict:
    from apps.ai.mcp import MCPClient

    headers = inp.get("headers") if isinstance(inp.get("headers"), dict) else None
    return {"tools": MCPClient(inp.get("mcpServer"), headers).list_tools()}


def call_mcp_tool(inp: dict) -> dict:
    from apps.ai.mcp import MCPClient

    method = inp.get("method")
    if not method:
        raise AIError("method (the MCP tool to call) is required", terminal=True)
    arguments = inp.get("arguments")
    if not isinstance(arguments, dict):
        arguments = {k: v for k, v in inp.items() if k not in CONTROL_KEYS}
    headers = inp.get("headers") if isinstance(inp.get("headers"), dict) else None
    return MCPClient(inp.get("mcpServer"), headers).call_tool(str(method), arguments)


RUNNERS = {
    "LLM_CHAT_COMPLETE": chat_complete,
    "LLM_TEXT_COMPLETE": text_complete,
    "LLM_GENERATE_EMBEDDINGS": generate_embeddings,
    "LLM_INDEX_TEXT": index_text,
    "LLM_STORE_EMBEDDINGS": store_embeddings,
    "LLM_SEARCH_INDEX": search_index,
    "LLM_SEARCH_EMBEDDINGS": search_embeddings,
    "LLM_GET_EMBEDDINGS": search_embeddings,
    "LIST_MCP_TOOLS": list_mcp_tools,
    "CALL_MCP_TOOL": call_mcp_tool,
}


def run(task_type: str, input_data: dict) -> dict:
    """Run one AI task; a TaskResult-like dict (never raises AIError)."""
    try:
        output = RUNNERS[task_type](dict(input_data or {}))
    except AIError as exc:
        return {"status": "FAILED_WITH_TERMINAL_ERROR" if exc.terminal else "FAILED",
                "reasonForIncompletion": str(exc), "outputData": {}}
    return {"status": "COMPLETED", "outputData": output}
