"""The budget as a picture: a Mermaid gantt chart of each slice's part of the total's percentile,
laid end to end for the budget, base and head, against the SLO (GitHub draws it in a comment);
its title says that the bars are those parts, not the slices' own percentiles.

Every name from the data goes through `label`: Mermaid has no escape for a gantt task's text,
so anything outside a small safe set of characters is replaced, and a name that would read as
a Mermaid keyword (`click`, `section`, ...) is quoted by a prefix.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from budgetdiff.measure.results import Change, Comparison, Row
from budgetdiff.numbers import num, percentile

# Letters and digits of any script, and a few harmless marks; never `:` `;` `#` `%` or a quote,
# which end a task's text, start a comment or an entity, or a fence's backtick.
_UNSAFE = re.compile(r"[^\w .()+/-]")
# Words that start a directive when a line begins with them (Mermaid's gantt grammar).
_KEYWORDS = re.compile(
    r"(?i)^(click|section|title|dateformat|axisformat|tickinterval|excludes|includes|"
    r"todaymarker|inclusiveenddates|topaxis|weekday|weekend|accTitle|accDescr|call|href|vert|"
    r"gantt|%%)\b"
)
MAX_LABEL = 40


def label(text: str) -> str:
    """A name from the data, safe as a Mermaid gantt task's text."""
    s = _UNSAFE.sub("_", text).strip() or "_"
    if len(s) > MAX_LABEL:
        s = s[: MAX_LABEL - 1] + "_"
    return f"slice {s}" if _KEYWORDS.match(s) else s


def budget_chart(c: Comparison) -> list[str] | None:
    """The chart's lines (a ```mermaid fence), or None when the data has no parts of the total
    to draw (aggregate-only files, no slices), no total SLO to draw them against, or parts in
    doubt (`Row.doubt`)."""
    total = next((r for r in c.slo if r.name == "total"), None)
    slices = [r for r in c.slices if r.part_ms is not None]
    if total is None or total.target_ms is None or not slices:
        return None
    if total.doubt is not None or any(r.doubt is not None for r in slices):
        return None  # parts in doubt drawn against the SLO would be a pass mark of their own
    p = percentile(c.percentile)
    slo = total.target_ms
    # the numbers after `:` are the chart's coordinates (whole ms), not text a reader sees
    lines = [
        "```mermaid",
        "gantt",
        # what the bars are: each slice's part of the total's percentile (they add up to it),
        # not the slice's own percentile that the table beside it gives
        f"    title Parts of the {p} end to end, one per slice (not the slices' own {p}), "
        f"against the {num(slo)} ms SLO",
        "    dateFormat x",
        "    axisFormat %s.%L s",
        "    section SLO",
        f"    SLO {num(slo)} ms :milestone, {slo:.0f}, {slo:.0f}",  # coordinates: Mermaid's
    ]
    budgeted = [r for r in slices if r.target_ms is not None]
    if budgeted:
        lines.append("    section budget")
        lines += _laid(budgeted, lambda r: r.target_ms, "active")
    if c.base is not None and all(r.base_part_ms is not None for r in slices):
        lines.append("    section base")
        lines += _laid(slices, lambda r: r.base_part_ms, "done")
    lines.append("    section head")
    lines += _laid(slices, lambda r: r.part_ms, "head")
    lines.append("```")
    return lines


def _laid(rows: list[Row], value: Callable[[Row], float | None], tag: str) -> list[str]:
    out = []
    start = 0.0
    for r in rows:
        width = max(float(value(r) or 0.0), 0.0)
        end = start + width
        if tag == "head":
            flag = "crit, " if r.over_budget or r.change == Change.REGRESSION else ""
        else:
            flag = f"{tag}, "
        span = f"{start:.0f}, {end:.0f}"  # coordinates: Mermaid's, not text
        out.append(f"    {label(r.name)} {num(width)} ms :{flag}{span}")
        start = end
    return out
