"""Paging when sort keys tie (issue #14): many rows share one start time, status or name on
purpose; every page taken one after the other, concatenated, must be exactly the whole
result, in the requested order (sort key, then the row's id in the same direction), with
no row twice. API workflow and task search, search-by-tasks, the UI search (offset and
keyset pages, through the page links) and the audit log."""
from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.http import QueryDict

from apps.engine.models import WorkflowExecution
from apps.ui import selectors
from apps.ui.models import AuditLog
from tests.search.builders import T0, make_task, make_workflow
from tests.ui.conftest import make_user

pytestmark = pytest.mark.django_db

N = 23  # rows; pages of 5 leave a short last page
TIES = 3  # distinct start times


@pytest.fixture
def viewer_client(client):
    client.force_login(make_user("viewer", "view_executions"))
    return client


@pytest.fixture
def operator(db):
    return make_user("operator", "operate_workflows")


@pytest.fixture
def tied():
    """23 executions of two names on only three start times (and two statuses), each with
    one task that shares its scheduled time with seven or eight others."""
    rows = []
    for i in range(N):
        wf = make_workflow("tie_a" if i % 2 else "tie_b", status="RUNNING" if i % 4 else "FAILED",
                           create_time=T0 + (i % TIES) * 1000, end_time=0)
        make_task(wf, task_def_name="tie_task", scheduled_time=T0 + (i % TIES) * 1000)
        rows.append(wf)
    return rows


def expected(rows: list[dict], key: str, id_key: str, desc: bool) -> list[str]:
    """Ids ordered by ``key`` then id, both in one direction (ids are UUIDs, whose text
    order is the same in Python and in both databases)."""
    return [r[id_key] for r in sorted(rows, key=lambda r: (r[key], r[id_key]), reverse=desc)]


def api_pages(api, path: str, id_key: str, size: int, **params) -> tuple[list[str], list[str]]:
    """(the ids of every page of ``size`` concatenated, the ids of one page holding all)."""
    whole = api.get(path, {**params, "start": 0, "size": 1000}).json()
    got, start = [], 0
    while True:
        body = api.get(path, {**params, "start": start, "size": size}).json()
        assert body["totalHits"] == whole["totalHits"]
        if not body["results"]:
            break
        got += [r[id_key] for r in body["results"]]
        start += size
        assert start < 10 * N, "paging does not end"
    return got, [r[id_key] for r in whole["results"]]


@pytest.mark.parametrize("sort,key,desc", [
    (None, "startTime", True), ("startTime:ASC", "startTime", False), ("startTime:DESC", "startTime", True),
    ("status:ASC", "status", False), ("workflowType:DESC", "workflowType", True)])
@pytest.mark.parametrize("path", ["/workflow/search", "/workflow/search-by-tasks"])
def test_api_workflow_pages_with_ties(api, tied, path, sort, key, desc):
    params = {"sort": sort} if sort else {}
    if path.endswith("by-tasks"):
        params["query"] = "taskDefName = tie_task"
    got, whole = api_pages(api, path, "workflowId", 5, **params)
    assert len(got) == len(set(got)) == N
    assert got == whole
    rows = api.get(path, {**params, "size": 1000}).json()["results"]
    assert got == expected(rows, key, "workflowId", desc)


@pytest.mark.parametrize("sort,desc", [(None, True), ("scheduledTime:ASC", False), ("scheduledTime:DESC", True)])
def test_api_task_pages_with_ties(api, tied, sort, desc):
    params = {"sort": sort} if sort else {}
    got, whole = api_pages(api, "/tasks/search", "taskId", 4, **params)
    assert len(got) == len(set(got)) == N
    assert got == whole
    rows = api.get("/tasks/search", {**params, "size": 1000}).json()["results"]
    assert got == expected(rows, "scheduledTime", "taskId", desc)


def _ui_order(sort: str) -> list[str]:
    column = selectors.SORTS[sort.lstrip("-")]
    rows = list(WorkflowExecution.objects.values(column, "workflow_id"))
    return expected(rows, column, "workflow_id", sort.startswith("-"))


