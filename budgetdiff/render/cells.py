"""The words and numbers of each cell, shared by the terminal table and the markdown."""

from __future__ import annotations

from collections.abc import Mapping

from budgetdiff.measure.results import Comparison, Row, Side, Unit
from budgetdiff.measure.whatif import FixFirst
from budgetdiff.numbers import count, interval, ms, num, pct, percentile, points, signed_ms, times

CHANGE_WORDS = {
    "regression": "regression",
    "improvement": "improvement",
    "none": "~",
    "inconclusive": "inconclusive",
}
STATUS_WORDS = {
    "ok": "ok",
    "low_headroom": "low headroom",
    "breach": "BREACH",
    "doubtful": "doubtful",
}


def read_as(side: Side) -> str:
    """`aiperf (schema 1.4, aiperf 0.13.0)`: the reader and the schema of the file it read."""
    version = (
        f", {side.meta.get('tool', side.format)} {side.tool_version}" if side.tool_version else ""
    )
    return f"{side.format} (schema {side.schema}{version})"


def inputs(c: Comparison) -> str:
    """`read: base aiperf (schema 1.4) · head aiperf (schema 0.1 ...)`, one line."""
    sides = [(n, s) for n, s in (("base", c.base), ("head", c.head)) if s is not None]
    return "read: " + " · ".join(f"{n} {read_as(s)}" for n, s in sides)


def change(r: Row, words: Mapping[str, str] = CHANGE_WORDS, unit: Unit = Unit.REQUEST) -> str:
    """`+14.9% [+13.1, +16.7] regression`, `+0.4% [-2.1, +2.9] ~ (80% chance to catch ≥ 6%)`."""
    return " ".join(change_parts(r, words, unit))


def change_parts(
    r: Row, words: Mapping[str, str] = CHANGE_WORDS, unit: Unit = Unit.REQUEST
) -> tuple[str, ...]:
    """The change, then its caveat if it has one: `("+0.4% [-2.1, +2.9] ~", "(80% chance to
    catch ≥ 6%)")`; a narrow terminal puts the caveat on a line of its own. `unit`: what the
    row's values are of (`needs 72 tasks`)."""
    if r.change is None:
        return ()
    if r.delta_pct is None or r.base_ms is None:
        text = num(r.delta_ms, signed=True)
    else:
        text = pct(r.delta_pct, signed=True)
        if r.ci_ms is not None and r.base_ms:
            lo, hi = (100 * v / r.base_ms for v in r.ci_ms)
            text += " " + interval(lo, hi)
    said = f"{text} {words[r.change]}"
    if r.change == "inconclusive":
        if r.needed:
            return said, f"(needs {r.needed} {unit.plural})"
        if r.coarse_buckets:
            return said, "(buckets too coarse)"
        return said, f"(no per-{unit.value} data)"
    if r.change == "none" and r.mde_pct is not None:
        return said, f"(80% chance to catch ≥ {pct(r.mde_pct, 0)})"
    return (said,)


def definitions(c: Comparison) -> str | None:
    """The one line under the SLO table saying what its ITL and TPOT rows are."""
    shown = {r.name for r in c.slo}
    parts = []
    if "itl" in shown:
        parts.append("ITL pools every gap between tokens of every request (token-weighted)")
    if "tpot" in shown:
        how = {
            "decode": "decode / (output tokens - 1)",
            "total - TTFT": "(end to end - TTFT) / (output tokens - 1)",
        }.get(c.tpot_from or "", "as the tool computes it")
        parts.append(f"TPOT is each request's mean gap, {how} (request-weighted)")
    return "; ".join(parts) + "." if parts else None


def held_to(c: Comparison, names: tuple[str, ...]) -> str:
    """`TTFT ≤ 1,200 ms, ITL ≤ 60 ms (the mean of its own gaps)`: what attainment checks."""
    how = {"itl": " (the mean of its own gaps)", "tpot": " (its own mean gap)"}
    rows = {r.name: r for r in c.slo}
    return ", ".join(
        f"{rows[n].label} ≤ {ms(rows[n].target_ms)}{how.get(n, '')}" for n in names if n in rows
    )


def requests(n: int | None, unit: Unit = Unit.REQUEST) -> str:
    """`1,000 requests` (`400 tasks` of an agent), or that the file does not say: never
    `0 requests` for unknown."""
    return f"{unit.plural}: count not in the file" if n is None else f"{count(n)} {unit.plural}"


def headroom(r: Row) -> str:
    if r.doubt is not None:
        return doubt(r)
    if r.status is None:
        return ""
    return f"{STATUS_WORDS[r.status]} {room(r.headroom_pct)}"


def doubt(r: Row) -> str:
    """`doubtful (head: the unit of ttft_ms)`: in place of a pass mark, a number in doubt."""
    return f"{STATUS_WORDS['doubtful']} ({r.doubt})" if r.doubt is not None else ""


def room(headroom_pct: float | None) -> str:
    """The headroom left, or how far over the target: `6.7%`, `47.7% over`, `2.5x over`
    (never a negative headroom)."""
    if headroom_pct is None or headroom_pct >= 0:
        return pct(headroom_pct)
    over = -headroom_pct
    return f"{times(1 + over / 100)} over" if over >= 100 else f"{pct(over)} over"


def budget_use(r: Row) -> str:
    if r.doubt is not None:
        return doubt(r)
    if r.budget_use_pct is None:
        return ""
    return pct(r.budget_use_pct, 0) + (" OVER" if r.over_budget else "")


def share(r: Row) -> str:
    out = pct(r.tail_share_pct, 0) if r.tail_share_pct is not None else ""
    if r.tail_change_ms is not None:
        out += f" ({num(r.tail_change_ms, signed=True)} ms)"
    return out.strip()


def part(r: Row) -> str:
    """The slice's part of the total's percentile (what its budget holds)."""
    return num(r.part_ms) if r.part_ms is not None else ""


def budget_meaning(c: Comparison) -> str:
    """The one sentence saying what a slice budget holds."""
    p = percentile(c.percentile)
    return (
        f"A slice's budget holds its part of the {p} end to end: its mean over the requests "
        f"at that percentile, scaled so that the parts add up to it (the slice's own {p} is "
        "beside it, and does not add up)."
    )


def fix_first(f: FixFirst, p: float) -> str:
    """`decode: p95 end to end -412 ms, attainment +1.9 points`."""
    att = (
        f", attainment {points(f.attainment_change_pct)}"
        if f.attainment_change_pct is not None
        else ""
    )
    return f"{percentile(p)} end to end {signed_ms(f.total_change_ms)}{att}"
