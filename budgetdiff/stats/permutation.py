"""The rows of one family tested together by permutation: a Westfall-Young minP step-down over
the rows' percentile changes, permuting whole requests so that a request's slices and its total
stay together. Pure numpy, no I/O.

Holm's correction treats a report's rows as independent and pays for all of them, where a
request's slices and its total move together; and its p-values come from each row's asymptotic
interval, whose error is widest exactly where a tail regression sits (a percentile at the edge
of a slow mode). The permutation test asks the data themselves:

- Under "head is base again" the requests of the two sides are exchangeable. One permutation
  deals the pooled requests back to two sides of the same sizes and recomputes every row's
  statistic, |p-th percentile of head - that of base|, exactly as the observed one is computed.
  The rows of one request are dealt together (one index permutation for every row of the side's
  usual length), so the rows' dependence is the data's own. A row of another length is dealt
  on its own, independently, the conservative case (Sidak); pooled inter-token gaps are never
  given (they cluster within their requests: `decide.family_test` tests them apart).
- Paired sides (the same requests in base and head, every value of both sides in a pair) swap
  base and head within each pair instead: a request is its own control.
- Each row's permutation p-value is its observed statistic's rank among the permuted ones
  (the observed counted with them, so a p-value is never 0); the step-down then compares the
  smallest with the distribution of the smallest over all rows, the next with the smallest over
  the rows left, and so on (Westfall & Young 1993, algorithm 2.8, the successive minima), each
  adjusted p-value at least the one before. Exact under the complete null whatever the rows'
  dependence; on independent rows about Sidak's step-down, on identical rows one test.
- Deterministic: the seed is derived from the inputs (the sizes and each row's percentiles), so
  the same runs give the same report, and a PR comment does not flicker.

Where requests are not exchangeable (correlated in arrival order, or several runs a side, whose
drift the intervals carry), `applies` says no and the caller keeps Holm's correction. Cost:
per row a sort, then per deal the window of sorted values where the percentile can be, and the
deal itself (a permutation of both sides' requests), so it runs up to MAX_REQUESTS requests in
all; above that the asymptotic p-values are accurate and Holm's loss is the correlation alone.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from budgetdiff.stats.quantiles import linear_ranks
from budgetdiff.table import FloatArray, IntArray

# Permutations of the joint null: an adjusted p-value near 0.05 is known to about +-0.005, and
# the smallest one is 1 / 2,001.
PERMUTATIONS = 2_000
# The most requests of both sides together that are permuted (the cost is linear in them);
# above it the family keeps Holm's correction (see the module's docstring).
MAX_REQUESTS = 4_000
# Permutations computed at once: bounds the memory to CHUNK x MAX_REQUESTS values per row.
CHUNK = 250
# Sorted values read for every deal beyond twice the deepest rank a side's percentile needs: a
# deal short of them there (its percentile further in) is counted over the whole pool.
WINDOW_MARGIN = 64
# The upper end of an adjusted p-value's Monte Carlo error that is held to the level: a
# resampling risk of 1 in 1,000 (Gandy 2009), so that a significant row stays significant
# under other draws (at 2,000 permutations, an estimate of at most 0.037 at a level of 0.05).
RISK_Z = 3.09
# Standard errors of the permutations' own randomness by which every adjusted p-value must be
# away from the family's level before the permutations stop early (at least RISK_Z).
SURE = 4.0

Pairs = tuple[IntArray, IntArray]


def applies(requests: tuple[int, int], *, several_runs: bool, autocorrelated: bool) -> bool:
    """Whether the family's requests (each side's count) may be permuted: one run a side, no
    side correlated in arrival order, and at most MAX_REQUESTS requests in all."""
    return not several_runs and not autocorrelated and sum(requests) <= MAX_REQUESTS


def step_down(
    base: Sequence[FloatArray],
    head: Sequence[FloatArray],
    p: float,
    *,
    pairs: Sequence[Pairs | None] | None = None,
    permutations: int = PERMUTATIONS,
    level: float | None = None,
) -> StepDown:
    """Westfall-Young minP step-down adjusted p-values of each row's change of its p-th
    percentile (same order as the rows): the family-wise rate is held under the rows'
    dependence, as the requests themselves carry it. `pairs`: each row's paired requests
    (base index, head index), as `change.compare_percentile` takes them. With the family's
    `level`, the permutations stop early once every row's adjusted p-value is SURE standard
    errors from it, one way or the other (sequential Monte Carlo: more deals would not change
    a verdict): an A/A report, or one with a clear regression, costs a CHUNK of permutations;
    only a row near the level takes them all."""
    m = len(base)
    if m == 0:
        return StepDown([], 0)
    pairs = list(pairs) if pairs is not None else [None] * m
    rng = np.random.default_rng(_seed(base, head, p))
    groups = [_Group(g, base, head, pairs, p) for g in _groups(base, head, pairs)]
    null = np.empty((permutations + 1, m))  # row 0: the observed statistics
    for g in groups:
        null[0, g.rows] = g.statistics(g.observed())
    done = 0
    while done < permutations:
        size = min(CHUNK, permutations - done)
        for g in groups:
            null[1 + done : 1 + done + size, g.rows] = g.statistics(g.deal(rng, size))
        done += size
        if level is not None and done < permutations:
            adjusted = _adjusted(_p_values(null[: 1 + done]))
            if all(_decided(a, level, done + 1) for a in adjusted):
                return StepDown(adjusted, done)
    return StepDown(_adjusted(_p_values(null)), permutations)


@dataclass(frozen=True, slots=True)
class StepDown:
    """The rows' adjusted p-values as the permutations estimate them, and how many were
    dealt (fewer than asked when they stopped early)."""

    adjusted: list[float]
    permutations: int

    def bounded(self) -> list[float]:
        """Each adjusted p-value at the upper end of its Monte Carlo error (RISK_Z standard
        errors of `permutations` draws): a row is significant only when another set of
        permutations would almost surely say so too."""
        draws = self.permutations + 1
        return [min(1.0, a + RISK_Z * math.sqrt(a * (1.0 - a) / draws)) for a in self.adjusted]


def _decided(p_value: float, level: float, draws: int) -> bool:
    """The p-value estimated from `draws` is SURE standard errors from `level`, either way:
    more draws would not change which side of it the row is on."""
    return abs(p_value - level) > SURE * math.sqrt(p_value * (1.0 - p_value) / draws)


def _groups(
    base: Sequence[FloatArray], head: Sequence[FloatArray], pairs: Sequence[Pairs | None]
) -> list[list[int]]:
    """Rows permuted together: those of the family's most common (base, head) lengths, and
    the same pairing where paired (one value per request: the same requests); every other row
    alone."""
    keys = [
        (len(b), len(h), _fully_paired(b, h, q)) for b, h, q in zip(base, head, pairs, strict=True)
    ]
    common = max(keys, key=keys.count)
    together = [j for j, k in enumerate(keys) if k == common]
    return [together, *([j] for j, k in enumerate(keys) if k != common)]


def _fully_paired(b: FloatArray, h: FloatArray, q: Pairs | None) -> bool:
    """Every value of both sides is in one pair: the sides may be swapped pair by pair."""
    if q is None or not len(b) == len(h) == len(q[0]) == len(q[1]):
        return False
    return len(np.unique(q[0])) == len(np.unique(q[1])) == len(b)


class _Group:
    """Rows dealt by the same permutations. Each row's values are one pool, head's then base's
    (paired: aligned pair by pair), and a deal says which of the pool's values go to head."""

    def __init__(
        self,
        rows: list[int],
        base: Sequence[FloatArray],
        head: Sequence[FloatArray],
        pairs: Sequence[Pairs | None],
        p: float,
    ) -> None:
        first = rows[0]
        self.rows = rows
        self.nb, self.nh = len(base[first]), len(head[first])
        self.swap = _fully_paired(base[first], head[first], pairs[first])
        self.pools = []
        for j in rows:
            q = pairs[j]
            aligned = (head[j][q[1]], base[j][q[0]]) if self.swap and q else (head[j], base[j])
            self.pools.append(_Pool(np.concatenate(aligned), self.nh, self.nb, p))

    def observed(self) -> np.ndarray:
        """The deal the runs made: head's values to head."""
        return np.asarray(np.arange(self.nh + self.nb) < self.nh)[None, :]

    def deal(self, rng: np.random.Generator, size: int) -> np.ndarray:
        """`size` random deals: within pairs (paired), or of the pooled requests."""
        if self.swap:
            kept = rng.random((size, self.nh)) < 0.5  # True: the pair's head value stays
            return np.concatenate([kept, ~kept], axis=1)
        order = np.broadcast_to(
            np.arange(self.nh + self.nb, dtype=np.int32), (size, self.nb + self.nh)
        )
        return np.asarray(rng.permuted(order, axis=1) < self.nh)

    def statistics(self, deal: np.ndarray) -> FloatArray:
        """Each deal's statistic of each row of the group (deals x rows)."""
        return np.stack([pool.statistic(deal) for pool in self.pools], axis=1)


