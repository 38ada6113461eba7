"""The terminal rendering, for people running budgetdiff locally: tables by tabulate, and
every line fitted to the terminal's width (`render.fit`: tables fold, prose wraps)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from budgetdiff.measure.results import Comparison, Finding, Row, Unit
from budgetdiff.numbers import budget_ms, count, interval, ms, num, pct, percentile
from budgetdiff.render import cells
from budgetdiff.render.agent import text_section
from budgetdiff.render.fit import DEFAULT_WIDTH, Column, column, prose, table
from budgetdiff.render.summary import sentence
from budgetdiff.render.text import plain

if TYPE_CHECKING:  # render reads the Report; report.py calls render
    from budgetdiff.report.model import Report, Scenario


def render_table(report: Report, width: int | None = DEFAULT_WIDTH) -> str:
    """The report in lines of at most `width` characters (None: no limit, every table whole)."""
    title = f"budgetdiff: {report.verdict.upper()}"
    out = prose(title + ("" if report.id == "default" else f" ({plain(report.id)})"), width)
    for s in report.scenarios:
        out += _scenario(s, width, several=len(report.scenarios) > 1)
    return "\n".join(out) + "\n"


def _scenario(s: Scenario, width: int | None, *, several: bool) -> list[str]:
    """One scenario: what was read, the SLO and slice tables, then the findings and advice."""
    c = s.comparison
    out = [""]
    if several:
        out += prose(f"== scenario {plain(c.name or 'default')}: {s.verdict}", width)
    out += prose(sentence(s.summary, c.percentile, plain), width)  # the comment's heading
    out += prose(_counts(c), width) + prose(plain(cells.inputs(c), 400), width)
    if c.headline:
        out += prose(plain(c.headline, 200), width)
    out += _tables(c, width)
    out += text_section(c, width)
    if s.findings:
        out.append("")
        for f in s.findings:
            out += prose(finding_line(f), width)
    if c.fix_first:
        out += [
            "",
            *prose("what to fix first (each slice 10% faster, the rest as measured):", width),
        ]
        for i, fix in enumerate(c.fix_first, 1):
            line = f"{i}. {plain(fix.slice)}: {cells.fix_first(fix, c.percentile)}"
            out += prose(line, width, indent="  ", hang="   ")
    if c.rebudget is not None:
        alloc = ", ".join(f"{plain(k)} {budget_ms(v)}" for k, v in c.rebudget.allocation.items())
        rule = f"each slice's part of the {percentile(c.percentile)} end to end, in proportion"
        out += ["", *prose(f"re-budget ({ms(c.rebudget.target_ms)}, {rule}): {alloc}", width)]
        for m in c.rebudget.lines:  # the target is said above
            out += prose(plain(m, 400), width, indent="  ")
    out += _attainment(c, width)
    # what the markdown folds away, said here too: a terminal has no <details>
    notes = dict.fromkeys([*c.notes, *[n for r in (*c.slo, *c.slices) for n in r.notes]])
    if notes:
        out += ["", "notes:"]
        for n in notes:
            out += prose(f"- {plain(n, 300)}", width, indent="  ")
    return out


def finding_line(f: Finding) -> str:
    """`FAIL units: head.csv: ttft_ms: median 0.28 read as ms ...`: a finding in one line."""
    return f"{'FAIL' if f.fails else 'warn'} {f.kind}: {plain(f.message, 400)}"


def _counts(c: Comparison) -> str:
    """`base 1,000 requests (0 failed), head 1,000 requests (3 failed), paired by request id`."""
    sides = [("base", c.base), ("head", c.head)] if c.base is not None else [("head", c.head)]
    counts = [
        f"{name} {cells.requests(side.requests, c.unit)}"
        + (f" ({side.failed} failed)" if side.requests is not None and side.failed_known else "")
        for name, side in sides
        if side is not None
    ]
    return ", ".join(counts) + (f", paired by {c.unit.value} id" if c.paired else "")


def _tables(c: Comparison, width: int | None) -> list[str]:
    """The SLO table, what its rows mean, and the slice table. Folded, each splits into where
    a row stands (target or budget, base, head, headroom or use) and how it changed."""
    p = percentile(c.percentile)
    compare = c.base is not None
    slo = [
        *_measured(c.slo, "target", compare=compare),
        *_change(c.slo, compare=compare, unit=c.unit),
        column("headroom", [cells.headroom(r) for r in c.slo]),
    ]
    # no rows (every request failed, nothing measured): the findings say why, not an empty table
    out = ["", *table(_key(f"SLO {p}", c.slo), slo, width)] if c.slo else []
    meaning = cells.definitions(c)
    if meaning:
        out += prose(plain(meaning, 300), width)
    if c.slices:
        rows = c.slices
        columns = [
            *_measured(rows, "budget", compare=compare),
            *_change(rows, compare=compare, unit=c.unit),
            column(f"part of {p} total", [cells.part(r) for r in rows], right=True),
            column("budget use", [cells.budget_use(r) for r in rows], right=True),
            column("tail share (change)", [cells.share(r) for r in rows], group=1),
        ]
        out += ["", *table(_key(f"slice {p}", rows), columns, width)]
        if any(r.part_ms is not None for r in rows):
            out += prose(cells.budget_meaning(c), width)
    return out


def _key(head: str, rows: tuple[Row, ...]) -> Column:
    return column(head, [plain(r.label) for r in rows])


def _measured(rows: tuple[Row, ...], target: str, *, compare: bool) -> list[Column]:
    """A row's measured columns: target (or budget), (base), head."""
    out = [column(target, [num(r.target_ms) if r.target_ms else "" for r in rows], right=True)]
    if compare:
        out.append(column("base", [num(r.base_ms) for r in rows], right=True))
    return [*out, column("head", [num(r.head_ms) for r in rows], right=True)]


def _change(rows: tuple[Row, ...], *, compare: bool, unit: Unit) -> list[Column]:
    """The change column when there is a base: the change, and its caveat below it if folded."""
    if not compare:
        return []
    parts = tuple(tuple(plain(x, 200) for x in cells.change_parts(r, unit=unit)) for r in rows)
    return [Column("change", parts, group=1)]


def _attainment(c: Comparison, width: int | None) -> list[str]:
    """`attainment head: 981/1000 requests met every target (98.1% [97.1, 98.8])`, per side."""
    out = []
    for name, side in (("base", c.base), ("head", c.head)):
        a = side.attainment if side is not None else None
        if a is not None:
            out += prose(
                f"attainment {name}: {count(a.good)}/{count(a.total)} {c.unit.plural} met every "
                f"target "
                f"({pct(a.pct)} {interval(*a.ci_pct, signed=False)}"
                + (f", effective n {count(a.effective_n)}" if a.effective_n is not None else "")
                + ")",
                width,
            )
    if c.head.attainment is not None:
        held = plain(cells.held_to(c, c.head.held_to), 300)
        out += prose(f"a {c.unit.value} meets: {held}", width, indent="  ")
    return out
