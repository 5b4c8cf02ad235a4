"""Script and expression evaluation for INLINE, SWITCH, DECISION, DO_WHILE, JOIN and
event-handler conditions.

JavaScript (``javascript`` / ``graaljs``) runs in QuickJS-ng (``quickjs`` module), a
fresh context per evaluation with a CPU time limit and a memory limit, no host access;
``$`` is bound to the JSON input, whose arrays also answer ``get(i)`` and ``size()`` as
the Java Lists of Conductor's GraalJS do. Values cross the boundary as JSON, so integers stay
integers. ``value-param`` reads one input key. Errors raise ``EvaluationError`` with the
engine's message (first line of the JS error).
Source: Conductor's ScriptEvaluator / JavascriptEvaluator / ValueParamEvaluator
(docs/conductor-notes.md §5: INLINE, SWITCH, DO_WHILE).
"""
from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import quickjs

# Conductor interrupts scripts after 4 s; our limit is CPU seconds of this evaluation.
TIME_LIMIT_SECONDS = 4.0
MEMORY_LIMIT_BYTES = 64 << 20
STACK_LIMIT_BYTES = 1 << 20


# Conductor's GraalJS hands lists to scripts as Java Lists, so scripts written for it call
# ``list.get(i)`` and ``list.size()``; arrays here answer them the same (not enumerable:
# JSON output and for-in loops are unchanged).
_JAVA_LIST_METHODS = (
    "Object.defineProperty(Array.prototype, 'get', {value: function (i) { return this[i]; }, writable: true});"
    "Object.defineProperty(Array.prototype, 'size', {value: function () { return this.length; }, writable: true});"
)


# A large object handed to a script (a DO_WHILE's output keeps every iteration's outputs
# under "1", "2", ...) is first handed without its integer-like keys, behind a Proxy that
# notes (``__cw_full``) any read of a key it lacks, any enumeration and any change; the
# script is then run again with the whole object. Scripts are pure (a fresh context, no
# host access), so the answer is the one the whole object gives, and a loop condition
# reading ``$.loop.iteration`` costs the same at iteration 2,000 as at iteration 2.
_PARTIAL_OBJECT = r"""
var __cw_full = false;
function __cw_partial(obj) {
  function miss() { __cw_full = true; throw new Error('the whole object is needed'); }
  var own = Object.prototype.hasOwnProperty;
  return new Proxy(obj, {
    get: function (t, k) { return (typeof k !== 'string' || k in t) ? Reflect.get(t, k) : miss(); },
    has: function (t, k) { return (typeof k !== 'string' || own.call(t, k)) ? Reflect.has(t, k) : miss(); },
    ownKeys: function () { return miss(); },
    getOwnPropertyDescriptor: function (t, k) {
      return (typeof k !== 'string' || own.call(t, k)) ? Reflect.getOwnPropertyDescriptor(t, k) : miss();
    },
    set: function () { return miss(); },
    defineProperty: function () { return miss(); },
    deleteProperty: function () { return miss(); }
  });
}
"""


def _integer_like(key) -> bool:
    return isinstance(key, str) and key.isdigit() and (key == "0" or key[0] != "0")


LARGE_OBJECT_KEYS = 64


def split_large(bindings: Any) -> tuple[Any, dict[str, dict] | None]:
    """``(bindings, large)`` for ``evaluate_js``: the top-level objects of ``bindings`` with
    more than ``LARGE_OBJECT_KEYS`` keys (a DO_WHILE's output at iteration 2,000) set
    apart, to be handed key by key; the script sees the same ``$`` either way."""
    if not isinstance(bindings, dict):
        return bindings, None
    large = {k: v for k, v in bindings.items() if isinstance(v, dict) and len(v) > LARGE_OBJECT_KEYS}
    if not large:
        return bindings, None
    return {k: v for k, v in bindings.items() if k not in large}, large


class EvaluationError(Exception):
    """A script or expression could not be evaluated; ``str()`` is the reason."""


class UnknownEvaluator(EvaluationError):
    """No evaluator of that type (Conductor: ``No evaluator registered for type: %s``)."""


def evaluate_js(expression: str, bindings: Any, large: dict[str, dict] | None = None,
                whole: Callable[[], dict[str, dict]] | None = None) -> Any:
    """Evaluate a JavaScript expression or script with ``$`` = ``bindings`` (JSON value);
    return its completion value as JSON (None for undefined). ``large`` (``{name: dict}``,
    ``bindings`` a dict) adds ``$[name]`` = that dict, handed without its integer-like keys
    first and whole only when the script looks at more (see ``_PARTIAL_OBJECT``). With
    ``whole``, ``large`` is that part already and ``whole()`` gives ``{name: whole dict}``
    when the script looks at more.

    Errors: EvaluationError with the script's error message, ``Script not evaluated
    within 4 seconds, interrupted.`` for a runaway script, or ``out of memory``.
    """
    if large:
        if whole is None:
            partial = {name: {k: v for k, v in obj.items() if not _integer_like(k)} for name, obj in large.items()}
            if all(len(partial[name]) == len(obj) for name, obj in large.items()):
                return _evaluate(expression, {**bindings, **large}, None)
            whole = lambda: large  # noqa: E731
        else:
            partial = large
        needs_full, value = _evaluate(expression, bindings, partial)
        if not needs_full:
            return value
        return _evaluate(expression, {**bindings, **whole()}, None)
    return _evaluate(expression, bindings, None)


