"""Issue 36: who owns the tail, on the engine path: each slice's part of the total's p-th
percentile (`attribution.quantile_contributions`, the Euler allocation at the quantile), from
the band of requests near the percentile alone.

The total split is the sum of the slices in their fixed order (`prepare.slice_sum`, as the
in-memory rows take it), with `unattributed`, the rest of the measured total, where that is
more than rounding (`rows._parts`): an expression the engine computes per row, the same double
additions. Its percentile and the band's two order statistics are quantile queries at
`attribution.band_ranks`; the band's rows (a WHERE between those two values, in file order:
the means are summed in it) are fetched, and `attribution.band_contributions` runs on them.

Paired runs split the change by Shapley (`attribution.shapley`): over the join of the pairs,
which slices changed, and the requests that can be at the percentile in some coalition (the
order statistics of the per-request sums of each slice's minimum and maximum, as
`attribution._candidates` finds them); only those are fetched (at most MAX_CANDIDATES: past
it the split of the change is said not computed), and `attribution.shapley_at` plays the
game on them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from budgetdiff.errors import InputError
from budgetdiff.measure import attribution
from budgetdiff.measure.engine import Column
from budgetdiff.measure.prepare import UNATTRIBUTED_MIN_MS, UNATTRIBUTED_MIN_SHARE
from budgetdiff.sources.engine import Engine, check_ranks, ident
from budgetdiff.stats.quantiles import lerp, linear_ranks
from budgetdiff.table import UNATTRIBUTED

TOTAL = "budgetdiff_total"  # the split total's name in the engine's relation


@dataclass(frozen=True, slots=True)
class Split:
    """One side's parts of its total's p-th percentile, and what they are of: each slice's
    column, the measured total's, and whether `unattributed` (its rest) is one of them."""

    parts: dict[str, float]
    columns: dict[str, str]
    total: str | None
    unattributed: bool

    def expressions(self, alias: str = "") -> dict[str, str]:
        """Each part per request, as SQL (columns of `alias`, when given)."""
        return _expressions(self.columns, self.total, self.unattributed, alias)


def _col(column: str, alias: str) -> str:
    return f"{alias + '.' if alias else ''}{ident(column)}::DOUBLE"


def _fold(expressions: Sequence[str]) -> str:
    """(((0 + a) + b) + ...) in double precision, left to right: `prepare.slice_sum`."""
    out = "0::DOUBLE"
    for e in expressions:
        out = f"({out} + {e})"
    return out


def _expressions(
    columns: Mapping[str, str], total: str | None, unattributed: bool, alias: str
) -> dict[str, str]:
    out = {name: _col(c, alias) for name, c in columns.items()}
    if unattributed and total is not None:
        out[UNATTRIBUTED] = f"({_col(total, alias)} - {_fold(list(out.values()))})"
    return out


def split(
    engine: Engine,
    rel: str,
    n: int,
    slices: Mapping[str, str],
    total: str | None,
    p: float,
    label: str,
) -> Split | None:
    """`attribution.quantile_contributions(parts, slice_sum(parts), p)` of one side: `slices`
    maps each slice to its column (in the slices' order), `total` the measured total's column
    (None: the total is the slices' sum). None without requests or slices."""
    if n == 0 or not slices:
        return None
    unattributed = False
    if total is not None:
        rest = _expressions(slices, total, True, "")[UNATTRIBUTED]
        far, mean = engine.one(f"SELECT max(abs({rest})), avg({_col(total, '')}) FROM {rel}", label)
        material = max(UNATTRIBUTED_MIN_MS, UNATTRIBUTED_MIN_SHARE * float(mean))
        unattributed = float(far) > material  # `rows._parts`: more than rounding
    expressions = _expressions(slices, total, unattributed, "")
    names = list(expressions)
    named = ", ".join(f"{e} AS part_{i}" for i, e in enumerate(expressions.values()))
    split_rel = f"(SELECT {named}, {_fold(list(expressions.values()))} AS {TOTAL} FROM {rel})"
    col = Column(engine, split_rel, TOTAL, n, label)
    lo, hi, w = linear_ranks(n, p)
    low, high = attribution.band_ranks(n, p)
    at = col.at([lo, hi, low, high])
    q = lerp(at[lo], at[hi], w)
    band = engine.fetch(
        f"SELECT * FROM {split_rel} WHERE {TOTAL} BETWEEN {_num(at[low])} AND {_num(at[high])}",
        label,
    )
    parts = {name: band[f"part_{i}"] for i, name in enumerate(names)}
    contributions = attribution.band_contributions(parts, band[TOTAL], q)
    return Split(contributions, dict(slices), total, unattributed)


def _num(v: float) -> str:
    """A double as SQL, exactly (its shortest repr, parsed as a double: no decimal literal)."""
    return f"'{v!r}'::DOUBLE"


# candidate requests the paired split fetches at most (each side's changed slices, 8 bytes
# a value); past it, the split of the change is not computed
MAX_CANDIDATES = 4_000_000


@dataclass(frozen=True, slots=True)
class Change:
    """The paired split of the change (`attribution.shapley`), or why it is not computed."""

    shapley: attribution.Shapley | None
    why_not: str | None = None


