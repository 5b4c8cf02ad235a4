"""Teams for the ``manual`` strategy and a swarm's handoff conditions, written with
``conductor.ai.agents`` as its documentation writes them, and the stub LLM's script for
them (``script``; every other agent answers as ``agent_defs.script``). A module of its
own: the SDK's worker processes import it to run ``lookup_order`` and ``wants_tech``.

* HELPDESK (the swarm's own agent, with the ``lookup_order`` tool): a question about an
  order looks the order up (and, when the order is fine, says so after reading the
  tool's answer); money questions answer "I will arrange a refund" (an
  ``OnTextMention("refund")`` hands over to billing); app questions answer "that sounds
  like a crash" (an ``OnCondition`` run by the SDK's worker hands over to tech); a
  damaged order (``OnToolResult(lookup_order, "damaged")``) goes to billing at once.
"""
from __future__ import annotations

import json

from conductor.ai.agents import Agent, tool
from conductor.ai.agents.handoff import OnCondition, OnTextMention, OnToolResult

from tests.agents import agent_defs
from tests.agents.agent_defs import MODEL, billing_agent, tech_agent


@tool
def lookup_order(order_id: str) -> str:
    """The state of an order."""
    return f"order {order_id}: " + ("damaged in transit" if order_id == "7" else "on its way")


def wants_tech(context: dict) -> bool:
    """An ``OnCondition``: the agent's answer talks about a crash."""
    return "crash" in str(context.get("result") or "").lower()


def helpdesk_agent() -> Agent:
    return Agent(name="e2e_helpdesk", model=MODEL, strategy="swarm", synthesize=False, tools=[lookup_order],
                 instructions="HELPDESK: help the customer.", agents=[billing_agent(), tech_agent()],
                 handoffs=[OnTextMention(text="Refund", target="e2e_billing"),
                           OnToolResult(tool_name="lookup_order", target="e2e_billing", result_contains="DAMAGED"),
                           OnCondition(condition=wants_tech, target="e2e_tech")])


def concierge_agent() -> Agent:
    """Strategy manual: a person picks who answers each of the two turns."""
    return Agent(name="e2e_concierge", model=MODEL, strategy="manual", max_turns=2,
                 agents=[billing_agent(), tech_agent()])


def script(request: dict) -> dict:
    """The stub LLM's answer (the module docstring), else ``agent_defs.script``'s."""
    messages = request.get("messages") or []
    system = next((m.get("content") or "" for m in messages if m.get("role") == "system"), "")
    if not system.startswith("HELPDESK"):
        return agent_defs.script(request)
    user = next((m.get("content") or "" for m in messages if m.get("role") == "user"), "")
    results = [m for m in messages if m.get("role") == "tool"]
    if "order" in user:
        if not results:
            return {"tool_calls": [{"name": "lookup_order", "arguments": {"order_id": user.split()[-1].strip("?")}}]}
        return {"text": "helpdesk: " + json.loads(results[-1]["content"]).get("result", "")}
    if "money" in user:
        return {"text": "I will arrange a refund"}
    if "app" in user:
        return {"text": "that sounds like a crash"}
    return {"text": "helpdesk: how can I help?"}
