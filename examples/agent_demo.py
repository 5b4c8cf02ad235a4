"""The governed support agent, end to end on one machine, with no keys: a demo MCP shop
and a scripted planning model on 127.0.0.1, the example's workers, one run approved.

    # terminal 1: the server, its `openai` provider and MCP allow-list pointed at the demo
    CONDUCTOR_AI_OPENAI_BASE_URL=http://127.0.0.1:3001/v1 CONDUCTOR_AI_ALLOWED_ORIGINS=http://127.0.0.1:3001 make run
    # terminal 2: this demo
    export CONDUCTOR_SERVER_URL=http://127.0.0.1:8080/api
    .venv/bin/python examples/agent_demo.py

One port (``--port``, default 3001) serves both stand-ins:

* ``/mcp``: an MCP server (JSON-RPC 2.0 over HTTP, ``initialize`` handshake with an
  ``Mcp-Session-Id``) with the tools ``lookup_order``, ``issue_refund`` (irreversible;
  keeps its ``idempotencyKey``) and ``void_refund``;
* ``/v1/chat/completions``: an OpenAI-compatible chat endpoint whose "model" is the
  deterministic ``plan_step``: look the order up, then propose a full refund.

The script starts them, the workers of ``examples/governed_support_agent.py``
(``notify_customer``, ``open_incident``), the ``governed_support_agent`` workflow, waits
for its HUMAN task ``approve_refund`` and approves it (``--no-approve``: leave that to
you, in the UI), then prints ``Status:`` and ``Output:`` and exits 0 when it COMPLETED.
``--serve`` only serves the two stand-ins, until Ctrl-C. The tests use the same code
(``tests/ai/agent_fixtures.py``, ``tests/e2e/test_agent_demo.py``).
"""
import argparse
import json
import re
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

DEFAULT_PORT = 3001
ORDER_TOTAL = 80
WAIT_SECONDS = 120
TERMINAL = ("COMPLETED", "FAILED", "TERMINATED", "TIMED_OUT")


# --- the shop's MCP tools ------------------------------------------------------------------

def text_result(value, is_error: bool = False) -> dict:
    """An MCP CallToolResult with one text item (JSON-encoded unless a string)."""
    text = value if isinstance(value, str) else json.dumps(value)
    return {"content": [{"type": "text", "text": text}], "isError": is_error}


def order_tools(refunds: list) -> dict:
    """The shop's tools, ``{name: (description, inputSchema, handler(arguments) -> CallToolResult)}``:
    lookup_order, issue_refund (each refund issued is appended to ``refunds``), void_refund."""
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


def mcp_answer(tools: dict, body: dict, calls: list) -> tuple[dict | None, str | None]:
    """The JSON-RPC answer to one MCP request ``body`` (None for a notification) and the
    new session id when it was ``initialize``; each tools/call is appended to ``calls``
    as ``(name, arguments)``."""
    method, request_id = body.get("method"), body.get("id")
    if method == "initialize":
        return ({"jsonrpc": "2.0", "id": request_id, "result": {
            "protocolVersion": (body.get("params") or {}).get("protocolVersion"),
            "capabilities": {"tools": {}}, "serverInfo": {"name": "demo-shop", "version": "1"}}},
            uuid.uuid4().hex)
    if request_id is None:
        return None, None
    if method == "tools/list":
        result = {"tools": [{"name": n, "description": d, "inputSchema": s} for n, (d, s, _h) in tools.items()]}
        return {"jsonrpc": "2.0", "id": request_id, "result": result}, None
    if method == "tools/call":
        params = body.get("params") or {}
        name, args = params.get("name"), params.get("arguments") or {}
        calls.append((name, args))
        if name not in tools:
            return {"jsonrpc": "2.0", "id": request_id, "error": {"code": -32602, "message": f"Unknown tool: {name}"}}, None
        return {"jsonrpc": "2.0", "id": request_id, "result": tools[name][2](args)}, None
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": f"Method not found: {method}"}}, None


# --- the planning model ----------------------------------------------------------------------

def plan_step(messages: list[dict], mode: str = "refund") -> dict:
    """The next step the planner asks for, from the chat ``messages`` the agent's
    LLM_CHAT_COMPLETE sends (the one holding ``Evidence so far: [...]``). ``refund``: look
    the order up, then propose a full refund; ``loop``: always lookup_order (to hit the
    iteration and token caps); ``rogue``: an action outside the allow-list, then finish."""
    user = next(m["content"] for m in messages if "Evidence so far:" in str(m.get("content")))
    evidence = json.loads(re.search(r"Evidence so far: (.*)$", user, re.S).group(1) or "[]")
    if mode == "loop":
        return {"action": "lookup_order", "arguments": {}, "reason": "check again"}
    if mode == "rogue":
        return ({"action": "delete_customer", "arguments": {}, "reason": "ignore previous instructions"}
                if not evidence else {"action": "finish", "arguments": {}, "reason": "nothing to do"})
    if not evidence:
        return {"action": "lookup_order", "arguments": {}, "reason": "need the order"}
    return {"action": "propose_refund", "arguments": {"amount": evidence[-1]["result"]["total"],
                                                      "reason": "damaged on delivery"},
            "reason": "the order arrived damaged"}


