"""LLM providers by ``llmProvider`` name: chat, text completion (as chat) and embeddings.

A provider is configured by the operator (``settings.CONDUCTOR_AI["PROVIDERS"]``, from
``CONDUCTOR_AI_<NAME>_BASE_URL`` / ``CONDUCTOR_AI_<NAME>_API_KEY``), never by a workflow:
the API key stays in the server's settings and is never written to a task's input or
output. Two kinds of client, both the vendors' own libraries:

* ``openai``: any OpenAI-compatible ``/chat/completions`` + ``/embeddings`` endpoint
  (the ``openai`` package, ``base_url`` + ``api_key``);
* ``ollama``: an Ollama server's ``/api/chat`` + ``/api/embed`` (the ``ollama`` package).

Requests and answers use Conductor's shapes (``ChatCompletion`` / ``LLMResponse`` of its
``ai`` module): messages ``{role, message, toolCalls?}`` with roles user, assistant,
system, tool_call, tool; tools ``ToolSpec {name, type, description, inputSchema}``; the
answer's ``toolCalls`` are ``ToolCall {taskReferenceName, name, type, inputParameters}``
where ``inputParameters.method`` names the tool, and ``finishReason`` is upper case
(``STOP``, ``TOOL_CALLS``, ``LENGTH``, ``CONTENT_FILTER``).

Errors: ``AIError``; ``terminal=True`` when retrying cannot help (unknown provider,
bad request), else the task fails and Conductor's retries apply (timeouts, 5xx, 429).
"""
from __future__ import annotations

import json
import uuid
from abc import ABC, abstractmethod
from dataclasses import dataclass, field

from django.conf import settings

FINISH_REASONS = {"stop": "STOP", "tool_calls": "TOOL_CALLS", "function_call": "TOOL_CALLS", "length": "LENGTH",
                  "content_filter": "CONTENT_FILTER", "end_turn": "STOP", "tool_use": "TOOL_CALLS",
                  "refusal": "CONTENT_FILTER", "load": "STOP"}


class AIError(Exception):
    """A provider or MCP call failed; ``str(self)`` is the task's reasonForIncompletion.
    ``terminal``: the task ends FAILED_WITH_TERMINAL_ERROR (no retry can succeed)."""

    def __init__(self, message: str, *, terminal: bool = False):
        super().__init__(message)
        self.terminal = terminal


@dataclass
class ChatRequest:
    """One chat call. ``messages``: Conductor ChatMessage dicts; ``tools``: ToolSpec dicts;
    ``max_tokens``/``temperature``/``top_p``/``stop``: sampling options (None: provider
    default); ``json_output``: ask for a JSON object."""

    model: str
    messages: list[dict]
    tools: list[dict] = field(default_factory=list)
    json_output: bool = False
    max_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    stop: list[str] | None = None


@dataclass
class ChatResult:
    """A provider's answer: ``text`` (None when it only asked for tools), ``tool_calls``
    (Conductor ToolCall dicts), ``finish_reason`` and token counts."""

    text: str | None
    tool_calls: list[dict]
    finish_reason: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0


