"""ASGI entry point, served by uvicorn (``python -m conductor_web.serve``): HTTP (Django,
with the worker fast path in front) and WebSocket (Channels) routing."""
import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "conductor_web.settings")
django_asgi_app = get_asgi_application()

from channels.auth import AuthMiddlewareStack  # noqa: E402  (after Django setup)
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402

from apps.api.bodylimit import limit_request_body  # noqa: E402
from apps.api.fastpath import worker_fast_path  # noqa: E402
from apps.api.stopping import answer_when_cut  # noqa: E402
from apps.ui.routing import websocket_urlpatterns  # noqa: E402

application = ProtocolTypeRouter(
    {
        # A request cut off by the server's stop: 503. Bodies above
        # CONDUCTOR_MAX_REQUEST_BODY_BYTES: 413 while they arrive, not once buffered. The
        # worker protocol (poll, update) and starts skip Django's middleware and DRF.
        "http": answer_when_cut(limit_request_body(worker_fast_path(django_asgi_app))),
        "websocket": AllowedHostsOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns))),
    }
)
