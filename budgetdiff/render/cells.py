"""The words and numbers of each cell, shared by the terminal table and the markdown."""

from __future__ import annotations

from budgetdiff.compare import Row
from budgetdiff.render.numbers import num, pct

CHANGE_WORDS = {
    "regression": "regression",
    "improvement": "improvement",
    "none": "~",
    "inconclusive": "inconclusive",
}
STATUS_WORDS = {"ok": "ok", "low_headroom": "low headroom", "breach": "BREACH"}


def change(r: Row) -> str:
    """`+14.9% [+13.1, +16.7] regression`, `+0.4% [-2.1, +2.9] ~ (80% chance to catch ≥ 6%)`."""
    if r.change is None:
        return ""
    if r.delta_pct is None or r.base_ms is None:
        text = num(r.delta_ms, signed=True)
    else:
        text = pct(r.delta_pct, signed=True)
        if r.ci_ms is not None and r.base_ms:
            lo, hi = (100 * v / r.base_ms for v in r.ci_ms)
            text += f" [{lo:+.1f}, {hi:+.1f}]"
    word = CHANGE_WORDS[r.change]
    if r.change == "inconclusive":
        if r.needed:
            word += f" (needs {r.needed} requests)"
        elif any("too coarse" in n for n in r.notes):
            word += " (buckets too coarse)"
        else:
            word += " (no per-request data)"
    elif r.change == "none" and r.mde_pct is not None:
        word += f" (80% chance to catch ≥ {r.mde_pct:.0f}%)"
    return f"{text} {word}"


def headroom(r: Row) -> str:
    if r.status is None:
        return ""
    return f"{STATUS_WORDS[r.status]} {pct(r.headroom_pct)}"


def budget_use(r: Row) -> str:
    if r.budget_use_pct is None:
        return ""
    return pct(r.budget_use_pct, 0) + (" OVER" if r.over_budget else "")


def share(r: Row) -> str:
    out = pct(r.tail_share_pct, 0) if r.tail_share_pct is not None else ""
    if r.tail_change_ms is not None:
        out += f" ({num(r.tail_change_ms, signed=True)} ms)"
    return out.strip()
