"""The OpenAPI 3 document of this server's API (``/api-docs``; Swagger UI at
``/swagger-ui/index.html``), as Conductor's server serves its own.

drf-spectacular generates it from the code: every DRF view under ``/api`` with its
methods and typed path parameters. Two hooks (``settings.SPECTACULAR_SETTINGS``) then
keep only the ``/api`` paths (``only_api_paths``) and complete the document
(``complete_document``):

* add the operations the ASGI fast path answers before Django (poll, batch poll, task
  update, update-v2, start), described beside their code in
  ``apps.api.fastpath.OPENAPI_OPERATIONS``;
* give each operation Conductor also serves Conductor's own description of it
  (``conductor-openapi.json`` beside this module: Conductor's published OpenAPI with
  ``x-fuzz-patch`` corrections where Conductor's server answers otherwise than its
  document says): its ``operationId``, summary, tag, query parameters, request body and
  success response, matched by method and path shape (path parameter names aside). Our
  own path parameter names and types stay. Operations Conductor does not serve (the
  scheduler, ``/api/token``, health) keep what the code says;
* give every operation Conductor's error body (``ErrorResponse``) for 4XX answers.
"""
from __future__ import annotations

import copy
import functools
import json
import re
from pathlib import Path

CONDUCTOR_DOCUMENT = Path(__file__).with_name("conductor-openapi.json")
ERROR_RESPONSE = {"description": "Conductor's error body",
                  "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorResponse"}}}}


def only_api_paths(endpoints, **kwargs):
    """Preprocessing hook: the endpoints under ``/api/`` (not the UI, admin or probes
    outside it). ``endpoints`` are drf-spectacular's ``(path, path_regex, method, view)``."""
    return [e for e in endpoints if e[0].startswith("/api/")]


@functools.cache
def conductor_document() -> dict:
    """Conductor's OpenAPI document (parsed once)."""
    return json.loads(CONDUCTOR_DOCUMENT.read_text())


def _shape(path: str) -> str:
    return re.sub(r"\{[^}]+\}", "{}", path.rstrip("/"))


def _conductor_operations() -> dict:
    """``(path shape, method) -> operation`` of Conductor's document."""
    return {(_shape(path), method): op for path, ops in conductor_document()["paths"].items()
            for method, op in ops.items() if isinstance(op, dict)}


def complete_document(result, generator, request, public):
    """Postprocessing hook: add the fast-path and file-content operations, Conductor's descriptions of the
    operations it serves, its component schemas and the 4XX error body (see the module
    doc); the open paths (``auth.OPEN_PATHS``) need no token. Returns the document
    (``result``, changed in place)."""
    from apps.api.auth import OPEN_PATHS
    from apps.api.fastpath import OPENAPI_OPERATIONS
    from apps.files.views import OPENAPI_OPERATIONS as FILE_CONTENT_OPERATIONS

    paths = result.setdefault("paths", {})
    for path, ops in (*OPENAPI_OPERATIONS.items(), *FILE_CONTENT_OPERATIONS.items()):
        paths.setdefault(path, {}).update(copy.deepcopy(ops))
    conductor = _conductor_operations()
    for path, ops in paths.items():
        for method, op in ops.items():
            theirs = conductor.get((_shape(path), method))
            if theirs is not None and not op.get("x-fast-path"):
                _describe_as_conductor(op, theirs)
            for response in op.get("responses", {}).values():
                if response.get("description") == "No response body" and "content" not in response:
                    response["description"] = "OK"
            op.setdefault("responses", {}).setdefault("4XX", ERROR_RESPONSE)
            op.pop("x-fast-path", None)
            if path in OPEN_PATHS:
                op["security"] = []
    schemas = result.setdefault("components", {}).setdefault("schemas", {})
    for name, schema in conductor_document()["components"]["schemas"].items():
        schemas.setdefault(name, copy.deepcopy(schema))
    result["paths"] = dict(sorted(paths.items()))
    return result


def _describe_as_conductor(op: dict, theirs: dict) -> None:
    """Give our generated operation ``op`` Conductor's description ``theirs`` (our path
    parameters kept)."""
    for key in ("operationId", "summary", "tags"):
        if key in theirs:
            op[key] = copy.deepcopy(theirs[key])
    ours = [p for p in op.get("parameters", []) if p.get("in") == "path"]
    op["parameters"] = ours + [copy.deepcopy(p) for p in theirs.get("parameters", []) if p.get("in") != "path"]
    if "requestBody" in theirs:
        op["requestBody"] = copy.deepcopy(theirs["requestBody"])
    responses = {code: copy.deepcopy(r) for code, r in theirs.get("responses", {}).items()}
    if responses:
        op["responses"] = responses
