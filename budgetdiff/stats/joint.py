"""The rows of one family tested together: a Westfall-Young step-down over the rows' percentile
changes, with the dependence between the rows taken from whole requests. Pure numpy, no I/O.

A request's slices and its total move together, so the rows of a report are far from
independent, and Holm (which assumes the worst) pays for seven tests where the data hold fewer.
The joint procedure keeps the family-wise rate under that dependence with more power:

- Each row's change is, to first order, a sum over requests (Bahadur): on each side, the row's
  percentile moves by minus the mean of its indicator I(x <= percentile), over the density.
  Whole units of requests are resampled with Gaussian multipliers (a multiplier bootstrap):
  a unit is one request, a block of consecutive requests where the side is autocorrelated in
  arrival order (sqrt(n) requests, as the batch means), and never crosses from one run to the
  next. Its draws are exactly normal with the covariance of the units' centred indicator sums,
  so they are drawn from that covariance directly: O(n) per row to sum the units, then
  O(draws x rows^2), whatever n is (1,000,000 requests cost the sums, not the draws).
- Each row's own two-sided p-value (the interval's, `change.compare_percentile`) is read on the
  normal scale, z_j; the step-down compares the largest |z| with the maximum of the resampled
  standardised changes over all rows, then the next over the rows left, and so on (minP,
  Westfall & Young 1993, algorithm 2.8), each adjusted p-value at least the previous one.
  Under independence this is Sidak's step-down (slightly above Holm's power); when the rows move
  as one, one test.
- Rows whose values are not one per request of the side (pooled inter-token gaps) cannot be
  lined up with the others: they are resampled on their own, as independent, which is the
  conservative case (Sidak's inequality).
- Deterministic: the draws' seed is derived from the inputs (the sizes and each row's
  percentiles), so the same runs give the same report, and a PR comment does not flicker.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from budgetdiff.stats.distributions import normal_quantile
from budgetdiff.table import FloatArray

# Draws of the joint null: the adjusted p-value near 0.05 is then known to about +-0.003.
DRAWS = 5_000
# At most this many resampled units a side: beyond it, consecutive requests are summed into
# blocks (the correlation of independent requests' block sums is theirs), so that a side of
# 1,000,000 requests costs a cumulative sum per row, not a 1,000,000-row product.
MAX_UNITS = 50_000


@dataclass(frozen=True, slots=True)
class JointTest:
    """One test of a family: the values of its row on each side, the point each side's
    indicator is taken at, each side's weight in the statistic (its standard error), and the
    test's own two-sided p-value. A row has one test (its interval's), or two: with the
    quantile test, head's indicator is taken at base's percentile."""

    base: FloatArray
    head: FloatArray
    base_at: float
    head_at: float
    base_weight: float
    head_weight: float
    p_value: float


@dataclass(frozen=True, slots=True)
class SideLayout:
    """How one side's requests group into resampled units: the runs (None: one run) and the
    block length (1: each request its own unit)."""

    runs: np.ndarray | None = None
    block: int = 1


def _units(n: int, layout: SideLayout) -> tuple[np.ndarray | None, int]:
    """The unit of each of a side's n requests, and the block length: consecutive blocks of
    `layout.block` (at least n / MAX_UNITS), within each run (a block never spans two runs).
    None for the units when they are consecutive blocks over the whole side (the common case,
    summed by a cumulative sum)."""
    block = max(layout.block, -(-n // MAX_UNITS), 1)
    if layout.runs is None or len(layout.runs) != n:
        return None, block
    _, run = np.unique(layout.runs, return_inverse=True)
    order = np.argsort(run, kind="stable")
    position = np.empty(n, dtype=np.intp)
    ranked = run[order]
    position[order] = np.arange(n) - np.searchsorted(ranked, ranked)  # place within its run
    return np.asarray(run * (n // block + 1) + position // block), block


def _unit_sums(x: FloatArray, value: float, layout: SideLayout) -> FloatArray:
    """Each unit's sum of the row's indicator I(x <= value), centred on its mean."""
    indicator = np.asarray(x) <= value
    n = indicator.size
    units, block = _units(n, layout)
    share = float(np.count_nonzero(indicator)) / n if n else 0.0
    if units is None:
        edges = np.append(np.arange(0, n, block), n)
        cumulative = np.concatenate([[0], np.cumsum(indicator, dtype=np.int64)])
        return np.asarray(np.diff(cumulative[edges]) - share * np.diff(edges), dtype=np.float64)
    counts = np.bincount(units, weights=indicator.astype(np.float64))
    return np.asarray(counts - share * np.bincount(units), dtype=np.float64)


def _side_sums(
    columns: Sequence[FloatArray], values: Sequence[float], layout: SideLayout
) -> tuple[FloatArray, list[int]]:
    """The units' centred sums of each row's indicator (units x rows), rows grouped by their
    length: the rows of the side's most common length (one value per request) share the units,
    any other row (pooled gaps) is a group of its own. Also the group of each row."""
    lengths = [len(c) for c in columns]
    n_ref = max(lengths, key=lengths.count)
    groups: list[int] = []
    blocks: list[FloatArray] = []
    for j, (x, v) in enumerate(zip(columns, values, strict=True)):
        own = layout if len(x) == n_ref else SideLayout(block=layout.block)
        blocks.append(_unit_sums(x, v, own))
        groups.append(0 if len(x) == n_ref else j + 1)
    sums = np.zeros((max(len(b) for b in blocks), len(blocks)))
    for j, b in enumerate(blocks):
        sums[: len(b), j] = b
    return sums, groups


def _correlation(sums: FloatArray, groups: list[int]) -> FloatArray:
    """Correlation of the rows' indicator means on one side; rows of different groups are
    resampled independently (correlation 0), a constant indicator has none."""
    cov = sums.T @ sums
    sd = np.sqrt(np.diag(cov))
    safe = np.where(sd > 0.0, sd, 1.0)
    corr = cov / np.outer(safe, safe)
    g = np.asarray(groups)
    corr = np.where(g[:, None] == g[None, :], corr, 0.0)
    np.fill_diagonal(corr, 1.0)
    return np.asarray(corr)


def change_correlation(rows: Sequence[JointTest], base: SideLayout, head: SideLayout) -> FloatArray:
    """Correlation of the rows' changes (head - base): each side's indicator correlation,
    weighted by that side's share of each row's variance (the two sides are independent)."""
    cb, gb = _side_sums([r.base for r in rows], [r.base_at for r in rows], base)
    ch, gh = _side_sums([r.head for r in rows], [r.head_at for r in rows], head)
    rb, rh = _correlation(cb, gb), _correlation(ch, gh)
    vb = np.array([r.base_weight**2 for r in rows])
    vh = np.array([r.head_weight**2 for r in rows])
    total = np.sqrt(vb + vh)
    total = np.where(total > 0.0, total, 1.0)
    wb, wh = np.sqrt(vb) / total, np.sqrt(vh) / total
    corr = rb * np.outer(wb, wb) + rh * np.outer(wh, wh)
    np.fill_diagonal(corr, 1.0)
    return np.asarray(corr)


def _seed(rows: Sequence[JointTest]) -> list[int]:
    """A seed from the inputs: the sizes and the bits of each row's two percentiles."""
    bits = np.array([[r.base_at, r.head_at] for r in rows], dtype=np.float64)
    words = np.nan_to_num(bits).view(np.uint64).ravel() % np.uint64(2**32)
    return [len(rows), *(len(r.base) for r in rows), *(int(w) for w in words)]