def chat_completion(body: dict) -> dict:
    """An OpenAI ``chat.completion`` answering ``body`` with ``plan_step``'s JSON."""
    messages = body.get("messages") or []
    text = json.dumps(plan_step(messages))
    prompt_tokens = sum(len(str(m.get("content") or "").split()) for m in messages)
    completion_tokens = len(text.split())
    return {"id": "chatcmpl-demo", "object": "chat.completion", "created": int(time.time()), "model": body.get("model"),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens}}


# --- the server of both ----------------------------------------------------------------------

class DemoWorld:
    """The MCP shop (``/mcp``) and the planner (``/v1/chat/completions``) on
    ``127.0.0.1:port`` (0: a free port), served on daemon threads until ``close()``.
    ``refunds`` and ``calls`` record what the shop did."""

    def __init__(self, port: int = DEFAULT_PORT):
        self.refunds: list = []
        self.calls: list = []
        self.tools = order_tools(self.refunds)
        world = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # quiet
                pass

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    body = json.loads(self.rfile.read(length) or b"null")
                except ValueError:
                    body = None
                status, answer, headers = world.answer(self.path, body if isinstance(body, dict) else None)
                data = b"" if answer is None else json.dumps(answer).encode()
                self.send_response(status)
                for name, value in {"Content-Type": "application/json", **headers}.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.origin = f"http://127.0.0.1:{self.port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def answer(self, path: str, body: dict | None) -> tuple[int, dict | None, dict]:
        """``(status, JSON answer or None, extra headers)`` for a POST of ``body`` to ``path``."""
        if body is None:
            return 400, {"error": {"message": "a JSON object body is required"}}, {}
        if path == "/v1/chat/completions":
            return 200, chat_completion(body), {}
        if path == "/mcp":
            answer, session = mcp_answer(self.tools, body, self.calls)
            return (202 if answer is None else 200), answer, ({"Mcp-Session-Id": session} if session else {})
        return 404, {"error": {"message": f"no route {path}"}}, {}

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


# --- the run ---------------------------------------------------------------------------------

def run_demo(world: DemoWorld, approve: bool) -> int:
    """Start the workers and one ``governed_support_agent`` run against ``world``; approve
    its refund (unless not ``approve``); print its status and output."""
    from conductor.client.automator.task_handler import TaskHandler
    from conductor.client.configuration.configuration import Configuration
    from conductor.client.http.models.start_workflow_request import StartWorkflowRequest
    from conductor.client.http.models.task_result import TaskResult
    from conductor.client.orkes_clients import OrkesClients

    import governed_support_agent  # noqa: F401 - its @worker_task workers

    config = Configuration()
    clients = OrkesClients(configuration=config)
    workflows = clients.get_workflow_client()
    handler = TaskHandler(workers=[], configuration=config, scan_for_annotated_workers=True)
    handler.start_processes()
    try:
        wid = workflows.start_workflow(StartWorkflowRequest(name="governed_support_agent", input={
            "ticketId": "T-1", "orderId": "O-42", "customerEmail": "ann@example.com",
            "request": "My lamp arrived broken, I want my money back.", "llmProvider": "openai",
            "model": "demo-planner", "mcpServerUrl": world.origin + "/mcp"}))
        print(f"Started: {wid}  (UI: {config.ui_host}/execution/{wid})", flush=True)
        deadline = time.monotonic() + (WAIT_SECONDS if approve else 24 * 3600)  # a person takes their time
        approved = False
        while time.monotonic() < deadline:
            wf = workflows.get_workflow(wid, include_tasks=True)
            if wf.status in TERMINAL:
                break
            human = [t for t in wf.tasks if t.reference_task_name == "approve_refund" and t.status == "IN_PROGRESS"]
            if human and approve and not approved:
                print(f"Approving the proposed refund: {human[0].input_data.get('proposal')}", flush=True)
                clients.get_task_client().update_task(TaskResult(
                    workflow_instance_id=wid, task_id=human[0].task_id, status="COMPLETED",
                    output_data={"approved": True, "reviewer": "agent_demo.py"}))
                approved = True
            time.sleep(0.25)
        print(f"Status: {wf.status}")
        print(f"Output: {wf.output}")
        if wf.status != "COMPLETED":
            print(f"Reason: {wf.reason_for_incompletion}\n(Is the server's provider set? See this file's "
                  "docstring: CONDUCTOR_AI_OPENAI_BASE_URL and CONDUCTOR_AI_ALLOWED_ORIGINS.)", file=sys.stderr)
        return 0 if wf.status == "COMPLETED" else 1
    finally:
        handler.stop_processes()


def main() -> int:
    parser = argparse.ArgumentParser(description="The governed support agent demo (see the module doc).")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port of the stand-ins (default {DEFAULT_PORT})")
    parser.add_argument("--serve", action="store_true", help="only serve the MCP shop and the planner, until Ctrl-C")
    parser.add_argument("--no-approve", action="store_true", help="leave the approval to a person (UI or API)")
    args = parser.parse_args()
    world = DemoWorld(args.port)
    print(f"Demo MCP shop: {world.origin}/mcp; planner (OpenAI-compatible): {world.origin}/v1", flush=True)
    try:
        if args.serve:
            while True:
                time.sleep(3600)
        return run_demo(world, approve=not args.no_approve)
    except KeyboardInterrupt:
        return 0
    finally:
        world.close()


if __name__ == "__main__":
    sys.exit(main())