class _Pool:
    """One row's values of both sides, sorted once, and the statistic of any deal of them:
    each side's p-th percentile read off the sorted values by counting the dealt ones (exactly
    np.percentile's value), in the window of sorted values where the percentile can be (the
    top for p >= 50, the bottom below), over the whole pool for a deal whose percentile falls
    outside it."""

    def __init__(self, values: FloatArray, nh: int, nb: int, p: float) -> None:
        self.order = np.argsort(values, kind="stable")
        self.sorted = values[self.order]
        self.sizes = (nh, nb)
        self.ranks = (linear_ranks(nh, p), linear_ranks(nb, p))
        self.top = p >= 50.0
        deepest = max(
            self._depth(n, lo, hi) for n, (lo, hi, _) in zip(self.sizes, self.ranks, strict=True)
        )
        self.window = min(values.size, 2 * deepest + WINDOW_MARGIN)

    def _depth(self, n: int, lo: int, hi: int) -> int:
        """How many of a side's values, counted from the window's end, reach its percentile."""
        return n - lo if self.top else hi + 1

    def statistic(self, deal: np.ndarray) -> FloatArray:
        """|head's percentile - base's| for each deal (rows of `deal`, True: to head)."""
        out = self._statistic(deal, self.window)
        short = np.isnan(out)
        if short.any():
            out[short] = self._statistic(deal[short], self.sorted.size)
        return out

    def _statistic(self, deal: np.ndarray, width: int) -> FloatArray:
        """The statistic from the `width` sorted values at the window's end; NaN for a deal
        with too few of a side's values there."""
        n = self.sorted.size
        ends = slice(n - 1, n - width - 1 if n > width else None, -1) if self.top else slice(width)
        positions, values = self.order[ends], self.sorted[ends]
        to_head = np.cumsum(deal[:, positions], axis=1, dtype=np.int32)
        counts = (to_head, np.arange(1, width + 1, dtype=np.int32) - to_head)
        sides = []
        for count, size, (lo, hi, t) in zip(counts, self.sizes, self.ranks, strict=True):
            at = []
            for rank in (lo, hi):
                k = size - 1 - rank if self.top else rank  # the k-th (0-based) from the end
                place = np.count_nonzero(count <= k, axis=1)
                found = values[np.minimum(place, width - 1)]
                at.append(np.where(place < width, found, np.nan))
            a, b = at
            diff = b - a  # numpy's interpolation, as `quantiles.lerp`
            sides.append(b - diff * (1.0 - t) if t >= 0.5 else a + diff * t)
        return np.asarray(np.abs(sides[0] - sides[1]))


