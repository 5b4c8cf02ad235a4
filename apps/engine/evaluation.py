"""Bounded evaluation outside the workflow's lock: evaluate, then lock and apply.

User-supplied expressions (INLINE JavaScript, LAMBDA, JSON_JQ_TRANSFORM, SWITCH and
DECISION scripts, DO_WHILE conditions) never run while a workflow is locked. The decider, which runs under the lock, only *asks* for an evaluation:
the task is saved IN_PROGRESS and the decide's outcome carries an ``evaluate`` action whose
``data["request"]`` is a ``Request`` (what to evaluate, over which JSON bindings, the
``key`` identifying that exact evaluation). After the deciding transaction has ended the
executor runs the request here (``run``: JavaScript in QuickJS with CPU time and memory
limits, jq in a helper process with a wall-clock limit, see ``evaluators`` and
``jq_sandbox``), then takes the lock again for a short transaction that hands the
``Evaluated`` results, keyed by ``key``, to a new decide (``Decider.evaluated``). A task
type applies a result only to a task still waiting for it whose current inputs give the
same key, so a terminate, rerun or retry that happened meanwhile wins and a stale result is
dropped. Because results are keyed by what was evaluated, the executor may run a chain
ahead (a decide of an unlocked snapshot with the results so far asks for the next
evaluation) and apply the whole chain in one locked transaction.

Crash safety: a request lost with its process leaves an IN_PROGRESS task whose
``due_at`` (``redispatch_at``: its last update plus the evaluation's time limit plus
``EVALUATION_REDISPATCH_GRACE_MS`` of ``settings.CONDUCTOR``) makes the sweeper decide it again, and that decide asks again.

This module has no ORM and no lock: ``run`` is a pure function of its request (with the
process's limits), ``key`` a digest of what is evaluated. The queue of requests waiting for
the end of the current service call lives in ``apps.engine.executor``.
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

from apps.engine import evaluators, jq_sandbox

SCRIPT = "script"  # evaluators.evaluate(evaluator_type, expression, bindings)
LAMBDA = "lambda"  # a LAMBDA function body over $
JS = "js"  # evaluators.evaluate_js(expression, bindings): a DO_WHILE loopCondition
JQ = "jq"  # jq_sandbox.evaluate(expression, bindings) -> list of results
JS_EVALUATORS = frozenset({"javascript", "graaljs", "js"})


@dataclass(frozen=True, slots=True)
class Request:
    """One evaluation to run outside the lock. ``kind`` is SCRIPT, JS, LAMBDA or JQ;
    ``evaluator_type`` the SCRIPT evaluator (``javascript`` ...); ``bindings`` the JSON
    value bound to ``$`` (jq: the input); ``time_limit`` seconds (jq only: JavaScript's
    limit is ``evaluators.TIME_LIMIT_SECONDS`` of CPU); ``key`` from ``key()``. ``lean``
    names top-level objects of ``bindings`` given only in part (a running DO_WHILE's
    stored output, without its finished iterations) and ``whole()`` returns ``{name: whole
    object}`` for them: a JavaScript evaluation that reads a key they lack, or enumerates
    or changes them, is run again with the whole objects (``evaluators.evaluate_js``).
    ``whole`` takes no lock and is not part of the key (the caller's key names the
    evaluation)."""

    workflow_id: str
    task_id: str
    key: str
    kind: str
    expression: Any
    bindings: Any
    evaluator_type: str | None = None
    time_limit: float = jq_sandbox.DEFAULT_TIME_LIMIT_SECONDS
    lean: tuple[str, ...] = ()
    whole: Callable[[], dict] | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Evaluated:
    """The result of a ``Request``: ``value`` when ``error`` is None, else ``error`` (the
    reason shown on the task); ``unknown_evaluator`` when the evaluator type does not exist."""

    key: str
    value: Any = None
    error: str | None = None
    unknown_evaluator: bool = False


def key(kind: str, evaluator_type: str | None, expression: Any, bindings: Any) -> str:
    """A digest naming one evaluation: the same kind, evaluator, expression and bindings
    give the same key (hex string)."""
    value = [kind, evaluator_type, expression, bindings]
    try:
        text = orjson.dumps(value, default=str, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS)
    except TypeError:  # what orjson refuses (integers beyond 64 bits): the standard encoder
        text = json.dumps(value, sort_keys=True, default=str, separators=(",", ":")).encode()
    return hashlib.blake2b(text, digest_size=16).hexdigest()


def run(request: Request) -> Evaluated:
    """Evaluate ``request`` with its limits (no lock, no transaction, no ORM). Never
    raises for the expression's own failures: they become ``Evaluated.error``."""
    try:
        if request.kind == JQ:
            value = jq_sandbox.evaluate(request.expression, request.bindings, request.time_limit)
        elif request.kind == JS and request.lean and request.whole is not None:
            lean = {name: request.bindings[name] for name in request.lean}
            rest = {k: v for k, v in request.bindings.items() if k not in lean}
            value = evaluators.evaluate_js(request.expression, rest, lean, whole=request.whole)
        elif request.kind == JS:
            value = evaluators.evaluate_js(request.expression, *evaluators.split_large(request.bindings))
        elif request.kind == LAMBDA:
            value = evaluators.evaluate_js(f"(function(){{ {request.expression} }})()", request.bindings)
        else:
            value = evaluators.evaluate(request.evaluator_type, request.expression, request.bindings)
    except evaluators.UnknownEvaluator as exc:
        return Evaluated(request.key, error=str(exc), unknown_evaluator=True)
    except (evaluators.EvaluationError, jq_sandbox.JqError) as exc:
        return Evaluated(request.key, error=str(exc) or exc.__class__.__name__)
    return Evaluated(request.key, value=value)


def time_limit_ms(kind: str, config) -> int:
    """The time limit of an evaluation of ``kind`` in milliseconds (jq:
    ``config["JQ_TIME_LIMIT_SECONDS"]``; JavaScript: ``evaluators.TIME_LIMIT_SECONDS``)."""
    if kind == JQ:
        return int(float(config.get("JQ_TIME_LIMIT_SECONDS", jq_sandbox.DEFAULT_TIME_LIMIT_SECONDS)) * 1000)
    return int(evaluators.TIME_LIMIT_SECONDS * 1000)


def redispatch_at(asked_at: int, kind: str, config) -> int:
    """Epoch ms after which an evaluation asked for at ``asked_at`` (epoch ms) and still
    without a result is asked for again: its time limit plus
    ``config["EVALUATION_REDISPATCH_GRACE_MS"]`` (its process died, or its request was
    dropped) later."""
    return asked_at + time_limit_ms(kind, config) + int(config.get("EVALUATION_REDISPATCH_GRACE_MS", 15_000))


def decide_in_memory(decide_once: Callable[[dict | None], Any], limit: int = 10_000) -> list:
    """For drivers of the decider that hold no lock and store nothing (the
    ``/workflow/test`` simulator, tests): ``decide_once(evaluated)`` decides (``evaluated``
    is None the first time, then ``{key: Evaluated}``); the evaluations its outcome
    asks for run here with their limits and it decides again with their results, until
    an outcome asks for none (at most ``limit`` decides). Returns the outcomes in order."""
    outcomes = []
    results = None
    for _ in range(limit):
        outcome = decide_once(results)
        outcomes.append(outcome)
        requests = [a.data["request"] for a in outcome.actions if a.kind == "evaluate"]
        if not requests:
            break
        results = {**(results or {}), **{r.key: run(r) for r in requests}}
    return outcomes
