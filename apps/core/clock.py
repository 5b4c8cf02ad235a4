"""Time in Conductor's unit: epoch milliseconds (int), and the texts a WAIT task gives
its timer in (``duration``, ``until``), parsed as Conductor's Wait/WaitTaskMapper do."""
import re
import time
from datetime import datetime, timezone
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError


def now_ms() -> int:
    """Current wall-clock time in epoch milliseconds."""
    return time.time_ns() // 1_000_000


_UNITS = {
    "d": 86400, "day": 86400, "days": 86400,
    "h": 3600, "hr": 3600, "hrs": 3600, "hour": 3600, "hours": 3600,
    "m": 60, "min": 60, "mins": 60, "minute": 60, "minutes": 60,
    "s": 1, "sec": 1, "secs": 1, "second": 1, "seconds": 1,
}
_PART = re.compile(r"(\d+)\s*([a-zA-Z]+)")
# a duration above this (seconds, about 31,700 years) is not a time a timer can reach
MAX_DURATION_SECONDS = 10**12


def parse_duration_seconds(text: str) -> int:
    """``"1m 30s"``, ``"10s"``, ``"2 days"``, ``"1h 30m"`` or a number of seconds -> seconds
    (``"1m 30s"`` -> 90). Raises ValueError for anything else, and for a duration above
    ``MAX_DURATION_SECONDS``."""
    text = str(text).strip()
    if re.fullmatch(r"\d+", text):
        total = int(text)
    else:
        parts = _PART.findall(text)
        if not parts or _PART.sub("", text).strip():
            raise ValueError(text)
        total = 0
        for amount, unit in parts:
            if unit.lower() not in _UNITS:
                raise ValueError(text)
            total += int(amount) * _UNITS[unit.lower()]
    if total > MAX_DURATION_SECONDS:
        raise ValueError(text)
    return total


def parse_until_ms(text: str) -> int:
    """``yyyy-MM-dd HH:mm[ z]`` or ``yyyy-MM-dd`` (UTC unless a zone is given) -> epoch ms.
    Raises ValueError for anything else (an unknown zone included)."""
    text = str(text).strip()
    for fmt in ("%Y-%m-%d %H:%M", "%Y-%m-%d"):
        try:
            return int(datetime.strptime(text, fmt).replace(tzinfo=timezone.utc).timestamp() * 1000)
        except ValueError:
            pass
    m = re.fullmatch(r"(\d{4}-\d{2}-\d{2} \d{2}:\d{2})\s+(\S+)", text)
    if m:
        dt = datetime.strptime(m.group(1), "%Y-%m-%d %H:%M")
        zone = m.group(2)
        try:
            tz = timezone.utc if zone.upper() in ("UTC", "GMT", "Z") else ZoneInfo(zone)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(text) from None
        return int(dt.replace(tzinfo=tz).timestamp() * 1000)
    raise ValueError(text)
