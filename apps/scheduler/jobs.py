"""What the django-q2 cluster runs for the scheduler: one tick per sweeper tick.

The engine's sweeper loop (``apps.engine.jobs.sweep_loop_job``) already runs in the
cluster every ``SWEEPER_TICK_MS`` under a lease that one loop holds at a time across all
clusters (taken and renewed by compare-and-set). The scheduler registers ``tick`` as one
of its tick hooks (``apps.engine.sweeper.add_tick_hook``, in ``SchedulerConfig.ready``),
so due schedules fire within a tick of their slot without a loop job of their own (a loop
job holds a cluster worker for its whole length). Firing is exactly-once per slot even
if two loops overlap while a lease changes hands: ``firing`` claims each slot by
compare-and-set.
"""
from __future__ import annotations


def tick() -> int:
    """One tick: fire the due schedules. Returns the number of schedule runs recorded."""
    from apps.scheduler import firing

    return firing.fire_due()
