"""The terminal rendering, for people running budgetdiff locally."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from budgetdiff.numbers import budget_ms, count, interval, ms, num, pct, percentile
from budgetdiff.render import cells
from budgetdiff.render.text import plain
from budgetdiff.results import Comparison, Row

if TYPE_CHECKING:  # render reads the Report; report.py calls render
    from budgetdiff.report import Report, Scenario


def render_table(report: Report) -> str:
    title = f"budgetdiff: {report.verdict.upper()}"
    out = [title + ("" if report.id == "default" else f" ({plain(report.id)})")]
    for s in report.scenarios:
        out += _scenario(s, several=len(report.scenarios) > 1)
    return "\n".join(out) + "\n"


def _scenario(s: Scenario, *, several: bool) -> list[str]:
    """One scenario: what was read, the SLO and slice tables, then the findings and advice."""
    c = s.comparison
    out = [""]
    if several:
        out.append(f"== scenario {plain(c.name or 'default')}: {s.verdict}")
    out += [_counts(c), plain(cells.inputs(c), 400)]
    if c.headline:
        out.append(plain(c.headline, 200))
    out += _tables(c)
    if s.findings:
        out.append("")
        out += [
            f"{'FAIL' if f.fails else 'warn'} {f.kind}: {plain(f.message, 400)}" for f in s.findings
        ]
    if c.fix_first:
        out += ["", "what to fix first (each slice 10% faster, the rest as measured):"]
        out += [
            f"  {i}. {plain(f.slice)}: {cells.fix_first(f, c.percentile)}"
            for i, f in enumerate(c.fix_first, 1)
        ]
    if c.rebudget is not None:
        alloc = ", ".join(f"{plain(k)} {budget_ms(v)}" for k, v in c.rebudget.allocation.items())
        out += ["", f"re-budget ({ms(c.rebudget.target_ms)}): {alloc}"]
        out += [f"  {plain(m, 400)}" for m in c.rebudget.lines]  # the target is said above
    out += _attainment(c)
    # what the markdown folds away, said here too: a terminal has no <details>
    notes = dict.fromkeys([*c.notes, *[n for r in (*c.slo, *c.slices) for n in r.notes]])
    if notes:
        out += ["", "notes:", *[f"  - {plain(n, 300)}" for n in notes]]
    return out


def _counts(c: Comparison) -> str:
    """`base 1,000 requests (0 failed), head 1,000 requests (3 failed), paired by request id`."""
    sides = [("base", c.base), ("head", c.head)] if c.base is not None else [("head", c.head)]
    counts = [
        f"{name} {cells.requests(side.requests)}"
        + (f" ({side.failed} failed)" if side.requests is not None else "")
        for name, side in sides
        if side is not None
    ]
    return ", ".join(counts) + (", paired by request id" if c.paired else "")


def _tables(c: Comparison) -> list[str]:
    """The SLO table, what its rows mean, and the slice table."""
    p = percentile(c.percentile)
    compare = c.base is not None
    slo = _rows(
        c.slo,
        names=(f"SLO {p}", "target"),
        compare=compare,
        last=("headroom",),
        tail=lambda r: [cells.headroom(r)],
    )
    out = ["", slo]
    meaning = cells.definitions(c)
    if meaning:
        out.append(plain(meaning, 300))
    if c.slices:
        last = (f"part of {p} total", "budget use", "tail share (change)")
        names = (f"slice {p}", "budget")
        out += ["", _rows(c.slices, names=names, compare=compare, last=last, tail=_slice_cells)]
        if any(r.part_ms is not None for r in c.slices):
            out.append(cells.budget_meaning(c))
    return out


def _slice_cells(r: Row) -> list[str]:
    return [cells.part(r), cells.budget_use(r), cells.share(r)]


def _attainment(c: Comparison) -> list[str]:
    """`attainment head: 981/1000 requests met every target (98.1% [97.1, 98.8])`, per side."""
    out = []
    for name, side in (("base", c.base), ("head", c.head)):
        a = side.attainment if side is not None else None
        if a is not None:
            out.append(
                f"attainment {name}: {count(a.good)}/{count(a.total)} requests met every target "
                f"({pct(a.pct)} {interval(*a.ci_pct, signed=False)}"
                + (f", effective n {count(a.effective_n)}" if a.effective_n is not None else "")
                + ")"
            )
    if c.head.attainment is not None:
        out.append(f"  a request meets: {plain(cells.held_to(c, c.head.held_to), 300)}")
    return out


def _rows(
    rows: tuple[Row, ...],
    *,
    names: tuple[str, str],
    compare: bool,
    last: tuple[str, ...],
    tail: Callable[[Row], list[str]],
) -> str:
    """One table: the row's name, target, (base), head, (change), then `last` columns;
    `names` heads the first two (`SLO p95`, `target`)."""
    head = [
        *names,
        *(["base"] if compare else []),
        "head",
        *(["change"] if compare else []),
        *last,
    ]
    body = [
        [
            plain(r.label),
            num(r.target_ms) if r.target_ms else "",
            *([num(r.base_ms)] if compare else []),
            num(r.head_ms),
            *([plain(cells.change(r), 200)] if compare else []),
            *tail(r),
        ]
        for r in rows
    ]
    return columns(head, body)


def columns(head: list[str], body: list[list[str]]) -> str:
    """Text in aligned columns under a ruled header, two spaces apart; a column is at least two
    characters wider than its header. (tabulate's "simple" layout, which the terminal output
    had: tabulate cost 30 ms of every run's start-up, looking its own version up on import.)"""
    widths = [max(len(h) + 2, *(len(row[i]) for row in body)) for i, h in enumerate(head)]

    def line(cells: list[str]) -> str:
        return "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip()

    return "\n".join([line(head), line(["-" * w for w in widths]), *map(line, body)])
