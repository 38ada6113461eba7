"""Who owns the tail: the p-th percentile of the total, and its change, split into the slices'
parts, which add up to it exactly.

Pure numpy, no I/O. One quantity, the total's p-th percentile (docs/rebudget.md):

- each run: `quantile_contributions`, the Euler allocation at the quantile: each slice's mean
  over the requests whose total lies in a narrow band of ranks around its p-th percentile,
  rescaled so that the parts add up to the percentile; unpaired runs: the change is
  `part(head) - part(base)`;
- paired runs (the same requests in base and head, in the same order): the Shapley decomposition
  of the change of the p-th percentile of the total, exact over the 2^k coalitions of the slices
  that changed (up to 10), else averaged over sampled slice orders.

`tail_contributions` (the mean over the whole tail, expected shortfall) stays for comparison.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from budgetdiff import numbers, stats
from budgetdiff.measure.results import Change
from budgetdiff.table import (
    CHUNK,
    UNATTRIBUTED,
    FloatArray,
    all_finite,
    chunks,
    max_abs,
    order_statistics,
)

MAX_SHAPLEY_SLICES = 10  # changed slices; more are sampled (`SAMPLED_ORDERS` slice orders)
SAMPLED_ORDERS = 256  # 128 random orders and their reverses
BAND = 2.5  # percentile points each side of p: the requests "at" the p-th percentile
# Bytes of per-request coalition sums held at once by `shapley_change` (the 2^k sums are built
# in blocks of this size, so k = 10 at a million requests stays within ~32 MB).
_CHUNK_BYTES = 1 << 25
# Relative float tolerance under which a mismatch between the total and the sum of slices is
# rounding noise, not time the slices miss.
_REL_TOL = 1e-9


def _check(name: str, values: FloatArray, n: int | None) -> FloatArray:
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim != 1:
        raise ValueError(f"{name}: expected one value per request, got shape {arr.shape}")
    if n is not None and len(arr) != n:
        raise ValueError(f"{name}: {len(arr)} values, expected {n} (one per request)")
    if not all_finite(arr) and not np.isfinite(arr).all():  # the sum first: no temporary
        raise ValueError(f"{name}: NaN or infinite values; pass succeeded requests only")
    return arr


def tail_contributions(
    slices: dict[str, FloatArray], total: FloatArray, p: float
) -> dict[str, float]:
    """Each slice's mean over the tail T = {r: total_r >= p-th percentile of total}, in ms.

    The values add up to the mean total over T (the expected shortfall at p). Ties at the
    threshold are all in T. `slices` should add up to `total` per request; whatever they do not
    explain beyond float rounding is reported under `unattributed` (added to that slice if the
    caller passed one), so the sum holds in every case and no time is hidden.
    """
    tot = _check("total", total, None)
    if len(tot) == 0:
        raise ValueError("total: no requests")
    arrays = {name: _check(name, x, len(tot)) for name, x in slices.items()}
    threshold = stats.percentile(tot, p)
    tail = tot >= threshold
    if not tail.any():  # only possible through rounding of the interpolation
        tail = tot == tot.max()
    out = {name: float(x[tail].mean()) for name, x in arrays.items()}
    es = float(tot[tail].mean())
    residual = es - math.fsum(out.values())
    if abs(residual) > _REL_TOL * max(1.0, abs(es)):
        out[UNATTRIBUTED] = out.get(UNATTRIBUTED, 0.0) + residual
    return out


def quantile_contributions(
    slices: dict[str, FloatArray], total: FloatArray, p: float, band: float = BAND
) -> dict[str, float]:
    """Each slice's part of the p-th percentile of the total, in ms; the parts add up to it.

    The Euler allocation at the quantile (Tasche 2007; Hallerbach 2003): a slice's part is its
    mean over the requests at the percentile, estimated over the band of order statistics from
    rank p - `band` to rank p + `band` (inclusive, at least the two around p), then every mean is
    scaled by percentile / (mean total over the band), so the parts sum to the percentile itself.
    What the slices do not explain beyond rounding is `unattributed`, as in `tail_contributions`.
    """
    tot = _check("total", total, None)
    n = len(tot)
    if n == 0:
        raise ValueError("total: no requests")
    arrays = {name: _check(name, x, n) for name, x in slices.items()}
    q = stats.percentile(tot, p)
    lo_rank, hi_rank = band_ranks(n, p, band)
    ordered = order_statistics(tot, [lo_rank, hi_rank])
    at = np.flatnonzero((tot >= ordered[lo_rank]) & (tot <= ordered[hi_rank]))  # taken once
    return band_contributions({name: x[at] for name, x in arrays.items()}, tot[at], q)


def band_ranks(n: int, p: float, band: float = BAND) -> tuple[int, int]:
    """The 0-based ranks of the total's order statistics that bound the band of requests "at"
    its p-th percentile (`quantile_contributions`): arithmetic on n alone, so an engine asks
    for the same two order statistics."""
    lo_rank = math.floor((n - 1) * max(0.0, p - band) / 100.0)
    hi_rank = min(n - 1, math.ceil((n - 1) * min(100.0, p + band) / 100.0))
    return lo_rank, hi_rank


def band_contributions(
    slices: Mapping[str, FloatArray], total: FloatArray, q: float
) -> dict[str, float]:
    """`quantile_contributions` from the band's requests alone (in the order given: the means
    are summed in it), `total` theirs and `q` the percentile of every request's: each slice's
    mean over the band, scaled so that the parts add up to q (the rest `unattributed`)."""
    out = {name: float(x.mean()) for name, x in slices.items()}
    mean_total = float(total.mean())
    residual = mean_total - math.fsum(out.values())
    if abs(residual) > _REL_TOL * max(1.0, abs(mean_total)):
        out[UNATTRIBUTED] = out.get(UNATTRIBUTED, 0.0) + residual
    if mean_total != 0.0:
        scale = q / mean_total
        out = {name: v * scale for name, v in out.items()}
    return out


def quantile_change(base: Mapping[str, float], head: Mapping[str, float]) -> dict[str, float]:
    """part(head) - part(base) per slice, from `quantile_contributions` on each side: the parts
    add up to the change of the total's p-th percentile (a slice missing on one side is 0 ms)."""
    return tail_change(base, head)


