"""Retry delays (apps.engine.retries), as Conductor's DeciderService.retry
(docs/conductor-notes.md §4.2): the delay in ms before attempt ``retryCount + 1``."""
from __future__ import annotations

import random

import pytest

from apps.engine.retries import INT_MAX, expected_retry_count, retry_delay_ms


def td(**kw):
    return {"retryDelaySeconds": 2, **kw}


@pytest.mark.parametrize("retry_count", [0, 1, 5])
def test_fixed_delay_is_retry_delay_seconds(retry_count):
    assert retry_delay_ms(td(retryLogic="FIXED", retryDelaySeconds=3), retry_count) == 3000


def test_missing_retry_logic_means_fixed():
    assert retry_delay_ms({"retryDelaySeconds": 7}, 4) == 7000


def test_zero_delay():
    assert retry_delay_ms(td(retryLogic="FIXED", retryDelaySeconds=0), 0) == 0


def test_exponential_backoff_doubles_per_attempt():
    logic = td(retryLogic="EXPONENTIAL_BACKOFF", retryDelaySeconds=2)
    assert [retry_delay_ms(logic, n) for n in range(4)] == [2000, 4000, 8000, 16000]


def test_linear_backoff_scales_by_factor_and_attempt():
    logic = td(retryLogic="LINEAR_BACKOFF", retryDelaySeconds=2, backoffScaleFactor=3)
    assert [retry_delay_ms(logic, n) for n in range(3)] == [6000, 12000, 18000]


def test_linear_backoff_default_factor_is_one():
    logic = td(retryLogic="LINEAR_BACKOFF", retryDelaySeconds=5)
    assert [retry_delay_ms(logic, n) for n in range(3)] == [5000, 10000, 15000]


@pytest.mark.parametrize("logic", ["LINEAR_BACKOFF", "EXPONENTIAL_BACKOFF"])
def test_max_retry_delay_caps_the_backoffs(logic):
    d = td(retryLogic=logic, retryDelaySeconds=10, maxRetryDelaySeconds=15, backoffScaleFactor=2)
    assert retry_delay_ms(d, 0) == (15000 if logic == "LINEAR_BACKOFF" else 10000)
    assert max(retry_delay_ms(d, n) for n in range(6)) == 15000


def test_max_retry_delay_caps_a_fixed_delay():
    assert retry_delay_ms(td(retryLogic="FIXED", retryDelaySeconds=20, maxRetryDelaySeconds=15), 0) == 15000
    assert retry_delay_ms(td(retryLogic="FIXED", retryDelaySeconds=10, maxRetryDelaySeconds=15), 0) == 10000


def test_max_retry_delay_zero_means_no_cap():
    d = td(retryLogic="EXPONENTIAL_BACKOFF", retryDelaySeconds=1, maxRetryDelaySeconds=0)
    assert retry_delay_ms(d, 10) == 1024 * 1000


def test_overflowing_int_becomes_integer_max_value_seconds():
    d = td(retryLogic="EXPONENTIAL_BACKOFF", retryDelaySeconds=2**30)
    assert retry_delay_ms(d, 1) == INT_MAX * 1000
    assert INT_MAX == 2**31 - 1


def test_overflow_is_capped_by_max_retry_delay():
    d = td(retryLogic="EXPONENTIAL_BACKOFF", retryDelaySeconds=2**30, maxRetryDelaySeconds=60)
    assert retry_delay_ms(d, 3) == 60_000


def test_jitter_stays_within_zero_and_backoff_jitter_ms():
    rng = random.Random(1234)
    d = td(retryLogic="FIXED", retryDelaySeconds=1, backoffJitterMs=250)
    samples = [retry_delay_ms(d, 0, rng) for _ in range(500)]
    assert all(1000 <= s <= 1250 for s in samples)
    assert len(set(samples)) > 50  # it is random, not a constant offset


def test_jitter_is_added_after_the_cap():
    rng = random.Random(99)
    d = td(retryLogic="EXPONENTIAL_BACKOFF", retryDelaySeconds=10, maxRetryDelaySeconds=10, backoffJitterMs=100)
    samples = [retry_delay_ms(d, 4, rng) for _ in range(200)]
    assert all(10_000 <= s <= 10_100 for s in samples)
    assert max(samples) > 10_000


def test_no_jitter_without_backoff_jitter_ms():
    d = td(retryLogic="FIXED", retryDelaySeconds=1, backoffJitterMs=0)
    assert {retry_delay_ms(d, 0, random.Random(n)) for n in range(20)} == {1000}


def test_expected_retry_count():
    assert expected_retry_count({"retryCount": 3}, {}) == 3
    assert expected_retry_count({"retryCount": 3}, {"retryCount": 1}) == 1
    assert expected_retry_count({"retryCount": 3}, {"retryCount": 0}) == 0
    assert expected_retry_count(None, {"retryCount": 5}) == 0
