"""The outside world of the governed support agent example: the MCP order/refund service
and the planner shipped in ``examples/agent_demo.py`` (what ``make run`` users run), behind
the test stubs of ``tests/ai/stubs.py``. Shared by the in-process and the e2e tests."""
from __future__ import annotations

import json
from pathlib import Path

from examples.agent_demo import order_tools, plan_step

__all__ = ["DEFINITIONS", "agent_input", "definitions", "order_tools", "planner"]

DEFINITIONS = Path(__file__).resolve().parents[2] / "examples" / "definitions" / "governed_support_agent.json"


def definitions() -> dict:
    return json.loads(DEFINITIONS.read_text())


def planner(mode: str = "refund"):
    """A chat handler for ``LLMStub`` acting as the planning model: the demo's
    ``plan_step`` (``refund``, ``loop`` or ``rogue``, see there)."""
    return lambda request: {"text": json.dumps(plan_step(request["messages"], mode))}


def agent_input(llm_origin_provider: str, mcp_url: str, **extra) -> dict:
    return {"ticketId": "T-1", "orderId": "O-42", "customerEmail": "ann@example.com",
            "request": "My lamp arrived broken, I want my money back.", "llmProvider": llm_origin_provider,
            "model": "gpt-stub", "mcpServerUrl": mcp_url, **extra}
