"""An agent written with the Python SDK's ``conductor.ai.agents``, compiled and run by this
server (``/api/agent/*``), with no keys: a scripted stand-in model on 127.0.0.1.

    # terminal 1: the server, its `openai` provider pointed at the stand-in model
    CONDUCTOR_AI_OPENAI_BASE_URL=http://127.0.0.1:3001/v1 make run
    # terminal 2: this example
    export CONDUCTOR_SERVER_URL=http://127.0.0.1:8080/api
    .venv/bin/python examples/sdk_agent.py

The stand-in (``--port``, default 3001, the port of ``examples/agent_demo.py``) answers
``/v1/chat/completions`` as a model would: it asks for ``get_weather`` once, then answers
with what the tool said. With a real provider configured instead (``CONDUCTOR_AI_OPENAI_API_KEY``),
run with ``--no-model``. The SDK runs ``get_weather`` in a worker process of its own;
the script prints ``Status:`` and ``Output:`` and exits 0 when the run COMPLETED.
"""
import argparse
import json
import sys
import time

from conductor.ai.agents import Agent, AgentRuntime, tool

from agent_demo import DEFAULT_PORT, DemoWorld  # examples/, the script's own folder


@tool
def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"18C and sunny in {city}"


agent = Agent(
    name="weather_agent",
    model="openai/gpt-4o-mini",
    tools=[get_weather],
    instructions="You answer weather questions. Use get_weather.",
)


class ScriptedModel(DemoWorld):
    """The demo's stand-in server, whose chat endpoint asks for ``get_weather`` first and
    then answers with the tool's result."""

    def answer(self, path, body):
        if path != "/v1/chat/completions" or body is None:
            return super().answer(path, body)
        messages = body.get("messages") or []
        results = [m for m in messages if m.get("role") == "tool"]
        message = {"role": "assistant", "content": None}
        if results:
            message["content"] = "Here is the forecast: " + json.loads(results[-1]["content"])["result"]
        else:
            message["tool_calls"] = [{"id": f"call_{time.time_ns()}", "type": "function", "function": {
                "name": "get_weather", "arguments": json.dumps({"city": "Paris"})}}]
        return 200, {"id": "chatcmpl-sdk-agent", "object": "chat.completion", "created": int(time.time()),
                     "model": body.get("model"), "usage": {"prompt_tokens": 10, "completion_tokens": 5,
                                                            "total_tokens": 15},
                     "choices": [{"index": 0, "message": message,
                                  "finish_reason": "stop" if results else "tool_calls"}]}, {}


def main() -> int:
    parser = argparse.ArgumentParser(description="An SDK agent run by conductor-web (see the module doc).")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port of the stand-in (default {DEFAULT_PORT})")
    parser.add_argument("--no-model", action="store_true", help="use the provider the server is configured with")
    args = parser.parse_args()
    model = None if args.no_model else ScriptedModel(args.port)
    try:
        with AgentRuntime() as runtime:
            result = runtime.run(agent, "What's the weather in Paris?", timeout=120)
    finally:
        if model is not None:
            model.close()
    print("Status:", result.status)
    print("Output:", json.dumps(result.output))
    return 0 if result.status == "COMPLETED" else 1


if __name__ == "__main__":
    sys.exit(main())
