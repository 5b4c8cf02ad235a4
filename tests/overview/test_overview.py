"""The Overview (apps.overview): the rollup rows, counted as the engine's transactions
commit, count what the executions and task searches they link to find, interval by
interval; the page and its data are read-only and need the view permission; /metrics has
the page's gauges."""
from __future__ import annotations

from urllib.parse import parse_qs, urlparse

import pytest
from django.test import Client

from apps.overview import rollup, selectors
from apps.overview.bins import bin_of, percentile, upper
from apps.overview.models import DAY_MS, HOUR_MS, MINUTE_MS, ReasonRollup, Rollup
from tests.factories import Api, FakeClock, simple_task, task_def, unique, workflow_def
from tests.ui.conftest import make_user

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def api(transactional_db) -> Api:
    """Real commits: the counts reach the rollup once the engine's transaction commits."""
    return Api()


@pytest.fixture
def clock(monkeypatch) -> FakeClock:
    # at the start of a minute, so each step below stays in its own minute
    start = FakeClock().ms
    return FakeClock(start - start % MINUTE_MS + 5_000).install(monkeypatch)


@pytest.fixture
def viewer_client(db) -> Client:
    client = Client()
    client.force_login(make_user("ov_viewer", "view_executions"))
    return client


def flow(api: Api) -> tuple[str, str]:
    name, task = unique("ov_wf"), unique("ov_task")
    api.register_task_defs(task_def(task, retryCount=0))
    api.register_workflow(workflow_def(name, [simple_task(task, "t1")]))
    return name, task


def search_ids(client: Client, url: str) -> set[str]:
    """The workflow ids the executions page lists for ``url`` (one page of up to 500)."""
    resp = client.get(url + "&size=500")
    assert resp.status_code == 200, resp.content[:500]
    assert not resp.context["query"].errors, resp.context["query"].errors
    return {row["workflow_id"] for row in resp.context["result"].rows}


def task_total(client: Client, url: str) -> int:
    resp = client.get(url)
    assert resp.status_code == 200 and not resp.context.get("error"), resp.context.get("error")
    return resp.context["total"]


def window_now(clock: FakeClock, key: str = "1h") -> selectors.Window:
    return selectors.parse_window({"range": key}, now=clock.ms)[0]


def narrowed(url: str, measure: str, lo: int, step: int) -> str:
    """What overview.js does to a figure's URL for the bar of interval [lo, lo + step)."""
    parts = urlparse(url)
    params = parse_qs(parts.query)
    which = "start" if measure == "started" else "end"
    params[f"{which}_from"] = [selectors.iso(lo)]
    params[f"{which}_to"] = [selectors.iso(lo + step - 1)]
    from urllib.parse import urlencode
    return parts.path + "?" + urlencode(params, doseq=True)


