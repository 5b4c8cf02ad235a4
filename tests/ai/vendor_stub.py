"""A loopback stand-in for five LLM vendors' HTTP APIs, so their official clients
(``anthropic``, ``google-genai``, ``openai``'s ``AzureOpenAI``, ``boto3`` bedrock-runtime,
and ``openai`` again for Mistral's OpenAI-shaped API) talk to 127.0.0.1 and never leave the machine. Paths as each vendor serves:

* Anthropic ``POST /v1/messages``;
* Gemini ``POST /v1beta/models/{model}:generateContent`` and ``:embedContent`` /
  ``:batchEmbedContents``;
* Azure OpenAI ``POST /openai/deployments/{deployment}/chat/completions?api-version=...``;
* Bedrock ``POST /model/{modelId}/converse`` and ``/model/{modelId}/invoke`` (Titan embeddings);
* Mistral ``POST /v1/chat/completions`` and ``/v1/embeddings``.

The scripted model: a request carrying a tool result answers ``It is 21C.``; one offering
tools asks for ``get_weather`` with ``{"city": "Paris"}``; any other answers
``Hello from <vendor>``. ``fail_with`` (status, body) makes every answer that HTTP error.
Each request is kept in ``requests`` as ``(vendor, path, headers, json)``."""
from __future__ import annotations

import time

from tests.ai.stubs import embed
from tests.support.http_stub import HttpStub, Reply, StubRequest


class VendorStub:
    def __init__(self):
        self.requests: list[tuple[str, str, dict, object]] = []
        self.fail_with: tuple[int, dict] | None = None
        self.stub = HttpStub(self._reply, http11=True)
        self.origin = self.stub.url

    def close(self) -> None:
        self.stub.close()

    @staticmethod
    def _vendor(path: str) -> str:
        if path.startswith("/v1/messages"):
            return "anthropic"
        if path.startswith("/v1beta/"):
            return "gemini"
        if path.startswith("/openai/deployments/"):
            return "azureopenai"
        if path.startswith("/model/"):
            return "aws_bedrock"
        return "mistral"

    def _reply(self, request: StubRequest) -> Reply:
        vendor = self._vendor(request.path)
        body = request.json() or {}
        self.requests.append((vendor, request.path, request.headers, body))
        if self.fail_with is not None:
            return Reply(self.fail_with[0], self.fail_with[1])
        text = str(body)
        tool_result = any(k in text for k in ("'tool_result'", "'functionResponse'", "'function_response'",
                                              "'toolResult'", "'role': 'tool'"))
        offers_tools = bool(body.get("tools") or body.get("toolConfig"))
        if tool_result:
            answer = ("text", "It is 21C.")
        elif offers_tools:
            answer = ("tool", {"city": "Paris"})
        else:
            answer = ("text", f"Hello from {vendor}")
        return Reply(200, getattr(self, vendor)(request.path, body, answer))

    # --- each vendor's answer shape -----------------------------------------------------------

    @staticmethod
    def anthropic(path, body, answer):
        kind, value = answer
        block = ({"type": "text", "text": value} if kind == "text" else
                 {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": value})
        return {"id": "msg_1", "type": "message", "role": "assistant", "model": body.get("model"),
                "content": [block], "stop_reason": "end_turn" if kind == "text" else "tool_use",
                "stop_sequence": None, "usage": {"input_tokens": 11, "output_tokens": 7}}

    @staticmethod
    def gemini(path, body, answer):
        if path.endswith(":embedContent"):
            return {"embedding": {"values": embed(str(body.get("content")))}}
        if path.endswith(":batchEmbedContents"):
            return {"embeddings": [{"values": embed(str(r.get("content")))} for r in body.get("requests") or []]}
        kind, value = answer
        part = {"text": value} if kind == "text" else {"functionCall": {"name": "get_weather", "args": value}}
        return {"candidates": [{"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}],
                "usageMetadata": {"promptTokenCount": 11, "candidatesTokenCount": 7, "totalTokenCount": 18}}

    @staticmethod
    def _openai_shape(body, answer):
        kind, value = answer
        message = ({"role": "assistant", "content": value} if kind == "text" else
                   {"role": "assistant", "content": "", "tool_calls": [
                       {"id": "call_1", "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]})
        return {"id": "chat-1", "object": "chat.completion", "created": int(time.time()), "model": body.get("model"),
                "choices": [{"index": 0, "message": message, "finish_reason": "stop" if kind == "text" else "tool_calls"}],
                "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}}

    def azureopenai(self, path, body, answer):
        return self._openai_shape(body, answer)

    def mistral(self, path, body, answer):
        if path.startswith("/v1/embeddings"):
            return {"id": "emb-1", "object": "list", "model": body.get("model"),
                    "data": [{"object": "embedding", "index": 0, "embedding": embed(str(body.get("input")))}],
                    "usage": {"prompt_tokens": 3, "total_tokens": 3}}
        return self._openai_shape(body, answer)

    @staticmethod
    def aws_bedrock(path, body, answer):
        if path.endswith("/invoke"):
            return {"embedding": embed(str(body.get("inputText"))), "inputTextTokenCount": 3}
        kind, value = answer
        block = ({"text": value} if kind == "text" else
                 {"toolUse": {"toolUseId": "tooluse_1", "name": "get_weather", "input": value}})
        return {"output": {"message": {"role": "assistant", "content": [block]}},
                "stopReason": "end_turn" if kind == "text" else "tool_use",
                "usage": {"inputTokens": 11, "outputTokens": 7, "totalTokens": 18}, "metrics": {"latencyMs": 5}}
