"""The JavaScript evaluator behind INLINE, SWITCH (javascript) and DO_WHILE conditions:
its limits fail with a reason that names them (a tester saw an out-of-memory script fail
its task with the reason ``null``)."""
from __future__ import annotations

import pytest

from apps.engine.evaluators import MEMORY_LIMIT_BYTES, EvaluationError, evaluate_js


def test_a_script_that_exhausts_memory_names_the_limit():
    with pytest.raises(EvaluationError) as err:
        evaluate_js("var a = []; while (true) { a.push('x'.repeat(64) + a.length) }", {})
    assert str(err.value) == ("Error evaluating the script `InternalError: out of memory (the limit is "
                              f"{MEMORY_LIMIT_BYTES // (1024 * 1024)} MiB)`")


def test_a_script_that_throws_null_still_says_null():
    with pytest.raises(EvaluationError) as err:
        evaluate_js("throw null", {})
    assert str(err.value) == "Error evaluating the script `null`"


def test_a_thrown_error_is_worded_as_conductor_words_it():
    """Conductor's ScriptEvaluator: ``Error evaluating the script `<the error>` `` (the
    reference run against Conductor OSS 3.32.3, case 27)."""
    with pytest.raises(EvaluationError) as err:
        evaluate_js("(function(){ throw new Error('bad input ' + $.v); })()", {"v": 7})
    assert str(err.value) == "Error evaluating the script `Error: bad input 7`"


def test_bindings_and_result():
    assert evaluate_js("$.a + 1", {"a": 41}) == 42
