"""The markdown report (PR comment, step summary): verdict first, then SLO rows, then slice rows;
everything else folded. Every piece of text from the input goes through `text.md`."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from tabulate import DataRow, TableFormat, tabulate

from budgetdiff.measure.results import Change, Comparison, Finding, Kind, Row, Status, Unit, Verdict
from budgetdiff.numbers import (
    amount,
    budget_ms,
    count,
    interval,
    ms,
    num,
    pct,
    percentile,
    points,
    rate,
    signed_ms,
)
from budgetdiff.render import cells
from budgetdiff.render.agent import markdown_section
from budgetdiff.render.chart import budget_chart
from budgetdiff.render.summary import kind_words, names, sentence
from budgetdiff.render.text import md

if TYPE_CHECKING:  # render reads the Report; report.py calls render
    from budgetdiff.report.model import Report, Scenario

GITHUB_COMMENT_LIMIT = 65_536
ICON = {Verdict.PASS: "✅", Verdict.WARN: "⚠️", Verdict.FAIL: "❌"}
# `~` is the terminal's short word; in the comment it is said
CHANGE_WORDS = {**cells.CHANGE_WORDS, Change.NONE: "no clear change"}
STATUS_ICON = {
    Status.OK: "✅",
    Status.LOW_HEADROOM: "⚠️",
    Status.BREACH: "❌",
    Status.DOUBTFUL: "❓",
}


def render_markdown(
    report: Report, limit: int = GITHUB_COMMENT_LIMIT, *, resolved: bool = False
) -> str:
    """The whole report, or as much as fits in `limit` characters, saying what was cut.
    `resolved`: the comment an earlier run posted, now that nothing is found."""
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
            text = _document(report, scenarios, body, cut, scenarios != report.scenarios, resolved)
            if len(text) <= limit:
                return text
    # Last resort: the verdict line and the regressions, nothing else.
    head = _verdict_line(report, resolved)
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
    resolved: bool,
) -> str:
    lines = [_verdict_line(report, resolved), ""]
    if resolved:
        lines += [
            "_An earlier run of this pull request found a problem; this run finds none._",
            "",
        ]
    lines += _accepted(report)
    if len(report.scenarios) > 1:
        lines += _summary(report)
    for s in scenarios:
        if len(report.scenarios) > 1:
            # the worst scenario, the one the heading speaks of, is open
            fold = "<details open>" if s is report.main else "<details>"
            lines += [
                f"{fold}<summary>{ICON[s.verdict]} {md(s.comparison.name or 'default')}: "
                f"{headline(s)}</summary>",
                "",
                *body(s),
                "</details>",
                "",
            ]
        else:
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


def _verdict_line(report: Report, resolved: bool = False) -> str:
    """The answer in words: did it pass, which SLO is at risk, which slice caused it."""
    title = "" if report.id == "default" else f"{md(report.id)}: "
    icon = ICON[report.verdict]
    answer = headline(report.main)
    if len(report.scenarios) > 1:  # which scenario the heading speaks of
        answer = f"{md(report.main.comparison.name or 'default')}: {answer}"
    if resolved:
        answer = f"Resolved: {answer}"
    if report.accepted is not None and report.verdict != Verdict.FAIL:
        answer = f"Accepted by {md(report.accepted.by, 60)}: {answer}"
    return f"### {icon} {title}{answer}"


def headline(s: Scenario) -> str:
    """`End to end p95 +1,082 ms (+24%), 6.7% headroom left: decode regressed`."""
    return sentence(s.summary, s.comparison.percentile, md)


def _scenario(s: Scenario, report: Report, *, details: bool, all_slices: bool) -> list[str]:
    """One scenario's report: the causes, the chart, the SLO and slice tables, the trend, the
    other findings, and (`details`) the folded sections."""
    c = s.comparison
    lines: list[str] = []
    causes = _causes(s)
    if causes:
        lines += [*causes, ""]
    chart = budget_chart(c)
    if chart:
        lines += [*chart, ""]
    if c.headline:
        lines += [f"**{md(c.headline, 200)}**", ""]
    lines += [_requests_line(c), ""]
    if c.slo:  # none when nothing was measured: the findings say why
        lines += _slo_table(c)
    moved = _attainment_moved(c)
    if moved:
        lines += ["", moved]
    meaning = cells.definitions(c)
    if meaning:
        lines += ["", f"<sub>{md(meaning, 300)}</sub>"]
    rows = [r for r in c.slices if all_slices or r.change == Change.REGRESSION or r.over_budget]
    if rows:
        lines += ["", *_slice_table(c, rows)]
        if any(r.part_ms is not None for r in rows):
            lines += ["", f"<sub>{cells.budget_meaning(c)}</sub>"]
    lines += markdown_section(c)
    lines += history_section(s)
    others = [f for f in s.findings if f.kind not in _FIRST]
    if others:
        lines += [""] + [_bullet(f, c.unit) for f in others]
    if details:
        lines += _details(c)
    lines.append("")
    return lines


def _slo_table(c: Comparison) -> list[str]:
    compare = c.base is not None
    head = [
        "SLO at " + percentile(c.percentile),
        "target",
        *(["base"] if compare else []),
        "head",
        *(["change"] if compare else []),
        "headroom",
    ]
    body = [
        [
            *_measured(r, compare, c.unit),
            _standing(r),
        ]
        for r in c.slo
    ]
    return _table(head, body, "lrrrlr" if compare else "lrrr")


def _slice_table(c: Comparison, rows: list[Row]) -> list[str]:
    compare = c.base is not None
    p = percentile(c.percentile)
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
            *_measured(r, compare, c.unit),
            cells.part(r),
            _use(r),
            md(cells.share(r)),
        ]
        for r in rows
    ]
    return _table(head, body, "lrrrlrrr" if compare else "lrrrrr")


def _standing(r: Row) -> str:
    """An SLO row's headroom with its mark, or the doubt in its place."""
    if r.doubt is not None:
        return _doubt(r)
    return f"{STATUS_ICON[r.status]} {cells.room(r.headroom_pct)}" if r.status else ""