def _tool_call(call_id: str | None, name: str, arguments, tools: list[dict]) -> dict:
    """Conductor's ToolCall for one tool call asked by the model."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except ValueError:
            arguments = {"arguments": arguments}
    args = dict(arguments) if isinstance(arguments, dict) else {"arguments": arguments}
    args["method"] = name
    spec = next((t for t in tools if isinstance(t, dict) and t.get("name") == name), {})
    return {"taskReferenceName": call_id or str(uuid.uuid4()), "name": name,
            "type": spec.get("type") or "SIMPLE", "integrationNames": spec.get("integrationNames") or {},
            "inputParameters": args}


def _call_args(tool_call: dict) -> tuple[str, dict]:
    params = dict(tool_call.get("inputParameters") or {})
    name = params.get("method") or tool_call.get("name") or ""
    return str(name), params


def _openai_messages(messages: list[dict]) -> list[dict]:
    out: list[dict] = []
    for m in messages:
        role = m.get("role") or "user"
        if role == "tool_call":
            calls = []
            for tc in m.get("toolCalls") or []:
                name, params = _call_args(tc)
                calls.append({"id": tc.get("taskReferenceName") or str(uuid.uuid4()), "type": "function",
                              "function": {"name": name, "arguments": json.dumps(params)}})
            out.append({"role": "assistant", "content": None, "tool_calls": calls})
        elif role == "tool":
            for tc in m.get("toolCalls") or []:
                out.append({"role": "tool", "tool_call_id": tc.get("taskReferenceName") or "",
                            "content": json.dumps(tc.get("output"))})
        else:
            out.append({"role": role if role in ("user", "assistant", "system") else "user",
                        "content": m.get("message") or ""})
    return out


def _tool_schemas(tools: list[dict]) -> list[dict]:
    return [{"type": "function", "function": {
        "name": t["name"], "description": t.get("description") or "",
        "parameters": t.get("inputSchema") or {"type": "object", "properties": {}}}}
        for t in tools if isinstance(t, dict) and t.get("name")]


class Provider(ABC):
    """The interface: ``chat(ChatRequest) -> ChatResult`` and
    ``embed(model, text, dimensions) -> list[float]``. Raise AIError."""

    def __init__(self, name: str, base_url: str, api_key: str, timeout: float):
        self.name, self.base_url, self.api_key, self.timeout = name, base_url, api_key, timeout

    @abstractmethod
    def chat(self, request: ChatRequest) -> ChatResult:
        """One chat completion."""

    @abstractmethod
    def embed(self, model: str, text: str, dimensions: int | None) -> list[float]:
        """The embedding vector of ``text``."""


class OpenAIProvider(Provider):
    """An OpenAI-compatible endpoint through the ``openai`` client (no client retries:
    Conductor's task retries apply)."""

    def _client(self):
        import openai

        return openai.OpenAI(base_url=self.base_url, api_key=self.api_key or "unused", timeout=self.timeout,
                             max_retries=0)

    def _fail(self, exc: Exception, model: str) -> AIError:
        import openai

        if isinstance(exc, openai.APITimeoutError):
            return AIError(f"LLM provider '{self.name}' timed out after {self.timeout:g} s (model {model})")
        if isinstance(exc, openai.APIStatusError):
            body = exc.body if exc.body is not None else exc.response.text
            detail = body.get("message") if isinstance(body, dict) and body.get("message") else body
            terminal = exc.status_code in (400, 401, 403, 404, 422)
            return AIError(f"LLM provider '{self.name}' answered HTTP {exc.status_code} for model {model}: {detail}",
                           terminal=terminal)
        if isinstance(exc, openai.APIConnectionError):
            return AIError(f"LLM provider '{self.name}' could not be reached: {exc.__cause__ or exc}")
        return AIError(f"LLM provider '{self.name}' failed: {exc}")

    def chat(self, request: ChatRequest) -> ChatResult:
        kwargs: dict = {"model": request.model, "messages": _openai_messages(request.messages)}
        if request.tools:
            kwargs["tools"] = _tool_schemas(request.tools)
        if request.json_output:
            kwargs["response_format"] = {"type": "json_object"}
        for key, value in (("max_tokens", request.max_tokens), ("temperature", request.temperature),
                           ("top_p", request.top_p), ("stop", request.stop or None)):
            if value is not None:
                kwargs[key] = value
        try:
            with self._client() as client:
                response = client.chat.completions.create(**kwargs)
        except Exception as exc:  # noqa: BLE001 - every client error becomes a task failure
            raise self._fail(exc, request.model) from exc
        if not response.choices:
            raise AIError(f"LLM provider '{self.name}' returned no choices for model {request.model}")
        choice = response.choices[0]
        calls = [_tool_call(c.id, c.function.name, c.function.arguments, request.tools)
                 for c in (choice.message.tool_calls or []) if getattr(c, "function", None)]
        usage = response.usage
        reason = choice.finish_reason or ("tool_calls" if calls else "stop")
        return ChatResult(text=choice.message.content, tool_calls=calls,
                          finish_reason=FINISH_REASONS.get(reason, str(reason).upper()),
                          prompt_tokens=getattr(usage, "prompt_tokens", 0) or 0,
                          completion_tokens=getattr(usage, "completion_tokens", 0) or 0,
                          total_tokens=getattr(usage, "total_tokens", 0) or 0)

    def embed(self, model: str, text: str, dimensions: int | None) -> list[float]:
        kwargs: dict = {"model": model, "input": text}
        if dimensions:
            kwargs["dimensions"] = int(dimensions)
        try:
            with self._client() as client:
                response = client.embeddings.create(**kwargs)
        except Exception as exc:  # noqa: BLE001
            raise self._fail(exc, model) from exc
        if not response.data:
            raise AIError(f"LLM provider '{self.name}' returned no embedding for model {model}")
        return [float(x) for x in response.data[0].embedding]


class OllamaProvider(Provider):
    """An Ollama server through the ``ollama`` client."""

    def _client(self):
        import ollama

        extra = {"headers": {"Authorization": f"Bearer {self.api_key}"}} if self.api_key else {}
        return ollama.Client(host=self.base_url, timeout=self.timeout, **extra)

    def _fail(self, exc: Exception, model: str) -> AIError:
        import httpx
        import ollama

        if isinstance(exc, httpx.TimeoutException):
            return AIError(f"LLM provider '{self.name}' timed out after {self.timeout:g} s (model {model})")
        if isinstance(exc, ollama.ResponseError):
            terminal = exc.status_code in (400, 401, 403, 404)
            return AIError(f"LLM provider '{self.name}' answered HTTP {exc.status_code} for model {model}: {exc.error}",
                           terminal=terminal)
        if isinstance(exc, (ConnectionError, httpx.TransportError)):
            return AIError(f"LLM provider '{self.name}' could not be reached: {exc}")
        return AIError(f"LLM provider '{self.name}' failed: {exc}")

    def chat(self, request: ChatRequest) -> ChatResult:
        messages = []
        for m in _openai_messages(request.messages):
            if m.get("tool_calls"):
                m = {"role": "assistant", "content": "", "tool_calls": [
                    {"function": {"name": c["function"]["name"], "arguments": json.loads(c["function"]["arguments"])}}
                    for c in m["tool_calls"]]}
            elif m["role"] == "tool":
                m = {"role": "tool", "content": m["content"]}
            messages.append(m)
        options = {k: v for k, v in (("num_predict", request.max_tokens), ("temperature", request.temperature),
                                     ("top_p", request.top_p), ("stop", request.stop or None)) if v is not None}
        try:
            response = self._client().chat(model=request.model, messages=messages,
                                           tools=_tool_schemas(request.tools) or None,
                                           format="json" if request.json_output else None, options=options or None)
        except Exception as exc:  # noqa: BLE001
            raise self._fail(exc, request.model) from exc
        calls = [_tool_call(None, c.function.name, c.function.arguments, request.tools)
                 for c in (response.message.tool_calls or [])]
        prompt, completion = response.prompt_eval_count or 0, response.eval_count or 0
        reason = "tool_calls" if calls else (response.done_reason or "stop")
        return ChatResult(text=response.message.content if not calls else (response.message.content or None),
                          tool_calls=calls, finish_reason=FINISH_REASONS.get(reason, str(reason).upper()),
                          prompt_tokens=prompt, completion_tokens=completion, total_tokens=prompt + completion)

    def embed(self, model: str, text: str, dimensions: int | None) -> list[float]:
        try:
            response = self._client().embed(model=model, input=text, dimensions=int(dimensions) if dimensions else None)
        except Exception as exc:  # noqa: BLE001
            raise self._fail(exc, model) from exc
        if not response.embeddings:
            raise AIError(f"LLM provider '{self.name}' returned no embedding for model {model}")
        return [float(x) for x in response.embeddings[0]]


KINDS: dict[str, type[Provider]] = {"openai": OpenAIProvider, "ollama": OllamaProvider}


def get_provider(name: str | None) -> Provider:
    """The configured provider called ``name``. Raises a terminal AIError for a missing or
    unknown name (the reason lists the configured ones)."""
    conf = settings.CONDUCTOR_AI
    providers = conf.get("PROVIDERS") or {}
    if not name:
        raise AIError("llmProvider is required", terminal=True)
    entry = providers.get(name)
    if entry is None:
        known = ", ".join(sorted(providers)) or "none"
        raise AIError(f"Unknown LLM provider '{name}': configured providers are {known} "
                      f"(set CONDUCTOR_AI_{name.upper()}_BASE_URL / _API_KEY)", terminal=True)
    kind = KINDS.get(entry.get("kind") or "openai")
    if kind is None:
        raise AIError(f"LLM provider '{name}' has an unknown kind {entry.get('kind')!r} (openai or ollama)",
                      terminal=True)
    return kind(name, entry["base_url"], entry.get("api_key") or "", float(conf.get("TIMEOUT_SECONDS") or 45))
