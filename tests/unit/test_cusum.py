"""The drift detector of the history (issue 39): a self-starting CUSUM whose threshold holds
the false alarms of a whole series. Checked against a plain numpy CUSUM, a formula written out
in the test, and simulated series."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from budgetdiff.stats import cusum


def test_the_threshold_holds_a_plain_cusums_false_alarms_over_the_horizon() -> None:
    """A Monte Carlo of the chart on independent standard normal z (what the Markov chain
    computes): the share of 40,000 series of 100 runs that pass h is alpha."""
    h = cusum.threshold(0.05, 100)
    rng = np.random.default_rng(39)
    s = np.zeros(40_000)
    passed = np.zeros(40_000, dtype=bool)
    for z in rng.standard_normal((100, 40_000)):
        s = np.maximum(0.0, s + z - cusum.K)
        passed |= s > h
    assert passed.mean() == pytest.approx(0.05, abs=0.005)  # 4.5 simulation standard errors
    assert cusum.threshold(0.01, 100) > h and cusum.threshold(0.05, 500) > h


def test_the_path_is_the_formula_written_out() -> None:
    rng = np.random.default_rng(1)
    x = 100 + rng.normal(0, 2, 30)
    x[20:] += 6
    se = rng.uniform(1.0, 2.0, 30)
    expected, s = [], 0.0
    for i in range(cusum.MIN_PRIOR, 30):
        prior = x[:i]
        own = float(np.mean(se[:i] ** 2))
        d = np.diff(prior)
        spread = float(np.var(d, ddof=1)) if d.size > 1 else float(d[0] ** 2)
        df = 2 * (i - 1) ** 2 / (3 * i - 4)
        more = spread / 2 > own * stats.chi2.ppf(0.95, df) / df
        tau2 = max(0.0, spread / 2 - own) if more else 0.0
        z = (x[i] - prior.mean()) / math.sqrt(se[i] ** 2 + tau2 + (own + tau2) / i)
        if tau2 > 0:  # an estimated spread: z as a t of von Neumann's degrees of freedom
            z = stats.norm.ppf(stats.t.cdf(z, 2 * (i - 1) ** 2 / (3 * i - 4)))
        s = max(0.0, s + z - cusum.K)
        expected.append(s)
    path = cusum.path(x, se)
    assert path is not None and path == pytest.approx(expected, rel=1e-12)
    rise = cusum.rise(x, se)
    zeros = [i for i, v in enumerate(expected) if v == 0.0]
    assert rise is not None and rise.statistic == pytest.approx(expected[-1])
    assert rise.start == cusum.MIN_PRIOR + zeros[-1] + 1  # the run after S last left 0
    assert 19 <= rise.start <= 21  # the step is at run 20


def test_a_series_too_short_or_flat_has_no_rise() -> None:
    assert cusum.rise(np.ones(3), np.ones(3)) is None
    flat = cusum.rise(np.full(10, 5.0), np.zeros(10))  # equal counts, no error: nothing to tell
    assert flat is not None and flat.statistic == 0.0 and flat.start is None


def test_noise_between_runs_is_not_a_rise() -> None:
    """Runs whose own intervals leave out a spread between runs (sd 3 against a standard error
    of 1): a chart on their own errors alone passes h in nearly every series; tau takes the
    spread in, and about 1 in 7 does (the price of estimating it from few runs)."""
    rng = np.random.default_rng(5)
    h = cusum.threshold(0.05, 100)
    passed = 0
    for _ in range(400):
        x = 100 + rng.normal(0, 3, 100) + rng.normal(0, 1, 100)
        path = cusum.path(x, np.ones(100))
        passed += path is not None and bool(path.max() > h)
    assert passed <= 0.16 * 400, passed
    x = 100 + rng.normal(0, 3, 4000) + rng.normal(0, 1, 4000)
    assert cusum.between_runs(x, np.ones(4000)) == pytest.approx(9.0, rel=0.1)


def test_pure_noise_passes_at_most_alpha_and_a_creep_is_found() -> None:
    """Normal runs with standard error 2.6% (decode's p95 of 600 lognormal requests): at most
    5% of 100-run series of noise pass h; a creep of +1% a run from run 20 is past h within
    10 runs in at least 80% of series."""
    rng = np.random.default_rng(11)
    h = cusum.threshold(0.05, 100)
    noise = 0
    for _ in range(1000):
        x = 1 + 0.026 * rng.standard_normal(101)
        noise += bool(cusum.path(x, np.full(101, 0.026)).max() > h)  # type: ignore[union-attr]
    assert noise <= 50 + 3 * math.sqrt(50 * 0.95), noise
    found = 0
    for _ in range(300):
        x = 1.01 ** np.clip(np.arange(40) - 19, 0, 20) * (1 + 0.026 * rng.standard_normal(40))
        path = cusum.path(x, 0.026 * x)
        assert path is not None
        passed = np.flatnonzero(path > h) + cusum.MIN_PRIOR
        found += bool(((passed >= 20) & (passed <= 29)).any())
    assert found >= 0.8 * 300, found
