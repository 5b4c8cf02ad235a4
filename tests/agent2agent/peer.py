"""A loopback A2A agent built with the official ``a2a-sdk`` (its Starlette JSON-RPC routes
with A2A 0.3 compatibility, served by uvicorn in a thread on 127.0.0.1), for the AGENT,
GET_AGENT_CARD and CANCEL_AGENT tests.

What it does with the user's text:
* ``slow <x>``: a task that works for ``SLOW_SECONDS``, then completes with the artifact
  ``ECHO: slow <x>``; ``cancel`` on it ends it ``canceled``;
* ``ask``: a task that asks for input (``input-required``);
* ``fail``: a task that fails with ``cannot do that``;
* anything else: a task completed at once with the text artifact ``ECHO: <text>``.
``sent`` records the text of each message received."""
from __future__ import annotations

import asyncio

from tests.support.asgi_server import AsgiServer

SLOW_SECONDS = 2.0


class Peer:
    def __init__(self):
        from a2a.helpers.proto_helpers import new_task_from_user_message, new_text_artifact, new_text_message
        from a2a.server.agent_execution import AgentExecutor
        from a2a.server.request_handlers import DefaultRequestHandler
        from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
        from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
        from a2a.types.a2a_pb2 import AgentCapabilities, AgentCard, AgentInterface, AgentSkill
        from starlette.applications import Starlette

        self.asgi = AsgiServer()
        self.port, self.url = self.asgi.port, self.asgi.url
        self.sent: list[str] = []
        peer = self

        class Echo(AgentExecutor):
            async def execute(self, context, event_queue):
                text = context.get_user_input()
                peer.sent.append(text)
                if context.current_task is None:
                    await event_queue.enqueue_event(new_task_from_user_message(context.message))
                updater = TaskUpdater(event_queue, context.task_id, context.context_id)
                if text.startswith("slow"):
                    await updater.start_work()
                    await asyncio.sleep(SLOW_SECONDS)
                if text == "ask":
                    await updater.requires_input(new_text_message("which size?", context_id=context.context_id,
                                                                  task_id=context.task_id))
                elif text == "fail":
                    await updater.failed(new_text_message("cannot do that", context_id=context.context_id,
                                                          task_id=context.task_id))
                else:
                    await updater.add_artifact(new_text_artifact("answer", f"ECHO: {text}").parts, name="answer")
                    await updater.complete()

            async def cancel(self, context, event_queue):
                await TaskUpdater(event_queue, context.task_id, context.context_id).cancel()

        card = AgentCard(name="echo-peer", description="Echoes what it is told", version="1.0.0",
                         supported_interfaces=[AgentInterface(protocol_binding="JSONRPC", url=self.url + "/",
                                                              protocol_version="0.3")],
                         capabilities=AgentCapabilities(streaming=True),
                         default_input_modes=["text/plain"], default_output_modes=["text/plain"],
                         skills=[AgentSkill(id="echo", name="echo", description="echo", tags=["echo"])])
        handler = DefaultRequestHandler(agent_executor=Echo(), task_store=InMemoryTaskStore(), agent_card=card)
        app = Starlette(routes=[*create_agent_card_routes(card),
                                *create_jsonrpc_routes(handler, "/", enable_v0_3_compat=True)])
        self.asgi.start(app, name="the A2A peer")

    def close(self) -> None:
        self.asgi.close()
