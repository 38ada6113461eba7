"""Issue 36, `compare --engine duckdb`: base against head on native Parquet or CSV files of any
size, through DuckDB (streaming, spilling, bounded memory), each row's percentile, interval,
p-value and verdict the numbers the in-memory compare gives on the same rows.

Rows: the budget's SLO metrics with a column (ttft: `ttft_ms`, total: `e2e_ms`) and its slices
(the slice's `column`, or `NAME_ms`, or `NAME`), each a column in milliseconds. The requests
pair by id as `pairing.match` pairs them, by joins in the engine (`measure.engine_pairing`),
and the total's percentile and its change are split into the slices as `rows._split` splits
them (`measure.engine_attribution`). What the in-memory report has and this path does not
compute is listed in `not_computed`, with why.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from budgetdiff import numbers, stats
from budgetdiff.budget.model import Budget
from budgetdiff.errors import UsageError
from budgetdiff.formats.native.names import CLASS, FAILURE, SLICE, TIME, normalize, rule_for
from budgetdiff.measure import attribution
from budgetdiff.measure import engine as ooc
from budgetdiff.measure import engine_attribution as parts
from budgetdiff.measure import engine_pairing as pairing
from budgetdiff.measure.prepare import _before_first_token
from budgetdiff.measure.results import Unit
from budgetdiff.measure.rows import OTHER_PERCENTILES, UNPAIRED_SPLIT, pairing_notes
from budgetdiff.render.json import _f
from budgetdiff.sources.engine import Engine, relation
from budgetdiff.stats.change import PairCounts
from budgetdiff.stats.quantiles import needed_for_interval

SLO_COLUMNS = {"ttft": ("ttft_ms", "ttft"), "total": ("e2e_ms", "total_ms", "e2e", "total")}
NOT_COMPUTED = {
    "permutation step-down": "it deals whole requests again in memory; each family is "
    "decided by Holm's correction of the rows' own p-values instead",
    "attainment": "the share of requests within the SLO is not computed",
    "tpot, itl": "per-token rows are not computed",
    "runs": "several files a side are read as one sample: the between-run variance the "
    "in-memory compare adds for several runs is not computed",
    "unit checks": "every column is taken to be in milliseconds, as named; the native reader's "
    "unit and summary-row checks are not run",
    "rank and warm-up tests": "arrival order is tested by the tail indicator's batch means "
    "and the runs test only: the in-memory compare also reads every request's rank (correlation "
    "over many lags), sets a warm-up apart and takes both sides of a row as correlated when "
    "either is, so where those find correlation its intervals are wider",
}


@dataclass(frozen=True, slots=True)
class EngineRow:
    kind: str  # "slo" or "slice"
    name: str
    column: str
    target_ms: float | None
    floor_ms: float
    gated: bool


def rows_of(budget: Budget, columns: Sequence[str], where: str) -> list[EngineRow]:
    """The rows to compute and the column of each; exit 2 naming a missing one."""
    have = set(columns)
    rows = []
    for name, target in budget.slo.targets().items():
        if name not in SLO_COLUMNS:
            continue  # itl / tpot: not computed (said in not_computed)
        col = next((c for c in SLO_COLUMNS[name] if c in have), None)
        if col is None:
            raise UsageError(
                f"--engine duckdb: {where} has no column for the SLO's {name} "
                f"({' or '.join(SLO_COLUMNS[name])}); columns: {', '.join(columns)}"
            )
        gated = budget.gated("slo", name)
        rows.append(EngineRow("slo", name, col, target, budget.regression.min_ms, gated))
    for name, s in budget.slices.items():
        if s.unit is not None and s.unit != "ms":
            raise UsageError(f"--engine duckdb: slice {name}: unit {s.unit}: give a ms column")
        names = [s.column] if s.column else [f"{name}_ms", name]
        col = next((c for c in names if c in have), None)
        if col is None:
            raise UsageError(
                f"--engine duckdb: {where} has no column {' or '.join(names)} for slice "
                f"{name} (set the slice's `column:` in the budget)"
            )
        rows.append(
            EngineRow(
                "slice", name, col, s.budget, budget.regression.min_ms, budget.gated("slice", name)
            )
        )
    return rows


def _honoured(columns: Sequence[str], where: str) -> None:
    """Exit 2 on a column the in-memory reader would act on and this path does not: a
    request's failure (the in-memory compare leaves failed requests out), its start time (it
    orders requests by it), its run or its class of traffic."""
    for c in columns:
        rule = rule_for(c)
        if rule is not None and (rule.role in (FAILURE, TIME, CLASS) or rule.target == "run"):
            raise UsageError(
                f"--engine duckdb: {where}: column {c} ({rule.target}) is not read on the "
                "engine path, which takes every row as one succeeded request of one run, in "
                "file order: compare without --engine, or select the rows without that column"
            )


def compare(
    base: Sequence[str],
    head: Sequence[str],
    budget: Budget,
    fail_on: Sequence[str],
    no_pair: bool = False,
) -> dict[str, Any]:
    """The engine's report of base against head (a JSON object): its verdict fails on a gated
    row's regression (`regression` in `fail_on`), an SLO metric's head percentile over its
    target (`breach`) or a slice's over its budget (`over_budget`). The requests pair by id
    as the in-memory compare pairs them (`engine_pairing`; `no_pair`: `--no-pair`)."""
    engine = Engine()
    have, rows, sizes, paired = _paired_sides(engine, base, head, budget, no_pair)
    p = budget.percentile
    also = [q for q in OTHER_PERCENTILES if q != p]
    changes = _changes(engine, paired, rows, budget, also)
    split = _split(engine, budget, rows, have, paired, p)
    verdicts = _decide(rows, [c for c, _ in changes], budget)
    out = [
        _row(r, c, hi, v, p, also, split)
        for r, (c, hi), v in zip(rows, changes, verdicts, strict=True)
    ]
    failing = _failing(out, fail_on)
    pairs = paired.n[0] if paired.keys is not None else None
    not_computed = dict(NOT_COMPUTED)
    if split.why_not is not None:
        not_computed["attribution"] = split.why_not
    if split.unsplit is not None:
        not_computed["split of the change"] = split.unsplit
    return {
        "engine": "duckdb",
        "verdict": "fail" if failing else "pass",
        "failing": failing,
        "percentile": p,
        "requests": {"base": sizes[0], "head": sizes[1]},
        "paired": pairs is not None,
        "pairs": pairs,
        "attribution": split.method,
        "slo": [x for x in out if x["kind"] == "slo"],
        "slices": [x for x in out if x["kind"] == "slice"],
        "parts": {"head": _fs(split.head_ms), "base": _fs(split.base_ms)},
        "notes": [*paired.decision.notes, *pairing_notes(pairs, split.method, p, Unit.REQUEST)],
        "not_computed": [{"what": k, "why": v} for k, v in not_computed.items()],
        "memory_limit": engine.memory_limit,
        "queries": engine.queries,
    }


def _paired_sides(
    engine: Engine, base: Sequence[str], head: Sequence[str], budget: Budget, no_pair: bool
) -> tuple[list[list[str]], list[EngineRow], list[int], pairing.Pairing]:
    """Each side's columns, the budget's rows, each side's size, and the sides paired by id
    as the in-memory compare pairs them (`engine_pairing`)."""
    rels = relation(base, "--base"), relation(head, "--head")
    labels = ", ".join(base), ", ".join(head)
    have = [engine.columns(rel, label) for rel, label in zip(rels, labels, strict=True)]
    for names, label in zip(have, labels, strict=True):
        _honoured(names, label)
    rows = rows_of(budget, have[1], labels[1])
    sizes = [engine.rows(rel, label) for rel, label in zip(rels, ("--base", "--head"), strict=True)]
    sides = pairing.Tables(
        rels,
        (sizes[0], sizes[1]),
        ("--base", "--head"),
        (pairing.targets(have[0]), pairing.targets(have[1])),
    )
    return have, rows, sizes, pairing.pair(engine, sides, Unit.REQUEST, no_pair)


def _changes(
    engine: Engine,
    paired: pairing.Pairing,
    rows: list[EngineRow],
    budget: Budget,
    also: list[float],
) -> list[tuple[stats.Change, tuple[float, float] | None]]:
    """Each row's change and head's own interval, from quantile queries at the interval's
    ranks (`measure.engine`), paired where the sides are."""
    p, reg = budget.percentile, budget.regression
    family = {g: sum(1 for r in rows if r.gated == g) for g in (True, False)}
    columns = [
        (
            ooc.Column(engine, paired.rels[0], r.column, paired.n[0], "--base"),
            ooc.Column(engine, paired.rels[1], r.column, paired.n[1], "--head"),
        )
        for r in rows
    ]
    need = needed_for_interval(p, reg.confidence)
    measured = [
        ooc.sides(b, h, p, reg.confidence, also) if min(b.n, h.n) >= need else None
        for b, h in columns
    ]
    counts = _pair_counts(engine, paired, rows, measured)
    return [
        ooc.compare(
            b,
            h,
            p,
            reg.confidence,
            family_size=family[r.gated],
            also=also,
            min_change=reg.min_change,
            min_ms=r.floor_ms,
            measured=m,
            pairs=c,
        )
        for r, (b, h), m, c in zip(rows, columns, measured, counts, strict=True)
    ]


def _pair_counts(
    engine: Engine,
    paired: pairing.Pairing,
    rows: Sequence[EngineRow],
    measured: Sequence[ooc.Sides | None],
) -> list[PairCounts | None]:
    """Each row's counts over the pairs (what its paired correlation reads), one join for all
    the rows; None for every row when unpaired (a row too short for an interval is still
    paired: it has no test to take the correlation into)."""
    if paired.keys is None:
        return [None] * len(rows)
    counts: list[PairCounts | None] = [PairCounts(paired.n[0], 0, 0, 0)] * len(rows)
    index = [i for i, m in enumerate(measured) if m is not None]
    got = pairing.pair_counts(
        engine,
        paired,
        [rows[i].column for i in index],
        [(m.base.side.value, m.head.side.value) for m in measured if m is not None],
        ("--base", "--head"),
    )
    for i, c in zip(index, got, strict=True):
        counts[i] = c
    return counts


@dataclass(frozen=True, slots=True)
class Split:
    """The total's percentile split into the slices (`rows._Split`'s numbers): each side's
    parts, head's shares of its tail, each slice's part of the change (unpaired: head's part
    less base's), how it was split; or why it is not."""

    head_ms: dict[str, float]
    base_ms: dict[str, float]
    shares: dict[str, float]
    change_ms: dict[str, float]
    method: str | None
    why_not: str | None = None  # why there is no split at all
    unsplit: str | None = None  # why the change is not split (the parts are)


def _split(
    engine: Engine,
    budget: Budget,
    rows: Sequence[EngineRow],
    have: Sequence[Sequence[str]],
    paired: pairing.Pairing,
    p: float,
) -> Split:
    """`rows._split` through the engine: each side's parts from the band of requests near its
    total's percentile (`engine_attribution`); the slices are the budget's, then the data's
    own the budget leaves out (`prepare`: their time is in the total), both sides'."""
    slices = {r.name: r.column for r in rows if r.kind == "slice"}
    used = set(slices.values())
    for c in have[1]:
        rule = rule_for(c)
        if rule is None or rule.role != SLICE or rule.target in budget.slices or c in used:
            continue
        if c not in have[0]:
            continue
        if normalize(c).unit not in (None, "ms"):
            return _no_split(f"column {c} is not in milliseconds: the split is not computed")
        slices.setdefault(rule.target, c)
    if not slices:
        return _no_split(None)
    ttft = next((c for c in SLO_COLUMNS["ttft"] if c in have[1]), None)
    if (
        budget.slices
        and ttft is not None
        and not _before_first_token(budget, {k: np.empty(0) for k in slices})
    ):
        return _no_split(
            "no slice of the budget is before the first token: the in-memory compare adds "
            "TTFT as a slice `first_token`, this path does not split the total"
        )
    total = [next((c for c in SLO_COLUMNS["total"] if c in h), None) for h in have]
    sides = [
        parts.split(engine, rel, n, slices, t, p, label)
        for rel, n, t, label in zip(paired.rels, paired.n, total, ("--base", "--head"), strict=True)
    ]
    base, head = sides
    if head is None:
        return _no_split(None)
    head_ms = head.parts
    base_ms = base.parts if base is not None else {}
    shares = attribution.tail_shares(head_ms)
    if paired.keys is not None and base is not None:  # `rows._split`: the paired game
        join = pairing.join(paired)
        got = parts.shapley(engine, join, paired.n[0], base, head, p, "--base and --head")
        if got.shapley is None:
            return Split(head_ms, base_ms, shares, {}, None, unsplit=got.why_not)
        return Split(head_ms, base_ms, shares, got.shapley.parts, got.shapley.method)
    change = attribution.quantile_change(base_ms, head_ms)
    return Split(head_ms, base_ms, shares, change, UNPAIRED_SPLIT)


def _no_split(why: str | None) -> Split:
    return Split({}, {}, {}, {}, None, why)


def _fs(values: dict[str, float]) -> dict[str, float | None]:
    return {k: _f(v) for k, v in values.items()}


def _decide(
    rows: Sequence[EngineRow], changes: Sequence[stats.Change], budget: Budget
) -> list[str]:
    """Each family's verdicts (`stats.decide`, Holm's correction)."""
    out = [""] * len(rows)
    for g in (True, False):
        index = [i for i, r in enumerate(rows) if r.gated == g]
        if not index:
            continue
        decided = stats.decide(
            [changes[i] for i in index],
            min_change=budget.regression.min_change,
            min_ms=[rows[i].floor_ms for i in index],
            confidence=budget.regression.confidence,
        )
        for i, v in zip(index, decided, strict=True):
            out[i] = v
    return out


def _row(
    r: EngineRow,
    c: stats.Change,
    head_ci: tuple[float, float] | None,
    verdict: str,
    p: float,
    also: Sequence[float],
    split: Split,
) -> dict[str, Any]:
    slice_of = r.kind == "slice"
    out = {
        "kind": r.kind,
        "name": r.name,
        "column": r.column,
        "target_ms": _f(r.target_ms),
        "base_ms": _f(c.base),
        "head_ms": _f(c.head),
        "delta_ms": _f(c.delta),
        "delta_pct": _f(c.delta_pct),
        "ci_ms": [_f(c.ci[0]), _f(c.ci[1])] if c.ci else None,
        "head_ci_ms": [_f(head_ci[0]), _f(head_ci[1])] if head_ci else None,
        "change": verdict,
        "p_value": _f(c.p_value, 6),
        "mde_pct": _f(c.mde_pct),
        "needed": c.needed,
        "paired": c.paired,
        "notes": [c.note] if c.note else [],
        "family": "gate" if r.gated else "information",
        "percentiles": {
            numbers.percentile(q): {"base_ms": _f(b), "head_ms": _f(h)}
            for q, (b, h) in zip(also, c.others, strict=True)
        },
    }
    if slice_of:  # `rows._row`: the slice's share of head's tail, its parts of the change
        out["tail_share_pct"] = _f(split.shares.get(r.name))
        out["tail_change_ms"] = _f(split.change_ms.get(r.name))
        out["part_ms"] = _f(split.head_ms.get(r.name))
        out["base_part_ms"] = _f(split.base_ms.get(r.name))
    return out


def _failing(rows: Sequence[dict[str, Any]], fail_on: Sequence[str]) -> list[str]:
    """What fails the gate, one line each."""
    out = []
    for r in rows:
        what = f"{r['name']} ({r['kind']})"
        if r["family"] == "gate" and r["change"] == "regression" and "regression" in fail_on:
            out.append(f"regression: {what} {numbers.signed_ms(r['delta_ms'])}")
        over = r["target_ms"] is not None and r["head_ms"] is not None
        if over and r["head_ms"] > r["target_ms"]:
            kind = "breach" if r["kind"] == "slo" else "over_budget"
            if kind in fail_on:
                out.append(
                    f"{kind}: {what} {numbers.ms(r['head_ms'])} > {numbers.ms(r['target_ms'])}"
                )
    return out
