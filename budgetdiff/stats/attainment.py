"""SLO attainment: the share of requests that met the SLO, with its exact (Clopper-Pearson)
interval, taken at the effective number of requests when arrival order is autocorrelated."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from budgetdiff.stats.autocorrelation import autocorrelation
from budgetdiff.stats.distributions import beta_quantile, normal_cdf, t_quantile
from budgetdiff.table import BoolArray


@dataclass(frozen=True, slots=True)
class Attainment:
    """Share of requests that met the SLO, with its interval (percent)."""

    good: int
    total: int
    pct: float
    ci_pct: tuple[float, float]
    # requests that count as independent, when arrival order is autocorrelated (None: all)
    effective_n: int | None = None


def attainment(good: BoolArray, confidence: float) -> Attainment:
    """Share of good requests with its Clopper-Pearson interval at `confidence`: exact for
    independent requests. `good` in arrival order: when that order is autocorrelated (the same
    tests as the percentiles), the interval is taken at the effective number of requests,
    n / f for the batch-means variance factor f, and at the confidence whose normal quantile is
    Student's t quantile with the batch means' degrees of freedom."""
    total = int(good.size)
    k = int(np.count_nonzero(good))
    if total == 0:
        return Attainment(0, 0, math.nan, (0.0, 100.0))
    auto = autocorrelation(good, good)
    n_eff, k_eff = total / auto.factor, k / auto.factor
    if auto.factor > 1.0:
        confidence = 2.0 * normal_cdf(t_quantile((1.0 + confidence) / 2.0, auto.df)) - 1.0
    alpha = 1.0 - confidence
    lower = 0.0 if k == 0 else beta_quantile(alpha / 2.0, k_eff, n_eff - k_eff + 1)
    upper = 1.0 if k == total else beta_quantile(1.0 - alpha / 2.0, k_eff + 1, n_eff - k_eff)
    effective = round(n_eff) if auto.factor > 1.0 else None
    return Attainment(k, total, 100.0 * k / total, (100.0 * lower, 100.0 * upper), effective)
