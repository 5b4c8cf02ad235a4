"""``${...}`` resolution (apps.engine.params), as Conductor's ParametersUtils.getTaskInputV2
(docs/conductor-notes.md §4.1). Pure: a WorkflowState in, a resolved input map out."""
from __future__ import annotations

import pytest

from apps.engine import params
from apps.engine.params import Document, java_string, resolve_task_input
from tests.factories import simple_task, task_state, workflow_state


def wf_with(input=None, tasks=(), **kw):
    wf = workflow_state([simple_task("t")], input=input or {}, **kw)
    wf.tasks = list(tasks)
    for i, t in enumerate(wf.tasks, start=1):
        t.seq = i
    return wf


def resolve(params, wf=None, env=None, **kw):
    wf = wf if wf is not None else wf_with()
    return resolve_task_input(params, wf, doc=Document(wf, env), **kw)


# --- whole-string references keep the JSON type ---------------------------------------------------

@pytest.mark.parametrize("value", [5, 2.5, True, False, None, "text", {"a": 1, "b": [1, 2]}, [1, "x", None]])
def test_whole_string_reference_keeps_the_type(value):
    wf = wf_with({"v": value})
    out = resolve({"x": "${workflow.input.v}"}, wf)
    assert out == {"x": value}
    assert type(out["x"]) is type(value)


def test_whole_input_map():
    wf = wf_with({"a": 1, "b": {"c": 2}})
    assert resolve({"all": "${workflow.input}"}, wf) == {"all": {"a": 1, "b": {"c": 2}}}


def test_task_output_input_and_fields():
    t1 = task_state("t1", output={"list": [{"id": "i0"}, {"id": "i1"}], "n": 3}, input={"q": "in"},
                    task_id="tid-1", status="COMPLETED")
    wf = wf_with(tasks=[t1], correlation_id="corr-9")
    out = resolve({
        "first": "${t1.output.list[0].id}",
        "n": "${t1.output.n}",
        "in": "${t1.input.q}",
        "id": "${t1.taskId}",
        "status": "${t1.status}",
        "ref": "${t1.referenceTaskName}",
        "corr": "${t1.correlationId}",
    }, wf)
    assert out == {"first": "i0", "n": 3, "in": "in", "id": "tid-1", "status": "COMPLETED", "ref": "t1",
                   "corr": "corr-9"}


def test_workflow_fields():
    wf = wf_with({"a": 1}, correlation_id="c-1", workflow_id="wf-77", name="orders")
    out = resolve({"id": "${workflow.workflowId}", "type": "${workflow.workflowType}",
                   "version": "${workflow.version}", "corr": "${workflow.correlationId}",
                   "status": "${workflow.status}"}, wf)
    assert out == {"id": "wf-77", "type": "orders", "version": 1, "corr": "c-1", "status": "RUNNING"}


# --- references embedded in text are stringified the Java way -------------------------------------

@pytest.mark.parametrize("value, text", [
    (5, "id-5"),
    (2.5, "id-2.5"),
    (True, "id-true"),
    (False, "id-false"),
    (None, "id-null"),
    ("abc", "id-abc"),
    ({"a": 1, "b": "x"}, "id-{a=1, b=x}"),
    ([1, 2, 3], "id-[1, 2, 3]"),
    ([{"k": None}], "id-[{k=null}]"),
])
def test_embedded_reference_is_stringified_java_style(value, text):
    wf = wf_with({"v": value})
    assert resolve({"x": "id-${workflow.input.v}"}, wf) == {"x": text}


def test_embedded_missing_reference_is_the_text_null():
    assert resolve({"x": "a-${workflow.input.absent}-b"}) == {"x": "a-null-b"}


def test_several_references_in_one_string():
    wf = wf_with({"a": 1, "b": "two"})
    assert resolve({"x": "${workflow.input.a}/${workflow.input.b}"}, wf) == {"x": "1/two"}


def test_java_string_of_nested_values():
    assert java_string({"a": [1, {"b": True}], "c": None}) == "{a=[1, {b=true}], c=null}"