@pytest.mark.parametrize("sort", ["start", "-start", "status", "-name", "end"])
def test_ui_offset_pages_with_ties(tied, sort):
    got = []
    for page in range(1, 7):
        result = selectors.search_executions(selectors.SearchQuery.from_querydict(
            QueryDict(f"size=10&page={page}&sort={sort}")))
        if result.page < page:  # past the last page: the last page again
            break
        got += [r["workflow_id"] for r in result.rows]
    assert len(got) == len(set(got)) == N
    assert got == _ui_order(sort)


@pytest.mark.parametrize("sort", ["start", "-start", "-status", "name"])
def test_ui_pages_by_the_next_and_previous_links(viewer_client, tied, sort):
    """Following "Next" (keyset markers) to the end, then "Previous" back to the start."""
    link = re.compile(r'<a href="\?([^"]+)" rel="(next|prev)"')
    ids = re.compile(r'<tr data-workflow-id="([^"]+)"')

    def visit(query: str) -> tuple[list[str], dict]:
        html = viewer_client.get("/executions/?" + query.replace("&amp;", "&")).content.decode()
        page_ids = ids.findall(html)
        return page_ids, {rel: href for href, rel in link.findall(html)}

    forward, pages, query = [], [], f"size=10&sort={sort}"
    for _ in range(10):
        page_ids, links = visit(query)
        pages.append(page_ids)
        forward += page_ids
        if "next" not in links:
            break
        assert "after=" in links["next"]
        query = links["next"]
    assert len(forward) == len(set(forward)) == N
    assert forward == _ui_order(sort)
    backward = []
    for _ in range(10):
        if "prev" not in links:
            break
        query = links["prev"]
        page_ids, links = visit(query)
        backward.insert(0, page_ids)
    assert backward == pages[:-1]


def test_ui_keyset_page_reports_its_page_number(tied):
    first = selectors.search_executions(selectors.SearchQuery.from_querydict(QueryDict("size=10&sort=start")))
    second = selectors.search_executions(selectors.SearchQuery.from_querydict(
        QueryDict(f"size=10&sort=start&after={first.last_cursor}")))
    assert second.page == 2 and second.first_index == 11
    back = selectors.search_executions(selectors.SearchQuery.from_querydict(
        QueryDict(f"size=10&sort=start&before={second.first_cursor}")))
    assert back.page == 1 and [r["workflow_id"] for r in back.rows] == [r["workflow_id"] for r in first.rows]


def test_ui_bad_marker_and_size_are_reported_not_ignored(tied):
    q = selectors.SearchQuery.from_querydict(QueryDict("size=7&after=not-a-marker"))
    assert q.size == 25 and q.after is None
    assert any("page size" in e for e in q.errors) and any("page marker" in e for e in q.errors)
    assert selectors.SearchQuery.from_querydict(QueryDict("size=500")).size == 500


def test_audit_log_pages_with_ties(operator):
    """Entries written in the same instant page without repeats, newest (highest id) first."""
    made = [AuditLog.objects.create(user=operator, username="operator", action="pause", target=f"wf-{i}",
                                    ok=True) for i in range(2 * selectors.AUDIT_PAGE_SIZE + 7)]
    same = made[0].created_at
    AuditLog.objects.filter(pk__in=[e.pk for e in made[:150]]).update(created_at=same)
    AuditLog.objects.filter(pk__in=[e.pk for e in made[150:]]).update(created_at=same + timedelta(seconds=1))
    got, before = [], None
    for _ in range(10):
        page = selectors.audit_page(before=before)
        got += [e.pk for e in page["entries"]]
        before = page["older"]
        if before is None:
            break
    assert got == sorted((e.pk for e in made), reverse=True)


def test_audit_page_links_to_older_entries(client):
    user = make_user("auditor", "view_executions")
    client.force_login(user)
    for i in range(selectors.AUDIT_PAGE_SIZE + 1):
        AuditLog.objects.create(user=user, username="auditor", action="pause", target=f"wf-{i}", ok=True,
                                params={"reason": "r"})
    html = client.get("/audit/").content.decode()
    assert 'id="older"' in html and "wf-0<" not in html and "&quot;reason&quot;: &quot;r&quot;" in html
    older = re.search(r'<a href="\?([^"]+)" rel="next" id="older"', html).group(1).replace("&amp;", "&")
    html = client.get("/audit/?" + older).content.decode()
    assert "wf-0<" in html and 'id="older"' not in html
