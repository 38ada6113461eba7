"""The markdown report (PR comment, step summary): verdict first, then SLO rows, then slice rows;
everything else folded. Every piece of text from the input goes through `text.md`."""

from __future__ import annotations

from collections.abc import Callable

from budgetdiff.compare import Comparison, Row
from budgetdiff.render import cells
from budgetdiff.render.numbers import ms, num, pct, signed_ms
from budgetdiff.render.text import md
from budgetdiff.report import Report, Scenario

GITHUB_COMMENT_LIMIT = 65_536
ICON = {"pass": "✅", "warn": "⚠️", "fail": "❌"}
STATUS_ICON = {"ok": "✅", "low_headroom": "⚠️", "breach": "❌"}


def render_markdown(report: Report, limit: int = GITHUB_COMMENT_LIMIT) -> str:
    """The whole report, or as much as fits in `limit` characters, saying what was cut."""
    levels: list[tuple[str, Callable[[Scenario], list[str]]]] = [
        ("", lambda s: _scenario(s, report, details=True, all_slices=True)),
        ("the folded details", lambda s: _scenario(s, report, details=False, all_slices=True)),
        (
            "the details and the slices that did not regress",
            lambda s: _scenario(s, report, details=False, all_slices=False),
        ),
    ]
    for cut, body in levels:
        for scenarios in (report.scenarios, (report.main,)):
            text = _document(report, scenarios, body, cut, scenarios != report.scenarios)
            if len(text) <= limit:
                return text
    # Last resort: the verdict line and the regressions, nothing else.
    head = _verdict_line(report)
    tail = (
        "\n\n_Cut to fit GitHub's size limit: run `budgetdiff` locally or see the JSON report._\n"
    )
    lines = [head, ""] + [f"- {md(f.message, 300)}" for f in report.findings if f.fails]
    text = "\n".join(lines)[: max(0, limit - len(tail))]
    return text[: max(0, text.rfind("\n"))] + tail  # whole lines: never half an entity


def _document(
    report: Report,
    scenarios: tuple[Scenario, ...],
    body: Callable[[Scenario], list[str]],
    cut: str,
    dropped_scenarios: bool,
) -> str:
    lines = [_verdict_line(report), ""]
    for s in scenarios:
        lines += body(s)
    lines.append(f"<sub>{md(cells.inputs(report.main.comparison), 400)}</sub>")
    what = [cut] if cut else []
    if dropped_scenarios:
        what.append(f"{len(report.scenarios) - 1} other scenario(s)")
    if what:
        lines += [
            "",
            f"_Cut to fit GitHub's size limit: {' and '.join(what)}; "
            "the JSON report has everything._",
        ]
    return "\n".join(lines) + "\n"


def _verdict_line(report: Report) -> str:
    fails = [f for f in report.findings if f.fails]
    warns = [f for f in report.findings if not f.fails]
    title = "budgetdiff" if report.id == "default" else f"budgetdiff · {md(report.id)}"
    if report.verdict == "pass":
        summary = "every SLO holds, no regression"
    else:
        parts = []
        for kind, label in (("regression", "regression"), ("breach", "SLO breached")):
            subjects = [f.subject for f in report.findings if f.kind == kind]
            if subjects:
                parts.append(f"{label}: {', '.join(md(s, 40) for s in dict.fromkeys(subjects))}")
        other = [f for f in (*fails, *warns) if f.kind not in ("regression", "breach")]
        if other:
            kinds = ", ".join(dict.fromkeys(f.kind.replace("_", " ") for f in other))
            parts.append(kinds)
        summary = "; ".join(parts)
    return f"### {ICON[report.verdict]} {title}: {report.verdict} · {summary}"


