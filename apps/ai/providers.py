"""LLM providers by ``llmProvider`` name: chat, text completion (as chat) and embeddings.

A provider is configured by the operator (``settings.CONDUCTOR_AI["PROVIDERS"]``, from
``CONDUCTOR_AI_<NAME>_BASE_URL`` / ``CONDUCTOR_AI_<NAME>_API_KEY``), never by a workflow:
the API key stays in the server's settings and is never written to a task's input or
output. Each kind of provider is its vendor's own Python client; the kinds are named as
Conductor names its AI integrations (``/api/providers/status``):

* ``openai``: any OpenAI-compatible ``/chat/completions`` + ``/embeddings`` endpoint
  (the ``openai`` package, ``base_url`` + ``api_key``);
* ``ollama``: an Ollama server's ``/api/chat`` + ``/api/embed`` (the ``ollama`` package);
* ``anthropic``: Anthropic's Messages API (the ``anthropic`` package; no embeddings);
* ``gemini``: Google's Gemini API, ``generateContent`` + ``embedContent`` (``google-genai``);
* ``azureopenai``: an Azure OpenAI resource (the ``openai`` package's ``AzureOpenAI``; the
  task's ``model`` is the deployment name; ``api_version`` from the settings);
* ``aws_bedrock``: Amazon Bedrock's ``Converse`` for chat and ``InvokeModel`` (Titan's
  ``inputText`` body) for embeddings (``boto3``'s ``bedrock-runtime``; the key is
  ``<accessKeyId>:<secretAccessKey>``, ``region`` from the settings);
* ``mistral``: Mistral's chat and embeddings API (OpenAI-shaped; through the ``openai``
  client: ``mistralai`` cannot be installed beside the engine, see ``MistralProvider``).

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

import importlib
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


def _tool_specs(tools: list[dict]) -> list[tuple[str, str, dict]]:
    """``(name, description, inputSchema)`` of each named ToolSpec (description ``""`` and
    an empty object schema when it has none): what every vendor's tool form is made of."""
    return [(t["name"], t.get("description") or "", t.get("inputSchema") or {"type": "object", "properties": {}})
            for t in tools if isinstance(t, dict) and t.get("name")]


def _tool_schemas(tools: list[dict]) -> list[dict]:
    return [{"type": "function", "function": {"name": name, "description": description, "parameters": schema}}
            for name, description, schema in _tool_specs(tools)]


def _openai_style_request(request: ChatRequest) -> dict:
    """The keyword arguments of an OpenAI-shaped chat call (``openai``'s
    ``chat.completions.create``)."""
    kwargs: dict = {"model": request.model, "messages": _openai_messages(request.messages)}
    if request.tools:
        kwargs["tools"] = _tool_schemas(request.tools)
    if request.json_output:
        kwargs["response_format"] = {"type": "json_object"}
    for key, value in (("max_tokens", request.max_tokens), ("temperature", request.temperature),
                       ("top_p", request.top_p), ("stop", request.stop or None)):
        if value is not None:
            kwargs[key] = value
    return kwargs


def _openai_style_result(name: str, request: ChatRequest, response) -> ChatResult:
    """The ChatResult of an OpenAI-shaped answer (``choices[0].message`` with ``content``
    text, or a list of content chunks, and ``tool_calls``; ``usage``). Raises AIError when
    it has no choice."""
    if not response.choices:
        raise AIError(f"LLM provider '{name}' returned no choices for model {request.model}")
    choice = response.choices[0]
    calls = [_tool_call(c.id, c.function.name, c.function.arguments, request.tools)
             for c in (choice.message.tool_calls or []) if getattr(c, "function", None)]
    content = choice.message.content
    if isinstance(content, list):
        content = "".join(getattr(c, "text", "") or "" for c in content)
    usage = response.usage
    reason = choice.finish_reason or ("tool_calls" if calls else "stop")
    return ChatResult(text=content if content or not calls else None, tool_calls=calls,
                      finish_reason=FINISH_REASONS.get(str(reason), str(reason).upper()),
                      prompt_tokens=getattr(usage, "prompt_tokens", 0) or 0,
                      completion_tokens=getattr(usage, "completion_tokens", 0) or 0,
                      total_tokens=getattr(usage, "total_tokens", 0) or 0)