def tail_shares(contrib: Mapping[str, float]) -> dict[str, float]:
    """Each slice's share of the tail, percent; the shares add up to 100 (float rounding aside).

    When the contributions add up to zero (a tail of 0 ms), nobody owns it: every share is 0.0
    (not an equal split, which would invent an owner).
    """
    total = math.fsum(contrib.values())
    largest = max((abs(v) for v in contrib.values()), default=0.0)
    if not math.isfinite(total) or abs(total) <= 1e-12 * largest:
        return {name: 0.0 for name in contrib}
    return {name: 100.0 * value / total for name, value in contrib.items()}


def round_shares(shares: Mapping[str, float], decimals: int = 1) -> dict[str, float]:
    """Round percentages for display so that they still add up to exactly 100 at that precision
    (largest remainder); all-zero shares stay zero."""
    scale = 10**decimals
    units = {k: v * scale for k, v in shares.items()}
    floors = {k: math.floor(u) for k, u in units.items()}
    goal = round(math.fsum(units.values()))
    order = sorted(units, key=lambda k: floors[k] - units[k])  # largest remainder first
    for k in order[: max(0, goal - sum(floors.values()))]:
        floors[k] += 1
    return {k: f / scale for k, f in floors.items()}


def tail_change(base: Mapping[str, float], head: Mapping[str, float]) -> dict[str, float]:
    """C_i(head) - C_i(base) per slice (a slice missing on one side counts as 0 ms there).

    With contributions from `tail_contributions`, the parts add up to the change of the mean
    total over the tail. Order: head's slices, then those only base has.
    """
    names = list(head) + [n for n in base if n not in head]
    return {n: head.get(n, 0.0) - base.get(n, 0.0) for n in names}


@dataclass(frozen=True, slots=True)
class Shapley:
    """Shapley parts of the change of the total's p-th percentile, and how they were found."""

    parts: dict[str, float]
    orders: int | None  # None: exact enumeration; else the number of sampled slice orders

    @property
    def method(self) -> str:
        if self.orders is None:
            return "Shapley (exact)"
        return f"Shapley over {self.orders} sampled slice orders"


