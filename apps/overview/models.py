"""Per-interval counts of the Overview page (``apps.overview.rollup`` writes them).

``Rollup`` is one counter: how many of one thing happened to one workflow name/version or
one task type in one interval. ``period_ms`` is the interval length (``MINUTE_MS`` or
``HOUR_MS``; histogram rows also ``DAY_MS``, which the percentiles of ranges beyond 24
hours read) and ``bucket`` its start (epoch ms, a multiple of ``period_ms``). The engine's
transactions write minute rows only; ``rollup.fold`` adds them into the hour and day rows
off the hot path, ``folded`` being how much of a minute row's ``count`` it has added
(readers of hour rows add the minute rows' ``count - folded``, so they are exact at any
moment; ``RollupFold`` bounds how far back that remainder is looked for). ``measure``
says what is counted:

* workflows (``kind = "workflow"``): ``started`` (by ``createTime``), ``COMPLETED``,
  ``FAILED``, ``TIMED_OUT``, ``TERMINATED`` (by ``endTime``), and ``duration`` (endTime -
  createTime of those four, a histogram: ``bin`` is the bin of ``apps.overview.bins``);
* tasks (``kind = "task"``, ``name`` the task's TaskDef name for worker tasks, its type for
  system tasks): ``COMPLETED``, ``FAILED`` (also FAILED_WITH_TERMINAL_ERROR),
  ``TIMED_OUT`` (by the attempt's ``endTime``), and the histograms ``lag`` (startTime -
  scheduledTime, the worker lag) and ``run`` (endTime - startTime) of the attempts that
  ended having started.

``bin`` is -1 for plain counts. ``slot`` spreads one counter over ``ROLLUP_SLOTS`` rows,
one per process slot (its pid modulo), so two processes' writes (``rollup.flush``) rarely
wait for each other's row lock; readers sum the slots.

``ReasonRollup`` counts workflow failures (FAILED, TIMED_OUT, TERMINATED) by their
``reasonForIncompletion`` grouped as the executions search groups them (ids masked:
``apps.ui.selectors.mask_ids``), per workflow name, per interval.
"""
from __future__ import annotations

from django.db import models

MINUTE_MS = 60_000
HOUR_MS = 3_600_000
DAY_MS = 86_400_000
FOLD_PERIODS = (HOUR_MS,)  # what minute rows are folded into
HIST_FOLD_PERIODS = (HOUR_MS, DAY_MS)  # histogram rows also per UTC day: percentiles beyond 24 h


# The tables by name, for the plain SQL of rollup.py and selectors.py (as store.WF_TABLE)
ROLLUP_TABLE = "overview_rollup"
REASON_ROLLUP_TABLE = "overview_reason_rollup"
FOLD_TABLE = "overview_rollup_fold"


class Rollup(models.Model):
    """One counter of one interval (see the module doc)."""

    period_ms = models.BigIntegerField()
    bucket = models.BigIntegerField()
    kind = models.CharField(max_length=8)
    name = models.CharField(max_length=255)
    version = models.IntegerField(default=0)
    measure = models.CharField(max_length=32)
    bin = models.SmallIntegerField(default=-1)
    slot = models.SmallIntegerField(default=0)
    count = models.BigIntegerField(default=0)
    folded = models.BigIntegerField(db_default=0)  # minute rows: the part of count in the hour/day rows

    class Meta:
        db_table = ROLLUP_TABLE
        constraints = [models.UniqueConstraint(
            fields=["period_ms", "kind", "bucket", "name", "version", "measure", "bin", "slot"],
            name="overview_rollup_key")]

    def __str__(self) -> str:
        return f"{self.kind} {self.name} v{self.version} {self.measure}[{self.bin}] @{self.bucket}/{self.period_ms}: {self.count}"


class ReasonRollup(models.Model):
    """Workflow failures of one workflow name with one masked reason in one interval."""

    period_ms = models.BigIntegerField()
    bucket = models.BigIntegerField()
    name = models.CharField(max_length=255)
    reason_hash = models.CharField(max_length=40)  # sha1 of ``reason_key``
    reason_key = models.TextField()  # the reason with ids masked (the search's ``cluster``)
    example = models.TextField()  # one reason as written
    slot = models.SmallIntegerField(default=0)
    count = models.BigIntegerField(default=0)
    folded = models.BigIntegerField(db_default=0)  # minute rows: the part of count in the hour rows

    class Meta:
        db_table = REASON_ROLLUP_TABLE
        constraints = [models.UniqueConstraint(fields=["period_ms", "bucket", "name", "reason_hash", "slot"],
                                               name="overview_reason_key")]

    def __str__(self) -> str:
        return f"{self.name} {self.reason_key[:40]} @{self.bucket}: {self.count}"


class RollupFold(models.Model):
    """The one row of ``rollup.fold``'s progress: minute rows of buckets before
    ``folded_before - rollup.LATE_MS`` (epoch ms) are folded; later ones may not be yet."""

    folded_before = models.BigIntegerField(default=0)

    class Meta:
        db_table = FOLD_TABLE