def _scenario(s: Scenario, report: Report, *, details: bool, all_slices: bool) -> list[str]:
    c = s.comparison
    p = f"p{c.percentile:g}"
    lines: list[str] = []
    if len(report.scenarios) > 1:
        lines += [f"#### {ICON[s.verdict]} scenario {md(c.name or 'default')}: {s.verdict}", ""]
    if c.headline:
        lines += [f"**{md(c.headline, 200)}**", ""]
    lines += [_requests_line(c), ""]
    compare = c.base is not None
    head = [
        "SLO at " + p,
        "target",
        *(["base"] if compare else []),
        "head",
        *(["change"] if compare else []),
        "headroom",
    ]
    body = [
        [
            md(r.label),
            _target(r),
            *([num(r.base_ms)] if compare else []),
            num(r.head_ms),
            *([md(cells.change(r), 200)] if compare else []),
            f"{STATUS_ICON[r.status]} {pct(r.headroom_pct)}" if r.status else "",
        ]
        for r in c.slo
    ]
    lines += _table(head, body, "lrrrlr" if compare else "lrrr")
    meaning = cells.definitions(c)
    if meaning:
        lines += ["", f"<sub>{md(meaning, 300)}</sub>"]
    rows = [r for r in c.slices if all_slices or r.change == "regression" or r.over_budget]
    if rows:
        head = [
            "slice at " + p,
            "budget",
            *(["base"] if compare else []),
            "head",
            *(["change"] if compare else []),
            f"part of {p} total",
            "budget use",
            "tail share (change)",
        ]
        body = [
            [
                md(r.label),
                _target(r),
                *([num(r.base_ms)] if compare else []),
                num(r.head_ms),
                *([md(cells.change(r), 200)] if compare else []),
                cells.part(r),
                ("❌ " if r.over_budget else "") + cells.budget_use(r).replace(" OVER", ""),
                md(cells.share(r)),
            ]
            for r in rows
        ]
        lines += ["", *_table(head, body, "lrrrlrrr" if compare else "lrrrrr")]
        if any(r.part_ms is not None for r in rows):
            lines += ["", f"<sub>{cells.budget_meaning(c)}</sub>"]
    lines += history_section(s)
    if s.findings:
        lines += [""] + [
            f"- {'❌' if f.fails else '⚠️'} **{f.kind.replace('_', ' ')}**: {md(f.message, 400)}"
            for f in s.findings
        ]
    if details:
        lines += _details(c)
    lines.append("")
    return lines


def _requests_line(c: Comparison) -> str:
    def side(name: str, n: int | None, failed: int) -> str:
        return f"{name} {cells.requests(n)}" + (f" ({failed:,} failed)" if failed else "")

    parts = []
    if c.base is not None:
        parts.append(side("base", c.base.requests, c.base.failed))
    parts.append(side("head", c.head.requests, c.head.failed))
    if c.paired:
        parts.append("paired by request id")
    return "<sub>" + " · ".join(parts) + "</sub>"


def _target(r: Row) -> str:
    return num(r.target_ms) if r.target_ms is not None else ""


