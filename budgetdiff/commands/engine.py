"""`budgetdiff compare --engine duckdb`: the out-of-core compare (issue 36,
`evaluate.engine`), its report as JSON or a plain table with the queries sent, its exit code
the verdict's (0 pass, 1 fail; 2 for bad input, as every command)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from budgetdiff import numbers
from budgetdiff.commands.budget_source import held_budget
from budgetdiff.commands.edge import Edge
from budgetdiff.commands.options import RunOptions
from budgetdiff.commands.output import write_atomic
from budgetdiff.errors import UsageError

# what the engine path does not take (each is the in-memory compare's)
REFUSED = ("base_ref", "head_ref", "base_artifact", "prometheus", "sql", "html", "history")


def run(o: RunOptions, edge: Edge) -> int:
    from budgetdiff.evaluate import engine  # duckdb only when asked

    given = [f"--{f.replace('_', '-')}" for f in REFUSED if getattr(o, f)]
    given += ["--pair"] if o.pair else []
    given += ["--github"] if o.github else []
    given += ["--scenario"] if o.scenario else []
    if given:
        raise UsageError(f"--engine duckdb: {given[0]} is not supported on the engine path yet")
    if not o.base or not o.head:
        raise UsageError("--engine duckdb needs --base FILE and --head FILE (globs too)")
    if o.output == "markdown" or o.markdown:
        raise UsageError("--engine duckdb: --output json or table (no markdown report yet)")
    budget = held_budget(o, edge.environ).budget
    fail_on = budget.fail_on if o.fail_on is None else o.fail_on
    report = engine.compare(o.base, o.head, budget, fail_on, no_pair=o.pair is False)
    text = json.dumps(report, indent=2) + "\n"
    if o.json:
        write_atomic(Path(o.json), text)
    edge.out.write(text if o.output == "json" else table(report))
    edge.out.flush()
    return 1 if report["verdict"] == "fail" else 0


def table(report: dict[str, Any]) -> str:
    """The rows, the verdict, what is not computed and the queries sent, as plain text."""
    p = report["percentile"]
    n = report["requests"]
    lines = [
        f"budgetdiff compare --engine duckdb: {report['verdict']} "
        f"({numbers.percentile(p)}; {numbers.count(n['base'])} base, "
        f"{numbers.count(n['head'])} head requests, {_paired(report)})",
        "",
        f"{'row':<16} {'base ms':>12} {'head ms':>12} {'change':>10} {'interval ms':>24}  verdict",
    ]
    for r in (*report["slo"], *report["slices"]):
        ci = r["ci_ms"]
        shown = f"[{ci[0]}, {ci[1]}]" if ci else "-"
        lines.append(
            f"{r['name']:<16} {r['base_ms']!s:>12} {r['head_ms']!s:>12} "
            f"{r['delta_pct']!s:>9}% {shown:>24}  {r['change']}"
        )
        lines += [f"  note: {note}" for note in r["notes"]]
    lines += ["", *(f"note: {note}" for note in report["notes"])]
    lines += [*(f"fails: {f}" for f in report["failing"])]
    lines += ["not computed on the engine path:"]
    lines += [f"  {x['what']}: {x['why']}" for x in report["not_computed"]]
    lines += ["queries sent (DuckDB, memory_limit " + report["memory_limit"] + "):"]
    lines += [f"  {q}" for q in report["queries"]]
    return "\n".join(lines) + "\n"


def _paired(report: dict[str, Any]) -> str:
    pairs = report["pairs"]
    return (
        f"paired by request id, {numbers.count(pairs)} pairs" if pairs is not None else "unpaired"
    )