def shapley(
    engine: Engine, join: str, m: int, base: Split, head: Split, p: float, label: str
) -> Change:
    """`attribution.shapley` of the paired requests (`join`: base `b` joined with head `h`,
    `m` pairs) through the engine: which slices changed (a count over the pairs), the
    unchanged folded into the first changed one, the requests that can be at the percentile in
    some coalition found by the order statistics of the per-request sums of the slices'
    minima and maxima (`attribution._candidates`), and only those fetched; the coalitions'
    percentiles are then `attribution.shapley_at`'s on them."""
    eb, eh = base.expressions("b"), head.expressions("h")
    names = list(eh) + [n for n in eb if n not in eh]
    zero = "0::DOUBLE"
    b = [eb.get(n, zero) for n in names]
    h = [eh.get(n, zero) for n in names]
    counts = ", ".join(f"count(*) FILTER (WHERE {x} <> {y})" for x, y in zip(b, h, strict=True))
    differ = engine.one(f"SELECT {counts} FROM {join}", label)
    changed = [i for i, d in enumerate(differ) if int(d)]
    if not changed:
        return Change(attribution.Shapley(dict.fromkeys(names, 0.0), None))
    const = _fold([b[i] for i in range(len(names)) if i not in changed])
    gb, gh = [b[i] for i in changed], [h[i] for i in changed]
    gb[0], gh[0] = f"({const} + {gb[0]})", f"({const} + {gh[0]})"
    lo = _fold([f"least({x}, {y})" for x, y in zip(gb, gh, strict=True)])
    hi = _fold([f"greatest({x}, {y})" for x, y in zip(gb, gh, strict=True)])
    values = ", ".join(
        [f"{x} AS b_{i}" for i, x in enumerate(gb)] + [f"{y} AS h_{i}" for i, y in enumerate(gh)]
    )
    rel = f"(SELECT {values}, {lo} AS lo, {hi} AS hi FROM {join})"
    idx = (m - 1) * p / 100.0
    r_lo = min(math.floor(idx), m - 1)
    r_hi = min(r_lo + 1, m - 1)
    about = _sampled_candidates(engine, rel, m, p, label)
    if about > 2 * MAX_CANDIDATES:  # clearly too many: not worth the exact passes
        return Change(None, _too_many(f"about {round(about)} (from a sample)"))
    floor_value, ceil_value = _bounds(engine, rel, m, (r_lo, r_hi), label)
    below = f"hi < {_num(floor_value)}"
    keep = f"NOT ({below}) AND NOT (lo > {_num(ceil_value)})"
    shift, kept = (
        int(x)
        for x in engine.one(
            f"SELECT count(*) FILTER (WHERE {below}), count(*) FILTER (WHERE {keep}) FROM {rel}",
            label,
        )
    )
    if kept > MAX_CANDIDATES:
        return Change(None, _too_many(str(kept)))
    got = engine.fetch(f"SELECT * EXCLUDE (lo, hi) FROM {rel} WHERE {keep}", label)
    cb = [got[f"b_{i}"] for i in range(len(gb))]
    ch = [got[f"h_{i}"] for i in range(len(gh))]
    ranks = (r_lo - shift, r_hi - shift, idx - r_lo)
    return Change(attribution.shapley_at(names, changed, cb, ch, ranks))


SAMPLE = 100_000  # pairs the estimate of the candidates reads (one pass, a reservoir)


def _bounds(
    engine: Engine, rel: str, m: int, ranks: tuple[int, int], label: str
) -> tuple[float, float]:
    """`attribution._candidates`' floor and ceiling: the r_lo-th smallest per-request sum of
    the minima and the r_hi-th of the maxima, each its own query (DuckDB's exact quantile holds
    its column), then one pass checks both ranks and takes the largest sum (for the slack:
    sums in other orders round apart)."""
    r_lo, r_hi = ranks
    v_lo = engine.order_statistics(rel, "lo", m, [r_lo], label, verify=False)[r_lo]
    v_hi = engine.order_statistics(rel, "hi", m, [r_hi], label, verify=False)[r_hi]
    checked = engine.one(
        f"SELECT max(abs(hi)), count(*) FILTER (WHERE lo < {_num(v_lo)}), "
        f"count(*) FILTER (WHERE lo <= {_num(v_lo)}), count(*) FILTER (WHERE hi < {_num(v_hi)}), "
        f"count(*) FILTER (WHERE hi <= {_num(v_hi)}) FROM {rel}",
        label,
    )
    ranked = [int(x) for x in checked[1:]]
    try:
        check_ranks({r_lo: v_lo}, {v_lo: (ranked[0], ranked[1])})
        check_ranks({r_hi: v_hi}, {v_hi: (ranked[2], ranked[3])})
    except InputError as e:
        raise InputError(f"{label}: the paired split of the change: {e}") from None
    slack = 1e-9 * float(checked[0])
    return v_lo - slack, v_hi + slack


def _sampled_candidates(engine: Engine, rel: str, m: int, p: float, label: str) -> float:
    """About how many pairs are candidates (`attribution._candidates` on a reservoir sample of
    the pairs, a fixed seed), or 0 when all of them fit anyway: one pass instead of the five
    the exact count takes when there are clearly too many. Only "over twice the cap" is read
    of it, and a count near that is over the cap too: the split is not computed either way,
    whatever the sample's noise (about 0.3% of the share at 100,000)."""
    if m <= MAX_CANDIDATES:
        return 0.0
    got = engine.fetch(
        f"SELECT lo, hi FROM {rel} USING SAMPLE reservoir({SAMPLE} ROWS) REPEATABLE (7)", label
    )
    lo, hi = got["lo"], got["hi"]
    if not lo.size:
        return 0.0
    floor_value = float(np.percentile(lo, p))
    ceil_value = float(np.percentile(hi, p))
    share = float(np.mean((hi >= floor_value) & (lo <= ceil_value)))
    return share * m


def _too_many(count: str) -> str:
    return (
        f"{count} paired requests can be at the percentile in some coalition of the slices, "
        f"more than the {MAX_CANDIDATES} this path holds: the Shapley split of the change is not "
        "computed"
    )
