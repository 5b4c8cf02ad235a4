"""``POST /api/token`` (an access key for a JWT) and ``GET /api/token/userInfo``, as the
Orkes Conductor server answers the SDKs (see ``apps.api.auth``)."""
from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response

from apps.api import auth
from apps.api.parsers import require_json
from apps.api.views.base import ConductorApi
from apps.core.errors import InvalidInput


class TokenApi(ConductorApi):
    """``POST /api/token`` with ``{"keyId", "keySecret"}`` -> ``{"token"}``; 401 for a bad
    key, 404 when auth is off."""

    @extend_schema(
        operation_id="generateToken", tags=["token-resource"], auth=[],
        summary="Trade an access key for a token to send as X-Authorization",
        request=inline_serializer("GenerateTokenRequest", {"keyId": serializers.CharField(),
                                                           "keySecret": serializers.CharField()}),
        responses={200: inline_serializer("Token", {"token": serializers.CharField()}),
                   401: OpenApiResponse(description="Unknown, revoked or wrong key"),
                   404: OpenApiResponse(description="Authentication is off on this server")})
    def post(self, request):
        body = require_json(request.data)
        if not isinstance(body, dict):
            raise InvalidInput("The request body must be {\"keyId\": ..., \"keySecret\": ...}")
        return Response({"token": auth.issue_token(body.get("keyId"), body.get("keySecret"))})


class UserInfoApi(ConductorApi):
    """``GET /api/token/userInfo`` -> the calling application as a ConductorUser:
    ``{id, name, uuid, applicationUser: true, roles: [{name}]}``."""

    @extend_schema(operation_id="getUserInfo", tags=["token-resource"], summary="The calling application",
                   responses={200: inline_serializer("ConductorApplicationUser", {
                       "id": serializers.CharField(), "uuid": serializers.CharField(), "name": serializers.CharField(),
                       "applicationUser": serializers.BooleanField(),
                       "roles": serializers.ListField(child=serializers.DictField())})})
    def get(self, request):
        principal = getattr(request, "api_principal", None)
        if principal is None:
            raise auth.Unauthorized("No caller: authentication is off or no token was sent")
        return Response({"id": principal.key_id, "uuid": principal.key_id, "name": principal.name,
                         "applicationUser": True, "roles": [{"name": principal.role.upper()}]})
