"""Agents written with ``conductor.ai.agents`` as its documentation writes them, and the
scripted LLM (``script``) the loopback OpenAI-compatible stub answers with. A module of
its own: the SDK runs each ``@tool`` / ``@guardrail`` in a worker process that imports it.

The script answers by the agent's instructions (its first system message), so one stub
serves every agent:

* WEATHER: asks for ``get_weather(city="Paris")``, then reports the tool's answer;
* POET: answers with a number first; once a guardrail's feedback is in the
  conversation, answers without one;
* CLERK: asks the human (``ask_user``), then confirms with the human's answer;
* TRIAGE: hands the conversation to ``billing``; BILLING answers;
* LOOPER: asks for ``tick`` again and again (until stopped);
* GREETER: answers at once;
* CONS: answers at once (a parallel branch beside WEATHER);
* ROUTER: names ``e2e_billing`` (in markup) until billing answered, then DONE; DESK
  sums the team's transcript up; TECH answers (picked by the ``pick_team`` function);
* OPTIMIST / PESSIMIST: answer with how many turns they read in the transcript;
* FRONTDESK: transfers the conversation to ``e2e_billing`` with a message.
"""
from __future__ import annotations

import json
import time

from conductor.ai.agents import Agent, Guardrail, GuardrailResult, guardrail, human_tool, tool

MODEL = "openai/gpt-4o-mini"


@tool
def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"18C and sunny in {city}"


@tool
def tick(n: int = 0) -> dict:
    """One step of a long job."""
    time.sleep(0.2)
    return {"ticked": n}


@guardrail
def no_digits(content: str) -> GuardrailResult:
    """Answers must not contain digits."""
    if any(ch.isdigit() for ch in content):
        return GuardrailResult(passed=False, message="the answer must not contain digits")
    return GuardrailResult(passed=True)


def weather_agent() -> Agent:
    return Agent(name="e2e_weather", model=MODEL, tools=[get_weather],
                 instructions="WEATHER: answer questions about the weather with get_weather.")


def poet_agent() -> Agent:
    return Agent(name="e2e_poet", model=MODEL, instructions="POET: write one line.",
                 guardrails=[Guardrail(no_digits, on_fail="retry", max_retries=3)])


def clerk_agent() -> Agent:
    ask = human_tool(name="ask_user", description="Ask the user a question and wait for the answer.")
    return Agent(name="e2e_clerk", model=MODEL, tools=[ask], instructions="CLERK: book a trip; ask where to.")


def billing_agent() -> Agent:
    return Agent(name="e2e_billing", model=MODEL, instructions="BILLING: settle billing questions.")


def tech_agent() -> Agent:
    return Agent(name="e2e_tech", model=MODEL, instructions="TECH: settle technical questions.")


def triage_agent() -> Agent:
    return Agent(name="e2e_triage", model=MODEL, agents=[billing_agent(), tech_agent()], strategy="handoff",
                 instructions="TRIAGE: hand the user to the right team.")


def panel_agent() -> Agent:
    """Strategy parallel: the weather agent (with its tool) and a critic at once; the
    team's model is the children's (the SDK takes the first child's)."""
    critic = Agent(name="e2e_cons", model=MODEL, instructions="CONS: name the downside.")
    return Agent(name="e2e_panel", agents=[weather_agent(), critic], strategy="parallel")


def desk_agent() -> Agent:
    """Strategy router with a router agent; the team's own model writes the answer."""
    router = Agent(name="e2e_desk_router", model=MODEL, instructions="ROUTER: pick the team for the customer.")
    return Agent(name="e2e_desk", model=MODEL, strategy="router", router=router,
                 agents=[billing_agent(), tech_agent()], instructions="DESK: answer the customer.")


def pick_team(prompt: str) -> str:
    """A function router (the SDK runs it as the ``e2e_switchboard_router_fn`` worker)."""
    return "DONE" if "[e2e_tech]:" in prompt else "e2e_tech"


