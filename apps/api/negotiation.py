"""Content negotiation that never refuses a request.

Conductor clients send ``Accept: text/plain`` where the answer is an id (start, rerun,
update by ref) and ``application/json`` or ``*/*`` elsewhere; the views choose their
content type themselves (``text/plain`` ids, JSON bodies), so DRF must not answer 406
before the view runs. The SDKs ignore the response Content-Type.
"""
from __future__ import annotations

from rest_framework.negotiation import DefaultContentNegotiation


class IgnoreAcceptNegotiation(DefaultContentNegotiation):
    """Parsers as DRF's default; the renderer is always the first configured (JSON)."""

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type
