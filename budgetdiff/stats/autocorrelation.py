"""Correlation in arrival order: is it there, and by how much does it inflate the variance of a
share (the share of requests below a percentile, or meeting the SLO)? Batch means, checked by a
runs test. Chosen by simulation (tests/unit/test_stats_simulation.py, docs/statistics.md)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from budgetdiff.table import BoolArray, FloatArray

# Autocorrelation in arrival order is applied when either test finds it (each at a strict level,
# so that a report of ~7 rows x 2 runs of independent requests rarely says "autocorrelated"):
# the runs test around the median (lag-1 autocorrelation of "above the median" times sqrt(n),
# one-sided; it finds mild AR(1) correlation, phi 0.3, that the batch means cannot), or the batch
# means of the tail indicator above 1 + AUTOCORR_C * sqrt(2 / (blocks - 1)) (correlation
# that is long but weak from one request to the next).
AUTOCORR_Z = 3.5
AUTOCORR_C = 4.0
MIN_BLOCKS = 8


@dataclass(frozen=True, slots=True)
class Autocorr:
    """Variance inflation of a share's mean from correlation in arrival order."""

    factor: float  # 1.0 when none is detected
    df: float  # degrees of freedom of the factor's estimate; inf when none is applied


INDEPENDENT = Autocorr(1.0, math.inf)


def autocorrelation(indicator: BoolArray, above_median: BoolArray) -> Autocorr:
    """The batch-means variance factor of the mean of `indicator`, applied only when arrival
    order is detected to matter (see AUTOCORR_Z / AUTOCORR_C); its degrees of freedom are the
    batches' minus one, so the caller can use a Student-t reference."""
    batches = _batch_means(indicator)
    if batches is None:
        return INDEPENDENT
    means, b, scale = batches
    f0 = b * float(means.var(ddof=1)) / scale
    strict = 1.0 + AUTOCORR_C * math.sqrt(2.0 / (means.size - 1))
    if f0 <= strict and _runs_z(above_median) <= AUTOCORR_Z:
        return INDEPENDENT
    f, blocks = max(_merged_factors(means, b, scale))
    return Autocorr(f, blocks - 1.0) if f > 1.0 else INDEPENDENT


def _batch_means(indicator: BoolArray) -> tuple[FloatArray, int, float] | None:
    """Non-overlapping batch means of `indicator` in batches of b = floor(sqrt(n)) requests,
    with b and m(1 - m) for the overall mean m; None when there are too few batches or the
    indicator is constant."""
    n = indicator.size
    b = max(1, math.isqrt(n))
    blocks = n // b
    if b < 2 or blocks < MIN_BLOCKS:
        return None
    means = indicator[: blocks * b].reshape(blocks, b).mean(axis=1)
    m = float(means.mean())
    return None if m <= 0.0 or m >= 1.0 else (means, b, m * (1.0 - m))


def _merged_factors(means: FloatArray, b: int, scale: float) -> list[tuple[float, int]]:
    """(variance factor, batches) at b, then with batches merged in pairs (2b, 4b, ...) while
    at least MIN_BLOCKS remain, so that correlation longer than sqrt(n) requests (load regimes)
    is not missed."""
    out = [(b * float(means.var(ddof=1)) / scale, means.size)]
    while means.size >= 2 * MIN_BLOCKS:
        even = means.size - means.size % 2
        means = 0.5 * (means[0:even:2] + means[1:even:2])
        b *= 2
        out.append((b * float(means.var(ddof=1)) / scale, means.size))
    return out


def _runs_z(above: BoolArray) -> float:
    """Lag-1 autocorrelation of `above` (a request above the median) times sqrt(n): about
    standard normal for independent requests, large and positive when neighbours in arrival
    order look alike (the runs test around the median)."""
    n = above.size
    if n < 3:
        return 0.0
    k = int(np.count_nonzero(above))
    m = k / n
    ss = n * m * (1.0 - m)  # sum of (s - m)^2, from counts: no float copy of n values
    if ss == 0.0:
        return 0.0
    both = int(np.count_nonzero(above[:-1] & above[1:]))
    first, last = int(above[0]), int(above[-1])
    cross = both - m * ((k - last) + (k - first)) + (n - 1) * m * m
    return cross / ss * math.sqrt(n)