def test_counts_per_interval_match_the_searches_they_link_to(api, clock, viewer_client):
    name, task = flow(api)
    # minute 0: three starts; one completes
    ids = [api.start(name, {"n": i}) for i in range(3)]
    clock.advance(1)
    api.complete(api.poll_one(task, worker_id="w-ov"))
    # minute 1: one fails (retryCount 0: the workflow FAILED), one is terminated
    clock.advance(60)
    failing = api.poll_one(task, worker_id="w-ov")
    clock.advance(2)
    api.ok(api.update(failing, "FAILED", reasonForIncompletion=f"card {failing['taskId']} declined"))
    api.ok(api.delete(f"/workflow/{[i for i in ids if i != failing['workflowInstanceId']][-1]}",
                      params={"reason": "operator stop"}))
    statuses = {i: api.workflow(i)["status"] for i in ids}
    assert sorted(statuses.values()) == ["COMPLETED", "FAILED", "TERMINATED"]

    window = window_now(clock)
    data = selectors.overview(window, now=clock.ms)
    row = next(r for r in data["workflows"] if r["name"] == name)
    assert row["totals"] == {"started": 3, "COMPLETED": 1, "FAILED": 1, "TIMED_OUT": 0, "TERMINATED": 1}
    assert row["failureRate"] == pytest.approx(2 / 3)
    assert row["p50"] is not None and row["p99"] >= row["p50"]
    # each total opens exactly the executions it counts
    for measure, status in (("started", None), ("COMPLETED", "COMPLETED"), ("FAILED", "FAILED"),
                            ("TERMINATED", "TERMINATED")):
        want = set(ids) if status is None else {i for i, s in statuses.items() if s == status}
        assert search_ids(viewer_client, row["totalUrls"][measure]) == want, measure
    assert search_ids(viewer_client, row["failedUrl"]) == {i for i, s in statuses.items() if s != "COMPLETED"}
    # and each bar the executions of its interval only
    bars = {(m, window.intervals[i]): n for m, series in row["series"].items() for i, n in enumerate(series) if n}
    assert sorted((m, n) for (m, _), n in bars.items()) == [("COMPLETED", 1), ("FAILED", 1), ("TERMINATED", 1),
                                                             ("started", 3)]
    assert bars[("COMPLETED", window.intervals[-2])] == 1 and bars[("FAILED", window.intervals[-1])] == 1
    for (measure, lo), n in bars.items():
        found = search_ids(viewer_client, narrowed(row["totalUrls"][measure], measure, lo, window.step))
        assert len(found) == n, (measure, lo, found)
    # an empty interval finds nothing
    assert search_ids(viewer_client, narrowed(row["totalUrls"]["FAILED"], "FAILED", window.intervals[0],
                                              window.step)) == set()

    # a 6 h window has 2-minute intervals over the minute rows: the same totals, summed in SQL
    window6 = window_now(clock, "6h")
    row6 = next(r for r in selectors.overview(window6, now=clock.ms)["workflows"] if r["name"] == name)
    assert window6.step == 2 * MINUTE_MS and row6["totals"] == row["totals"]
    for (measure, lo), n in bars.items():
        i = (lo - window6.start) // window6.step
        assert row6["series"][measure][i] >= n
        found = search_ids(viewer_client, narrowed(row6["totalUrls"][measure], measure, window6.intervals[i],
                                                   window6.step))
        assert len(found) == row6["series"][measure][i], (measure, lo, found)

    # 7 d: hour rows for the counts, the UTC days' rows for the percentiles: the same figures here
    row7 = next(r for r in selectors.overview(window_now(clock, "7d"), now=clock.ms)["workflows"] if r["name"] == name)
    assert row7["totals"] == row["totals"] and (row7["p50"], row7["p99"]) == (row["p50"], row["p99"])
    # the engine wrote minute rows only; folding them into the hour and day rows (the
    # sweeper's tick) changes no figure of a long range, and a second fold folds nothing
    assert not Rollup.objects.filter(name=name).exclude(period_ms=MINUTE_MS).exists()
    reasons7 = [r for r in selectors.overview(window_now(clock, "7d"), now=clock.ms)["reasons"]
                if r["workflows"][0]["name"] == name]
    assert rollup.fold(clock.ms) > 0 and rollup.fold(clock.ms) == 0
    assert Rollup.objects.filter(name=name, period_ms=HOUR_MS).exists()
    assert Rollup.objects.filter(name=name, period_ms=DAY_MS, bin__gte=0).exists()
    folded = selectors.overview(window_now(clock, "7d"), now=clock.ms)
    assert next(r for r in folded["workflows"] if r["name"] == name) == row7
    assert [r for r in folded["reasons"] if r["workflows"][0]["name"] == name] == reasons7 and reasons7
    # a count that lands in a minute already folded (a late commit) is read at once and folded once
    api.start(name)
    row7_late = next(r for r in selectors.overview(window_now(clock, "7d"), now=clock.ms)["workflows"]
                     if r["name"] == name)
    assert row7_late["totals"]["started"] == row7["totals"]["started"] + 1
    rollup.fold(clock.ms)
    assert next(r for r in selectors.overview(window_now(clock, "7d"), now=clock.ms)["workflows"]
                if r["name"] == name)["totals"] == row7_late["totals"]

    # the failure reason, grouped with its id masked, links to that execution
    reason = next(r for r in data["reasons"] if r["workflows"][0]["name"] == name and "declined" in r["key"])
    assert reason["count"] == 1 and "…" in reason["key"]
    assert search_ids(viewer_client, reason["url"]) == {failing["workflowInstanceId"]}


def test_by_version_splits_a_workflow_and_its_links(api, clock, viewer_client):
    name, _ = flow(api)
    first = api.start(name)
    definition = api.ok(api.get(f"/metadata/workflow/{name}")).json()
    api.register_workflow(dict(definition, version=2))
    second = api.start(name, version=2)
    rows = {r["version"]: r for r in selectors.overview(window_now(clock), by_version=True, now=clock.ms)["workflows"]
            if r["name"] == name}
    assert sorted(rows) == [1, 2] and rows[1]["totals"]["started"] == rows[2]["totals"]["started"] == 1
    assert search_ids(viewer_client, rows[1]["totalUrls"]["started"]) == {first}
    assert search_ids(viewer_client, rows[2]["totalUrls"]["started"]) == {second}
    merged = [r for r in selectors.overview(window_now(clock), now=clock.ms)["workflows"] if r["name"] == name]
    assert len(merged) == 1 and merged[0]["version"] is None and merged[0]["totals"]["started"] == 2


