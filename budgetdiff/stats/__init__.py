"""Statistics core, pure: percentiles, the test of a percentile's change and its verdict, SLO
attainment. No file, stream or network. Method and simulations: docs/statistics.md.

- `quantiles`: percentiles as numpy computes them, the fewest requests for an interval;
- `change`: the change of a percentile between base and head, its interval, p-value and MDE;
- `decide`: the verdict of each change, over its family (the permutation step-down, or Holm);
- `permutation`: the Westfall-Young step-down over a family's rows, permuting whole requests;
- `attainment`: the share of requests that met the SLO, with its exact interval;
- `autocorrelation`: how much correlation in arrival order inflates a share's variance;
- `distributions`: the normal (standard library), t and beta (scipy) the others read.
"""

from budgetdiff.stats.attainment import Attainment, attainment
from budgetdiff.stats.change import Change, compare_percentile, interval, two_proportion_p
from budgetdiff.stats.decide import (
    HOLM,
    PERMUTATION,
    FamilyTest,
    decide,
    family_test,
    holm,
    holm_adjusted,
    large_enough,
)
from budgetdiff.stats.distributions import normal_cdf, normal_quantile
from budgetdiff.stats.quantiles import needed_for_interval, percentile, percentiles

__all__ = [
    "HOLM",
    "PERMUTATION",
    "Attainment",
    "Change",
    "FamilyTest",
    "attainment",
    "compare_percentile",
    "decide",
    "family_test",
    "holm",
    "holm_adjusted",
    "interval",
    "large_enough",
    "needed_for_interval",
    "normal_cdf",
    "normal_quantile",
    "percentile",
    "percentiles",
    "two_proportion_p",
]
