"""The terminal rendering (tabulate), for people running budgetdiff locally."""

from __future__ import annotations

from collections.abc import Callable

from tabulate import tabulate

from budgetdiff.compare import Row
from budgetdiff.numbers import ms, num, pct
from budgetdiff.render import cells
from budgetdiff.render.text import plain
from budgetdiff.report import Report


def render_table(report: Report) -> str:
    out = [
        f"budgetdiff: {report.verdict.upper()}"
        + ("" if report.id == "default" else f" ({plain(report.id)})")
    ]
    for s in report.scenarios:
        c = s.comparison
        p = f"p{c.percentile:g}"
        compare = c.base is not None
        out.append("")
        if len(report.scenarios) > 1:
            out.append(f"== scenario {plain(c.name or 'default')}: {s.verdict}")
        sides = [("base", c.base), ("head", c.head)] if c.base is not None else [("head", c.head)]
        counts = [
            f"{name} {cells.requests(side.requests)}"
            + (f" ({side.failed} failed)" if side.requests is not None else "")
            for name, side in sides
            if side is not None
        ]
        out.append(", ".join(counts) + (", paired by request id" if c.paired else ""))
        out.append(plain(cells.inputs(c), 400))
        if c.headline:
            out.append(plain(c.headline, 200))
        out += ["", _rows(c.slo, f"SLO {p}", compare, ("headroom",), lambda r: [cells.headroom(r)])]
        meaning = cells.definitions(c)
        if meaning:
            out.append(plain(meaning, 300))
        if c.slices:
            out += [
                "",
                _rows(
                    c.slices,
                    f"slice {p}",
                    compare,
                    (f"part of {p} total", "budget use", "tail share (change)"),
                    lambda r: [cells.part(r), cells.budget_use(r), cells.share(r)],
                ),
            ]
            if any(r.part_ms is not None for r in c.slices):
                out.append(cells.budget_meaning(c))
        if s.findings:
            out.append("")
            out += [
                f"{'FAIL' if f.fails else 'warn'} {f.kind}: {plain(f.message, 400)}"
                for f in s.findings
            ]
        if c.fix_first:
            out += ["", "what to fix first (each slice 10% faster, the rest as measured):"]
            out += [
                f"  {i}. {plain(f.slice)}: {cells.fix_first(f, c.percentile)}"
                for i, f in enumerate(c.fix_first, 1)
            ]
        if c.rebudget is not None:
            alloc = ", ".join(
                f"{plain(k)} {num(float(v))}" for k, v in c.rebudget.allocation.items()
            )
            out += ["", f"re-budget ({ms(c.rebudget.target_ms)}): {alloc}"]
            out += [f"  {plain(m, 400)}" for m in c.rebudget.lines]  # the target is said above
        for name, side in (("base", c.base), ("head", c.head)):
            a = side.attainment if side is not None else None
            if a is not None:
                out.append(
                    f"attainment {name}: {a.good}/{a.total} requests met every target "
                    f"({pct(a.pct)} [{a.ci_pct[0]:.1f}, {a.ci_pct[1]:.1f}]"
                    + (f", effective n {a.effective_n:,}" if a.effective_n is not None else "")
                    + ")"
                )
        if c.head.attainment is not None:
            out.append(f"  a request meets: {plain(cells.held_to(c, c.head.held_to), 300)}")
        # what the markdown folds away, said here too: a terminal has no <details>
        notes = dict.fromkeys([*c.notes, *[n for r in (*c.slo, *c.slices) for n in r.notes]])
        if notes:
            out += ["", "notes:", *[f"  - {plain(n, 300)}" for n in notes]]
    return "\n".join(out) + "\n"


def _rows(
    rows: tuple[Row, ...],
    first: str,
    compare: bool,
    last: tuple[str, ...],
    tail: Callable[[Row], list[str]],
) -> str:
    """One table: the row's name, target, (base), head, (change), then `last` columns."""
    head = [
        first,
        "target" if first.startswith("SLO") else "budget",
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
    return str(tabulate(body, head, tablefmt="simple", disable_numparse=True))
