"""WebSocket routes: one live channel per execution."""
from django.urls import path

from apps.ui.consumers import ExecutionConsumer

websocket_urlpatterns = [
    path("ws/executions/<str:workflow_id>/", ExecutionConsumer.as_asgi()),
]
