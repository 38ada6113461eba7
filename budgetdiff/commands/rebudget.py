"""`budgetdiff rebudget`: a new split of the SLO from measured data, in words, and `--write`
to put it in the budget file."""

from __future__ import annotations

from pathlib import Path

from budgetdiff.budget import Budget, load_budget
from budgetdiff.budget_file import write_budget
from budgetdiff.commands.output import Edge
from budgetdiff.errors import UsageError
from budgetdiff.evaluate import Files, Reading, rebudget_for
from budgetdiff.numbers import count, ms, num, pct, percentile
from budgetdiff.options import RunOptions
from budgetdiff.render.cells import budget_meaning, fix_first
from budgetdiff.render.text import plain
from budgetdiff.rows import Comparison


def run(o: RunOptions, edge: Edge) -> int:
    budget = load_budget(Path(o.budget))
    if not budget.slices:
        raise UsageError(f"{o.budget}: has no `slices:` to re-split; add them first")
    reading = Reading(budget=budget, environ=edge.environ, fmt=o.format, scenarios=o.scenario)
    c = rebudget_for(reading.side(Files(o.head, o.head_ref)).runs, budget, source=o.head[0])
    edge.out.write(proposal_text(c, budget))
    proposal = c.rebudget
    assert proposal is not None  # rebudget_for says why when there is none
    if o.write:
        if not proposal.fits:
            edge.out.write("not written: it does not fit the SLO (see above)\n")
            return 1
        write_budget(Path(o.budget), proposal.allocation)
        edge.out.write(f"wrote {o.budget}\n")
    return 0


def proposal_text(c: Comparison, budget: Budget) -> str:
    """The proposal: a table of slices (measured, part, budget -> proposed, use), what the
    budget means, the proposal's reasons, and what to fix first when it does not fit."""
    proposal = c.rebudget
    assert proposal is not None
    p = percentile(budget.percentile)
    total = next((r.head_ms for r in c.slo if r.name == "total"), None)
    rows = {r.name: r for r in c.slices}
    lines = [
        f"re-budget at {p}: {ms(proposal.target_ms)} to split; {p} end to end {ms(total)}",
        f"  {'slice':<16} {'own ' + p:>9} {'part':>9} {'budget':>9} -> {'proposed':>9} {'use':>5}",
    ]
    for name, value in proposal.allocation.items():
        old = budget.slice_budget(name)
        row = rows.get(name)
        part = row.part_ms if row is not None else None
        use = pct(100 * part / value, digits=0) if part is not None and value else ""
        lines.append(
            f"  {plain(name, 16):<16} {num(row.head_ms if row else None):>9} {num(part):>9} "
            f"{num(old) if old else 'new':>9} -> {count(value):>9} {use:>5}"
        )
    lines.append(budget_meaning(c))
    lines += [plain(line, 400) for line in (proposal.headline, *proposal.lines)]
    if not proposal.fits and c.fix_first:
        lines.append("what to fix first (each slice 10% faster, the rest as measured):")
        for i, f in enumerate(c.fix_first, 1):
            lines.append(f"  {i}. {plain(f.slice)}: {fix_first(f, budget.percentile)}")
    return "".join(f"{line}\n" for line in lines)
