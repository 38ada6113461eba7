"""The joint step-down over a family's rows (budgetdiff.stats.joint), against truths computed
here: Sidak's step-down for independent rows, no correction for rows that are one, numpy's
correlation of the indicators for the dependence, and the family-wise rate by simulation."""

from __future__ import annotations

import numpy as np
import pytest

from budgetdiff.stats import compare_percentile
from budgetdiff.stats.joint import (
    JointTest,
    SideLayout,
    block_length,
    change_correlation,
    step_down,
)


def _row(base: np.ndarray, head: np.ndarray, p_value: float, se: float = 1.0) -> JointTest:
    return JointTest(
        base=base,
        head=head,
        base_at=float(np.percentile(base, 95)),
        head_at=float(np.percentile(head, 95)),
        base_weight=se,
        head_weight=se,
        p_value=p_value,
    )


def test_independent_rows_are_adjusted_as_sidaks_step_down() -> None:
    rng = np.random.default_rng(1)
    ps = (0.01, 0.02, 0.3)
    rows = [_row(rng.random(2000), rng.random(2000), p) for p in ps]
    adjusted = step_down(rows)
    sidak = [1 - (1 - 0.01) ** 3, 1 - (1 - 0.02) ** 2, 0.3]
    assert adjusted == pytest.approx(sidak, abs=0.006)
    # and never below Holm's first step would be were the rows one test: the marginal p
    assert all(a >= p for a, p in zip(adjusted, ps, strict=True))


def test_rows_that_are_the_same_values_pay_no_multiplicity() -> None:
    rng = np.random.default_rng(2)
    b, h = rng.random(1000), rng.random(1000)
    adjusted = step_down([_row(b, h, 0.01), _row(b.copy(), h.copy(), 0.02)])
    assert adjusted[0] == pytest.approx(0.01, abs=0.002)
    assert adjusted[1] == pytest.approx(0.02, abs=0.002)


def test_the_dependence_is_the_correlation_of_the_requests_indicators() -> None:
    """A slice and the total it is part of: the correlation of their changes is each side's
    phi coefficient of I(x <= p95), weighted by the side's share of the variance."""
    rng = np.random.default_rng(3)
    n = 5000
    sides = []
    for _ in "bh":
        decode = np.exp(0.4 * rng.standard_normal(n))
        sides.append((decode, decode + np.exp(0.4 * rng.standard_normal(n))))
    (bd, bt), (hd, ht) = sides
    rows = [
        JointTest(bd, hd, *_p95(bd, hd), 1.0, 2.0, 0.5),
        JointTest(bt, ht, *_p95(bt, ht), 1.0, 2.0, 0.5),
    ]
    corr = change_correlation(rows, SideLayout(), SideLayout())

    def phi(x: np.ndarray, y: np.ndarray) -> float:
        return float(np.corrcoef(x <= np.percentile(x, 95), y <= np.percentile(y, 95))[0, 1])

    expected = (1 * phi(bd, bt) + 4 * phi(hd, ht)) / 5
    assert corr[0, 1] == pytest.approx(expected, abs=1e-9)
    assert corr[0, 1] > 0.4


def _p95(b: np.ndarray, h: np.ndarray) -> tuple[float, float]:
    return float(np.percentile(b, 95)), float(np.percentile(h, 95))


def test_a_row_of_another_length_is_taken_as_independent() -> None:
    """Pooled gaps are not one value per request: they cannot be lined up with the others."""
    rng = np.random.default_rng(4)
    b, h = rng.random(1000), rng.random(1000)
    gaps_b, gaps_h = rng.random(5000), rng.random(5000)
    rows = [_row(b, h, 0.3), _row(b + 0.0, h + 0.0, 0.3), _row(gaps_b, gaps_h, 0.3)]
    corr = change_correlation(rows, SideLayout(), SideLayout())
    assert corr[0, 1] == pytest.approx(1.0)
    assert corr[0, 2] == 0.0 and corr[1, 2] == 0.0


def test_blocks_never_span_two_runs() -> None:
    """With runs, the units are blocks inside each run: a row that is high in one run and low
    in the other keeps its correlation with a copy of itself, whatever the blocks."""
    rng = np.random.default_rng(5)
    b, h = rng.random(600), rng.random(600)
    runs = np.repeat([0, 1, 2], 200)
    layout = SideLayout(runs=runs, block=block_length(600, autocorrelated=True))
    rows = [_row(b, h, 0.01), _row(b.copy(), h.copy(), 0.02)]
    assert step_down(rows, base=layout, head=layout) == step_down(rows)


def test_the_same_inputs_give_the_same_adjustment_and_other_inputs_other_draws() -> None:
    rng = np.random.default_rng(6)
    rows = [_row(rng.random(500), rng.random(500), p) for p in (0.004, 0.03, 0.04)]
    assert step_down(rows) == step_down(list(rows))
    other = [_row(rng.random(500), rng.random(500), p) for p in (0.004, 0.03, 0.04)]
    assert step_down(other) != step_down(rows)  # draws seeded by the inputs, not a constant


def test_the_family_wise_rate_holds_for_a_request_and_its_slices() -> None:
    """A/A: five slices per request and their sum, 1,000 requests a side. The share of reports
    where any row's adjusted p-value is under 5% stays within the level, and above Holm's
    (the joint procedure spends the level Holm leaves unused on dependent rows)."""
    rng = np.random.default_rng(7)
    reports, joint, holm = 300, 0, 0
    for _ in range(reports):
        sides = []
        for _ in "bh":
            parts = np.exp(0.4 * rng.standard_normal((5, 1000))) * np.array([[1, 2, 8, 40, 2]]).T
            sides.append([*parts, parts.sum(axis=0)])
        changes = [compare_percentile(b, h, 95, 0.95) for b, h in zip(*sides, strict=True)]
        rows = [
            JointTest(b, h, c.base, c.head, 1.0, 1.0, c.p_value or 1.0)
            for b, h, c in zip(*sides, changes, strict=True)
        ]
        adjusted = step_down(rows)
        joint += min(adjusted) <= 0.05
        ps = sorted(c.p_value or 1.0 for c in changes)
        holm += ps[0] <= 0.05 / len(ps)
    assert joint / reports <= 0.05 + 2 * (0.05 * 0.95 / reports) ** 0.5
    assert joint >= holm
