"""Percentiles as numpy computes them (linear interpolation, vLLM's and numpy's default), several
from one selection, and the fewest requests that give a percentile a finite interval."""

from __future__ import annotations

import math
from collections.abc import Sequence

from budgetdiff.table import FloatArray, order_statistics, pooled_order_statistics


def percentile(x: FloatArray, p: float, *, in_place: bool = False) -> float:
    """The p-th percentile (0 < p < 100) with linear interpolation, numpy's (and vLLM's) default:
    np.percentile's value exactly (see `percentiles`). `in_place` reorders `x` instead of copying
    it (a pool the caller owns)."""
    return percentiles(x, [p], in_place=in_place)[0]


def percentiles(x: FloatArray, ps: Sequence[float], *, in_place: bool = False) -> list[float]:
    """Several percentiles in one selection, each exactly as np.percentile computes it (NaN when
    `x` holds one). `in_place`: `x` may be reordered instead of copied."""
    n = x.size
    ranks = [linear_ranks(n, p) for p in ps]
    kth = sorted({n - 1, *(r for lo, hi, _ in ranks for r in (lo, hi))})  # n - 1: a NaN sorts last
    part = order_statistics(x, kth, in_place=in_place)
    if math.isnan(part[n - 1]):
        return [math.nan] * len(ranks)
    return [lerp(float(part[lo]), float(part[hi]), t) for lo, hi, t in ranks]


def pooled_percentile(parts: Sequence[FloatArray], p: float) -> float:
    """`percentile` of the values of all `parts` together, without concatenating them."""
    n = sum(x.size for x in parts)
    lo, hi, t = linear_ranks(n, p)
    part = pooled_order_statistics(parts, [lo, hi, n - 1])
    return math.nan if math.isnan(part[n - 1]) else lerp(part[lo], part[hi], t)


def linear_ranks(n: int, p: float) -> tuple[int, int, float]:
    """The two order statistics (0-based) and the weight np.percentile interpolates with."""
    virtual = (n - 1) * (p / 100.0)
    lo = math.floor(virtual)
    return lo, min(lo + 1, n - 1), virtual - lo


def lerp(a: float, b: float, t: float) -> float:
    """numpy's interpolation, operation for operation, so values match np.percentile exactly."""
    diff = b - a
    return b - diff * (1.0 - t) if t >= 0.5 else a + diff * t


def needed_for_interval(p: float, confidence: float) -> int:
    """The fewest requests that give a finite distribution-free interval for the p-th percentile.

    With n requests, the chance that all of them fall below the true p-th percentile is
    (p/100)^n; the exact two-sided interval at `confidence` has a finite upper end only when that
    is at most (1 - confidence) / 2 (same rule as `scipy.stats.quantile_test`). E.g. p95 at 0.95
    needs 72 requests, p99 needs 368.
    """
    q = max(p, 100.0 - p) / 100.0
    tail = (1.0 - confidence) / 2.0
    n = max(1, math.ceil(math.log(tail) / math.log(q)))
    # Guard the float boundary both ways: the smallest n with q**n <= tail.
    while n > 1 and q ** (n - 1) <= tail:
        n -= 1
    while q**n > tail:
        n += 1
    return n
