"""Spring's six-field cron (seconds first), macros, ``?``, ranges, names and zones."""
from __future__ import annotations

from datetime import datetime, timezone

import pytest

from apps.core.errors import InvalidInput
from apps.scheduler import cron


def ms(text: str) -> int:
    return int(datetime.fromisoformat(text).timestamp() * 1000)


def times(expression: str, zone_id: str, start: str, n: int = 3) -> list[str]:
    out, t = [], ms(start)
    for _ in range(n):
        t = cron.next_after(expression, zone_id, t)
        out.append(datetime.fromtimestamp(t / 1000, tz=timezone.utc).isoformat())
    return out


def test_seconds_come_first():
    assert times("*/2 * * * * *", "UTC", "2026-03-06T12:00:00+00:00") == [
        "2026-03-06T12:00:02+00:00", "2026-03-06T12:00:04+00:00", "2026-03-06T12:00:06+00:00"]
    assert times("30 15 10 * * ?", "UTC", "2026-03-06T12:00:00+00:00", 1) == ["2026-03-07T10:15:30+00:00"]


def test_next_is_strictly_after_the_given_instant():
    t = ms("2026-03-06T12:00:02+00:00")
    assert cron.next_after("*/2 * * * * *", "UTC", t) == t + 2000
    assert cron.next_after("*/2 * * * * *", "UTC", t - 1) == t


def test_weekday_range_by_name_in_a_zone():
    # Friday 2026-03-06 12:00 UTC is 07:00 in New York: the next 09:00 weekdays skip the weekend.
    assert times("0 0 9 * * MON-FRI", "America/New_York", "2026-03-06T12:00:00+00:00") == [
        "2026-03-06T14:00:00+00:00", "2026-03-09T13:00:00+00:00", "2026-03-10T13:00:00+00:00"]


def test_macros():
    assert times("@daily", "UTC", "2026-03-06T12:00:00+00:00", 2) == [
        "2026-03-07T00:00:00+00:00", "2026-03-08T00:00:00+00:00"]
    assert times("@hourly", "Europe/Paris", "2026-03-06T12:30:00+00:00", 1) == ["2026-03-06T13:00:00+00:00"]


def test_day_of_month_and_day_of_week_must_both_match():
    # Spring: the 13th AND a Friday (Vixie cron would take either)
    assert times("0 0 0 13 * FRI", "UTC", "2026-01-01T00:00:00+00:00", 2) == [
        "2026-02-13T00:00:00+00:00", "2026-03-13T00:00:00+00:00"]


def test_never_matching_again_is_none():
    assert cron.next_after("0 0 0 30 2 *", "UTC", ms("2026-01-01T00:00:00+00:00")) is None


@pytest.mark.parametrize("bad", ["* * * * *", "0 0 25 * * *", "x * * * * *", "@fortnightly", ""])
def test_invalid_expressions_name_the_field(bad):
    with pytest.raises(InvalidInput) as err:
        cron.validate_cron(bad, "cronSchedules[1].cronExpression")
    assert err.value.validation_errors[0]["path"] == "cronSchedules[1].cronExpression"


def test_zone_ids():
    assert cron.validate_zone(None) == "UTC"
    assert cron.validate_zone("Asia/Kolkata") == "Asia/Kolkata"
    with pytest.raises(InvalidInput, match="Invalid zoneId: Mars/Olympus"):
        cron.validate_zone("Mars/Olympus")
