"""The terminal rendering (tabulate), for people running budgetdiff locally."""

from __future__ import annotations

from tabulate import tabulate

from budgetdiff.render import cells
from budgetdiff.render.numbers import ms, num, pct
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
        counts = [f"head {c.head.requests:,} requests ({c.head.failed} failed)"]
        if c.base is not None:
            counts.insert(0, f"base {c.base.requests:,} requests ({c.base.failed} failed)")
        out.append(", ".join(counts) + (", paired by request id" if c.paired else ""))
        if c.headline:
            out.append(plain(c.headline, 200))
        head = [
            f"SLO {p}",
            "target",
            *(["base"] if compare else []),
            "head",
            *(["change"] if compare else []),
            "headroom",
        ]
        rows = [
            [
                plain(r.label),
                num(r.target_ms) if r.target_ms else "",
                *([num(r.base_ms)] if compare else []),
                num(r.head_ms),
                *([plain(cells.change(r), 200)] if compare else []),
                cells.headroom(r),
            ]
            for r in c.slo
        ]
        out += ["", tabulate(rows, head, tablefmt="simple", disable_numparse=True)]
        if c.slices:
            head = [
                f"slice {p}",
                "budget",
                *(["base"] if compare else []),
                "head",
                *(["change"] if compare else []),
                "budget use",
                "tail share (change)",
            ]
            rows = [
                [
                    plain(r.label),
                    num(r.target_ms) if r.target_ms else "",
                    *([num(r.base_ms)] if compare else []),
                    num(r.head_ms),
                    *([plain(cells.change(r), 200)] if compare else []),
                    cells.budget_use(r),
                    cells.share(r),
                ]
                for r in c.slices
            ]
            out += ["", tabulate(rows, head, tablefmt="simple", disable_numparse=True)]
        if s.findings:
            out.append("")
            out += [
                f"{'FAIL' if f.fails else 'warn'} {f.kind}: {plain(f.message, 400)}"
                for f in s.findings
            ]
        if c.rebudget is not None:
            alloc = ", ".join(
                f"{plain(k)} {num(float(v))}" for k, v in c.rebudget.allocation.items()
            )
            out += ["", f"re-budget ({ms(c.rebudget.target_ms)}): {alloc}"]
            out += [f"  {plain(m, 400)}" for m in c.rebudget.messages[1:]]
        for name, side in (("base", c.base), ("head", c.head)):
            a = side.attainment if side is not None else None
            if a is not None:
                out.append(
                    f"attainment {name}: {a.good}/{a.total} requests met every target "
                    f"({pct(a.pct)} [{a.ci_pct[0]:.1f}, {a.ci_pct[1]:.1f}])"
                )
    return "\n".join(out) + "\n"