def _use(r: Row) -> str:
    """A slice's budget use with its mark, or the doubt in its place."""
    if r.doubt is not None:
        return _doubt(r)
    return ("❌ " if r.over_budget else "") + cells.budget_use(r).replace(" OVER", "")


def _doubt(r: Row) -> str:
    """`❓ doubtful (head: the unit of ttft_ms)`, or nothing for a row not in doubt."""
    return f"{STATUS_ICON[Status.DOUBTFUL]} {md(cells.doubt(r), 200)}" if r.doubt else ""


def _measured(r: Row, compare: bool, unit: Unit) -> list[str]:
    """A row's first cells: its name, target, (base), head, (change)."""
    return [
        md(r.label),
        _target(r),
        *([num(r.base_ms)] if compare else []),
        num(r.head_ms),
        *([md(cells.change(r, CHANGE_WORDS, unit), 200)] if compare else []),
    ]


def _bullet(f: Finding, unit: Unit = Unit.REQUEST) -> str:
    icon = "❌" if f.fails else "✔️" if f.accepted else "⚠️"
    kind = "accepted regression" if f.accepted else kind_words(f.kind, unit)
    return f"- {icon} **{kind}**: {md(f.message, 400)}"


# The bullets under the heading: which budget holds the run when the PR changed it (issue 38),
# then one per cause; the other findings follow the tables
_FIRST = (Kind.BUDGET_CHANGE, Kind.REGRESSION)


def _causes(s: Scenario) -> list[str]:
    """The budget change, then one bullet per cause (a regressed slice, with the SLO rows it
    moved)."""
    return [_bullet(f) for kind in _FIRST for f in s.findings if f.kind == kind]


def _accepted(report: Report) -> list[str]:
    a = report.accepted
    if a is None or not any(f.accepted for f in report.findings):
        return []
    what = ", ".join(dict.fromkeys(md(f.subject, 40) for f in report.findings if f.accepted))
    return [
        f"> [!NOTE]\n> {md(a.by, 60)} accepted the regression of {what} with the label "
        f"`{md(a.label, 50)}`: it no longer fails the check. If the new numbers are the new "
        "normal, move the budget to them with `budgetdiff rebudget --head FILE --write` "
        "(the proposal is below).",
        "",
    ]


