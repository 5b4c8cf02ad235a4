"""Template filters and tags of the operator pages: epoch-millisecond times and durations,
and the status sets handed to the pages' JavaScript."""
from __future__ import annotations

import json
from datetime import datetime, timezone

from django import template
from django.utils.html import format_html, json_script

from apps.engine.status import page_sets

register = template.Library()

# an id longer than this is shown by its first SHORT_ID characters and an ellipsis
SHORT_ID = 8


@register.filter
def short_id(value) -> str:
    """A workflow or task id shortened for a table cell: a UUID's first 8 characters and
    "…" (the whole id goes in the link's title and the copy button); ids of up to 12
    characters unchanged."""
    text = "" if value is None else str(value)
    return text if len(text) <= SHORT_ID + 4 else text[:SHORT_ID] + "…"


@register.filter
def ms_datetime(value) -> str:
    """Epoch ms -> ``YYYY-MM-DD HH:MM:SS`` UTC; empty for 0/None."""
    try:
        ms = int(value or 0)
    except (TypeError, ValueError):
        return ""
    if ms <= 0:
        return ""
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S")


@register.filter
def ms_time(value) -> str:
    """``ms_datetime`` in a ``<time data-ms>`` element (HTML, escaped), which
    ``static/ui/time.js`` writes again in the zone the user chose; empty for 0/None."""
    text = ms_datetime(value)
    return format_html('<time data-ms="{}">{}</time>', int(value), text) if text else ""


@register.filter
def ms_datetime_cell(value) -> str:
    """``ms_datetime`` for a narrow table cell: the date and the time each kept on one
    line, free to stack (HTML, escaped); empty for 0/None."""
    text = ms_datetime(value)
    if not text:
        return ""
    day, clock = text.split(" ")
    # data-ms: static/ui/time.js writes it again in the zone the user chose
    return format_html('<span class="when-ms" data-ms="{}"><span class="nowrap">{}</span> <span class="nowrap">{}</span></span>',
                       int(value), day, clock)


@register.filter
def ms_duration(value) -> str:
    """Milliseconds -> ``1h 2m``, ``3m 4s``, ``5.6 s`` or ``78 ms``."""
    try:
        ms = int(value or 0)
    except (TypeError, ValueError):
        return ""
    if ms < 1000:
        return f"{ms} ms"
    seconds = ms / 1000
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, sec = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes}m {sec}s"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours}h {minutes}m"
    return f"{hours // 24}d {hours % 24}h"


@register.filter
def pretty_json(value) -> str:
    """A value as indented JSON text."""
    return json.dumps(value, indent=2, default=str)


@register.simple_tag
def status_sets() -> str:
    """``<script id="conductor-statuses" type="application/json">`` with
    ``apps.engine.status.page_sets()``: graph.js and execution.js read their status sets
    from it instead of keeping copies."""
    return json_script(page_sets(), "conductor-statuses")
