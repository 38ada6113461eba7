"""A row's tests as the change computed them (`change.compare_percentile`): where each side's
indicator is taken, each side's weight in the statistic, and the test's own p-value. A family's
rows are tested together by `stats.permutation` (the Gaussian multiplier step-down that read
these was too liberal on the simulations' A/A reports and is gone: docs/statistics.md)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class RowTest:
    """A test of one row: its interval's, or the quantile test's (head's share above base's
    percentile, where head's indicator is taken at base's percentile)."""

    base_at: float
    head_at: float
    base_weight: float
    head_weight: float
    p_value: float
