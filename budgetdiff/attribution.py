"""Who owns the tail: exact attributions of the total's tail, and its change, to the slices.

Pure numpy, no I/O. Two methods, both adding up exactly (statistics.md, "Attributing the tail"):

- unpaired runs: tail contributions (Euler / expected-shortfall allocation, Tasche 2007),
  `C_i = mean of slice i over the requests whose total is at or above its p-th percentile`;
  the change of the tail is `C_i(head) - C_i(base)`;
- paired runs (the same requests in base and head, in the same order): the Shapley decomposition
  of the change of the p-th percentile of the total, by exact enumeration of the 2^k coalitions.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from budgetdiff.table import UNATTRIBUTED, FloatArray

MAX_SHAPLEY_SLICES = 10
# Bytes of per-request coalition sums held at once by `shapley_change` (the 2^k sums are built
# in chunks of this size, so k = 10 at a million requests stays within ~128 MB).
_CHUNK_BYTES = 1 << 27
# Relative float tolerance under which a mismatch between the total and the sum of slices is
# rounding noise, not time the slices miss.
_REL_TOL = 1e-9


def _check(name: str, values: FloatArray, n: int | None) -> FloatArray:
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim != 1:
        raise ValueError(f"{name}: expected one value per request, got shape {arr.shape}")
    if n is not None and len(arr) != n:
        raise ValueError(f"{name}: {len(arr)} values, expected {n} (one per request)")
    if not np.isfinite(arr).all():
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
    threshold = np.percentile(tot, p)
    tail = tot >= threshold
    if not tail.any():  # only possible through rounding of the interpolation
        tail = tot == tot.max()
    out = {name: float(x[tail].mean()) for name, x in arrays.items()}
    es = float(tot[tail].mean())
    residual = es - math.fsum(out.values())
    if abs(residual) > _REL_TOL * max(1.0, abs(es)):
        out[UNATTRIBUTED] = out.get(UNATTRIBUTED, 0.0) + residual
    return out


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


def shapley_change(
    base: dict[str, FloatArray], head: dict[str, FloatArray], p: float
) -> dict[str, float]:
    """Shapley decomposition of p-th percentile(total head) - p-th percentile(total base).

    Paired data: every array has one value per request, in the same request order on both sides.
    A slice missing on one side counts as 0 ms there. v(S) is the p-th percentile over requests
    of (head values for the slices in S + base values for the others), each coalition's sum
    computed in one fixed slice order, so a slice identical in base and head gets exactly 0.0.
    The results add up to v(all) - v(none) up to float rounding. Raises ValueError above
    MAX_SHAPLEY_SLICES slices (the caller falls back to `tail_change`).
    """
    names = list(head) + [n for n in base if n not in head]
    k = len(names)
    if k > MAX_SHAPLEY_SLICES:
        raise ValueError(
            f"shapley_change: {k} slices; exact enumeration is limited to {MAX_SHAPLEY_SLICES}"
        )
    if k == 0:
        return {}
    first = head[names[0]] if names[0] in head else base[names[0]]
    n = len(np.asarray(first))
    if n == 0:
        raise ValueError("shapley_change: no requests")
    zeros = np.zeros(n)
    b = [_check(f"base {s}", base[s], n) if s in base else zeros for s in names]
    h = [_check(f"head {s}", head[s], n) if s in head else zeros for s in names]

    v = _coalition_percentiles(b, h, p)

    masks = np.arange(1 << k)
    size = np.array([bin(m).count("1") for m in range(1 << k)])
    fact = [math.factorial(j) for j in range(k + 1)]
    weight = np.array([fact[s] * fact[k - s - 1] / fact[k] if s < k else 0.0 for s in size])
    out: dict[str, float] = {}
    for i, name in enumerate(names):
        bit = 1 << i
        without = masks[(masks & bit) == 0]
        diff = v[without | bit] - v[without]
        out[name] = float(np.sum(weight[without] * diff)) if diff.any() else 0.0
    return out


def _coalition_percentiles(b: list[FloatArray], h: list[FloatArray], p: float) -> FloatArray:
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
    k, n = len(b), len(b[0])
    idx = (n - 1) * p / 100.0
    r_lo = min(math.floor(idx), n - 1)
    r_hi = min(r_lo + 1, n - 1)
    t = idx - r_lo
    lo = np.zeros(n)
    hi = np.zeros(n)
    for bi, hi_i in zip(b, h, strict=True):
        lo = lo + np.minimum(bi, hi_i)
        hi = hi + np.maximum(bi, hi_i)
    floor_value = np.partition(lo, r_lo)[r_lo]
    ceil_value = np.partition(hi, r_hi)[r_hi]
    below = hi < floor_value
    keep = ~below & ~(lo > ceil_value)
    shift = int(below.sum())
    r_lo -= shift
    r_hi -= shift
    b = [x[keep] for x in b]
    h = [x[keep] for x in h]
    m = int(keep.sum())

    rows = max(1, _CHUNK_BYTES // (8 * m))
    expand = min(k, rows.bit_length() - 1)
    prefix_bits = k - expand
    v = np.empty(1 << k)
    for prefix in range(1 << prefix_bits):
        acc = np.zeros(m)
        for i in range(prefix_bits):
            acc = acc + (h[i] if prefix >> i & 1 else b[i])
        block = acc[None, :]
        for i in range(prefix_bits, k):
            grown = np.empty((2 * len(block), m))
            grown[: len(block)] = block + b[i]
            grown[len(block) :] = block + h[i]
            block = grown
        block.partition([r_lo, r_hi] if r_hi != r_lo else r_lo, axis=1)
        x_lo = block[:, r_lo]
        x_hi = block[:, r_hi]
        # row j of block: bit q of j = slice prefix_bits + q at head
        v[prefix | (np.arange(len(block)) << prefix_bits)] = x_lo + (x_hi - x_lo) * t
    return v


def _ms(x: float) -> str:
    """Signed milliseconds for a sentence: '+420 ms', '-4.2 ms', '+1,234 ms'."""
    return f"{x:+,.0f} ms" if abs(x) >= 9.95 else f"{x:+.1f} ms"


def headline(kind_total_change_ms: float, changes: Mapping[str, float], p: float) -> str:
    """One sentence: the change of the total at p and the slice that owns most of it.

    `changes` are per-slice parts of the change (`tail_change` or `shapley_change`); the share
    is taken of their sum, the quantity they decompose. E.g. 'p95 total +420 ms, 93% of it
    decode'; for an improvement 'p95 total -120 ms, 80% of it prefill'; 'p95 total unchanged'
    when the change rounds to 0.0 ms.
    """
    label = f"p{p:g} total"
    change = kind_total_change_ms
    if not math.isfinite(change) or abs(change) < 0.05:
        return f"{label} unchanged"
    head = f"{label} {_ms(change)}"
    explained = math.fsum(changes.values())
    sign = 1.0 if change > 0 else -1.0
    movers = {k: c for k, c in changes.items() if c * sign > 0}
    if not movers or explained * sign <= 0:
        return head
    owner = max(movers, key=lambda k: movers[k] * sign)
    share = 100.0 * movers[owner] / explained
    if share > 100.5:  # other slices moved the other way
        against = {k: c for k, c in changes.items() if c * sign < 0}
        first = max(against, key=lambda k: -against[k] * sign)
        more = " and others" if sum(abs(c) >= 0.05 for c in against.values()) > 1 else ""
        return (
            f"{head}, all of it {owner} ({_ms(movers[owner])}, partly offset by "
            f"{first} {_ms(against[first])}{more})"
        )
    return f"{head}, {share:.0f}% of it {owner}"
