"""Django middleware of the REST API.

``ChunkedBodyMiddleware``: a request body sent with ``Transfer-Encoding: chunked`` (no
``Content-Length``; undici, the transport of the official TypeScript SDK, sends every
body so) must reach the views in full, as in any HTTP/1.1 server and in Conductor's.
Under ASGI, Django has already buffered the de-chunked body, but Django REST framework
reads ``CONTENT_LENGTH`` and treats a missing one as an empty body: the SDK's
registrations answered 400 and a started workflow silently lost its input.
"""
from __future__ import annotations

from django.core.exceptions import RequestDataTooBig

from apps.api.bodylimit import FILE_CONTENT_PREFIX

_BODY_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
# bodies their view streams itself (file content, apps/files): never read whole here
STREAMED_PREFIXES = (FILE_CONTENT_PREFIX,)


class ChunkedBodyMiddleware:
    """Give a body-carrying request without ``Content-Length`` the length of the body
    the server received (``request.META["CONTENT_LENGTH"]``, in bytes), so every parser
    downstream (DRF's included) reads it whole. Requests that carry a length are left
    as they are. A body above ``DATA_UPLOAD_MAX_MEMORY_SIZE`` answers 413 with
    Conductor's error body. File content (``STREAMED_PREFIXES``) is left to its view, which
    reads it in chunks."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.method in _BODY_METHODS and not request.META.get("CONTENT_LENGTH") \
                and not request.path.startswith(STREAMED_PREFIXES):
            # ASGIRequest streams from the buffered body file: reading it is cheap and
            # keeps it readable again (request.body caches it).
            try:
                request.META["CONTENT_LENGTH"] = str(len(request.body))
            except RequestDataTooBig as exc:
                from apps.api.exceptions import error_response

                return error_response(exc)
        return self.get_response(request)


class TextGateMiddleware:
    """A request whose path, query string (names and values) or form fields hold a NUL
    character or a lone UTF-16 surrogate answers 400 before any view runs: PostgreSQL
    cannot store or compare such text, so the same request would pass on SQLite and fail
    with a 500 on PostgreSQL. So does a query string or form body whose percent-escapes
    are not UTF-8 (``%FF``, ``%ED%A0%80``), which Django would read as U+FFFD. /api paths get Conductor's error body, every other path (the
    UI, the admin) the ``400.html`` page with the reason."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        from apps.core.errors import InvalidInput

        try:
            self.check(request)
        except InvalidInput as exc:
            if request.path.startswith("/api/"):
                from apps.api.exceptions import error_response

                return error_response(exc)
            from django.template.response import SimpleTemplateResponse

            page = SimpleTemplateResponse("400.html", {"message": exc.message}, status=400)
            return page.render()
        return self.get_response(request)

    @staticmethod
    def check(request) -> None:
        """InvalidInput naming the first part of ``request`` that holds such text."""
        from apps.api.parsers import check_text, check_urlencoded

        check_text(request.path, "The path")
        check_urlencoded(request.META.get("QUERY_STRING", ""), "Query parameter")
        fields = [("Query parameter", request.GET)]
        if not request.path.startswith("/api/") and request.method == "POST" and request.content_type in (
                "application/x-www-form-urlencoded", "multipart/form-data"):  # as CsrfViewMiddleware reads it
            if request.content_type == "application/x-www-form-urlencoded":
                check_urlencoded(request.body, "Form field")
            fields.append(("Form field", request.POST))
        for kind, data in fields:
            for name, values in data.lists():
                check_text(name, f"A {kind.lower()} name")
                for value in values:
                    if isinstance(value, str):
                        check_text(value, f"{kind} '{name}'")


class ApiAuthMiddleware:
    """Every /api request passes ``apps.api.auth.authorize`` (token, role) before any view;
    a refusal answers 401/403 with Conductor's error body. The caller is kept as
    ``request.api_principal`` (None when auth is off or the path is open) and names who
    acted in the execution history (``app:<application name>``, or ``api``). A write that
    was let through is recorded in the audit log once answered (``apps.api.audit``)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.path.startswith("/api/"):
            from apps.api.auth import authorize
            from apps.api.exceptions import error_response
            from apps.core.errors import ConductorError

            from apps.engine import history

            try:
                request.api_principal = authorize(request.method, request.path, request.headers.get("X-Authorization"))
            except ConductorError as exc:
                return error_response(exc)
            # changes made by this call are attributed to the application in the history
            principal = request.api_principal
            from apps.api.audit import AuditedCall, is_audited, record_api_write, route_of

            acting = history.acting(f"app:{principal.name}" if principal else "api")
            if not is_audited(request.method, request.path):
                with acting:
                    return self.get_response(request)
            # the audit row goes into the transaction of the change it records
            with acting, AuditedCall(principal, request.method, request.path, dict(request.GET.lists()),
                                     route=lambda: route_of(request)) as call:
                response = self.get_response(request)
            record_api_write(call, response.status_code, _error_message(response))
            return response
        return self.get_response(request)


def _error_message(response) -> str:
    """Conductor's error ``message`` of a refused answer ("" otherwise)."""
    if response.status_code < 400:
        return ""
    import json

    try:
        return str(json.loads(response.content).get("message") or "")
    except (ValueError, AttributeError):
        return ""
