"""The Python SDK's AI task classes (conductor-python ``llm_tasks``) build definitions
our engine runs: the names and inputs they emit are the ones the tasks read."""
from __future__ import annotations

from conductor.client.http.api_client import ApiClient
from conductor.client.workflow.task.llm_tasks.call_mcp_tool import CallMcpTool
from conductor.client.workflow.task.llm_tasks.chat_message import ChatMessage
from conductor.client.workflow.task.llm_tasks.list_mcp_tools import ListMcpTools
from conductor.client.workflow.task.llm_tasks.llm_chat_complete import LlmChatComplete
from conductor.client.workflow.task.llm_tasks.llm_generate_embeddings import LlmGenerateEmbeddings
from conductor.client.workflow.task.llm_tasks.llm_index_text import LlmIndexText
from conductor.client.workflow.task.llm_tasks.llm_query_embeddings import LlmQueryEmbeddings
from conductor.client.workflow.task.llm_tasks.llm_search_embeddings import LlmSearchEmbeddings
from conductor.client.workflow.task.llm_tasks.llm_search_index import LlmSearchIndex
from conductor.client.workflow.task.llm_tasks.llm_store_embeddings import LlmStoreEmbeddings
from conductor.client.workflow.task.llm_tasks.llm_text_complete import LlmTextComplete
from conductor.client.workflow.task.llm_tasks.utils.embedding_model import EmbeddingModel

from tests.ai.test_llm_tasks import only, run


def as_dicts(*tasks) -> list[dict]:
    client = ApiClient.__new__(ApiClient)  # serialization only: no configuration, no network
    return [client.sanitize_for_serialization(t.to_workflow_task()) for t in tasks]


def test_sdk_built_ai_tasks_run(api, cluster, ai_settings, llm, mcp):
    llm.chat_handler = lambda req: {"text": '{"answer": "42"}'}
    url = mcp.origin + "/mcp"
    text = LlmTextComplete("summary", "openai", "gpt-stub", "Summarize $${topic}")
    text.prompt_variables({"topic": "${workflow.input.topic}"})
    tasks = as_dicts(
        LlmChatComplete("ask", "openai", "gpt-stub",
                        messages=[ChatMessage(role="user", message="What is ${workflow.input.topic}?")],
                        json_output=True, max_tokens=30, temperature=0.1),
        text,
        LlmGenerateEmbeddings("emb", "openai", "text-embedding-3-small", "${workflow.input.topic}"),
        LlmIndexText("index", "pg", "kb", EmbeddingModel("openai", "text-embedding-3-small"),
                     "the answer is 42", "doc-42", namespace="sdk"),
        LlmSearchIndex("search", "pg", "sdk", "kb", "openai", "text-embedding-3-small", "answer 42"),
        LlmStoreEmbeddings("store", "pg", "kb", "${emb.output.result}", namespace="sdk", id="topic"),
        LlmSearchEmbeddings("near", "pg", "kb", "${emb.output.result}", namespace="sdk", max_results=2),
        LlmQueryEmbeddings("query", "pg", "kb", "${emb.output.result}", namespace="sdk"),
        ListMcpTools("tools", url),
        CallMcpTool("call", url, "get_weather", arguments={"city": "Lima"}),
    )
    assert [t["type"] for t in tasks] == ["LLM_CHAT_COMPLETE", "LLM_TEXT_COMPLETE", "LLM_GENERATE_EMBEDDINGS",
                                          "LLM_INDEX_TEXT", "LLM_SEARCH_INDEX", "LLM_STORE_EMBEDDINGS",
                                          "LLM_SEARCH_EMBEDDINGS", "LLM_GET_EMBEDDINGS", "LIST_MCP_TOOLS",
                                          "CALL_MCP_TOOL"]
    wf = run(api, cluster, tasks, {"topic": "life"})
    assert wf["status"] == "COMPLETED", wf.get("reasonForIncompletion")
    assert only(wf, "ask")["outputData"]["result"] == {"answer": "42"}
    assert only(wf, "summary")["outputData"]["result"] == {"answer": "42"}
    ask, summary = llm.chats()
    assert ask["messages"] == [{"role": "user", "content": "What is life?"}] and ask["max_tokens"] == 30
    assert summary["messages"][0] == {"role": "system", "content": "Summarize life"}
    assert len(only(wf, "emb")["outputData"]["result"]) == 16
    (hit,) = only(wf, "search")["outputData"]["result"]
    assert hit["docId"] == "doc-42" and hit["text"] == "the answer is 42"
    assert only(wf, "store")["outputData"] == {"result": 1}
    near = only(wf, "near")["outputData"]["result"]
    assert [h["docId"] for h in near][0] == "topic" and near[0]["score"] > 0.99 and len(near) == 2
    # LLM_GET_EMBEDDINGS: Conductor's deprecated alias of LLM_SEARCH_EMBEDDINGS (maxResults 1)
    assert [h["docId"] for h in only(wf, "query")["outputData"]["result"]] == ["topic"]
    assert len(only(wf, "tools")["outputData"]["tools"]) == 3
    assert only(wf, "call")["outputData"]["content"][0]["parsed"] == {"city": "Lima", "tempC": 21}