TERMINAL_STATUSES = (400, 401, 403, 404, 422)  # an HTTP error answer a retry cannot help


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

    def _fail(self, exc: Exception, model: str) -> AIError:
        """The AIError (the task's reason) of an exception of the vendor's client: an HTTP
        error answer (``_http_error``: terminal for ``TERMINAL_STATUSES``, retryable for
        429 and 5xx), a timeout or a server not reached (``_transport_errors``), or
        anything else (retryable)."""
        answer = self._http_error(exc)
        if answer is not None:
            status, detail = answer
            return AIError(f"LLM provider '{self.name}' answered HTTP {status} for model {model}: {detail}",
                           terminal=status in TERMINAL_STATUSES)
        timeouts, unreachable = self._transport_errors()
        if isinstance(exc, timeouts):
            return AIError(f"LLM provider '{self.name}' timed out after {self.timeout:g} s (model {model})")
        if isinstance(exc, unreachable):
            return AIError(f"LLM provider '{self.name}' could not be reached: {exc.__cause__ or exc}")
        return AIError(f"LLM provider '{self.name}' failed: {exc}")

    def _http_error(self, exc: Exception) -> tuple[int, object] | None:
        """``(status, detail)`` when ``exc`` is the client's error for an HTTP error answer."""
        return None

    def _transport_errors(self) -> tuple[tuple[type, ...], tuple[type, ...]]:
        """The client's exception classes of a timeout and of a server not reached (the
        timeouts are tested first: some clients make them connection errors too). By
        default httpx's, which the ``ollama`` client raises."""
        import httpx

        return (httpx.TimeoutException,), (ConnectionError, httpx.TransportError)


class _StainlessErrors:
    """``Provider._fail``'s reading of the ``openai`` and ``anthropic`` clients' errors (both
    generated alike: ``APIStatusError``, ``APITimeoutError``, ``APIConnectionError``);
    ``sdk`` names the package."""

    sdk = "openai"

    def _http_error(self, exc: Exception) -> tuple[int, object] | None:
        """The detail is the body's ``message`` (OpenAI) or ``error.message`` (Anthropic),
        else the body."""
        if not isinstance(exc, importlib.import_module(self.sdk).APIStatusError):
            return None
        body = exc.body if exc.body is not None else exc.response.text
        error = body.get("error") if isinstance(body, dict) else None
        if isinstance(body, dict) and body.get("message"):
            return exc.status_code, body["message"]
        if isinstance(error, dict) and error.get("message"):
            return exc.status_code, error["message"]
        return exc.status_code, body

    def _transport_errors(self) -> tuple[tuple[type, ...], tuple[type, ...]]:
        sdk = importlib.import_module(self.sdk)
        return (sdk.APITimeoutError,), (sdk.APIConnectionError,)


class OpenAIProvider(_StainlessErrors, Provider):
    """An OpenAI-compatible endpoint through the ``openai`` client (no client retries:
    Conductor's task retries apply)."""

    def _client(self):
        import openai

        return openai.OpenAI(base_url=self.base_url, api_key=self.api_key or "unused", timeout=self.timeout,
                             max_retries=0)

    def chat(self, request: ChatRequest) -> ChatResult:
        try:
            with self._client() as client:
                response = client.chat.completions.create(**_openai_style_request(request))
        except Exception as exc:  # noqa: BLE001 - every client error becomes a task failure
            raise self._fail(exc, request.model) from exc
        return _openai_style_result(self.name, request, response)

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

    def _http_error(self, exc: Exception) -> tuple[int, object] | None:
        import ollama

        return (exc.status_code, exc.error) if isinstance(exc, ollama.ResponseError) else None

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


