"""Correlation in arrival order: is it there, and by how much does it inflate the variance of a
share (the share of requests below a percentile, or meeting the SLO)? Batch means, checked by a
runs test and by overlapping batch means of a rank score; a warm-up (a start unlike the rest of
the run) is a stratum of its own, not correlation. Chosen by simulation
(tests/unit/test_stats_simulation.py, docs/statistics.md)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import special

from budgetdiff.table import BoolArray, FloatArray

# Autocorrelation in arrival order is applied when any test finds it (each at a strict level,
# so that a report of ~7 rows x 2 runs of independent requests rarely says "autocorrelated"):
# the runs test around the median (lag-1 autocorrelation of "above the median" times sqrt(n),
# one-sided; it finds mild AR(1) correlation, phi 0.3, that the batch means cannot), or the batch
# means of the tail indicator above 1 + AUTOCORR_C * sqrt(2 / (blocks - 1)) (correlation
# that is long but weak from one request to the next).
AUTOCORR_Z = 3.5
AUTOCORR_C = 4.0
MIN_BLOCKS = 8
# The third test (when the caller gives a rank score, change._side's quartile score): the
# overlapping batch means (Meketon-Schmeiser; a Bartlett lag window of sqrt(n) lags) of the
# score, against its chi-square reference, one-sided at this normal quantile. It reads every
# request's rank, not one share, so it finds correlation spread over many lags (20
# consecutive requests sharing a slowdown) at 300 requests, where the tail indicator's batch
# means and the lag-1 runs test found it on 16-46% of the rows, this test on 74-95% (issue 34;
# about 1 in 1,000 independent sides at 300-1,000 requests).
SCORE_Z = 3.09
# A warm-up: the run's first requests (at most a PREFIX_SHARE of them, at least MIN_PREFIX)
# score unlike the rest by PREFIX_Z standard errors of the difference, the rest's
# correlation included. A level that holds for the first requests only is not correlation
# between requests: the same start in every run of a configuration fixes the slow requests'
# count, and the share below the percentile is a stratified mean (warm-up and rest), whose
# variance is less than a share of independent requests'. Strict, because the largest of
# many prefixes is taken: under 1 in 1,000 independent sides (300-1,000 requests) finds one,
# 1% of sides of load regimes (a slow first regime), and 55-88% of the rows of a 5% warm-up at
# 300 requests, all at 1,000.
PREFIX_Z = 4.5
PREFIX_SHARE = 0.25
MIN_PREFIX = 8


@dataclass(frozen=True, slots=True)
class Autocorr:
    """Variance inflation of a share's mean from correlation in arrival order."""

    factor: float  # 1.0 when none is detected; below 1 for a warm-up's stratified share
    df: float  # degrees of freedom of the factor's estimate; inf when none is applied
    warmup: int = 0  # requests at the start taken as a warm-up (a stratum of their own)
    correlated: bool = False  # the requests after any warm-up are correlated in arrival order


INDEPENDENT = Autocorr(1.0, math.inf)


@dataclass(frozen=True, slots=True)
class Score:
    """A rank score of a run's requests in arrival order (`change._side`'s: how many of the
    run's quartiles a request is above, 0-3), summed over chunks of `step` consecutive
    requests (1 up to 1,000 requests a side, then floor(sqrt(n)) / 16): all that the score's
    tests read, O(n / step) after one pass."""

    sums: FloatArray  # sums[j]: the score of the first j * step requests (sums[0] = 0)
    squares: FloatArray  # the same of the score squared
    step: int