def shapley_change(
    base: dict[str, FloatArray], head: dict[str, FloatArray], p: float
) -> dict[str, float]:
    """The parts of `shapley` (see there)."""
    return shapley(base, head, p).parts


def shapley(
    base: dict[str, FloatArray],
    head: dict[str, FloatArray],
    p: float,
    *,
    orders: int = SAMPLED_ORDERS,
    seed: int = 0,
    exact_up_to: int = MAX_SHAPLEY_SLICES,
) -> Shapley:
    """Shapley decomposition of p-th percentile(total head) - p-th percentile(total base).

    Paired data: every array has one value per request, in the same request order on both sides.
    A slice missing on one side counts as 0 ms there. v(S) is the p-th percentile over requests
    of (head values for the slices in S + base values for the others). A slice identical in base
    and head is a null player: it gets exactly 0.0 and leaves the game (the others' values do
    not change). Up to `exact_up_to` (MAX_SHAPLEY_SLICES) changed slices, exact enumeration of
    the coalitions, each coalition's sum computed in one fixed slice order; above, the average
    over `orders` slice orders (half random with a fixed seed, half their reverses) of each
    slice's marginal change, whose sum telescopes to v(all) - v(none) in every order. Either way
    the results add up to v(all) - v(none) up to float rounding.
    """
    names = list(head) + [n for n in base if n not in head]
    if not names:
        return Shapley({}, None)
    first = head[names[0]] if names[0] in head else base[names[0]]
    n = len(np.asarray(first))
    if n == 0:
        raise ValueError("shapley_change: no requests")
    zeros = np.zeros(n)
    b = [_check(f"base {s}", base[s], n) if s in base else zeros for s in names]
    h = [_check(f"head {s}", head[s], n) if s in head else zeros for s in names]
    out = dict.fromkeys(names, 0.0)
    changed = [i for i in range(len(names)) if not np.array_equal(b[i], h[i])]
    if not changed:
        return Shapley(out, None)
    # the unchanged slices are the same on both sides: fold them into the first changed slice
    const = zeros
    for i in range(len(names)):
        if i not in changed:
            const = const + b[i]
    gb = [b[i] for i in changed]
    gh = [h[i] for i in changed]
    gb[0], gh[0] = const + gb[0], const + gh[0]
    cb, chh, ranks = _candidates(gb, gh, p)
    return shapley_at(names, changed, cb, chh, ranks, orders, seed, exact_up_to)