# --- escapes, empty and special names --------------------------------------------------------------

def test_double_dollar_escapes_a_literal_reference():
    wf = wf_with({"n": 5})
    out = resolve({"whole": "$${workflow.input.n}", "embedded": "say $${x} now",
                   "mixed": "$${workflow.input.n} is ${workflow.input.n}"}, wf)
    assert out == {"whole": "${workflow.input.n}", "embedded": "say ${x} now",
                   "mixed": "${workflow.input.n} is 5"}


def test_empty_reference_is_the_empty_string():
    assert resolve({"x": "${}"}) == {"x": ""}


def test_cpewf_task_id_is_the_id_of_the_task_being_scheduled():
    out = resolve({"me": "${CPEWF_TASK_ID}", "text": "id=${CPEWF_TASK_ID}"}, task_id="task-123")
    assert out == {"me": "task-123", "text": "id=task-123"}


def test_environment_variable_comes_from_the_environment_passed_in():
    env = {"CW_PARAMS_TEST_VAR": "from-env"}
    assert resolve({"x": "${CW_PARAMS_TEST_VAR}", "y": "${workflow.env.CW_PARAMS_TEST_VAR}"}, env=env) == \
        {"x": "from-env", "y": "from-env"}
    # the resolver reads no process state: without an environment the names are unknown
    assert resolve({"x": "${CW_PARAMS_TEST_VAR}"}) == {"x": None}


def test_secrets_are_left_literal_in_the_stored_input():
    assert resolve({"x": "${workflow.secrets.api_key}"}) == {"x": "${workflow.secrets.api_key}"}


def test_nested_reference_inside_a_path_is_resolved_first():
    wf = wf_with({"key": "n", "n": 42})
    assert resolve({"x": "${workflow.input.${workflow.input.key}}"}, wf) == {"x": 42}


# --- missing things resolve to null -------------------------------------------------------------------

def test_missing_references_resolve_to_none():
    t1 = task_state("t1", output={"a": {}})
    wf = wf_with({"obj": {}}, tasks=[t1])
    out = resolve({
        "noTask": "${nosuch.output.value}",
        "noKey": "${workflow.input.absent}",
        "noDeep": "${workflow.input.obj.x.y.z}",
        "noOutputKey": "${t1.output.a.b}",
        "badIndex": "${t1.output.a[5]}",
    }, wf)
    assert out == {"noTask": None, "noKey": None, "noDeep": None, "noOutputKey": None, "badIndex": None}


def test_a_dotted_path_with_a_space_does_not_raise():
    wf = wf_with({"Space Value": "sv"})
    out = resolve({"x": "${workflow.input.Space Value}"}, wf)
    assert set(out) == {"x"}  # conductor-oss: the JSONPath error is swallowed (case 26)


# --- JSONPath ----------------------------------------------------------------------------------------

def test_bracket_notation_reaches_keys_with_spaces():
    wf = wf_with({"Space Value": "sv", "obj": {"a key": {"b": 1}}})
    out = resolve({"x": "${workflow.input['Space Value']}", "y": "${workflow.input.obj['a key'].b}"}, wf)
    assert out == {"x": "sv", "y": 1}


def test_nested_paths_with_list_indexes():
    wf = wf_with({"obj": {"list": [{"k": "a"}, {"k": "b"}]}})
    assert resolve({"x": "${workflow.input.obj.list[1].k}"}, wf) == {"x": "b"}


def test_deep_scan_returns_the_list_of_matches():
    t1 = task_state("get_es_1", output={"items": [{"status": "A"}, {"status": "B"}]})
    wf = wf_with(tasks=[t1])
    assert resolve({"x": "${get_es_1.output..status}"}, wf) == {"x": ["A", "B"]}


def test_wildcard_returns_a_list():
    t1 = task_state("t1", output={"items": [{"id": 1}, {"id": 2}]})
    wf = wf_with(tasks=[t1])
    assert resolve({"x": "${t1.output.items[*].id}"}, wf) == {"x": [1, 2]}


# --- walking values -----------------------------------------------------------------------------------