def test_task_figures_queue_depth_workers_and_their_searches(api, clock, viewer_client):
    name, task = flow(api)
    for i in range(3):
        api.start(name, {"n": i})
    clock.advance(2)
    done = api.poll_one(task, worker_id="w-ov-1")  # waited 2 s in the queue
    clock.advance(0.5)
    api.complete(done)  # ran 0.5 s
    done_at = clock.ms
    clock.advance(1)
    failed = api.poll_one(task, worker_id="w-ov-1")
    api.ok(api.update(failed, "FAILED_WITH_TERMINAL_ERROR", reasonForIncompletion="bad input"))
    failed_at = clock.ms
    clock.advance(3)

    data = selectors.overview(window_now(clock), now=clock.ms)
    row = next(r for r in data["tasks"] if r["name"] == task)
    assert row["totals"] == {"COMPLETED": 1, "FAILED": 0, "FAILED_WITH_TERMINAL_ERROR": 1, "TIMED_OUT": 0}
    assert row["depth"] == 1 and row["oldestPendingMs"] == 6_500
    assert 2000 <= row["p95LagMs"] <= upper(bin_of(3500)) and 500 <= row["p95RunMs"] <= upper(bin_of(500))
    assert [w["workerId"] for w in row["workers"]] == ["w-ov-1"] and row["noPoller"] is False
    assert task_total(viewer_client, row["totalUrls"]["COMPLETED"]) == 1
    assert task_total(viewer_client, row["totalUrls"]["FAILED_WITH_TERMINAL_ERROR"]) == 1
    assert task_total(viewer_client, row["depthUrl"]) == 1
    # a bar: the attempts that ended in its interval only
    window = window_now(clock)
    for status, at in (("COMPLETED", done_at), ("FAILED_WITH_TERMINAL_ERROR", failed_at)):
        lo = at - at % window.step
        assert task_total(viewer_client, selectors.tasks_url(task, status, lo, lo + window.step)) == 1
        assert task_total(viewer_client, selectors.tasks_url(task, status, lo + window.step, lo + 2 * window.step)) == 0
    # a minute and more without a poll: the queue with work is flagged
    clock.advance(61)
    row = next(r for r in selectors.overview(window_now(clock), now=clock.ms)["tasks"] if r["name"] == task)
    assert row["noPoller"] is True


def test_a_rolled_back_change_counts_nothing(api, clock):
    """The counts are taken once the engine's transaction commits: a save that is rolled
    back counts nothing; the committed one is written by the next flush."""
    from django.db import transaction

    name, _ = flow(api)
    with pytest.raises(RuntimeError), transaction.atomic():
        api.start(name)
        raise RuntimeError("roll back")
    rollup.flush()
    assert Rollup.objects.filter(name=name).count() == 0
    api.start(name)
    rollup.flush()
    assert Rollup.objects.get(name=name, measure="started").count == 1


def test_windows_steps_and_bad_ranges(clock):
    w = window_now(clock, "1h")
    assert (w.period, w.step, len(w.intervals)) == (MINUTE_MS, MINUTE_MS, 61)
    w = window_now(clock, "7d")
    assert w.period == 3_600_000 and len(w.intervals) <= selectors.MAX_INTERVALS
    w, errors = selectors.parse_window({"range": "custom", "from": "10", "to": "5"}, now=clock.ms)
    assert w.key == "1h" and errors == ["from/to: a custom range needs from < to, both epoch milliseconds"]
    w, errors = selectors.parse_window({"range": "custom", "from": str(clock.ms - 6 * 3_600_000), "to": str(clock.ms)},
                                       now=clock.ms)
    assert not errors and w.key == "custom" and w.step == 2 * MINUTE_MS
    assert selectors.parse_window({"range": "1y"}, now=clock.ms)[1] == [
        "range must be one of 1h, 6h, 24h, 7d or custom, not '1y'"]


def test_percentiles_are_upper_bounds_within_a_bin():
    hist = {}
    for ms in [10] * 50 + [1000] * 45 + [60_000] * 5:
        hist[bin_of(ms)] = hist.get(bin_of(ms), 0) + 1
    assert 10 <= percentile(hist, 0.5) <= 10 * 1.19
    assert 1000 <= percentile(hist, 0.95) <= 1000 * 1.19
    assert 60_000 <= percentile(hist, 0.99) <= 60_000 * 1.19
    assert percentile({}, 0.5) is None


