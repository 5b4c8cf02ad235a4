"""The task panel's AI section (``/execution/<id>/task/<taskId>.json`` ``ai``): the
conversation, tools, tool calls, answer and token usage of an LLM task; server, tool,
arguments and content of an MCP task."""
from __future__ import annotations

from django.contrib.auth.models import Permission, User

from tests.ai.test_llm_tasks import chat, only, run


def test_panel_shows_conversation_tool_calls_tokens_and_mcp_content(api, cluster, ai_settings, llm, mcp, client):
    llm.chat_handler = lambda req: {"tool_calls": [{"id": "c1", "name": "get_weather", "arguments": {"city": "Oslo"}}]}
    wf = run(api, cluster, [
        chat("ask", instructions="Be brief.", tools=[{"name": "get_weather", "type": "CALL_MCP_TOOL"}],
             messages=[{"role": "user", "message": "Weather in Oslo?"}]),
        {"name": "call", "taskReferenceName": "call", "type": "CALL_MCP_TOOL",
         "inputParameters": {"mcpServer": mcp.origin + "/mcp", "method": "get_weather",
                             "arguments": "${ask.output.toolCalls[0].inputParameters}"}},
    ])
    assert wf["status"] == "COMPLETED", wf.get("reasonForIncompletion")
    user = User.objects.create_user("viewer", "v@example.com", "pw")
    user.user_permissions.add(Permission.objects.get(content_type__app_label="ui", codename="view_executions"))
    client.force_login(user)

    ask = client.get(f"/execution/{wf['workflowId']}/task/{only(wf, 'ask')['taskId']}.json").json()["ai"]
    assert ask["kind"] == "llm" and (ask["provider"], ask["model"]) == ("openai", "gpt-stub")
    assert ask["messages"] == [{"role": "system", "text": "Be brief."}, {"role": "user", "text": "Weather in Oslo?"}]
    assert ask["tools"] == ["get_weather"]
    assert ask["toolCalls"] == [{"name": "get_weather", "arguments": {"city": "Oslo"}}]
    assert ask["finishReason"] == "TOOL_CALLS"
    out = only(wf, "ask")["outputData"]
    assert ask["tokens"] == {"prompt": out["promptTokens"], "completion": out["completionTokens"],
                             "total": out["tokenUsed"]}

    call = client.get(f"/execution/{wf['workflowId']}/task/{only(wf, 'call')['taskId']}.json").json()["ai"]
    assert call["kind"] == "mcp" and call["method"] == "get_weather" and call["server"] == mcp.origin + "/mcp"
    assert call["arguments"] == {"city": "Oslo", "method": "get_weather"}
    assert call["isError"] is False and '"tempC": 21' in call["content"][0]
