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
* PLANNER (a plan_execute harness's planner): a price question about tea or coffee is
  planned as ``fetch_price`` then ``write_note`` of its result (a ```json fence); about
  cake, with a tool the harness does not have (the plan does not compile); FALLBACK (the
  harness's fallback agent) answers with the first line of its prompt; a plan's generate
  operation answers with the price its context shows.
"""
from __future__ import annotations

import json

from conductor.ai.agents import Agent, tool
from conductor.ai.agents.handoff import OnCondition, OnTextMention, OnToolResult
from conductor.ai.agents.plans import Generate, Op, Plan, Ref, Step, Validation, plan_execute

from tests.agents import agent_defs
from tests.agents.agent_defs import MODEL, billing_agent, tech_agent


@tool
def lookup_order(order_id: str) -> str:
    """The state of an order."""
    return f"order {order_id}: " + ("damaged in transit" if order_id == "7" else "on its way")


@tool
def fetch_price(item: str) -> str:
    """The price of an item."""
    return f"price of {item}: 12"


@tool
def write_note(text: dict) -> str:
    """Write a note about a step's answer."""
    return "noted: " + (str(text.get("result")) if isinstance(text, dict) else "not a step's output: " + repr(text))


def checked(item: str) -> list:
    """A validation: the price is there again (``$``: the tool's answer)."""
    return [Validation("fetch_price", args={"item": item}, success_condition="String($).indexOf(': 12') > 0")]


def price_plan(item: str) -> Plan:
    return Plan(steps=[Step("price", operations=[Op("fetch_price", args={"item": item})]),
                       Step("note", depends_on=["price"], operations=[Op("write_note", args={"text": Ref("price")})])],
                validation=checked(item))


def written_plan(item: str) -> Plan:
    """The note's arguments are the model's (a ``generate`` operation reading the price)."""
    note = Op("write_note", generate=Generate(instructions="Write a note about the price.",
                                              output_schema='{"text": {"result": "..."}}', context=Ref("price")))
    return Plan(steps=[Step("price", operations=[Op("fetch_price", args={"item": item})]),
                       Step("note", depends_on=["price"], operations=[note])], validation=checked(item))


def pricing_harness():
    return plan_execute("e2e_pricing", tools=[fetch_price, write_note], model=MODEL,
                        planner_instructions="PLANNER: plan the work.",
                        fallback_instructions="FALLBACK: do the work yourself.")


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
    user = next((m.get("content") or "" for m in messages if m.get("role") == "user"), "")
    if system.startswith("PLANNER"):
        item = next((w for w in ("tea", "coffee", "cake") if w in user.split("\n")[0]), "water")
        plan = price_plan(item).to_dict()
        if item == "cake":
            plan["steps"][0]["operations"][0]["tool"] = "bake"
        return {"text": "Here is the plan.\n```json\n" + json.dumps(plan) + "\n```"}
    if system.startswith("Output ONLY valid JSON"):  # a plan's generate operation
        seen = next((w for w in ("price of tea: 12", "price of coffee: 12") if w in user), "nothing")
        return {"text": json.dumps({"text": {"result": "the model read " + seen}})}
    if system.startswith("FALLBACK"):
        return {"text": "fallback: " + user.split("\n")[0]}
    if not system.startswith("HELPDESK"):
        return agent_defs.script(request)
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