def _draws(corr: FloatArray, seed: list[int]) -> FloatArray:
    """|Z| for DRAWS draws of N(0, corr) (a factor by eigen-decomposition: corr may be
    singular when two rows are the same values)."""
    w, v = np.linalg.eigh(corr)
    factor = v * np.sqrt(np.clip(w, 0.0, None))
    rng = np.random.default_rng(seed)
    return np.asarray(np.abs(rng.standard_normal((DRAWS, corr.shape[0])) @ factor.T))


def step_down(
    rows: Sequence[JointTest], *, base: SideLayout = SideLayout(), head: SideLayout = SideLayout()
) -> list[float]:
    """Westfall-Young step-down adjusted p-values of the rows (same order): the family-wise
    rate is held at any level under the rows' dependence, as resampled from whole requests."""
    m = len(rows)
    if m == 0:
        return []
    if m == 1:
        return [rows[0].p_value]
    z = np.array([_z(r.p_value) for r in rows])
    draws = _draws(change_correlation(rows, base, head), _seed(rows))
    order = np.argsort(-z, kind="stable")
    # the running maximum over the rows still in play, from the least significant up
    tail_max = np.maximum.accumulate(draws[:, order[::-1]], axis=1)[:, ::-1]
    adjusted = [0.0] * m
    running = 0.0
    for k, j in enumerate(order):
        exceed = float(np.count_nonzero(tail_max[:, k] >= z[j]) + 1) / (DRAWS + 1)
        running = max(running, min(max(exceed, rows[j].p_value), 1.0))
        adjusted[j] = running
    return adjusted


def _z(p_value: float) -> float:
    """The two-sided p-value on the normal scale."""
    if p_value >= 1.0:
        return 0.0
    return normal_quantile(1.0 - max(p_value, 1e-300) / 2.0) if p_value > 1e-15 else 8.0


def block_length(n: int, autocorrelated: bool) -> int:
    """A side's unit: one request, or sqrt(n) of them in a row where the side is autocorrelated
    in arrival order (the batch means' block)."""
    return max(1, math.isqrt(n)) if autocorrelated else 1


@dataclass(frozen=True, slots=True)
class RowTest:
    """A test of one row as the change computed it (`change.compare_percentile`): where each
    side's indicator is taken, each side's weight in the statistic, and its own p-value."""

    base_at: float
    head_at: float
    base_weight: float
    head_weight: float
    p_value: float


def family_p_values(
    tests: Sequence[tuple[RowTest, ...]],
    base: Sequence[FloatArray],
    head: Sequence[FloatArray],
    *,
    base_layout: SideLayout = SideLayout(),
    head_layout: SideLayout = SideLayout(),
) -> list[float | None]:
    """Each row's p-value adjusted over its family (the rows given), the smallest of its
    tests' (a row is significant when one of its tests is, the step-down holding the rate
    over every test of every row); None for a row without a test (inconclusive)."""
    flat = [
        (
            i,
            JointTest(
                base[i], head[i], t.base_at, t.head_at, t.base_weight, t.head_weight, t.p_value
            ),
        )
        for i, row in enumerate(tests)
        for t in row
    ]
    adjusted = step_down([t for _, t in flat], base=base_layout, head=head_layout)
    out: list[float | None] = [None] * len(tests)
    for (i, _), a in zip(flat, adjusted, strict=True):
        current = out[i]
        out[i] = a if current is None else min(current, a)
    return out
