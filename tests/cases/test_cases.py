"""Conductor semantics cases from public bug reports (tests/cases/fixtures), run through the
REST API by tests/cases/harness.py. Add a case by listing its number in CASES once the
operators it needs exist."""
from __future__ import annotations

import pytest

from tests.cases.harness import case_id, load_case, tampered

CASES = [1, 3, 4, 6, 7, 9, 10, 11, 13, 14, 16, 17, 19, 20, 22, 23, 25, 26, 27, 29, 30, 33, 34, 36, 38, 40, 41, 44, 46, 48]

# A case's ``serverConfig`` (expect block) names server limits to use while it runs.
SERVER_CONFIG = {"maxTaskOutputPayloadSizeKB": "MAX_TASK_OUTPUT_PAYLOAD_KB"}


# Cases whose server part is not built yet (strict xfail: they must pass once it is).
PENDING: dict[int, str] = {}


def _param(number: int):
    marks = [pytest.mark.xfail(strict=True, reason=PENDING[number])] if number in PENDING else []
    return pytest.param(number, id=case_id(number), marks=marks)


@pytest.mark.parametrize("number", [_param(n) for n in CASES])
def test_case(number, make_runner, settings):
    case = load_case(number)
    config = (case.get("expect") or {}).get("serverConfig") or {}
    settings.CONDUCTOR = {**settings.CONDUCTOR, **{SERVER_CONFIG[k]: v for k, v in config.items() if k in SERVER_CONFIG}}
    make_runner(case).run()


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


def test_harness_fails_a_wrong_run_expectation(make_runner):
    def wrong(case):
        case["expect"]["runs"]["first"]["status"] = "COMPLETED"

    with pytest.raises(AssertionError, match=r"runs\.first: workflow status TERMINATED, expected COMPLETED"):
        make_runner(tampered(load_case(48), wrong)).run()


def test_harness_refuses_unknown_expectations(make_runner):
    def unknown(case):
        case["expect"]["somethingNew"] = 1

    with pytest.raises(AssertionError, match="unknown expectation 'somethingNew'"):
        make_runner(tampered(load_case(26), unknown)).run()
