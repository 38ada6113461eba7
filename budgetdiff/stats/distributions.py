"""The distributions the statistics read: the normal from the standard library
(`statistics.NormalDist`), Student's t and the beta from `scipy.special`. Thin on purpose: the
libraries compute, these only name the question (a two-sided p-value, a quantile)."""

from __future__ import annotations

import math
from statistics import NormalDist

from scipy import special

_NORMAL = NormalDist()


def normal_cdf(z: float) -> float:
    """The standard normal distribution function."""
    return _NORMAL.cdf(z)


def normal_quantile(prob: float) -> float:
    """The standard normal quantile, 0 < prob < 1 (a ValueError outside)."""
    return _NORMAL.inv_cdf(prob)


def t_two_sided_p(t: float, df: float) -> float:
    """Two-sided p-value of Student's t with `df` degrees of freedom (normal when df is inf)."""
    return float(2.0 * special.stdtr(df, -abs(t)))


def t_quantile(prob: float, df: float) -> float:
    """Student's t quantile with `df` degrees of freedom (normal when df is inf)."""
    return float(special.stdtrit(df, prob))


def beta_quantile(prob: float, a: float, b: float) -> float:
    """The beta(a, b) quantile."""
    return float(special.betaincinv(a, b, prob))


def welch_df(v1: float, df1: float, v2: float, df2: float) -> float:
    """Welch-Satterthwaite degrees of freedom of v1 + v2, each variance estimated with its own
    degrees of freedom (inf: treated as known)."""
    denom = (v1 * v1 / df1 if not math.isinf(df1) else 0.0) + (
        v2 * v2 / df2 if not math.isinf(df2) else 0.0
    )
    return math.inf if denom <= 0.0 else (v1 + v2) ** 2 / denom
