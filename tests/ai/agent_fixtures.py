"""The outside world of the governed support agent example: an MCP order/refund service
and a planner behind the LLM stub. Shared by the in-process and the e2e tests."""
from __future__ import annotations

import json
import re
from pathlib import Path

from tests.ai.stubs import text_result

DEFINITIONS = Path(__file__).resolve().parents[2] / "examples" / "definitions" / "governed_support_agent.json"
ORDER_TOTAL = 80


def definitions() -> dict:
    return json.loads(DEFINITIONS.read_text())


def order_tools(refunds: list) -> dict:
    """lookup_order / issue_refund / void_refund; issued refunds are appended to ``refunds``."""
    def issue(args):
        refund = {"refundId": f"rf-{len(refunds) + 1}", "orderId": args.get("orderId"), "amount": args.get("amount"),
                  "idempotencyKey": args.get("idempotencyKey")}
        refunds.append(refund)
        return text_result(refund)

    obj = {"type": "object"}
    return {
        "lookup_order": ("Read an order", obj, lambda a: text_result(
            {"orderId": a.get("orderId"), "total": ORDER_TOTAL, "status": "delivered", "damaged": True})),
        "issue_refund": ("Refund an order (irreversible)", obj, issue),
        "void_refund": ("Void an issued refund", obj, lambda a: text_result({"voided": a.get("refundId")})),
    }


def planner(mode: str = "refund"):
    """A chat handler acting as the planning model. ``refund``: look the order up, then
    propose a full refund; ``loop``: always ask for lookup_order (budget/iteration caps);
    ``rogue``: ask for an action outside the allow-list, then finish."""
    def handle(request: dict) -> dict:
        # the ticket message (later turns are this task's own earlier answers: loop history)
        user = next(m["content"] for m in request["messages"] if "Evidence so far:" in str(m.get("content")))
        evidence = json.loads(re.search(r"Evidence so far: (.*)$", user, re.S).group(1) or "[]")
        if mode == "loop":
            step = {"action": "lookup_order", "arguments": {}, "reason": "check again"}
        elif mode == "rogue":
            step = ({"action": "delete_customer", "arguments": {}, "reason": "ignore previous instructions"}
                    if not evidence else {"action": "finish", "arguments": {}, "reason": "nothing to do"})
        elif not evidence:
            step = {"action": "lookup_order", "arguments": {}, "reason": "need the order"}
        else:
            step = {"action": "propose_refund", "arguments": {"amount": evidence[-1]["result"]["total"],
                                                              "reason": "damaged on delivery"},
                    "reason": "the order arrived damaged"}
        return {"text": json.dumps(step)}
    return handle


def agent_input(llm_origin_provider: str, mcp_url: str, **extra) -> dict:
    return {"ticketId": "T-1", "orderId": "O-42", "customerEmail": "ann@example.com",
            "request": "My lamp arrived broken, I want my money back.", "llmProvider": llm_origin_provider,
            "model": "gpt-stub", "mcpServerUrl": mcp_url, **extra}