def _split_system(messages: list[dict]) -> tuple[str | None, list[dict]]:
    """The system messages joined (None when there are none) and the other messages."""
    system = [str(m.get("message") or "") for m in messages if m.get("role") == "system"]
    return ("\n\n".join(system) if system else None), [m for m in messages if m.get("role") != "system"]


def _json_object(value) -> dict:
    """A tool result as the object some vendors require (a non-object wrapped as ``result``)."""
    return value if isinstance(value, dict) else {"result": value}


def _vendor_messages(messages: list[dict], *, key: str, assistant: str, text, call, result) -> list[dict]:
    """Conductor ChatMessages (system ones taken out: ``_split_system``) in a vendor's block
    form, each message's blocks under ``key``: a ``tool_call`` message becomes one message
    of role ``assistant`` with ``call(id, name, params)`` per tool call (id: its
    taskReferenceName), a ``tool`` message one user message with ``result(toolCall)`` per
    result, any other message ``text(message)`` as the assistant's or the user's."""
    out: list[dict] = []
    for m in messages:
        role = m.get("role") or "user"
        tool_calls = m.get("toolCalls") or []
        if role == "tool_call":
            out.append({"role": assistant, key: [call(tc.get("taskReferenceName") or str(uuid.uuid4()), *_call_args(tc))
                                                 for tc in tool_calls]})
        elif role == "tool":
            out.append({"role": "user", key: [result(tc) for tc in tool_calls]})
        else:
            out.append({"role": assistant if role == "assistant" else "user", key: text(m.get("message") or "")})
    return out


class AnthropicProvider(_StainlessErrors, Provider):
    """Anthropic's Messages API through the ``anthropic`` client (no client retries).
    System messages become ``system``; ``tool_call``/``tool`` messages become
    ``tool_use``/``tool_result`` blocks; ``max_tokens`` defaults to 1024 (the API requires
    one). Anthropic has no embeddings: ``embed`` fails terminally."""

    DEFAULT_MAX_TOKENS = 1024
    sdk = "anthropic"

    def _client(self):
        import anthropic

        return anthropic.Anthropic(base_url=self.base_url, api_key=self.api_key or "unused", timeout=self.timeout,
                                   max_retries=0)

    @staticmethod
    def _messages(messages: list[dict]) -> list[dict]:
        return _vendor_messages(
            messages, key="content", assistant="assistant", text=lambda text: text,
            call=lambda call_id, name, params: {"type": "tool_use", "id": call_id, "name": name, "input": params},
            result=lambda tc: {"type": "tool_result", "tool_use_id": tc.get("taskReferenceName") or "",
                               "content": json.dumps(tc.get("output"))})

    def chat(self, request: ChatRequest) -> ChatResult:
        system, messages = _split_system(request.messages)
        kwargs: dict = {"model": request.model, "messages": self._messages(messages),
                        "max_tokens": request.max_tokens or self.DEFAULT_MAX_TOKENS}
        if system:
            kwargs["system"] = system
        if request.tools:
            kwargs["tools"] = [{"name": name, "description": description, "input_schema": schema}
                               for name, description, schema in _tool_specs(request.tools)]
        if request.stop:
            kwargs["stop_sequences"] = request.stop
        # sampling options the API takes but this client's ``create`` no longer names
        sampling = {k: v for k, v in (("temperature", request.temperature), ("top_p", request.top_p)) if v is not None}
        if sampling:
            kwargs["extra_body"] = sampling
        try:
            with self._client() as client:
                response = client.messages.create(**kwargs)
        except Exception as exc:  # noqa: BLE001 - every client error becomes a task failure
            raise self._fail(exc, request.model) from exc
        texts = [b.text for b in response.content if getattr(b, "type", "") == "text"]
        calls = [_tool_call(b.id, b.name, b.input, request.tools)
                 for b in response.content if getattr(b, "type", "") == "tool_use"]
        reason = response.stop_reason or ("tool_use" if calls else "end_turn")
        prompt, completion = response.usage.input_tokens or 0, response.usage.output_tokens or 0
        return ChatResult(text="".join(texts) if texts else None, tool_calls=calls,
                          finish_reason=FINISH_REASONS.get(reason, str(reason).upper()),
                          prompt_tokens=prompt, completion_tokens=completion, total_tokens=prompt + completion)

    def embed(self, model: str, text: str, dimensions: int | None) -> list[float]:
        raise AIError(f"LLM provider '{self.name}' (anthropic) has no embeddings API", terminal=True)


