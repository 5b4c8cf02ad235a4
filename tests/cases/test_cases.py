"""Conductor semantics cases from public bug reports (/work/shared/cases), run through the
REST API by tests/cases/harness.py. Add a case by listing its number in CASES once the
operators it needs exist."""
from __future__ import annotations

import pytest

from tests.cases.harness import case_id, load_case, tampered

CASES = [26, 30]


@pytest.mark.parametrize("number", CASES, ids=[case_id(n) for n in CASES])
def test_case(number, make_runner):
    make_runner(load_case(number)).run()


def test_harness_fails_a_wrong_expectation(make_runner):
    def wrong(case):
        case["expect"]["tasks"][0]["inputData"]["num"] = "5"  # a string where the server keeps the number

    with pytest.raises(AssertionError, match=r"inputData\.num: expected '5', got 5"):
        make_runner(tampered(load_case(26), wrong)).run()


def test_harness_fails_a_wrong_count(make_runner):
    def wrong(case):
        case["expect"]["taskCountByRef"]["ship"] = 2

    with pytest.raises(AssertionError, match=r"1 task\(s\) with ref 'ship', expected 2"):
        make_runner(tampered(load_case(30), wrong)).run()


def test_harness_refuses_unknown_expectations(make_runner):
    def unknown(case):
        case["expect"]["somethingNew"] = 1

    with pytest.raises(AssertionError, match="unknown expectation 'somethingNew'"):
        make_runner(tampered(load_case(26), unknown)).run()