def _evaluate(expression: str, bindings: Any, partial: dict[str, dict] | None):
    """One evaluation in a fresh context; with ``partial``, ``(whole object needed, value)``
    and a script error counts only when the whole object was not asked for."""
    ctx = quickjs.Context()
    ctx.set_time_limit(TIME_LIMIT_SECONDS)
    ctx.set_memory_limit(MEMORY_LIMIT_BYTES)
    ctx.set_max_stack_size(STACK_LIMIT_BYTES)
    try:
        ctx.eval(_JAVA_LIST_METHODS)
        ctx.set("$", ctx.parse_json(json.dumps(bindings, default=str)))
        if partial:
            ctx.eval(_PARTIAL_OBJECT)
            ctx.set("__cw_parts", ctx.parse_json(json.dumps(partial, default=str)))
            ctx.eval("for (var __cw_k in __cw_parts) { $[__cw_k] = __cw_partial(__cw_parts[__cw_k]); }")
        ctx.set("__conductor_expr", expression)
        raw = ctx.eval("(function(){ var __v = (0, eval)(__conductor_expr); "
                       "return __v === undefined ? undefined : JSON.stringify(__v); })()")
    except quickjs.JSException as exc:
        if partial and ctx.get("__cw_full"):
            return True, None
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else exc.__class__.__name__
        if "interrupted" in message:
            raise EvaluationError(f"Script not evaluated within {TIME_LIMIT_SECONDS:g} seconds, interrupted.") from None
        if message == "null" and _out_of_memory(ctx):
            # QuickJS throws null when it has no memory left to build the error object
            message = f"InternalError: out of memory (the limit is {MEMORY_LIMIT_BYTES // (1024 * 1024)} MiB)"
        # Conductor's ScriptEvaluator words a script's error so (checked against 3.32.3 running)
        raise EvaluationError(f"Error evaluating the script `{message}`") from None
    except quickjs.StackOverflow:
        if partial and ctx.get("__cw_full"):
            return True, None
        raise EvaluationError("InternalError: stack overflow") from None
    value = None if raw is None else json.loads(raw)
    if partial:
        return bool(ctx.get("__cw_full")), value
    return value


def syntax_error(expression: str) -> str | None:
    """The JavaScript syntax error of ``expression`` (a script or expression as
    ``evaluate_js`` runs it), or None when it parses. Compiles without running it (in a
    fresh, bounded context): nothing of the script executes."""
    ctx = quickjs.Context()
    ctx.set_time_limit(TIME_LIMIT_SECONDS)
    ctx.set_memory_limit(MEMORY_LIMIT_BYTES)
    ctx.set_max_stack_size(STACK_LIMIT_BYTES)
    try:
        ctx.set("__conductor_expr", expression)
        ctx.eval("new Function(__conductor_expr); 0")
    except quickjs.JSException as exc:
        return str(exc).strip().splitlines()[0] if str(exc).strip() else exc.__class__.__name__
    except quickjs.StackOverflow:
        return "InternalError: stack overflow"
    return None


def _out_of_memory(ctx) -> bool:
    """Whether the context used (nearly) all of ``MEMORY_LIMIT_BYTES`` or cannot allocate
    any more (checked after a script threw a bare ``null``)."""
    try:
        stats = ctx.memory()
        used = max(stats.get("malloc_size", 0), stats.get("memory_used_size", 0))
    except Exception:  # the context itself cannot answer: it is out of memory
        return True
    return used >= MEMORY_LIMIT_BYTES * 0.9


def evaluate(evaluator_type: str | None, expression: str, bindings: dict) -> Any:
    """Evaluate with the named evaluator: ``value-param`` returns ``bindings[expression]``;
    ``javascript``/``graaljs`` run the script. Errors: UnknownEvaluator, EvaluationError."""
    etype = (evaluator_type or "javascript").lower()
    if etype == "value-param":
        if not isinstance(bindings, dict):
            return None
        return bindings.get(expression)
    if etype in ("javascript", "graaljs", "js"):
        if not isinstance(expression, str) or not expression.strip():
            raise EvaluationError("Empty 'expression' in task's input parameters. A non-empty String value must be provided.")
        return evaluate_js(expression, bindings)
    raise UnknownEvaluator(f"No evaluator registered for type: {evaluator_type}")


def truthy(value: Any) -> bool:
    """Conductor's evalBool: boolean true, or a number greater than zero."""
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return value > 0
    return False


def case_string(value: Any) -> str:
    """A SWITCH/DECISION case value as the string Conductor compares: ``null``, ``true``,
    ``1`` (an integral number), ``1.5``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, (dict, list)):
        return json.dumps(value)
    return str(value)
