"""Conductor's search mini-language (``apps.engine.search.parse_query``) and the Q objects
built from it: no database."""
from __future__ import annotations

import pytest
from django.db.models import Q

from apps.core.errors import InvalidInput
from apps.engine.search import Condition, camel_to_snake, parse_query, parse_sort, task_q, wildcard_q, workflow_q
from apps.engine.search import WORKFLOW_QUERY_FIELDS


def test_blank_query_has_no_conditions():
    assert parse_query(None) == []
    assert parse_query("") == []
    assert parse_query("   ") == []


def test_equals_with_and_without_quotes_and_spaces():
    assert parse_query('workflowType="order"') == [Condition("workflowType", "=", ("order",))]
    assert parse_query("workflowType = 'order'") == [Condition("workflowType", "=", ("order",))]
    assert parse_query("correlationId=c1") == [Condition("correlationId", "=", ("c1",))]


def test_conditions_joined_by_and():
    conds = parse_query('workflowType="x" AND status="RUNNING" and startTime > 5')
    assert conds == [Condition("workflowType", "=", ("x",)), Condition("status", "=", ("RUNNING",)),
                     Condition("startTime", ">", ("5",))]


def test_in_list_with_parentheses_spaces_and_quotes():
    assert parse_query("status IN (RUNNING, 'PAUSED',\"FAILED\")") == [
        Condition("status", "IN", ("RUNNING", "PAUSED", "FAILED"))]


def test_in_with_one_value_is_equals_and_equals_with_several_is_in():
    assert parse_query("status IN (RUNNING)") == [Condition("status", "=", ("RUNNING",))]
    assert parse_query("status = RUNNING,PAUSED") == [Condition("status", "IN", ("RUNNING", "PAUSED"))]


def test_comparison_operators():
    assert [c.op for c in parse_query("startTime>1 AND startTime<2 AND endTime>=3 AND endTime<=4")] == \
        [">", "<", ">=", "<="]


def test_and_inside_quotes_is_part_of_the_value():
    assert parse_query("correlationId = 'tom AND jerry' AND status = RUNNING") == [
        Condition("correlationId", "=", ("tom AND jerry",)), Condition("status", "=", ("RUNNING",))]


@pytest.mark.parametrize("bad", ["workflowType", "= x", "status IN ()", "status = RUNNING AND  AND x = 1", "startTime ! 5"])
def test_malformed_conditions_are_conductors_400(bad):
    with pytest.raises(InvalidInput) as exc:
        parse_query(bad)
    assert exc.value.message.startswith("Incorrectly formatted query string: ")
    assert exc.value.status == 400


def test_camel_to_snake():
    assert camel_to_snake("workflowType") == "workflow_type"
    assert camel_to_snake("parentWorkflowId") == "parent_workflow_id"
    assert camel_to_snake("status") == "status"


def test_workflow_q_maps_fields_and_drops_unknown_ones():
    q = workflow_q(parse_query("workflowType = order AND bogusField = 1 AND startTime > 10 AND status IN (running,paused)"))
    assert q == Q(workflow_name="order") & Q(create_time__gt=10) & Q(status__in=["RUNNING", "PAUSED"])


def test_snake_case_field_names_are_accepted():
    assert workflow_q(parse_query("workflow_type = order")) == Q(workflow_name="order")


def test_time_values_take_epoch_ms_or_iso_text():
    assert workflow_q(parse_query("startTime > 1700000000000")) == Q(create_time__gt=1_700_000_000_000)
    assert workflow_q(parse_query('endTime < "2023-11-14T22:13:20Z"')) == Q(end_time__lt=1_700_000_000_000) & Q(end_time__gt=0)
    with pytest.raises(InvalidInput, match="Invalid time value for startTime"):
        workflow_q(parse_query("startTime > yesterday"))


def test_wildcards():
    assert wildcard_q("c", "ord*") == Q(c__istartswith="ord")
    assert wildcard_q("c", "*der") == Q(c__iendswith="der")
    assert wildcard_q("c", "*rd*") == Q(c__icontains="rd")
    assert wildcard_q("c", "*") == Q(c__isnull=False)
    assert wildcard_q("c", "o*d.r") == Q(c__iregex=r"^o.*d\.r$")
    assert workflow_q(parse_query("workflowType = ord*")) == Q(workflow_name__istartswith="ord")


def test_task_type_also_matches_the_name_of_simple_tasks():
    q = task_q(parse_query("taskType = charge AND status = COMPLETED"))
    assert q == ((Q(task_type="charge") | (Q(task_type="SIMPLE") & Q(task_def_name="charge")))
                 & Q(status="COMPLETED"))


def test_task_correlation_id_goes_through_the_workflow():
    assert task_q(parse_query("correlationId = c1")) == Q(workflow__correlation_id="c1")


def test_sort_parsing():
    order = parse_sort("startTime:DESC|workflowType:asc|bogus:ASC|status:SIDEWAYS|workflowId", WORKFLOW_QUERY_FIELDS)
    assert [(o.expression.name, o.descending) for o in order] == [
        ("create_time", True), ("workflow_name", False), ("workflow_id", False)]
    assert parse_sort(None, WORKFLOW_QUERY_FIELDS) == []
    assert len(parse_sort(["startTime:ASC", "endTime:DESC"], WORKFLOW_QUERY_FIELDS)) == 2