def shapley_at(
    names: list[str],
    changed: list[int],
    b: list[FloatArray],
    h: list[FloatArray],
    ranks: tuple[int, int, float],
    orders: int = SAMPLED_ORDERS,
    seed: int = 0,
    exact_up_to: int = MAX_SHAPLEY_SLICES,
) -> Shapley:
    """`shapley` from its game: the changed slices (`changed`, indices into `names`; the
    unchanged folded into the first), each one's values on the requests that can be at the
    percentile in some coalition (`b`, `h`, in any order: a coalition's percentile is a
    selection, its sums per request), and the percentile's ranks among them (`_candidates`,
    or an engine that found the same requests)."""
    out = dict.fromkeys(names, 0.0)
    if len(changed) <= exact_up_to:
        phi = _exact_shapley(b, h, ranks)
        sampled = None
    else:
        phi = _sampled_shapley(b, h, ranks, orders, seed)
        sampled = 2 * (orders // 2)
    for i, value in zip(changed, phi, strict=True):
        out[names[i]] = value
    return Shapley(out, sampled)


def _exact_shapley(
    b: list[FloatArray], h: list[FloatArray], ranks: tuple[int, int, float]
) -> list[float]:
    k = len(b)
    v = _coalition_percentiles(b, h, ranks)
    masks = np.arange(1 << k)
    size = np.array([bin(m).count("1") for m in range(1 << k)])
    fact = [math.factorial(j) for j in range(k + 1)]
    weight = np.array([fact[s] * fact[k - s - 1] / fact[k] if s < k else 0.0 for s in size])
    out: list[float] = []
    for i in range(k):
        bit = 1 << i
        without = masks[(masks & bit) == 0]
        diff = v[without | bit] - v[without]
        out.append(float(np.sum(weight[without] * diff)) if diff.any() else 0.0)
    return out


def _sampled_shapley(
    b: list[FloatArray],
    h: list[FloatArray],
    ranks: tuple[int, int, float],
    orders: int,
    seed: int,
) -> list[float]:
    """Each slice's marginal change of the percentile, averaged over sampled slice orders
    (on the candidate requests, `_candidates`)."""
    k = len(b)
    start = np.zeros(len(b[0]))
    end = np.zeros(len(b[0]))
    for bi, hi in zip(b, h, strict=True):
        start = start + bi
        end = end + hi
    v_none, v_all = _at_ranks(start, ranks), _at_ranks(end, ranks)
    rng = np.random.default_rng(seed)
    phi = np.zeros(k)
    pairs = max(1, orders // 2)
    for _ in range(pairs):
        perm = rng.permutation(k)
        for order in (perm, perm[::-1]):
            acc = start.copy()
            before = v_none
            for step, i in enumerate(order):
                if step == k - 1:
                    after = v_all  # the last step lands exactly on v(all): the sum telescopes
                else:
                    acc += h[i] - b[i]
                    after = _at_ranks(acc, ranks)
                phi[i] += after - before
                before = after
    return [float(x) / (2 * pairs) for x in phi]


def _candidates(
    b: list[FloatArray], h: list[FloatArray], p: float
) -> tuple[list[FloatArray], list[FloatArray], tuple[int, int, float]]:
    """Only the requests that can be at the percentile in some coalition, and the ranks of the
    percentile among them (see `_coalition_percentiles`)."""
    n = len(b[0])
    idx = (n - 1) * p / 100.0
    r_lo = min(math.floor(idx), n - 1)
    r_hi = min(r_lo + 1, n - 1)
    t = idx - r_lo
    # the same additions as lo = lo + min(b_i, h_i), a chunk of every slice at a time while
    # the cache holds it (0.15 -> 0.09 s for five slices of ten million requests)
    lo = np.zeros(n)
    hi = np.zeros(n)
    scratch = np.empty(min(n, CHUNK))
    for at, m in chunks(n):
        low, high, s = lo[at], hi[at], scratch[:m]
        for bi, hi_i in zip(b, h, strict=True):
            low += np.minimum(bi[at], hi_i[at], out=s)
            high += np.maximum(bi[at], hi_i[at], out=s)
    slack = 1e-9 * max_abs(hi) if n else 0.0  # sums in other orders round apart
    floor_value = order_statistics(lo, [r_lo])[r_lo] - slack
    ceil_value = order_statistics(hi, [r_hi])[r_hi] + slack
    below = hi < floor_value
    shift = int(np.count_nonzero(below))
    below |= lo > ceil_value
    kept = np.flatnonzero(~below)  # taken from each slice: a quarter of a compress's time
    return [x[kept] for x in b], [x[kept] for x in h], (r_lo - shift, r_hi - shift, t)


def _at_ranks(x: FloatArray, ranks: tuple[int, int, float]) -> float:
    r_lo, r_hi, t = ranks
    part = order_statistics(x, [r_lo, r_hi])
    return float(part[r_lo] + (part[r_hi] - part[r_lo]) * t)


def _coalition_percentiles(
    b: list[FloatArray], h: list[FloatArray], ranks: tuple[int, int, float]
) -> FloatArray:
    """v[mask] for every mask (bit i set = slice i at head): the p-th percentile (linear
    interpolation between order statistics, as np.percentile) of each coalition's sums.

    Every sum is built left to right in slice order, (((0 + x_0) + x_1) + ... + x_{k-1}), so
    two coalitions whose operands are equal give bit-identical sums. Only requests that can be
    at the percentile in some coalition are summed: with lo_r / hi_r the sums of the per-slice
    minima / maxima (float addition is monotone, so lo_r <= s_r <= hi_r in every coalition),
    a request with hi_r below the lo-sums' order statistic at the lower rank is below it in every
    coalition, and one with lo_r above the hi-sums' order statistic at the upper rank is above;
    dropping them shifts both ranks by the same count. The first `a` slices form a prefix
    enumerated one at a time; the last k - a are expanded into a block whose rows are coalitions.
    """
    k = len(b)
    r_lo, r_hi, t = ranks  # among the candidate requests (`_candidates`)
    m = len(b[0])

    rows = max(1, _CHUNK_BYTES // (8 * m))
    expand = min(k, rows.bit_length() - 1)
    prefix_bits = k - expand
    v = np.empty(1 << k)
    # one block, filled in place for each prefix: fresh memory for every doubling cost more
    # than the sums (its pages faulted in: 0.18 -> 0.07 s for 32 coalitions of 218,000)
    block = np.empty((1 << expand, m))
    for prefix in range(1 << prefix_bits):
        block[0] = 0.0
        for i in range(prefix_bits):
            block[0] += h[i] if prefix >> i & 1 else b[i]
        size = 1
        for i in range(prefix_bits, k):
            np.add(block[:size], h[i], out=block[size : 2 * size])  # the rows with slice i at head
            block[:size] += b[i]
            size *= 2
        # each row's two ranks bracketed, not partitioned (2.2 million values: 5 ms, not 25)
        ranked = [order_statistics(row, [r_lo, r_hi]) for row in block]
        x_lo = np.array([r[r_lo] for r in ranked])
        x_hi = np.array([r[r_hi] for r in ranked])
        # row j of block: bit q of j = slice prefix_bits + q at head
        v[prefix | (np.arange(len(block)) << prefix_bits)] = x_lo + (x_hi - x_lo) * t
    return v


def headline(
    p: float,
    change_ms: float,
    parts: Mapping[str, float],
    *,
    change: Change | None,
    ci_ms: tuple[float, float] | None = None,
    label: str = "end to end",
) -> str:
    """One sentence about one quantity: the change of the total's p-th percentile.

    `change` is the total row's verdict. Only a significant change (regression or improvement)
    names its parts, largest in the direction of the change first (the first is the owner);
    the parts shown are rounded so that they add up to the change shown, e.g.
    'p95 end to end +575 ms (regression): decode +560 ms, queue +15 ms'. Otherwise no owner:
    'p95 end to end: no significant change (+12 ms, could be -40 to +64 ms)'; when the interval
    excludes 0 but the change does not count (under `regression.min_change` / `min_ms`, or not
    once every row is tested, Holm), 'no change that counts'.
    """
    what = f"{numbers.percentile(p)} {label}"
    if not math.isfinite(change_ms):
        return f"{what}: no value to compare"
    if change == Change.INCONCLUSIVE:
        return f"{what} {numbers.change_ms(change_ms)}: inconclusive (too few requests to tell)"
    if change not in (Change.REGRESSION, Change.IMPROVEMENT):
        could, word = "", "no significant change"
        if ci_ms is not None and all(math.isfinite(v) for v in ci_ms):
            could = (
                f", could be {numbers.change_ms(ci_ms[0])[:-3]} to {numbers.change_ms(ci_ms[1])}"
            )
            if ci_ms[0] > 0 or ci_ms[1] < 0:  # real, but under the floor or not across all rows
                word = "no change that counts"
        return f"{what}: {word} ({numbers.change_ms(change_ms)}{could})"
    decimals = numbers.change_decimals(change_ms)
    shown = round_shares(parts, decimals) if parts else {}
    sign = 1.0 if change_ms > 0 else -1.0
    order = sorted(
        (k for k, v in shown.items() if v != 0.0),
        key=lambda k: (shown[k] * sign <= 0, -abs(shown[k])),
    )
    named = order[:4] if len(order) <= 4 else order[:3]
    words = [f"{k} {numbers.share_ms(shown[k], decimals)}" for k in named]
    rest = [k for k in order if k not in named]
    if rest:
        others = round(math.fsum(shown[k] for k in rest), decimals)
        words.append(f"{len(rest)} others {numbers.share_ms(others, decimals)}")
    total = (
        numbers.share_ms(round(math.fsum(shown.values()), decimals), decimals) if shown else None
    )
    head = f"{what} {total or numbers.change_ms(change_ms)} ({change})"
    return f"{head}: {', '.join(words)}" if words else head
