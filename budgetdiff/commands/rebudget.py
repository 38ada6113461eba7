"""`budgetdiff rebudget`: a new split of the SLO from measured data, in words, and `--write`
to put it in the budget file."""

from __future__ import annotations

from pathlib import Path

from budgetdiff.budget.file import load_budget, write_budget
from budgetdiff.budget.model import Budget
from budgetdiff.commands.edge import Edge
from budgetdiff.commands.options import RunOptions
from budgetdiff.commands.say import Say
from budgetdiff.commands.terminal import width
from budgetdiff.errors import UsageError
from budgetdiff.evaluate.orchestrator import Files, Reading, rebudget_for
from budgetdiff.measure.results import Comparison
from budgetdiff.numbers import count, ms, num, pct, percentile
from budgetdiff.render.cells import budget_meaning, fix_first
from budgetdiff.render.fit import column, prose, table
from budgetdiff.render.table import finding_line
from budgetdiff.render.text import plain


def run(o: RunOptions, edge: Edge) -> int:
    budget = load_budget(Path(o.budget))
    if not budget.slices:
        raise UsageError(f"{o.budget}: has no `slices:` to re-split; add them first")
    reading = Reading(budget=budget, environ=edge.environ, fmt=o.format, scenarios=o.scenario)
    read = rebudget_for(reading.side(Files(o.head, o.head_ref)).runs, budget, source=o.head[0])
    c = read.comparison
    if o.write and c.name in budget.classes:
        raise UsageError(
            f"{o.budget}: the proposal is for class {plain(c.name)!r}, whose slices --write "
            "does not update (it writes the top level's); run without --write and copy the "
            "proposal into the class's `slices:`"
        )
    say = Say(edge.out, width(edge.environ, edge.out))
    for f in read.findings:  # what the reading found wrong in the data: first, as check says it
        say(finding_line(f))
    held_to = budget.for_scenario(c.name)  # a class's own slices
    proposal = c.rebudget
    if proposal is None:  # rebudget_for lets it be None only when the parts are in doubt
        say("no proposal: the slices' parts of the end to end are in doubt (see above)")
        return 1
    edge.out.write(proposal_text(c, held_to, say.width))
    if o.write and (read.fails or not proposal.fits):
        why = "the data is in doubt" if read.fails else "it does not fit the SLO"
        edge.out.write(f"not written: {why} (see above)\n")
        return 1
    if o.write:
        write_budget(Path(o.budget), proposal.allocation)
        edge.out.write(f"wrote {o.budget}\n")
    # like whatif: an allocation that cannot hold the SLO is a failed check (exit 1)
    return 1 if read.fails or not proposal.fits else 0


def proposal_text(c: Comparison, budget: Budget, width: int | None = None) -> str:
    """The proposal: a table of slices (measured, part, budget, proposed, use), what the
    budget means, the proposal's reasons, and what to fix first when it does not fit; in
    lines of at most `width` characters."""
    proposal = c.rebudget
    assert proposal is not None
    p = percentile(budget.percentile)
    total = next((r.head_ms for r in c.slo if r.name == "total"), None)
    rows = {r.name: r for r in c.slices}
    names = list(proposal.allocation)
    parts = [rows[n].part_ms if n in rows else None for n in names]
    olds = [budget.slice_budget(n) for n in names]
    columns = [
        column(
            f"own {p}", [num(rows[n].head_ms if n in rows else None) for n in names], right=True
        ),
        column("part", [num(x) for x in parts], right=True),
        column("budget", [num(old) if old else "new" for old in olds], right=True),
        column("proposed", [count(v) for v in proposal.allocation.values()], right=True),
        column(
            "use",
            [
                pct(100 * part / v, digits=0) if part is not None and v else ""
                for part, v in zip(parts, proposal.allocation.values(), strict=True)
            ],
            right=True,
        ),
    ]
    inner = None if width is None else width - 2
    lines = prose(
        f"re-budget at {p}: {ms(proposal.target_ms)} to split; {p} end to end {ms(total)}", width
    )
    lines += [
        "  " + line for line in table(column("slice", [plain(n) for n in names]), columns, inner)
    ]
    lines += prose(budget_meaning(c), width)
    for line in (proposal.headline, *proposal.lines):
        lines += prose(plain(line, 400), width)
    if not proposal.fits and c.fix_first:
        lines += prose("what to fix first (each slice 10% faster, the rest as measured):", width)
        for i, f in enumerate(c.fix_first, 1):
            line = f"{i}. {plain(f.slice)}: {fix_first(f, budget.percentile)}"
            lines += prose(line, width, indent="  ", hang="   ")
    return "".join(f"{line.rstrip()}\n" for line in lines)