def test_prune_drops_old_folded_minute_rows_only(api, clock):
    name, _ = flow(api)
    api.start(name)
    rollup.flush()
    assert Rollup.objects.filter(name=name, period_ms=MINUTE_MS).count() == 1
    rollup.prune(clock.ms + 49 * 3_600_000)  # not folded yet: kept
    assert Rollup.objects.filter(name=name, period_ms=MINUTE_MS).count() == 1
    rollup.fold(clock.ms)
    assert rollup.prune(clock.ms + 49 * 3_600_000) >= 1
    assert Rollup.objects.filter(name=name, period_ms=MINUTE_MS).count() == 0
    assert Rollup.objects.filter(name=name, period_ms=HOUR_MS).count() == 1
    assert ReasonRollup.objects.filter(name=name).count() == 0


def test_read_only_users_see_it_and_nothing_changes_state(api, clock, viewer_client):
    name, _ = flow(api)
    api.start(name)
    resp = viewer_client.get("/")
    assert resp.status_code == 200 and b"ov-config" in resp.content and b"echarts.common.min.js" in resp.content
    data = viewer_client.get("/overview.json?range=24h").json()
    assert any(r["name"] == name for r in data["workflows"])
    assert viewer_client.get("/overview.json?range=custom&from=x").status_code == 400
    assert viewer_client.post("/").status_code == 405 and viewer_client.post("/overview.json").status_code == 405
    assert Client().get("/").status_code == 302  # signed out: to the sign-in page
    nobody = Client()
    nobody.force_login(make_user("ov_nobody"))
    assert nobody.get("/").status_code == 403 and nobody.get("/overview.json").status_code == 403
    # the executions list stays reachable
    assert viewer_client.get("/executions/").status_code == 200


def test_metrics_have_the_overview_gauges(api, clock):
    name, task = flow(api)
    api.start(name)
    clock.advance(4)
    body = Client().get("/metrics").content.decode()
    line = next(ln for ln in body.splitlines() if ln.startswith("task_pending_time{") and f'taskType="{task}"' in ln)
    assert f'workflowName="{name}"' in line and float(line.rsplit(" ", 1)[1]) == 4000.0
    assert 'event_queue_depth{queueType="conductor"}' in body
    assert "status_listener_pending " in body and "evaluation_pending " in body


def test_engine_section_shows_the_broker_outbox_backlog(clock, viewer_client):
    """Messages an EVENT task left for a broker that is down wait in the broker outbox
    (apps.brokers): the Overview's engine section counts the waiting ones per broker, with
    the oldest's age, and not those already sent."""
    from apps.brokers.models import BrokerMessage

    now = clock.ms
    for i, (broker, state, created) in enumerate([("amqp", "PENDING", now - 90_000), ("amqp", "PENDING", now - 1_000),
                                                   ("amqp", "SENT", now - 500_000), ("kafka", "PENDING", now - 2_000)]):
        BrokerMessage.objects.create(key=unique(f"k{i}"), event=f"{broker}:orders", broker=broker, state=state,
                                     created_time=created, next_attempt_at=now)
    backlog = viewer_client.get("/overview.json?range=1h").json()["engine"]["brokerBacklog"]
    assert sorted(backlog, key=lambda b: b["broker"]) == [
        {"broker": "amqp", "pending": 2, "oldestMs": 90_000}, {"broker": "kafka", "pending": 1, "oldestMs": 2_000}]


def _count_in_child(row) -> None:
    """A forked child's one count (``test_a_forked_child_writes_only_its_own_counts``),
    written by its finalizers as it ends."""
    from collections import Counter

    from django.db import connection

    connection.close()  # the parent's connection is not the child's
    rollup._pending.add(Counter({row: 1}), Counter(), {})


def test_a_forked_child_writes_only_its_own_counts(api, clock):
    """django-q2 forks its workers: what the parent had pending when it forked is the
    parent's to write, not the child's too (the child starts with no pending counts);
    the child's own counts are written when it ends."""
    import multiprocessing
    from collections import Counter

    from django.db import connection

    name = unique("ov_fork")
    row = (MINUTE_MS, rollup.WORKFLOW, clock.ms - clock.ms % MINUTE_MS, name, 1, "started", -1, 0)
    rollup._pending.add(Counter({row: 5}), Counter(), {})
    connection.close()
    child = multiprocessing.get_context("fork").Process(target=_count_in_child, args=(row,))
    child.start()
    child.join(30)
    assert child.exitcode == 0
    rollup.flush()
    assert Rollup.objects.get(name=name).count == 6
