"""Fixtures of the AI task tests: loopback LLM (OpenAI + Ollama wire formats) and MCP
stubs, settings pointing the providers at them, and ``cluster``: the django-q2 jobs the
engine queues (async system tasks) run here on demand, as the cluster would run them."""
from __future__ import annotations

import pytest

from tests.ai.stubs import LLMStub, MCPStub, text_result
from tests.factories import Api, FakeClock

API_KEY = "sk-test-secret-key-0123456789"


@pytest.fixture
def api(transactional_db) -> Api:
    return Api()


@pytest.fixture
def clock(monkeypatch) -> FakeClock:
    return FakeClock().install(monkeypatch)


@pytest.fixture
def llm():
    stub = LLMStub()
    yield stub
    stub.close()


def _tools():
    return {
        "get_weather": ("Current weather of a city", {"type": "object", "properties": {"city": {"type": "string"}}},
                        lambda a: text_result({"city": a.get("city"), "tempC": 21})),
        "echo": ("Echo the text", {"type": "object", "properties": {"text": {"type": "string"}}},
                 lambda a: text_result(str(a.get("text")))),
        "broken": ("Always reports an error", {"type": "object"},
                   lambda a: text_result("boom", is_error=True)),
    }


@pytest.fixture
def mcp():
    stub = MCPStub(_tools())
    yield stub
    stub.close()


@pytest.fixture
def mcp_sse():
    stub = MCPStub(_tools(), sse=True, require_session=True)
    yield stub
    stub.close()


@pytest.fixture
def ai_settings(settings, llm, mcp, mcp_sse):
    """Providers ``openai`` (OpenAI-compatible) and ``local`` (Ollama) at the stub; the
    MCP stubs' origins allowed."""
    settings.CONDUCTOR_AI = {
        "PROVIDERS": {"openai": {"kind": "openai", "base_url": llm.origin + "/v1", "api_key": API_KEY},
                      "local": {"kind": "ollama", "base_url": llm.origin, "api_key": ""}},
        "ALLOWED_ORIGINS": [mcp.origin, mcp_sse.origin],
        "TIMEOUT_SECONDS": 60,  # a bound: a loaded machine can keep the in-process stubs waiting (#14)
    }
    return settings.CONDUCTOR_AI


class Cluster:
    """Collects the system tasks the engine hands to django-q2 and runs them."""

    def __init__(self):
        self.queued: list[str] = []

    def run(self, limit: int = 50) -> int:
        from apps.engine.jobs import system_task_job

        ran = 0
        while self.queued and ran < limit:
            system_task_job(self.queued.pop(0))
            ran += 1
        return ran


def install_cluster(monkeypatch, dropped: tuple[str, ...] = ()) -> Cluster:
    """A Cluster that collects the ``system_task_job`` jobs the engine queues; jobs named in
    ``dropped`` are not run at all, any other job goes to the real queue."""
    from apps.engine import jobqueue

    c = Cluster()
    real = jobqueue.enqueue

    def fake(func, *args, **kwargs):
        if func == "apps.engine.jobs.system_task_job":
            c.queued.append(args[0])
        elif func not in dropped:
            real(func, *args, **kwargs)

    monkeypatch.setattr(jobqueue, "enqueue", fake)
    return c


@pytest.fixture
def cluster(monkeypatch) -> Cluster:
    return install_cluster(monkeypatch)
