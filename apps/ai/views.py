"""``GET /api/providers/status``: which LLM providers this server has (Conductor's
agentspan ``ProviderController``)."""
from __future__ import annotations

import httpx
from django.conf import settings
from rest_framework.response import Response

from apps.api.views.base import ConductorApi

# Conductor's list, in its order (the names of its AI integrations).
KNOWN_PROVIDERS = ("openai", "anthropic", "gemini", "azureopenai", "aws_bedrock", "mistral", "cohere", "grok",
                   "perplexity", "huggingface", "ollama")
OLLAMA_DEFAULT_URL = "http://localhost:11434"
PROBE_TIMEOUT_SECONDS = 2.0


def reachable(base_url: str) -> bool:
    """Whether anything answers HTTP at ``base_url`` from this server (any status counts),
    within ``PROBE_TIMEOUT_SECONDS``."""
    try:
        httpx.get(base_url, timeout=PROBE_TIMEOUT_SECONDS)
        return True
    except Exception:  # noqa: BLE001 - unreachable, for whatever reason
        return False


def providers_status() -> dict:
    """``{"managedByHost": false, "providers": [{name, configured, baseUrl?, reachable?}]}``:
    one entry per Conductor provider name (``configured`` when this server has a provider
    of that name), ``baseUrl`` for a configured one, and for ``ollama`` ``reachable``, probed
    from the server at its base URL (``http://localhost:11434`` when not configured); then
    one entry per other provider name configured here (``CONDUCTOR_AI_PROVIDERS``), with
    its ``type``. No API key is ever shown."""
    configured = settings.CONDUCTOR_AI.get("PROVIDERS") or {}
    out = []
    for name in KNOWN_PROVIDERS:
        entry: dict = {"name": name, "configured": name in configured}
        base_url = (configured.get(name) or {}).get("base_url")
        if base_url:
            entry["baseUrl"] = base_url
        if name == "ollama":
            entry.setdefault("baseUrl", OLLAMA_DEFAULT_URL)
            entry["reachable"] = reachable(entry["baseUrl"])
        out.append(entry)
    for name in sorted(set(configured) - set(KNOWN_PROVIDERS)):
        conf = configured[name]
        out.append({"name": name, "type": conf.get("kind") or "openai", "configured": True,
                    "baseUrl": conf.get("base_url")})
    return {"managedByHost": False, "providers": out}


class ProvidersStatusApi(ConductorApi):
    """``GET /api/providers/status`` (read-only role)."""

    def get(self, request):
        return Response(providers_status())