class GeminiProvider(Provider):
    """Google's Gemini API through ``google-genai`` (``genai.Client``; the base URL is
    ``HttpOptions.base_url``, the API version ``v1beta``: ``/v1beta/models/{model}:generateContent``). Assistant messages are role ``model``; tool calls and
    results are ``function_call``/``function_response`` parts; tool schemas go as
    ``parameters_json_schema`` (plain JSON Schema)."""

    def _client(self):
        from google import genai
        from google.genai import types

        return genai.Client(api_key=self.api_key or "unused", http_options=types.HttpOptions(
            base_url=self.base_url, api_version="v1beta", timeout=int(self.timeout * 1000),
            retry_options=types.HttpRetryOptions(attempts=1)))

    def _transport_errors(self) -> tuple[tuple[type, ...], tuple[type, ...]]:
        """``google-genai`` 3 raises the errors of ``httpx2`` (its own HTTP client, a
        package apart from ``httpx`` with the same class names)."""
        import httpx2

        return (httpx2.TimeoutException,), (ConnectionError, httpx2.TransportError)

    def _http_error(self, exc: Exception) -> tuple[int, object] | None:
        from google.genai import errors

        return (exc.code, exc.message or exc.status) if isinstance(exc, errors.APIError) else None

    @staticmethod
    def _contents(messages: list[dict]) -> list[dict]:
        return _vendor_messages(
            messages, key="parts", assistant="model", text=lambda text: [{"text": text}],
            call=lambda _id, name, params: {"function_call": {"name": name, "args": params}},
            result=lambda tc: {"function_response": {"name": _call_args(tc)[0],
                                                     "response": _json_object(tc.get("output"))}})

    def chat(self, request: ChatRequest) -> ChatResult:
        system, messages = _split_system(request.messages)
        config: dict = {}
        if system:
            config["system_instruction"] = system
        if request.tools:
            config["tools"] = [{"function_declarations": [
                {"name": name, "description": description, "parameters_json_schema": schema}
                for name, description, schema in _tool_specs(request.tools)]}]
            config["automatic_function_calling"] = {"disable": True}
        if request.json_output:
            config["response_mime_type"] = "application/json"
        for key, value in (("max_output_tokens", request.max_tokens), ("temperature", request.temperature),
                           ("top_p", request.top_p), ("stop_sequences", request.stop or None)):
            if value is not None:
                config[key] = value
        client = self._client()  # kept referenced: a dropped Client closes its connection
        try:
            response = client.models.generate_content(model=request.model, contents=self._contents(messages),
                                                      config=config or None)
        except Exception as exc:  # noqa: BLE001
            raise self._fail(exc, request.model) from exc
        if not response.candidates:
            raise AIError(f"LLM provider '{self.name}' returned no candidates for model {request.model}")
        candidate = response.candidates[0]
        parts = (candidate.content.parts if candidate.content else None) or []
        texts = [p.text for p in parts if p.text]
        calls = [_tool_call(p.function_call.id, p.function_call.name, p.function_call.args or {}, request.tools)
                 for p in parts if p.function_call]
        raw = candidate.finish_reason.value if candidate.finish_reason is not None else "STOP"
        reason = "TOOL_CALLS" if calls else {"MAX_TOKENS": "LENGTH", "SAFETY": "CONTENT_FILTER"}.get(raw, raw)
        usage = response.usage_metadata
        prompt = (usage.prompt_token_count or 0) if usage else 0
        completion = (usage.candidates_token_count or 0) if usage else 0
        total = (usage.total_token_count or prompt + completion) if usage else 0
        return ChatResult(text="".join(texts) if texts else None, tool_calls=calls, finish_reason=reason,
                          prompt_tokens=prompt, completion_tokens=completion, total_tokens=total)

    def embed(self, model: str, text: str, dimensions: int | None) -> list[float]:
        config = {"output_dimensionality": int(dimensions)} if dimensions else None
        client = self._client()
        try:
            response = client.models.embed_content(model=model, contents=text, config=config)
        except Exception as exc:  # noqa: BLE001
            raise self._fail(exc, model) from exc
        if not response.embeddings or not response.embeddings[0].values:
            raise AIError(f"LLM provider '{self.name}' returned no embedding for model {model}")
        return [float(x) for x in response.embeddings[0].values]


