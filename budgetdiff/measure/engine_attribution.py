"""Issue 36: who owns the tail, on the engine path: each slice's part of the total's p-th
percentile (`attribution.quantile_contributions`, the Euler allocation at the quantile), from
the band of requests near the percentile alone.

The total split is the sum of the slices in their fixed order (`prepare.slice_sum`, as the
in-memory rows take it), with `unattributed`, the rest of the measured total, where that is
more than rounding (`rows._parts`): an expression the engine computes per row, the same double
additions. Its percentile and the band's two order statistics are quantile queries at
`attribution.band_ranks`; the band's rows (a WHERE between those two values, in file order:
the means are summed in it) are fetched, and `attribution.band_contributions` runs on them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from budgetdiff.measure import attribution
from budgetdiff.measure.engine import Column
from budgetdiff.measure.prepare import UNATTRIBUTED_MIN_MS, UNATTRIBUTED_MIN_SHARE
from budgetdiff.sources.engine import Engine, ident
from budgetdiff.stats.quantiles import lerp, linear_ranks
from budgetdiff.table import UNATTRIBUTED

TOTAL = "budgetdiff_total"  # the split total's name in the engine's relation


@dataclass(frozen=True, slots=True)
class Split:
    """One side's parts of its total's p-th percentile, and the slices they are of."""

    parts: dict[str, float]
    slices: tuple[str, ...]  # with `unattributed` where the slices miss part of the total


def _sum(columns: Sequence[str]) -> str:
    """(((0 + a) + b) + ...) in double precision, left to right: `prepare.slice_sum`."""
    out = "0::DOUBLE"
    for c in columns:
        out = f"({out} + {ident(c)}::DOUBLE)"
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
    names, cols = list(slices), list(slices.values())
    expressions = {name: f"{ident(c)}::DOUBLE" for name, c in slices.items()}
    whole = _sum(cols)
    if total is not None:
        t = f"{ident(total)}::DOUBLE"
        rest = f"({t} - {whole})"
        far, mean = engine.one(f"SELECT max(abs({rest})), avg({t}) FROM {rel}", label)
        material = max(UNATTRIBUTED_MIN_MS, UNATTRIBUTED_MIN_SHARE * float(mean))
        if float(far) > material:  # `rows._parts`: more than rounding
            expressions[UNATTRIBUTED] = rest
            names.append(UNATTRIBUTED)
    summed = "0::DOUBLE"
    for e in expressions.values():
        summed = f"({summed} + {e})"
    named = ", ".join(
        f"{e} AS {ident('budgetdiff_' + str(i))}" for i, e in enumerate(expressions.values())
    )
    split_rel = f"(SELECT {named}, {summed} AS {TOTAL} FROM {rel})"
    col = Column(engine, split_rel, TOTAL, n, label)
    lo, hi, w = linear_ranks(n, p)
    low, high = attribution.band_ranks(n, p)
    at = col.at([lo, hi, low, high])
    q = lerp(at[lo], at[hi], w)
    band = engine.fetch(
        f"SELECT * FROM {split_rel} WHERE {TOTAL} BETWEEN {_num(at[low])} AND {_num(at[high])}",
        label,
    )
    parts = {name: band[f"budgetdiff_{i}"] for i, name in enumerate(names)}
    return Split(attribution.band_contributions(parts, band[TOTAL], q), tuple(names))


def _num(v: float) -> str:
    return f"'{v!r}'::DOUBLE"