def test_values_are_walked_recursively_and_non_strings_pass_through():
    wf = wf_with({"n": 5})
    params = {"map": {"inner": "${workflow.input.n}", "list": ["${workflow.input.n}", ["${workflow.input.n}"]]},
              "int": 7, "bool": False, "null": None, "plain": "no refs"}
    assert resolve(params, wf) == {"map": {"inner": 5, "list": [5, [5]]}, "int": 7, "bool": False,
                                   "null": None, "plain": "no refs"}


def test_input_parameters_are_not_mutated():
    wf = wf_with({"n": 5})
    params = {"x": "${workflow.input.n}", "m": {"y": "${workflow.input.n}"}}
    resolve(params, wf)
    assert params == {"x": "${workflow.input.n}", "m": {"y": "${workflow.input.n}"}}


def test_task_def_input_template_fills_absent_and_null_keys():
    wf = wf_with({"given": "g"})
    out = resolve({"a": "${workflow.input.given}", "b": "${workflow.input.missing}"}, wf,
                  task_def={"inputTemplate": {"b": "fallback", "c": "added"}})
    assert out == {"a": "g", "b": "fallback", "c": "added"}


# --- which task a reference names ---------------------------------------------------------------------

def test_retries_last_attempt_wins():
    first = task_state("t1", status="FAILED", output={"v": 1}, retry_count=0, task_id="a1")
    second = task_state("t1", status="COMPLETED", output={"v": 2}, retry_count=1, task_id="a2")
    first.retried = True
    wf = wf_with(tasks=[first, second])
    assert resolve({"v": "${t1.output.v}", "id": "${t1.taskId}", "rc": "${t1.retryCount}"}, wf) == \
        {"v": 2, "id": "a2", "rc": 1}


def test_loop_tasks_are_keyed_without_the_iteration_suffix():
    b1 = task_state("body__1", output={"i": 1}, iteration=1)
    b2 = task_state("body__2", output={"i": 2}, iteration=2)
    wf = wf_with(tasks=[b1, b2])
    assert resolve({"i": "${body.output.i}", "ref": "${body.referenceTaskName}", "it": "${body.iteration}"},
                   wf) == {"i": 2, "ref": "body__2", "it": 2}


def test_double_underscore_in_a_reference_outside_loops_is_kept():
    """Only loop iterations (iteration > 0) lose their ``__N`` suffix (Conductor keys tasks
    by ``isLoopOverTask() ? removeIteration(ref) : ref``)."""
    t = task_state("send__email", name="send_email", output={"sent": True}, iteration=0)
    wf = wf_with(tasks=[t])
    assert resolve({"x": "${send__email.output.sent}"}, wf) == {"x": True}


# --- plain dotted paths are read without JSONPath, with JSONPath's answers ---------------------------

_DOC = {"t": {"output": {"x": 1, "nothing": None, "list": [1, {"q": 2}], "deep": {"e": {"f": "g"}},
                         "null": "n", "true": "t", "length": 3, "and": "a", "_u": "u", "x_1": "x1"}}}


@pytest.mark.parametrize("path", [
    "t.output.x", "t.output.nothing", "t.output.missing", "t.output.list", "t.output.list.q", "t.output.deep.e.f",
    "t.output.deep.e", "t", "t.output.x.y", "absent.output", "t.output.null", "t.output.true", "t.output.length",
    "t.output.and", "t.output._u", "t.output.x_1", "t.output.list.length"])
def test_a_dotted_path_gives_what_jsonpath_gives(path):
    compiled = params._compile(path)
    matches = compiled.findall(_DOC)
    assert compiled.singular_query()
    assert params._DOTTED.match(path)
    assert params.evaluate_path(path, _DOC) == (matches[0] if matches else None)


@pytest.mark.parametrize("path, value", [("t.output.list[1].q", 2), ("t.output['x']", 1), ("t..f", ["g"]),
                                         ("t.output.deep.*.f", ["g"])])
def test_other_paths_still_go_through_jsonpath(path, value):
    assert not params._DOTTED.match(path)
    assert params.evaluate_path(path, _DOC) == value