def _details(c: Comparison) -> list[str]:
    out: list[str] = []
    rows = [*c.slo, *c.slices]
    keys = list(rows[0].percentiles) if rows else []
    if keys:
        compare = c.base is not None
        head = [
            "",
            *[f"{k} {side}" for k in keys for side in (("base", "head") if compare else ("head",))],
        ]
        body = [
            [
                md(r.label),
                *[
                    num(v)
                    for k in keys
                    for v in (r.percentiles[k] if compare else r.percentiles[k][1:])
                ],
            ]
            for r in rows
        ]
        out += _fold("Other percentiles (ms)", _table(head, body, "l" + "r" * (len(head) - 1)))
    if c.fix_first:
        text = [
            "Each slice 10% faster in every request, the rest as measured, "
            "recomputed from the head's requests; the most useful first:",
            "",
            *_table(
                ["rank", "slice 10% faster", f"p{c.percentile:g} end to end", "SLO attainment"],
                [
                    [
                        str(i),
                        md(f.slice),
                        signed_ms(f.total_change_ms),
                        f"{f.attainment_change_pct:+.1f} points"
                        if f.attainment_change_pct is not None
                        else "–",
                    ]
                    for i, f in enumerate(c.fix_first, 1)
                ],
                "rlrr",
            ),
        ]
        out += _fold("What to fix first", text)
    if c.rebudget is not None:
        prop = c.rebudget
        head = ["slice", "budget now", "proposed"]
        body = [
            [md(name), num(_current(c, name)), num(float(v))] for name, v in prop.allocation.items()
        ]
        text = _table(head, body, "lrr")
        text += [""] + [f"- {md(m, 300)}" for m in prop.messages]
        if prop.fits:
            text += ["", "Apply it with `budgetdiff rebudget --head FILE --write`."]
        out += _fold(f"Re-budget proposal (fills {ms(prop.target_ms)})", text)
    att = [
        (n, side, side.attainment)
        for n, side in (("base", c.base), ("head", c.head))
        if side is not None and side.attainment is not None
    ]
    if att:
        body = [
            [
                name,
                f"{a.good:,} / {a.total:,}",
                pct(a.pct),
                f"[{a.ci_pct[0]:.1f}, {a.ci_pct[1]:.1f}]"
                + (f" (effective n {a.effective_n:,})" if a.effective_n is not None else ""),
                f"{side.goodput_rps:.2f}/s" if side.goodput_rps is not None else "–",
            ]
            for name, side, a in att
        ]
        held = cells.held_to(c, att[-1][1].held_to)
        text = [
            f"A request is good when it succeeded and met, itself, {md(held, 300)} "
            "(the joint definition of vLLM `--goodput`, AIPerf and GuideLLM); the tables "
            "above show each metric's percentile instead.",
            "",
        ]
        out += _fold(
            "SLO attainment (per request)",
            text
            + _table(["run", "good", "attainment", "exact interval", "goodput"], body, "lrrrr"),
        )
    notes = [*c.notes, *[n for r in rows for n in r.notes]]
    if notes:
        out += _fold("Notes", [f"- {md(n, 300)}" for n in dict.fromkeys(notes)])
    return out


def _current(c: Comparison, name: str) -> float | None:
    return next((r.target_ms for r in c.slices if r.name == name), None)


def _fold(summary: str, body: list[str]) -> list[str]:
    return ["", f"<details><summary>{summary}</summary>", "", *body, "", "</details>"]


def _table(head: list[str], body: list[list[str]], align: str) -> list[str]:
    sep = ["---:" if a == "r" else "---" for a in align]
    lines = ["| " + " | ".join(head) + " |", "| " + " | ".join(sep) + " |"]
    lines += ["| " + " | ".join(row) + " |" for row in body]
    return lines


def history_section(s: Scenario) -> list[str]:
    """The trend of each row over `--history` (a sparkline of the percentile), the change since
    the budget last changed, and where the level changed; empty without a history."""
    h = s.history
    if h is None:
        return []
    p = f"p{s.comparison.percentile:g}"
    if not h.window:
        why = (
            "the budget changed in this run: the drift counts from here"
            if h.budget_changed
            else "no earlier run in the history yet"
        )
        return ["", f"<sub>History: {h.runs:,} run(s); {why}.</sub>"]
    body = []
    for t in h.trends:
        ref = (
            f"{pct(t.change_pct, signed=True)} vs {ms(t.reference_ms)}"
            f" (first {t.reference_runs} run(s))"
            if t.reference_ms is not None
            else "–"
        )
        body.append(
            [
                md(t.label),
                t.sparkline,
                f"{pct(t.cumulative_pct, signed=True)} over {len(t.values) - 1}",
                ref
                + (
                    " ❌ drift"
                    if t.drift and s.verdict == "fail"
                    else " ⚠️ drift"
                    if t.drift
                    else ""
                ),
                md(f"since {t.slower_since}", 80) if t.slower_since else "–",
            ]
        )
    lines = [
        "",
        f"**Trend at {p}** over {h.window} run(s) since the budget last changed, then this run:",
        "",
        *_table(
            [p, "trend", "since the budget changed", "vs the reference", "slower"], body, "llrll"
        ),
    ]
    if h.link:
        lines += ["", f"<sub>Charts: [trend page]({h.link}) (artifact of this run)</sub>"]
    if h.warnings:
        lines += [""] + [f"- ⚠️ {md(w, 300)}" for w in h.warnings]
    return lines
