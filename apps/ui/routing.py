"""WebSocket routes (live execution updates are added by the operator UI)."""
websocket_urlpatterns: list = []