def _p_values(null: FloatArray) -> FloatArray:
    """Each statistic's p-value among its row's (the observed and the permuted together): the
    share of them at least as large."""
    total = null.shape[0]
    ordered = np.sort(null, axis=0)
    out = np.empty_like(null)
    for j in range(null.shape[1]):
        below = np.searchsorted(ordered[:, j], null[:, j], side="left")
        out[:, j] = (total - below) / total
    return out


def _adjusted(p: FloatArray) -> list[float]:
    """The step-down by successive minima over `p` (row 0 observed, the others permuted)."""
    observed = p[0]
    order = np.argsort(observed, kind="stable")
    # the smallest p-value over the rows still in play, from the least significant row up
    smallest = np.minimum.accumulate(p[:, order[::-1]], axis=1)[:, ::-1]
    adjusted = [0.0] * len(order)
    running = 0.0
    for k, j in enumerate(order):
        share = float(np.count_nonzero(smallest[:, k] <= observed[j])) / p.shape[0]
        running = max(running, share)
        adjusted[j] = running
    return adjusted


def _seed(base: Sequence[FloatArray], head: Sequence[FloatArray], p: float) -> list[int]:
    """A seed from the inputs: the sizes and the bits of each row's two percentiles."""
    at = [
        [float(np.percentile(b, p)), float(np.percentile(h, p))]
        for b, h in zip(base, head, strict=True)
    ]
    words = np.nan_to_num(np.array(at, dtype=np.float64)).view(np.uint64).ravel()
    return [
        len(base),
        *(len(b) + len(h) for b, h in zip(base, head, strict=True)),
        *(int(w) for w in words),
    ]
