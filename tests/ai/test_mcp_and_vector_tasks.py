"""LIST_MCP_TOOLS / CALL_MCP_TOOL against loopback MCP servers (JSON and SSE bodies,
session handshake, allow-list) and the vector tasks over our own database."""
from __future__ import annotations

from tests.ai.stubs import embed
from tests.ai.test_llm_tasks import only, run


def mcp_task(ref, type_, server, **inputs):
    return {"name": ref, "taskReferenceName": ref, "type": type_, "inputParameters": {"mcpServer": server, **inputs}}


def test_list_and_call_mcp_tools_over_json(api, cluster, ai_settings, mcp):
    url = mcp.origin + "/mcp"
    wf = run(api, cluster, [
        mcp_task("list", "LIST_MCP_TOOLS", url, headers={"Authorization": "Bearer gh-123"}),
        mcp_task("weather", "CALL_MCP_TOOL", url, method="get_weather", arguments={"city": "${workflow.input.city}"},
                 headers={"Authorization": "Bearer gh-123"}),
        mcp_task("echo", "CALL_MCP_TOOL", url, method="echo", text="plain text"),
        mcp_task("broken", "CALL_MCP_TOOL", url, method="broken", arguments={}),
    ], {"city": "Oslo"})
    assert wf["status"] == "COMPLETED", wf.get("reasonForIncompletion")
    tools = only(wf, "list")["outputData"]["tools"]
    assert [t["name"] for t in tools] == ["get_weather", "echo", "broken"]
    assert tools[0] == {"name": "get_weather", "description": "Current weather of a city",
                        "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}}}
    weather = only(wf, "weather")["outputData"]
    assert weather == {"isError": False, "content": [{"type": "text", "text": '{"city": "Oslo", "tempC": 21}',
                                                      "data": None, "mimeType": None,
                                                      "parsed": {"city": "Oslo", "tempC": 21}}]}
    # without ``arguments`` every other input is an argument (Conductor's README)
    assert only(wf, "echo")["outputData"]["content"][0]["parsed"] == "plain text"
    assert only(wf, "broken")["outputData"]["isError"] is True
    assert mcp.calls == [("get_weather", {"city": "Oslo"}), ("echo", {"text": "plain text"}), ("broken", {})]
    assert all(h.get("authorization") == "Bearer gh-123" for p, h, b in mcp.requests[:2])
    assert mcp.requests[0][2]["method"] == "tools/list" and mcp.requests[0][1]["accept"] == \
        "application/json, text/event-stream"


def test_mcp_over_sse_with_a_session_handshake(api, cluster, ai_settings, mcp_sse):
    url = mcp_sse.origin + "/mcp"
    wf = run(api, cluster, [mcp_task("list", "LIST_MCP_TOOLS", url),
                            mcp_task("call", "CALL_MCP_TOOL", url, method="get_weather", arguments={"city": "Rome"})])
    assert wf["status"] == "COMPLETED", wf.get("reasonForIncompletion")
    assert len(only(wf, "list")["outputData"]["tools"]) == 3
    assert only(wf, "call")["outputData"]["content"][0]["parsed"] == {"city": "Rome", "tempC": 21}
    methods = [b.get("method") for _p, _h, b in mcp_sse.requests]
    assert methods.count("initialize") == 2  # one per task: each call is its own session
    assert mcp_sse.calls == [("get_weather", {"city": "Rome"})]


def test_mcp_failures_name_the_cause(api, cluster, ai_settings, mcp, settings):
    url = mcp.origin + "/mcp"
    task = mcp_task("call", "CALL_MCP_TOOL", url, method="no_such_tool", arguments={})
    task["taskDefinition"] = {"name": "call", "retryCount": 0}  # raised to 3, as Conductor's mapper does
    wf = run(api, cluster, [task])
    first = wf["tasks"][0]
    assert first["status"] == "FAILED"
    assert [(t["status"], t["retryCount"]) for t in wf["tasks"]] == [("FAILED", 0), ("SCHEDULED", 1)]
    assert first["reasonForIncompletion"] == (f"Failed to call MCP tool 'no_such_tool' on {url}: JSON-RPC error: "
                                              '{"code": -32602, "message": "Unknown tool: no_such_tool"}')
    # denied by default: an origin not on the allow-list is never contacted
    settings.CONDUCTOR_AI = {**ai_settings, "ALLOWED_ORIGINS": []}
    before = len(mcp.requests)
    wf = run(api, cluster, [mcp_task("list", "LIST_MCP_TOOLS", url)])
    (task,) = wf["tasks"]
    assert task["status"] == "FAILED_WITH_TERMINAL_ERROR"
    assert task["reasonForIncompletion"] == (f"Outbound call to {mcp.origin} denied: the origin is not in "
                                             "CONDUCTOR_AI_ALLOWED_ORIGINS")
    assert len(mcp.requests) == before


def vector(ref, type_, **inputs):
    return {"name": ref, "taskReferenceName": ref, "type": type_,
            "inputParameters": {"vectorDB": "pg", "index": "kb", "namespace": "docs", **inputs}}


def test_index_search_store_and_search_embeddings(api, cluster, ai_settings):
    model = {"embeddingModelProvider": "openai", "embeddingModel": "text-embedding-3-small"}
    docs = {"d1": "refund policy for damaged orders", "d2": "shipping times to europe",
            "d3": "how to reset a password"}
    wf = run(api, cluster, [vector(f"i_{k}", "LLM_INDEX_TEXT", docId=k, text=v, metadata={"n": k}, **model)
                            for k, v in docs.items()] + [
        vector("q", "LLM_SEARCH_INDEX", query="damaged order refund", maxResults=2, **model),
        vector("s", "LLM_STORE_EMBEDDINGS", id="raw", embeddings=embed("password reset help")),
        vector("se", "LLM_SEARCH_EMBEDDINGS", embeddings=embed("password reset"), maxResults=1),
        vector("other", "LLM_SEARCH_EMBEDDINGS", namespace="elsewhere", embeddings=embed("refund")),
    ])
    assert wf["status"] == "COMPLETED", wf.get("reasonForIncompletion")
    hits = only(wf, "q")["outputData"]["result"]
    assert [h["docId"] for h in hits][0] == "d1" and len(hits) == 2
    assert hits[0]["text"] == docs["d1"] and hits[0]["metadata"] == {"n": "d1"} and hits[0]["parentDocId"] == "d1"
    assert hits[0]["score"] > hits[1]["score"]
    assert only(wf, "s")["outputData"] == {"result": 1}
    (best,) = only(wf, "se")["outputData"]["result"]
    assert best["docId"] in ("raw", "d3") and best["score"] > 0.5
    assert only(wf, "other")["outputData"] == {"result": []}
    # indexing again replaces the document instead of adding one
    run(api, cluster, [vector("i", "LLM_INDEX_TEXT", docId="d1", text="new text", **model)])
    from apps.ai.models import VectorDocument

    assert VectorDocument.objects.filter(vector_db="pg", index="kb", namespace="docs").count() == 4
    assert VectorDocument.objects.get(doc_id="d1", namespace="docs").text == "new text"


def test_vector_task_input_errors_are_terminal(api, cluster, ai_settings):
    wf = run(api, cluster, [vector("i", "LLM_INDEX_TEXT", text="x", embeddingModelProvider="openai",
                                   embeddingModel="m")])
    (task,) = wf["tasks"]
    assert (task["status"], task["reasonForIncompletion"]) == ("FAILED_WITH_TERMINAL_ERROR", "docId is empty")
    wf = run(api, cluster, [{"name": "e", "taskReferenceName": "e", "type": "LLM_GENERATE_EMBEDDINGS",
                             "inputParameters": {"llmProvider": "openai", "model": "m", "text": " "}}])
    assert wf["tasks"][0]["reasonForIncompletion"] == "No input text provided to generate embeddings"


def test_an_sse_stream_left_open_is_read_up_to_the_answer(api, cluster, ai_settings, settings):
    from tests.ai.conftest import _tools
    from tests.ai.stubs import MCPStub

    stub = MCPStub(_tools(), sse=True, keep_open=True)
    try:
        settings.CONDUCTOR_AI = {**ai_settings, "ALLOWED_ORIGINS": [stub.origin], "TIMEOUT_SECONDS": 30}
        wf = run(api, cluster, [mcp_task("call", "CALL_MCP_TOOL", stub.origin + "/mcp", method="echo",
                                         arguments={"text": "hi"})])
        # had the client waited for the stream's end it would have timed out after 30 s
        assert wf["status"] == "COMPLETED", wf.get("reasonForIncompletion")
        assert only(wf, "call")["outputData"]["content"][0]["text"] == "hi"
    finally:
        stub.close()
