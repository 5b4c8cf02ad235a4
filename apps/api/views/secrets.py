"""Conductor's environment store (EnvironmentResource) and secrets store (SecretController,
the Orkes SecretResource the SDKs' secret clients call). Endpoints and roles in
docs/secrets.md; reading a secret's value and every write need the admin role
(apps.api.auth.required_role)."""
from __future__ import annotations

import json

from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework.response import Response

from apps.api.parsers import check_text
from apps.api.views.base import ConductorApi, empty, text
from apps.core.errors import InvalidInput, NotFound, PayloadTooLarge
from apps.metadata import environment, secrets


def _checked_name(name: str, what: str) -> str:
    """``name`` when it is a valid key (``[a-zA-Z0-9_-]+``, at most 255), else a 400 naming ``key``."""
    if not secrets.valid_name(name):
        raise InvalidInput(f"Invalid {what} name '{name[:100]}': it must match [a-zA-Z0-9_-]+ (at most 255 characters)",
                           validation_errors=[{"path": "key", "message": "must match [a-zA-Z0-9_-]+",
                                               "invalidValue": name[:255]}])
    return name


def body_value(request) -> str:
    """The value a PUT carries as its whole body. With ``Content-Type: application/json``
    a body that is one JSON string literal is decoded, and so is the Python SDK's form
    (``json.dumps(value)`` with its quotes stripped: ``a\\"b`` is ``a"b``), except from
    the Java SDK (okhttp), which sends the raw string under that type; anything else (a
    ``text/plain`` body, curl) is taken as it is. Raises InvalidInput for an empty value
    or one with a NUL, PayloadTooLarge above 65535 characters."""
    raw = request.body.decode("utf-8", errors="replace")
    value = raw
    if "json" in (request.content_type or ""):
        raw_sender = request.headers.get("User-Agent", "").lower().startswith("okhttp")
        for candidate in (raw,) if raw_sender else (raw, f'"{raw}"'):
            try:
                decoded = json.loads(candidate)
            except ValueError:
                continue
            if isinstance(decoded, str):
                value = decoded
                break
    if not value:
        raise InvalidInput("The value is required: send it as the request body",
                           validation_errors=[{"path": "body", "message": "must not be empty"}])
    if len(value) > secrets.MAX_VALUE_CHARS:
        raise PayloadTooLarge(f"The value is longer than {secrets.MAX_VALUE_CHARS} characters")
    return check_text(value, "The value")


class EnvironmentApi(ConductorApi):
    """``GET /api/environment``: ``[{"name", "value"}]``, the store and the
    ``CONDUCTOR_ENV_``-prefixed process variables."""

    @extend_schema(operation_id="getAllEnvironmentVariables")
    def get(self, request):
        return Response(environment.env_list())


class _EntryApi(ConductorApi):
    """``GET`` (text/plain, 404 when unknown), ``PUT`` (body: the value) and ``DELETE``
    (200 whether or not it existed) of one entry of a store, ``/{key}``."""

    what = ""
    read = write = remove = None  # the store's functions (staticmethod)

    def get(self, request, key):
        value = self.read(_checked_name(key, self.what))
        if value is None:
            raise NotFound(f"No {self.what} named {key}")
        return text(value)

    def put(self, request, key):
        self.write(name=_checked_name(key, self.what), value=body_value(request))
        return empty()

    def delete(self, request, key):
        self.remove(name=_checked_name(key, self.what))
        return empty()


@extend_schema_view(get=extend_schema(operation_id="getEnvironmentVariable"),
                    put=extend_schema(operation_id="createOrUpdateEnvVariable"),
                    delete=extend_schema(operation_id="deleteEnvVariable"))
class EnvironmentVariableApi(_EntryApi):
    """``GET /api/environment/{key}`` (read-only role); ``PUT`` and ``DELETE`` of a stored
    variable (admin; a ``CONDUCTOR_ENV_`` process variable cannot be removed)."""

    what = "environment variable"
    read, write, remove = (staticmethod(environment.env_get), staticmethod(environment.env_put),
                           staticmethod(environment.env_delete))


class SecretsApi(ConductorApi):
    """``GET /api/secrets`` (the names a caller may grant: all of them here) and ``POST
    /api/secrets`` (list all names): ``[name]``, sorted; never a value."""

    @extend_schema(operation_id="listSecretsThatUserCanGrantAccessTo")
    def get(self, request):
        return Response(secrets.secret_names())

    @extend_schema(operation_id="listAllSecretNames")
    def post(self, request):
        return Response(secrets.secret_names())


class SecretsV2Api(ConductorApi):
    """``GET /api/secrets/v2`` and ``/api/secrets-v2``: ``[{"name", "createTime",
    "updateTime"}]`` (epoch ms), no part of any value."""

    @extend_schema(operation_id="listSecretsWithMetadata")
    def get(self, request):
        return Response(secrets.secret_metadata())


@extend_schema_view(get=extend_schema(operation_id="getSecret"), put=extend_schema(operation_id="putSecret"),
                    delete=extend_schema(operation_id="deleteSecret"))
class SecretApi(_EntryApi):
    """``GET /api/secrets/{key}``: the value as text/plain; ``PUT`` and ``DELETE`` (as
    Conductor's SecretController). Every one of them needs the admin role."""

    what = "secret"
    read, write, remove = (staticmethod(secrets.secret_get), staticmethod(secrets.secret_put),
                           staticmethod(secrets.secret_delete))


class SecretsV2AliasApi(SecretsV2Api):
    """``GET /api/secrets-v2``: the path the Python SDK's client calls, the same answer."""

    @extend_schema(operation_id="listSecretsWithTagsThatUserCanGrantAccessTo")
    def get(self, request):
        return super().get(request)


class SecretExistsApi(ConductorApi):
    """``GET /api/secrets/{key}/exists``: ``true`` or ``false``."""

    @extend_schema(operation_id="secretExists")
    def get(self, request, key):
        return Response(secrets.secret_exists(_checked_name(key, "secret")))

