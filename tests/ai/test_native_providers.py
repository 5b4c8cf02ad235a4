"""Native LLM providers through each vendor's official Python client, against a loopback
stub of its HTTP API (tests/ai/vendor_stub.py): Anthropic (``anthropic``), Gemini
(``google-genai``), Azure OpenAI (``openai.AzureOpenAI``), AWS Bedrock (``boto3``) and
Mistral (its OpenAI-shaped API through ``openai``: ``mistralai`` breaks the engine's jsonpath). A chat, a tool-call round trip, embeddings where the vendor has
them, and an HTTP error, as the provider interface (``apps.ai.providers``) answers them;
a workflow runs LLM_CHAT_COMPLETE through two of them, and ``GET /api/providers/status``
reports them."""
from __future__ import annotations

import json

import pytest

from tests.ai.vendor_stub import VendorStub
from tests.factories import unique, workflow_def

VENDORS = ("anthropic", "gemini", "azureopenai", "aws_bedrock", "mistral")
KEY = "vendor-key-0123456789"
TOOLS = [{"name": "get_weather", "type": "SIMPLE", "description": "Weather of a city",
          "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}}}]


@pytest.fixture
def vendors(settings):
    stub = VendorStub()
    settings.CONDUCTOR_AI = {
        "PROVIDERS": {name: {"kind": name, "base_url": stub.origin, "region": "eu-west-1", "api_version": None,
                             "api_key": "AKIDSTUB:secretstub" if name == "aws_bedrock" else KEY}
                      for name in VENDORS},
        "ALLOWED_ORIGINS": [], "TIMEOUT_SECONDS": 30}
    yield stub
    stub.close()


def chat_request(**kw):
    from apps.ai.providers import ChatRequest

    return ChatRequest(**{"model": "model-x", "messages": [{"role": "system", "message": "Be brief."},
                                                          {"role": "user", "message": "Hi"}], **kw})


@pytest.mark.parametrize("vendor", VENDORS)
def test_chat_and_a_tool_round_trip_through_the_vendors_client(vendors, vendor):
    from apps.ai.providers import get_provider

    provider = get_provider(vendor)
    result = provider.chat(chat_request(max_tokens=40, temperature=0.2))
    assert result.text == f"Hello from {vendor}" and result.tool_calls == []
    assert result.finish_reason == "STOP"
    assert (result.prompt_tokens, result.completion_tokens, result.total_tokens) == (11, 7, 18)
    (seen, path, headers, body) = vendors.requests[-1]
    assert seen == vendor
    assert "Be brief." in json.dumps(body) and "Hi" in json.dumps(body)
    assert "40" in json.dumps(body)  # the token limit reached the vendor in its own field
    if vendor == "anthropic":
        assert path == "/v1/messages" and body["system"] == "Be brief."
        assert headers.get("x-api-key") == KEY or headers.get("authorization") == f"Bearer {KEY}"
    elif vendor == "gemini":
        assert path == "/v1beta/models/model-x:generateContent" and headers["x-goog-api-key"] == KEY
    elif vendor == "azureopenai":
        assert path.startswith("/openai/deployments/model-x/chat/completions?api-version=")
        assert headers["api-key"] == KEY
    elif vendor == "aws_bedrock":
        assert path == "/model/model-x/converse"
        assert "AKIDSTUB" in headers["authorization"] and "eu-west-1/bedrock" in headers["authorization"]
    else:
        assert path == "/v1/chat/completions" and headers["authorization"] == f"Bearer {KEY}"

    asked = provider.chat(chat_request(tools=TOOLS))
    assert asked.finish_reason == "TOOL_CALLS" and asked.text in (None, "")
    (call,) = asked.tool_calls
    assert call["name"] == "get_weather" and call["inputParameters"] == {"city": "Paris", "method": "get_weather"}
    answered = provider.chat(chat_request(tools=TOOLS, messages=[
        {"role": "user", "message": "Weather in Paris?"},
        {"role": "tool_call", "toolCalls": asked.tool_calls},
        {"role": "tool", "toolCalls": [{**call, "output": {"tempC": 21}}]}]))
    assert answered.text == "It is 21C." and answered.tool_calls == []
    assert "21" in json.dumps(vendors.requests[-1][3])  # the tool's output went back to the vendor


@pytest.mark.parametrize("vendor", ("gemini", "aws_bedrock", "mistral"))
def test_embeddings_through_the_vendors_client(vendors, vendor):
    from apps.ai.providers import get_provider
    from tests.ai.stubs import embed

    vector = get_provider(vendor).embed("model-e", "red apples", None)
    sent = vendors.requests[-1][3]
    assert "red apples" in str(sent)  # the text went to the vendor in its own field
    assert len(vector) == 16 and any(vector)
    if vendor == "aws_bedrock":
        assert vector == pytest.approx(embed("red apples"))
    elif vendor == "mistral":
        assert vector == pytest.approx(embed(str(sent["input"])))


def test_anthropic_has_no_embeddings(vendors):
    from apps.ai.providers import AIError, get_provider

    with pytest.raises(AIError) as failed:
        get_provider("anthropic").embed("m", "text", None)
    assert failed.value.terminal


@pytest.mark.parametrize("vendor", VENDORS)
@pytest.mark.parametrize("status, terminal", [(400, True), (503, False)])
def test_an_http_error_is_a_task_failure_naming_the_status(vendors, vendor, status, terminal):
    from apps.ai.providers import AIError, get_provider

    vendors.fail_with = (status, {"error": {"message": "stub refused", "code": status, "status": "X"},
                                  "message": "stub refused"})
    with pytest.raises(AIError) as failed:
        get_provider(vendor).chat(chat_request())
    assert f"HTTP {status}" in str(failed.value) and failed.value.terminal is terminal
    assert KEY not in str(failed.value)
    assert len([r for r in vendors.requests if r[0] == vendor]) == 1  # no client-side retry


@pytest.mark.parametrize("vendor", VENDORS)
def test_a_server_not_reached_is_a_retryable_failure_naming_the_provider(vendors, settings, vendor):
    import socket

    from apps.ai.providers import AIError, get_provider

    with socket.socket() as free:  # a loopback port nothing listens on once closed
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    conf = settings.CONDUCTOR_AI["PROVIDERS"][vendor]
    settings.CONDUCTOR_AI = {**settings.CONDUCTOR_AI,
                             "PROVIDERS": {vendor: {**conf, "base_url": f"http://127.0.0.1:{port}"}}}
    with pytest.raises(AIError) as failed:
        get_provider(vendor).chat(chat_request())
    assert str(failed.value).startswith(f"LLM provider '{vendor}' could not be reached: ")
    assert failed.value.terminal is False


def test_llm_chat_complete_runs_through_native_providers(vendors, api, cluster):
    """Two of the kinds through the engine (each system task is a cluster job: kept to two)."""
    name = unique("vendors")
    used = ("anthropic", "aws_bedrock")
    api.register_workflow(workflow_def(name, [
        {"name": v, "taskReferenceName": v, "type": "LLM_CHAT_COMPLETE",
         "inputParameters": {"llmProvider": v, "model": "model-x", "messages": [{"role": "user", "message": "Hi"}]}}
        for v in used]))
    workflow_id = api.start(name)
    while cluster.run():
        pass
    wf = api.workflow(workflow_id)
    assert wf["status"] == "COMPLETED", wf.get("reasonForIncompletion")
    by_ref = {t["referenceTaskName"]: t["outputData"] for t in wf["tasks"]}
    assert {v: by_ref[v]["result"] for v in used} == {v: f"Hello from {v}" for v in used}
    assert KEY not in json.dumps(wf)


def test_providers_status_lists_conductors_providers_and_ours(vendors, settings, db):
    from tests.ai.stubs import LLMStub
    from tests.factories import Api

    ollama = LLMStub()
    try:
        settings.CONDUCTOR_AI = {**settings.CONDUCTOR_AI, "PROVIDERS": {
            **settings.CONDUCTOR_AI["PROVIDERS"], "ollama": {"kind": "ollama", "base_url": ollama.origin, "api_key": ""},
            "team_llm": {"kind": "openai", "base_url": vendors.origin + "/v1", "api_key": KEY}}}
        body = Api().ok(Api().get("/providers/status")).json()
    finally:
        ollama.close()
    assert body["managedByHost"] is False
    by_name = {p["name"]: p for p in body["providers"]}
    assert [p["name"] for p in body["providers"]][:11] == [
        "openai", "anthropic", "gemini", "azureopenai", "aws_bedrock", "mistral", "cohere", "grok", "perplexity",
        "huggingface", "ollama"]
    assert {n for n, p in by_name.items() if p["configured"]} == {*VENDORS, "ollama", "team_llm"}
    assert by_name["anthropic"]["baseUrl"] == vendors.origin and "baseUrl" not in by_name["cohere"]
    assert by_name["ollama"] == {"name": "ollama", "configured": True, "baseUrl": ollama.origin, "reachable": True}
    assert by_name["team_llm"]["type"] == "openai"
    assert KEY not in json.dumps(body)

    settings.CONDUCTOR_AI = {**settings.CONDUCTOR_AI, "PROVIDERS": {}}
    body = Api().ok(Api().get("/providers/status")).json()
    ollama_entry = [p for p in body["providers"] if p["name"] == "ollama"][0]
    assert ollama_entry["configured"] is False and ollama_entry["baseUrl"] == "http://localhost:11434"
    assert not any(p["configured"] for p in body["providers"])