def score_chunks(score: np.ndarray[Any, np.dtype[np.int8]]) -> Score:
    """`score`, one value per request in arrival order, summed into `Score`'s chunks."""
    n = score.size
    step = max(1, math.isqrt(n) // 16) if n > 1000 else 1
    whole = score[: n // step * step].reshape(-1, step)
    sums = whole.sum(axis=1, dtype=np.int64)
    squares = (whole * whole).sum(axis=1, dtype=np.int64)
    zero = np.zeros(1)
    return Score(
        np.concatenate([zero, np.cumsum(sums, dtype=np.float64)]),
        np.concatenate([zero, np.cumsum(squares, dtype=np.float64)]),
        step,
    )


def autocorrelation(
    indicator: BoolArray,
    above_median: BoolArray,
    score: Score | None = None,
    *,
    correlated: bool = False,
) -> Autocorr:
    """The variance factor of the mean of `indicator` from arrival order: the batch-means
    factor, applied only when arrival order is detected to matter (AUTOCORR_Z / AUTOCORR_C,
    and SCORE_Z when a rank `score` of the same requests is given) or when the caller knows it
    does (`correlated`: the other side of the comparison is); its degrees of freedom are the
    batches' minus one, so the caller can use a Student-t reference. With a `score`, a warm-up
    (PREFIX_Z) is first set apart: the factor is then the stratified share's (warm-up and
    rest, the rest's correlation included), and may be below 1."""
    n = indicator.size
    warmup = _warmup(score) if score is not None else 0
    if warmup == 0:
        return _correlated(indicator, above_median, score, 0, correlated)
    assert score is not None
    rest = _correlated(
        indicator[warmup:], above_median[warmup:], score, warmup // score.step, correlated
    )
    m = float(np.count_nonzero(indicator)) / n
    if m <= 0.0 or m >= 1.0:
        return INDEPENDENT
    first = float(np.count_nonzero(indicator[:warmup])) / warmup
    then = float(np.count_nonzero(indicator[warmup:])) / (n - warmup)
    within = warmup * first * (1.0 - first) + (n - warmup) * then * (1.0 - then) * rest.factor
    return Autocorr(within / (n * m * (1.0 - m)), rest.df, warmup, rest.correlated)


def _correlated(
    indicator: BoolArray,
    above_median: BoolArray,
    score: Score | None,
    start: int,
    known: bool,
) -> Autocorr:
    """The batch-means factor of `indicator` when any test finds correlation (or it is
    `known`), else INDEPENDENT. `score` from chunk `start` on are the same requests'."""
    batches = _batch_means(indicator)
    if batches is None:
        return INDEPENDENT
    means, b, scale = batches
    f0 = b * float(means.var(ddof=1)) / scale
    strict = 1.0 + AUTOCORR_C * math.sqrt(2.0 / (means.size - 1))
    if (
        not known
        and f0 <= strict
        and _runs_z(above_median) <= AUTOCORR_Z
        and not _score_correlated(score, start)
    ):
        return INDEPENDENT
    f, blocks = max(_merged_factors(means, b, scale))
    return Autocorr(f, blocks - 1.0, correlated=True) if f > 1.0 else INDEPENDENT


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


def _obm_factor(score: Score, start: int = 0) -> tuple[float, float, float] | None:
    """Overlapping batch means of the score from chunk `start` on, in batches of about
    sqrt(n) requests (a whole number of chunks): its long-run variance over its variance (1
    for independent values), the estimate's degrees of freedom, 1.5 (n / b - 1) (Meketon and
    Schmeiser 1984; a Bartlett lag window of b lags), and the variance; None when too short
    or constant. Batches start at every chunk: with chunks of one request, every request."""
    c = score.sums[start:] - score.sums[start]
    chunks = c.size - 1
    n = chunks * score.step
    per = max(1, math.isqrt(n) // score.step)  # chunks a batch
    b = per * score.step
    if b < 2 or n // b < MIN_BLOCKS:
        return None
    mean = float(c[-1]) / n
    v = float(score.squares[start + chunks] - score.squares[start]) / n - mean * mean
    if v <= 1e-12:
        return None
    dev = (c[per:] - c[:-per]) / b - mean
    lrv = b * n / (n - b) * float(dev @ dev) / dev.size
    return lrv / v, 1.5 * (n / b - 1.0), v


def _score_correlated(score: Score | None, start: int) -> bool:
    """Is the score's long-run variance beyond what independent requests give (the chi-square
    reference of the overlapping batch means, one-sided at SCORE_Z)?"""
    got = _obm_factor(score, start) if score is not None else None
    if got is None:
        return False
    f, df, _ = got
    alpha = 0.5 * math.erfc(SCORE_Z / math.sqrt(2.0))
    return f > float(special.chdtri(df, alpha)) / df


def _warmup(score: Score) -> int:
    """How many requests at the start of the run are a warm-up: the prefix (MIN_PREFIX up to
    PREFIX_SHARE of the run, whole chunks) whose mean score differs most from the rest's
    (standardised as for independent requests), kept when that difference is over PREFIX_Z
    standard errors with the rest's long-run variance (overlapping batch means) in them;
    else 0."""
    c, step = score.sums, score.step
    n = (c.size - 1) * step
    first, last = -(-MIN_PREFIX // step), int(PREFIX_SHARE * n) // step
    if last < first or n - last * step < MIN_BLOCKS * 2:
        return 0
    k = np.arange(first, last + 1)
    tau = (k * step).astype(np.float64)
    diff = c[k] / tau - (c[-1] - c[k]) / (n - tau)
    i = int(np.argmax(np.abs(diff) * np.sqrt(tau * (n - tau))))
    got = _obm_factor(score, int(k[i]))
    if got is None:
        return 0
    f, _, v = got
    t = float(tau[i])
    z = abs(float(diff[i])) / math.sqrt(v * max(f, 1.0) * (1.0 / t + 1.0 / (n - t)))
    return int(t) if z > PREFIX_Z else 0
