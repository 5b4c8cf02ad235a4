"""The JavaScript evaluator behind INLINE, SWITCH (javascript) and DO_WHILE conditions:
its limits fail with a reason that names them (a tester saw an out-of-memory script fail
its task with the reason ``null``)."""
from __future__ import annotations

import pytest

from apps.engine.evaluators import MEMORY_LIMIT_BYTES, EvaluationError, evaluate_js


def test_a_script_that_exhausts_memory_names_the_limit():
    with pytest.raises(EvaluationError) as err:
        evaluate_js("var a = []; while (true) { a.push('x'.repeat(64) + a.length) }", {})
    assert str(err.value) == f"InternalError: out of memory (the limit is {MEMORY_LIMIT_BYTES // (1024 * 1024)} MiB)"


def test_a_script_that_throws_null_still_says_null():
    with pytest.raises(EvaluationError) as err:
        evaluate_js("throw null", {})
    assert str(err.value) == "null"


def test_bindings_and_result():
    assert evaluate_js("$.a + 1", {"a": 41}) == 42