def _summary(report: Report) -> list[str]:
    """Several scenarios: one row each, before the folded reports."""
    body = []
    for s in report.scenarios:
        c, row, owners = s.comparison, s.summary.at_risk, s.summary.owners
        body.append(
            [
                md(c.name or "default"),
                f"{ICON[s.verdict]} {s.verdict}",
                md(f"{row.label} {percentile(c.percentile)}") if row is not None else "–",
                pct(row.headroom_pct) if row is not None and row.headroom_pct is not None else "–",
                names(owners, md) if owners else "–",
            ]
        )
    head = ["scenario", "verdict", "SLO at risk", "headroom", "owner (slice)"]
    return [*_table(head, body, "lllrl"), ""]


def _attainment_moved(c: Comparison) -> str | None:
    """`SLO attainment 99.1% -> 96.2% of requests`, beside the SLO table when it moved."""
    if c.base is None or c.base.attainment is None or c.head.attainment is None:
        return None
    b, h = c.base.attainment, c.head.attainment
    if abs(h.pct - b.pct) < 0.5:
        return None
    return (
        f"**SLO attainment {pct(b.pct)} → {pct(h.pct)}** of {c.unit.plural} met every target "
        f"({points(h.pct - b.pct)}; see below)"
    )


def _requests_line(c: Comparison) -> str:
    def side(name: str, n: int | None, failed: int) -> str:
        said = cells.requests(n, c.unit)
        return f"{name} {said}" + (f" ({count(failed)} failed)" if failed else "")

    parts = []
    if c.base is not None:
        parts.append(side("base", c.base.requests, c.base.failed))
    parts.append(side("head", c.head.requests, c.head.failed))
    if c.paired:
        parts.append(f"paired by {c.unit} id")
    return "<sub>" + " · ".join(parts) + "</sub>"


def _target(r: Row) -> str:
    return num(r.target_ms) if r.target_ms is not None else ""


def _details(c: Comparison) -> list[str]:
    """The folded sections: other percentiles, what to fix first, the re-budget proposal,
    attainment per request, and the notes."""
    rows = [*c.slo, *c.slices]
    out = _other_percentiles(c)
    if c.fix_first:
        out += _fold("What to fix first", _fix_first(c))
    if c.rebudget is not None:
        out += _fold(f"Re-budget proposal (fills {ms(c.rebudget.target_ms)})", _rebudget(c))
    out += _attainment(c)
    notes = [*c.notes, *[n for r in rows for n in r.notes]]
    if notes:
        out += _fold("Notes", [f"- {md(n, 300)}" for n in dict.fromkeys(notes)])
    return out


def _other_percentiles(c: Comparison) -> list[str]:
    rows = [*c.slo, *c.slices]
    keys = list(rows[0].percentiles) if rows else []
    if not keys:
        return []
    compare = c.base is not None
    sides = ("base", "head") if compare else ("head",)
    head = ["", *[f"{k} {side}" for k in keys for side in sides]]
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
    return _fold("Other percentiles (ms)", _table(head, body, "l" + "r" * (len(head) - 1)))


def _fix_first(c: Comparison) -> list[str]:
    body = [
        [
            str(i),
            md(f.slice),
            signed_ms(f.total_change_ms),
            points(f.attainment_change_pct) if f.attainment_change_pct is not None else "–",
        ]
        for i, f in enumerate(c.fix_first, 1)
    ]
    head = ["rank", "slice 10% faster", f"{percentile(c.percentile)} end to end", "SLO attainment"]
    return [
        "Each slice 10% faster in every request, the rest as measured, "
        "recomputed from the head's requests; the most useful first:",
        "",
        *_table(head, body, "rlrr"),
    ]