class AzureOpenAIProvider(OpenAIProvider):
    """An Azure OpenAI resource: the ``openai`` package's ``AzureOpenAI`` client at
    ``azure_endpoint`` = the base URL, with the ``api-key`` header and ``api_version``
    (``CONDUCTOR_AI_<NAME>_API_VERSION``, default ``2024-10-21``); the task's ``model`` is
    the deployment name (``/openai/deployments/{model}/chat/completions``)."""

    DEFAULT_API_VERSION = "2024-10-21"

    def __init__(self, name: str, base_url: str, api_key: str, timeout: float, api_version: str | None = None):
        super().__init__(name, base_url, api_key, timeout)
        self.api_version = api_version or self.DEFAULT_API_VERSION

    def _client(self):
        import openai

        return openai.AzureOpenAI(azure_endpoint=self.base_url, api_key=self.api_key or "unused",
                                  api_version=self.api_version, timeout=self.timeout, max_retries=0)


class BedrockProvider(Provider):
    """Amazon Bedrock through ``boto3``'s ``bedrock-runtime`` client at the base URL
    (``endpoint_url``): ``converse`` for chat (system, tools as ``toolSpec``, ``toolUse``
    / ``toolResult`` blocks), ``invoke_model`` with Titan's ``{"inputText", "dimensions"}``
    body for embeddings. The API key is ``<accessKeyId>:<secretAccessKey>``; the region
    ``CONDUCTOR_AI_<NAME>_REGION`` (default ``us-east-1``). No client retries."""

    DEFAULT_REGION = "us-east-1"

    def __init__(self, name: str, base_url: str, api_key: str, timeout: float, region: str | None = None):
        super().__init__(name, base_url, api_key, timeout)
        self.region = region or self.DEFAULT_REGION

    def _client(self):
        import boto3
        from botocore.config import Config

        key_id, _, secret = (self.api_key or "").partition(":")
        return boto3.session.Session().client(
            "bedrock-runtime", endpoint_url=self.base_url, region_name=self.region,
            aws_access_key_id=key_id or "unused", aws_secret_access_key=secret or "unused",
            config=Config(connect_timeout=self.timeout, read_timeout=self.timeout, retries={"total_max_attempts": 1}))

    def _http_error(self, exc: Exception) -> tuple[int, object] | None:
        from botocore.exceptions import ClientError

        if not isinstance(exc, ClientError):
            return None
        status = int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 500)
        return status, exc.response.get("Error", {}).get("Message") or str(exc)

    def _transport_errors(self) -> tuple[tuple[type, ...], tuple[type, ...]]:
        from botocore.exceptions import ConnectTimeoutError, EndpointConnectionError, ReadTimeoutError

        return (ReadTimeoutError, ConnectTimeoutError), (EndpointConnectionError,)

    @staticmethod
    def _messages(messages: list[dict]) -> list[dict]:
        return _vendor_messages(
            messages, key="content", assistant="assistant", text=lambda text: [{"text": text}],
            call=lambda call_id, name, params: {"toolUse": {"toolUseId": call_id, "name": name, "input": params}},
            result=lambda tc: {"toolResult": {"toolUseId": tc.get("taskReferenceName") or "",
                                              "content": [{"json": _json_object(tc.get("output"))}]}})

    def chat(self, request: ChatRequest) -> ChatResult:
        system, messages = _split_system(request.messages)
        kwargs: dict = {"modelId": request.model, "messages": self._messages(messages)}
        if system:
            kwargs["system"] = [{"text": system}]
        inference = {k: v for k, v in (("maxTokens", request.max_tokens), ("temperature", request.temperature),
                                       ("topP", request.top_p), ("stopSequences", request.stop or None))
                     if v is not None}
        if inference:
            kwargs["inferenceConfig"] = inference
        if request.tools:
            kwargs["toolConfig"] = {"tools": [{"toolSpec": {  # no description: the name describes it
                "name": name, "description": description or name, "inputSchema": {"json": schema}}}
                for name, description, schema in _tool_specs(request.tools)]}
        try:
            response = self._client().converse(**kwargs)
        except Exception as exc:  # noqa: BLE001
            raise self._fail(exc, request.model) from exc
        blocks = ((response.get("output") or {}).get("message") or {}).get("content") or []
        texts = [b["text"] for b in blocks if "text" in b]
        calls = [_tool_call(b["toolUse"].get("toolUseId"), b["toolUse"].get("name"), b["toolUse"].get("input") or {},
                            request.tools) for b in blocks if "toolUse" in b]
        reason = response.get("stopReason") or ("tool_use" if calls else "end_turn")
        usage = response.get("usage") or {}
        prompt, completion = usage.get("inputTokens") or 0, usage.get("outputTokens") or 0
        return ChatResult(text="".join(texts) if texts else None, tool_calls=calls,
                          finish_reason={"max_tokens": "LENGTH", "stop_sequence": "STOP",
                                         "guardrail_intervened": "CONTENT_FILTER"}.get(
                              reason, FINISH_REASONS.get(reason, str(reason).upper())),
                          prompt_tokens=prompt, completion_tokens=completion,
                          total_tokens=usage.get("totalTokens") or prompt + completion)

    def embed(self, model: str, text: str, dimensions: int | None) -> list[float]:
        body: dict = {"inputText": text}
        if dimensions:
            body["dimensions"] = int(dimensions)
        try:
            response = self._client().invoke_model(modelId=model, body=json.dumps(body),
                                                   contentType="application/json", accept="application/json")
            answer = json.loads(response["body"].read())
        except Exception as exc:  # noqa: BLE001
            raise self._fail(exc, model) from exc
        if not isinstance(answer, dict) or not answer.get("embedding"):
            raise AIError(f"LLM provider '{self.name}' returned no embedding for model {model}")
        return [float(x) for x in answer["embedding"]]


