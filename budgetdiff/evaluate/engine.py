"""Issue 36, `compare --engine duckdb`: base against head on native Parquet or CSV files of any
size, through DuckDB (streaming, spilling, bounded memory), each row's percentile, interval,
p-value and verdict the numbers the in-memory compare gives on the same rows.

Rows: the budget's SLO metrics with a column (ttft: `ttft_ms`, total: `e2e_ms`) and its slices
(the slice's `column`, or `NAME_ms`, or `NAME`), each a column in milliseconds. What the
in-memory report has and this path does not compute is listed in `not_computed`, with why.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from budgetdiff import numbers, stats
from budgetdiff.budget.model import Budget
from budgetdiff.errors import UsageError
from budgetdiff.formats.native.names import CLASS, FAILURE, TIME, rule_for
from budgetdiff.measure import engine as ooc
from budgetdiff.measure.rows import OTHER_PERCENTILES
from budgetdiff.render.json import _f
from budgetdiff.sources.engine import Engine, relation

SLO_COLUMNS = {"ttft": ("ttft_ms", "ttft"), "total": ("e2e_ms", "total_ms", "e2e", "total")}
NOT_COMPUTED = {
    "pairing": "requests are compared unpaired (the join on request ids is not built yet): "
    "the intervals treat the sides as independent, as `--no-pair` does",
    "joint step-down": "it resamples whole requests in memory; each family is decided by "
    "Holm's correction of the rows' own p-values instead",
    "attribution": "the Shapley split of the total's change into the slices is not computed",
    "attainment": "the share of requests within the SLO is not computed",
    "tpot, itl": "per-token rows are not computed",
    "runs": "several files a side are read as one sample: the between-run variance the "
    "in-memory compare adds for several runs is not computed",
    "unit checks": "every column is taken to be in milliseconds, as named; the native reader's "
    "unit and summary-row checks are not run",
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
    base: Sequence[str], head: Sequence[str], budget: Budget, fail_on: Sequence[str]
) -> dict[str, Any]:
    """The engine's report of base against head (a JSON object): its verdict fails on a gated
    row's regression (`regression` in `fail_on`), an SLO metric's head percentile over its
    target (`breach`) or a slice's over its budget (`over_budget`)."""
    engine = Engine()
    rels = relation(base, "--base"), relation(head, "--head")
    for rel, paths in zip(rels, (base, head), strict=True):
        _honoured(engine.columns(rel, ", ".join(paths)), ", ".join(paths))
    columns = engine.columns(rels[1], "--head")
    rows = rows_of(budget, columns, ", ".join(head))
    sizes = [engine.rows(rel, label) for rel, label in zip(rels, ("--base", "--head"), strict=True)]
    p, reg = budget.percentile, budget.regression
    also = [q for q in OTHER_PERCENTILES if q != p]
    family = {g: sum(1 for r in rows if r.gated == g) for g in (True, False)}
    changes = []
    for r in rows:
        base_col, head_col = (
            ooc.Column(engine, rel, r.column, n, label)
            for rel, n, label in zip(rels, sizes, ("--base", "--head"), strict=True)
        )
        changes.append(
            ooc.compare(
                base_col,
                head_col,
                p,
                reg.confidence,
                family_size=family[r.gated],
                also=also,
                min_change=reg.min_change,
                min_ms=r.floor_ms,
            )
        )
    verdicts = _decide(rows, [c for c, _ in changes], budget)
    out = [
        _row(r, c, hi, v, p, also) for r, (c, hi), v in zip(rows, changes, verdicts, strict=True)
    ]
    failing = _failing(out, fail_on)
    return {
        "engine": "duckdb",
        "verdict": "fail" if failing else "pass",
        "failing": failing,
        "percentile": p,
        "requests": {"base": sizes[0], "head": sizes[1]},
        "paired": False,
        "slo": [x for x in out if x["kind"] == "slo"],
        "slices": [x for x in out if x["kind"] == "slice"],
        "not_computed": [{"what": k, "why": v} for k, v in NOT_COMPUTED.items()],
        "memory_limit": engine.memory_limit,
        "queries": engine.queries,
    }


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
) -> dict[str, Any]:
    return {
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
        "paired": False,
        "notes": [c.note] if c.note else [],
        "family": "gate" if r.gated else "information",
        "percentiles": {
            numbers.percentile(q): {"base_ms": _f(b), "head_ms": _f(h)}
            for q, (b, h) in zip(also, c.others, strict=True)
        },
    }


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
