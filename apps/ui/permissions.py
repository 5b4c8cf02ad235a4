"""The operator UI's two permissions and the view decorators that enforce them.

``ui.view_executions`` lets a signed-in user see pages; ``ui.operate_workflows`` also
lets them act (and implies viewing). A user without the needed permission gets 403 from
the server whatever the page showed; an anonymous user is sent to the sign-in page.
"""
from __future__ import annotations

from functools import wraps

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied

VIEW_PERMISSION = "ui.view_executions"
OPERATE_PERMISSION = "ui.operate_workflows"


def can_operate(user) -> bool:
    """Whether ``user`` may run actions."""
    return bool(user and user.is_authenticated and user.is_active and user.has_perm(OPERATE_PERMISSION))


def can_view(user) -> bool:
    """Whether ``user`` may see the operator pages (operators may too)."""
    return bool(user and user.is_authenticated and user.is_active
                and (user.has_perm(VIEW_PERMISSION) or user.has_perm(OPERATE_PERMISSION)))


def _required(allowed, refusal: str):
    """A view decorator: sign-in required, then ``allowed(user)``, else 403 ``refusal``."""
    def decorate(view):
        @login_required
        @wraps(view)
        def wrapper(request, *args, **kwargs):
            if not allowed(request.user):
                raise PermissionDenied(refusal)
            return view(request, *args, **kwargs)
        return wrapper
    return decorate


# Sign-in required, then ``ui.view_executions`` (or operate), else 403.
view_required = _required(can_view, "You may not view workflow executions.")
# Sign-in required, then ``ui.operate_workflows``, else 403.
operate_required = _required(can_operate, "You may not operate workflows.")


def ui_context(request) -> dict:
    """The template context processor (``TEMPLATES`` in settings) of what every page needs to
    know: ``{"can_operate": bool, "can_view": bool}`` for ``request.user``. Being a context
    processor, it reaches the pages Django renders itself too (404, 403), so their nav
    matches the user's permissions. A request refused before the authentication middleware
    ran (a bad ``Host`` answers 400 from CommonMiddleware) has no user: it may do nothing."""
    user = getattr(request, "user", None)
    if user is None:
        return {"can_operate": False, "can_view": False}
    return {"can_operate": can_operate(user), "can_view": can_view(user)}
