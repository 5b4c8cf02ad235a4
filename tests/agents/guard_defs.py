"""Agents with guardrails, memory and the other configuration keys of
``conductor.ai.agents``, written as the SDK's documentation writes them, and the scripted
LLM (``script``) the loopback OpenAI-compatible stub answers with (by the first system
message, as ``agent_defs``). A module of its own: the SDK's worker processes import it.

* ADVISOR: "buy crypto now" until a guardrail's feedback is in the conversation, then
  "save a little every month"; the JUDGE (Conductor's judge prompt) fails any content
  naming crypto;
* SHELL: calls ``run_command("rm -rf /")`` until a guardrail's feedback is in the
  conversation, then ``run_command("ls")``, then reports the tool's answer;
* SCRIBE: "draft 1" unless its prompt carries a guardrail's feedback, then "final draft";
* COUNTER: "there are 3 roses" (a human reviews it); the REVIEW READER (Conductor's
  normalizer prompt) reads "looks good" as an approval;
* RECALL: answers with the memory it was given (the messages between its instructions
  and the prompt);
* REPORTER: structured output: a JSON weather report;
* AUDITOR: answers at once ("all fine") until told it MUST call a tool, then calls
  ``file_report`` with the pre-loaded balance it was given, then reports;
* CHECKER: "STOP: nothing to do" (its gate ends the pipeline); WRITER: never reached;
* DISPATCH: hands the conversation to ``g2e_scribe`` with "a summary, please" (a swarm
  whose termination ends it on that mention, before the scribe's turn).
"""
from __future__ import annotations

import json

import re

from conductor.ai.agents import (Agent, Guardrail, GuardrailResult, LLMGuardrail, RegexGuardrail,
                                 TextMentionTermination, guardrail, tool)
from conductor.ai.agents.callback import CallbackHandler
from conductor.ai.agents.gate import TextGate
from conductor.ai.agents.memory import ConversationMemory
from pydantic import BaseModel

MODEL = "openai/gpt-4o-mini"


@guardrail
def no_digits_here(content: str) -> GuardrailResult:
    """Answers must not contain digits."""
    if any(ch.isdigit() for ch in content):
        return GuardrailResult(passed=False, message="the answer must not contain digits")
    return GuardrailResult(passed=True)


@guardrail
def no_destruction(content: str) -> GuardrailResult:
    """Tool calls must not delete everything."""
    if "rm -rf" in content:
        return GuardrailResult(passed=False, message="destructive commands are not allowed")
    return GuardrailResult(passed=True)


@tool(guardrails=[Guardrail(no_destruction, position="input", on_fail="retry")])
def run_command(command: str) -> str:
    """Run a shell command (pretend)."""
    return f"ran {command}"


def advisor_agent() -> Agent:
    judge = LLMGuardrail(model=MODEL, policy="No investment advice about crypto.", name="no_crypto",
                         on_fail="retry", max_retries=3)
    return Agent(name="g2e_advisor", model=MODEL, instructions="ADVISOR: give money advice.", guardrails=[judge])


def shell_agent() -> Agent:
    return Agent(name="g2e_shell", model=MODEL, tools=[run_command], instructions="SHELL: run what is asked.")


def scribe_team() -> Agent:
    scribe = Agent(name="g2e_scribe", model=MODEL, instructions="SCRIBE: write the text.")
    check = RegexGuardrail(patterns=[r"draft \d"], name="no_numbered_drafts", message="no numbered drafts",
                           on_fail="retry")
    return Agent(name="g2e_pipeline", model=MODEL, agents=[scribe], strategy="sequential", guardrails=[check])


def counter_agent(name: str = "g2e_counter") -> Agent:
    return Agent(name=name, model=MODEL, instructions="COUNTER: count the roses.",
                 guardrails=[Guardrail(no_digits_here, on_fail="human")])


def recall_agent() -> Agent:
    memory = ConversationMemory()
    memory.add_user_message("My name is Ada.")
    memory.add_assistant_message("Nice to meet you, Ada.")
    return Agent(name="g2e_recall", model=MODEL, instructions="RECALL: use what you remember.", memory=memory)


class WeatherReport(BaseModel):
    city: str
    temperature: float


