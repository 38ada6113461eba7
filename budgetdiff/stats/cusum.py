"""Has a series of runs risen since it began? Page's one-sided CUSUM, self-starting, with its
threshold set for the life of the series rather than for one look.

Each run i (from the MIN_PRIOR-th on) is held against the mean of the runs before it:

    z_i = (x_i - mean(x_<i)) / sqrt(se_i^2 + tau^2 + (mean(se_<i^2) + tau^2) / i)

where se_i is the run's own standard error (from its interval) and tau^2 the variance between
runs that their own errors do not explain: half the variance of the successive differences of
the runs before i (von Neumann's estimate, taken about the differences' mean so that a steady
creep adds nothing to it) less their mean se^2, when that spread is more than the errors
explain (a chi-square test at 5%), else 0. While the level holds, each z_i is about standard
normal and independent of the others (exactly so for normal runs of equal errors and tau 0:
Hawkins 1987, a self-starting chart needs no known level); tau only shrinks them, and where
it is estimated z is taken as a Student t and given the normal score of its probability.
The statistic S_i = max(0, S_(i-1) + z_i - K) rises with every run above the level; the
series has risen when S, at its newest run, is above a threshold h.

h is set so that a series that never moves passes h within HORIZON runs with probability at
most alpha: that probability is computed for z_i independent standard normal by the Markov
chain of Brook and Evans (1972), S discretised in STATES states, and h found by bisection.
The check is made anew at every merge over the whole series, so each merge's answer is the
one a chart kept from the start would give: a long series looks many times, and the threshold
already pays for all of them. Where S last left 0 is the estimate of where the rise began
(Page 1954). Computes only: values in, values out.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
from scipy import special

from budgetdiff.table import FloatArray

K = 0.75  # the allowance per run, in standard errors: a chart tuned to a rise of 1.5 of them
HORIZON = 500  # runs the false-alarm probability holds over (the Action's store keeps 500)
MIN_PRIOR = 3  # runs before the first one held against them
STATES = 50  # of the Markov chain (h to about 0.1%)


@dataclass(frozen=True)
class Rise:
    """The CUSUM of a series at its newest run."""

    statistic: float  # S at the newest run
    start: int | None  # index of the first run of the current rise; None when S is 0


def rise(values: FloatArray, ses: FloatArray) -> Rise | None:
    """The CUSUM at the last of `values` (each run's standard error in `ses`); None when the
    series is too short to hold a run against the ones before it."""
    s = path(values, ses)
    if s is None:
        return None
    zero = np.flatnonzero(s == 0.0)
    last = float(s[-1])
    start = None if last == 0.0 else MIN_PRIOR + (int(zero[-1]) + 1 if zero.size else 0)
    return Rise(last, start)


def path(values: FloatArray, ses: FloatArray) -> FloatArray | None:
    """S at each run from the MIN_PRIOR-th on; None when there is none."""
    x = np.asarray(values, dtype=float)
    se2 = np.asarray(ses, dtype=float) ** 2
    if x.size <= MIN_PRIOR or se2.size != x.size:
        return None
    out = np.empty(x.size - MIN_PRIOR)
    s = 0.0
    for i, z in enumerate(standardised(x, se2).tolist()):
        s = max(0.0, s + z - K)
        out[i] = s
    return out


def standardised(x: FloatArray, se2: FloatArray) -> FloatArray:
    """z_i of each run from the MIN_PRIOR-th on, against the runs before it (0 where its
    variance is 0: a series of equal counts has nothing to tell). Where tau^2 is estimated
    (above 0), z is a Student t of the estimate's degrees of freedom, and is taken to the
    normal score of the same probability."""
    i = np.arange(MIN_PRIOR, x.size)
    mean = np.cumsum(x)[i - 1] / i
    own = np.cumsum(se2)[i - 1] / i
    d = np.diff(x)  # the spread of successive differences about their mean: a steady creep
    m = i - 1  # is no spread; differences before run i
    spread = (np.cumsum(d**2)[i - 2] - np.cumsum(d)[i - 2] ** 2 / m) / np.maximum(m - 1, 1)
    # the variance of half the mean squared successive difference of n normal values is
    # (3n - 4) / (n - 1)^2 sigma^4 (von Neumann 1941): that of a chi-square of df below. The
    # spread between runs is taken in only where it is more than their errors say (p < 0.05)
    df = 2.0 * (i - 1) ** 2 / (3.0 * i - 4.0)
    more = spread / 2.0 > own * special.chdtri(df, 0.05) / df
    tau2 = np.where(more, np.maximum(0.0, spread / 2.0 - own), 0.0)
    var = se2[i] + tau2 + (own + tau2) / i
    safe = np.where(var > 0, var, 1.0)
    z = np.where(var > 0, (x[i] - mean) / np.sqrt(safe), 0.0)
    scored: FloatArray = np.where(tau2 > 0, special.ndtri(special.stdtr(df, z)), z)
    return scored


def between_runs(values: FloatArray, ses: FloatArray) -> float:
    """tau^2: the variance between runs that their own errors do not explain (0 when fewer
    than two runs)."""
    x = np.asarray(values, dtype=float)
    if x.size < 2:
        return 0.0
    own = float(np.mean(np.asarray(ses, dtype=float) ** 2))
    d = np.diff(x)
    spread = float(np.var(d, ddof=1)) if d.size > 1 else float(d[0] ** 2)
    return max(0.0, spread / 2.0 - own)


@functools.lru_cache(maxsize=64)
def threshold(alpha: float, horizon: int = HORIZON) -> float:
    """h such that S of a series that never moves passes h within `horizon` runs with
    probability alpha, to 1e-4. By bisection: the probability falls as h rises, and
    scipy.optimize's root finders cost seconds of import on a loaded 2-core runner."""
    low, high = 0.0, 64.0
    while high - low > 1e-4:
        mid = (low + high) / 2
        low, high = (mid, high) if false_alarm(mid, horizon) > alpha else (low, mid)
    return high


def false_alarm(h: float, horizon: int) -> float:
    """P(S passes h within `horizon` runs | z independent standard normal), S starting at 0:
    Brook and Evans' chain, state 0 for S = 0 and state j for S near j w."""
    w = 2.0 * h / (2 * STATES - 1)
    centre = np.arange(STATES) * w
    d = centre[None, :] - centre[:, None] + K  # z that moves S from state i to state j's centre
    q = special.ndtr(d + w / 2) - special.ndtr(d - w / 2)
    q[:, 0] = special.ndtr(w / 2 - centre + K)  # back to 0: every z below
    stay = np.linalg.matrix_power(q, horizon)[0].sum()
    return float(1.0 - stay)