class MistralProvider(OpenAIProvider):
    """Mistral's API (``/v1/chat/completions``, ``/v1/embeddings``: OpenAI-shaped) through
    the ``openai`` client at ``<base URL>/v1``. Not through ``mistralai``: that package
    depends on ``jsonpath-python``, whose ``jsonpath`` module overwrites the
    ``python-jsonpath`` the engine resolves ``${...}`` with (both install
    ``site-packages/jsonpath/``), so it cannot share an environment with this server."""

    def _client(self):
        import openai

        base = self.base_url.rstrip("/")
        return openai.OpenAI(base_url=base if base.endswith("/v1") else base + "/v1", api_key=self.api_key or "unused",
                             timeout=self.timeout, max_retries=0)


KINDS: dict[str, type[Provider]] = {"openai": OpenAIProvider, "ollama": OllamaProvider,
                                    "anthropic": AnthropicProvider, "gemini": GeminiProvider,
                                    "azureopenai": AzureOpenAIProvider, "aws_bedrock": BedrockProvider,
                                    "mistral": MistralProvider}


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
        raise AIError(f"LLM provider '{name}' has an unknown kind {entry.get('kind')!r} "
                      f"({', '.join(sorted(KINDS))})", terminal=True)
    extra = {}
    if kind is AzureOpenAIProvider:
        extra["api_version"] = entry.get("api_version")
    elif kind is BedrockProvider:
        extra["region"] = entry.get("region")
    return kind(name, entry["base_url"], entry.get("api_key") or "", float(conf.get("TIMEOUT_SECONDS") or 45),
                **extra)