def reporter_agent() -> Agent:
    return Agent(name="g2e_reporter", model=MODEL, instructions="REPORTER: report the weather.",
                 output_type=WeatherReport)


@tool
def get_balance(account: str) -> str:
    """The balance of an account."""
    return f"{account}: 120 EUR"


@tool
def file_report(summary: str) -> str:
    """File the audit report."""
    return f"filed: {summary}"


class Quiet(CallbackHandler):
    """Runs around each model call (in the SDK's callback worker); changes nothing."""

    def on_model_start(self, **kwargs):
        return None


def auditor_agent() -> Agent:
    return Agent(name="g2e_auditor", model=MODEL, instructions="AUDITOR: audit the account.",
                 tools=[get_balance, file_report], prefill_tools=[get_balance.call(account="A1")],
                 required_tools=["file_report"], callbacks=[Quiet()])


def pipeline_agent() -> Agent:
    checker = Agent(name="g2e_checker", model=MODEL, instructions="CHECKER: decide.", gate=TextGate("STOP"))
    writer = Agent(name="g2e_writer", model=MODEL, instructions="WRITER: write.")
    return checker >> writer


def dispatch_swarm() -> Agent:
    scribe = Agent(name="g2e_scribe", model=MODEL, instructions="SCRIBE: write the text.")
    return Agent(name="g2e_dispatch", model=MODEL, strategy="swarm", agents=[scribe], synthesize=False,
                 instructions="DISPATCH: hand the work over.", termination=TextMentionTermination("summary"))


def _system(messages: list) -> str:
    return next((m.get("content") or "" for m in messages if m.get("role") == "system"), "")


def _told(messages: list) -> bool:
    return any("rejected by the guardrail" in str(m.get("content")) for m in messages if m.get("role") == "user")


def script(request: dict) -> dict:
    """The stub LLM's answer to one OpenAI chat request (see the module docstring)."""
    messages = request.get("messages") or []
    system = _system(messages)
    last = str(messages[-1].get("content") or "") if messages else ""
    if system.startswith("You are a content safety evaluator"):
        if "crypto" in last:
            return {"text": json.dumps({"passed": False, "reason": "no crypto advice"})}
        return {"text": "```json\n" + json.dumps({"passed": True, "reason": ""}) + "\n```"}
    if system.startswith("Convert the human's response"):
        return {"text": json.dumps({"approved": "looks good" in last, "reason": "the reviewer said no"})}
    if system.startswith("ADVISOR"):
        return {"text": "save a little every month" if _told(messages) else "buy crypto now"}
    if system.startswith("SHELL"):
        results = [m for m in messages if m.get("role") == "tool"]
        if results:
            return {"text": "done: " + json.loads(results[-1]["content"]).get("result", "")}
        return {"tool_calls": [{"name": "run_command", "arguments": {"command": "ls" if _told(messages) else "rm -rf /"}}]}
    if system.startswith("SCRIBE"):
        return {"text": "final draft" if "rejected by the guardrail" in last else "draft 1"}
    if system.startswith("COUNTER"):
        return {"text": "there are 3 roses"}
    if system.startswith("RECALL"):
        return {"text": "remembered: " + " | ".join(f"{m['role']}: {m.get('content')}" for m in messages[1:-1])}
    if system.startswith("REPORTER"):
        return {"text": json.dumps({"city": "Paris", "temperature": 18.5})}
    if system.startswith("AUDITOR"):
        results = [m for m in messages if m.get("role") == "tool"]
        if results:
            return {"text": "report " + json.loads(results[-1]["content"]).get("result", "")}
        if any("You MUST call these tools" in str(m.get("content")) for m in messages):
            balance = re.search(r"A1: \d+ EUR", "".join(str(m.get("content")) for m in messages))
            return {"tool_calls": [{"name": "file_report", "arguments": {"summary": balance.group(0) if balance else "?"}}]}
        return {"text": "all fine"}
    if system.startswith("CHECKER"):
        return {"text": "STOP: nothing to do"}
    if system.startswith("DISPATCH"):
        return {"tool_calls": [{"name": "g2e_dispatch_transfer_to_g2e_scribe", "arguments": {"message": "a summary, please"}}]}
    if system.startswith("WRITER"):
        return {"text": "written"}
    return {"text": "ok"}
