"""Duration histograms of the Overview: log-scale bins, four per doubling.

A duration of ``ms`` milliseconds falls in bin ``ceil(4 * log2(ms))`` (0 for 1 ms or
less, at most ``MAX_BIN``), whose upper bound is ``2 ** (bin / 4)`` ms: a percentile read
from the bins is at most 19 % above the true value (``upper``), never below it.
"""
from __future__ import annotations

import math

MAX_BIN = 160  # 2 ** 40 ms: about 35 years


def bin_of(ms: int | float) -> int:
    """The bin of a duration in milliseconds (negative durations count as 0)."""
    if ms <= 1:
        return 0
    return min(MAX_BIN, math.ceil(4 * math.log2(ms)))


def upper(b: int) -> float:
    """The upper bound of bin ``b``, in milliseconds."""
    return 2 ** (b / 4)


def percentile(hist: dict[int, int], q: float) -> float | None:
    """The ``q`` quantile (0 < q <= 1) of a ``{bin: count}`` histogram, as the upper bound
    (ms) of the bin holding it; None for an empty histogram."""
    total = sum(hist.values())
    if total <= 0:
        return None
    rank = math.ceil(q * total)
    seen = 0
    for b in sorted(hist):
        seen += hist[b]
        if seen >= rank:
            return upper(b)
    return upper(max(hist))
