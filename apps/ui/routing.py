"""WebSocket routes: one live channel per execution; any other path is refused (403 at
the handshake) instead of failing in the router."""
from channels.generic.websocket import WebsocketConsumer
from django.urls import path, re_path

from apps.ui.consumers import ExecutionConsumer


class RefusedConsumer(WebsocketConsumer):
    """A WebSocket handshake on a path without a route: refused (403), as Channels refuses
    one its origin or auth check turns away."""

    def connect(self):
        self.close()


websocket_urlpatterns = [
    path("ws/executions/<str:workflow_id>/", ExecutionConsumer.as_asgi()),
    re_path(r"", RefusedConsumer.as_asgi()),
]