def _rebudget(c: Comparison) -> list[str]:
    prop = c.rebudget
    assert prop is not None
    body = [
        [md(name), budget_ms(_current(c, name)), budget_ms(v)]
        for name, v in prop.allocation.items()
    ]
    text = _table(["slice", "budget now", "proposed"], body, "lrr")
    text += [""] + [f"- {md(m, 300)}" for m in (prop.headline, *prop.lines)]
    if prop.fits:
        text += ["", "Apply it with `budgetdiff rebudget --head FILE --write`."]
    return text


def _attainment(c: Comparison) -> list[str]:
    att = [
        (n, side, side.attainment)
        for n, side in (("base", c.base), ("head", c.head))
        if side is not None and side.attainment is not None
    ]
    if not att:
        return []
    body = [
        [
            name,
            f"{count(a.good)} / {count(a.total)}",
            pct(a.pct),
            interval(*a.ci_pct, signed=False)
            + (f" (effective n {count(a.effective_n)})" if a.effective_n is not None else ""),
            rate(side.goodput_rps),
        ]
        for name, side, a in att
    ]
    held = cells.held_to(c, att[-1][1].held_to)
    # the tools' joint definition is per request; an agent's task is held to it the same way
    tools = " (the joint definition of vLLM `--goodput`, AIPerf and GuideLLM)"
    text = [
        f"A {c.unit.value} is good when it succeeded and met, itself, {md(held, 300)}"
        f"{tools if c.unit == Unit.REQUEST else ''}; the tables "
        "above show each metric's percentile instead.",
        "",
    ]
    head = ["run", "good", "attainment", "exact interval", "goodput"]
    return _fold(f"SLO attainment (per {c.unit.value})", text + _table(head, body, "lrrrr"))


def _current(c: Comparison, name: str) -> float | None:
    return next((r.target_ms for r in c.slices if r.name == name), None)


def _fold(summary: str, body: list[str]) -> list[str]:
    return ["", f"<details><summary>{summary}</summary>", "", *body, "", "</details>"]


def _table(head: list[str], body: list[list[str]], align: str) -> list[str]:
    """A GitHub-flavoured table by tabulate, of cells already made safe by `md` (`|` is
    `&#124;` in them). Not tabulate's "github" layout: that pads every cell to its column's
    width, which GitHub does not show and the 65,536-character limit pays for. So no padding
    (no alignment for tabulate), no number parsing (a cell is shown as given), and the line
    under the header says each column's alignment, as GitHub reads it."""
    fmt = TableFormat(
        lineabove=None,
        linebelowheader=lambda _widths, _aligns: (
            "| " + " | ".join("---:" if a == "r" else "---" for a in align) + " |"
        ),
        linebetweenrows=None,
        linebelow=None,
        headerrow=DataRow("|", "|", "|"),
        datarow=DataRow("|", "|", "|"),
        padding=1,
        with_header_hide=None,
    )
    text = tabulate(body, head, tablefmt=fmt, disable_numparse=True, stralign=None)
    return text.split("\n")


def history_section(s: Scenario) -> list[str]:
    """The trend of each row over `--history` (a sparkline of the percentile), the change since
    the budget last changed, and where the level changed; empty without a history."""
    h = s.history
    if h is None:
        return []
    p = percentile(s.comparison.percentile)
    failing = {f.subject for f in s.findings if f.kind == Kind.DRIFT and f.fails}
    if not h.window:
        why = (
            "the budget changed in this run: the drift counts from here"
            if h.budget_changed
            else "no earlier run in the history yet"
        )
        return ["", f"<sub>History: {count(h.runs)} run(s); {why}.</sub>"]
    body = []
    for t in h.trends:
        ref = (
            f"{pct(t.change_pct, signed=True)} vs {amount(t.reference, t.unit)}"
            f" (first {t.reference_runs} run(s))"
            if t.reference is not None
            else "–"
        )
        drift = " ❌ drift" if t.subject in failing else " ⚠️ drift"
        body.append(
            [
                md(t.label),
                t.sparkline,
                f"{pct(t.cumulative_pct, signed=True)} over {len(t.values) - 1}",
                ref + (drift if t.drift else ""),
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