def switchboard_agent() -> Agent:
    return Agent(name="e2e_switchboard", model=MODEL, strategy="router", router=pick_team, synthesize=False,
                 agents=[billing_agent(), tech_agent()])


def debaters() -> list[Agent]:
    return [Agent(name="e2e_optimist", model=MODEL, instructions="OPTIMIST: find the bright side."),
            Agent(name="e2e_pessimist", model=MODEL, instructions="PESSIMIST: find the dark side.")]


def debate_agent() -> Agent:
    return Agent(name="e2e_debate", model=MODEL, agents=debaters(), strategy="round_robin", max_turns=3)


def swarm_agent() -> Agent:
    """Strategy swarm: the front desk hands over with a transfer tool; billing answers."""
    return Agent(name="e2e_swarm", model=MODEL, strategy="swarm", synthesize=False,
                 instructions="FRONTDESK: hand the customer over.", agents=[billing_agent(), tech_agent()])


def lottery_agent() -> Agent:
    return Agent(name="e2e_lottery", model=MODEL, agents=debaters(), strategy="random", max_turns=4)


def looper_agent() -> Agent:
    return Agent(name="e2e_looper", model=MODEL, tools=[tick], max_turns=200,
                 instructions="LOOPER: call tick forever.")


def greeter_agent() -> Agent:
    return Agent(name="e2e_greeter", model=MODEL, instructions="GREETER: greet.")


def _system(messages: list) -> str:
    return next((m.get("content") or "" for m in messages if m.get("role") == "system"), "")


def script(request: dict) -> dict:
    """The stub LLM's answer to one OpenAI chat request (see the module docstring)."""
    messages = request.get("messages") or []
    system = _system(messages)
    tool_results = [m for m in messages if m.get("role") == "tool"]
    if system.startswith(("WEATHER", "You answer weather questions")):  # the latter: examples/sdk_agent.py
        if not tool_results:
            return {"tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}]}
        return {"text": "Forecast: " + json.loads(tool_results[-1]["content"]).get("result", "")}
    if system.startswith("POET"):
        if any("rejected by the guardrail" in str(m.get("content")) for m in messages if m.get("role") == "user"):
            return {"text": "roses are red and violets are blue"}
        return {"text": "there are 3 roses"}
    if system.startswith("CLERK"):
        if not tool_results:
            return {"tool_calls": [{"name": "ask_user", "arguments": {"question": "Where to?"}}]}
        return {"text": "Booked a trip to " + json.loads(tool_results[-1]["content"]).get("answer", "?")}
    if system.startswith("TRIAGE"):
        return {"tool_calls": [{"name": "transfer_to_e2e_billing", "arguments": {}}]}
    if system.startswith("BILLING"):
        return {"text": "billing: your refund is on its way"}
    if system.startswith("LOOPER"):
        return {"tool_calls": [{"name": "tick", "arguments": {"n": len(tool_results)}}]}
    if system.startswith("GREETER"):
        return {"text": "hello from a deployed agent"}
    user = next((m.get("content") or "" for m in reversed(messages) if m.get("role") == "user"), "")
    if system.startswith("CONS"):
        return {"text": "con: it may rain tomorrow"}
    if system.startswith("ROUTER"):
        return {"text": "DONE" if "[e2e_billing]:" in user else "**e2e_billing**"}
    if system.startswith("DESK"):
        return {"text": "desk: " + user.split("\n\n")[-1]}
    if system.startswith("TECH"):
        return {"text": "tech: restart the app"}
    if system.startswith("FRONTDESK"):
        return {"tool_calls": [{"name": "e2e_swarm_transfer_to_e2e_billing", "arguments": {"message": "a double charge"}}]}
    if system.startswith(("OPTIMIST", "PESSIMIST")):
        side = "bright" if system.startswith("OPTIMIST") else "dark"
        return {"text": f"{side} side after {user.count(chr(10) + chr(10) + '[')} turns"}
    return {"text": "ok"}
