"""What `whatif` and `rebudget` say: the stream and the width its lines wrap at (`Say`), and
the one table of values against the SLO (`against_slo`) that the request and the agent whatif
share."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TextIO, TypeAlias

from budgetdiff import numbers
from budgetdiff.numbers import ms, pct, setting_pct
from budgetdiff.render.fit import column, prose, table

# (what, value, its SLO target): one line each against the SLO
Check: TypeAlias = tuple[str, float | None, float | None]


@dataclass(frozen=True)
class Say:
    """The output stream and the width its lines wrap at."""

    out: TextIO
    width: int | None

    def __call__(self, text: str, indent: str = "") -> None:
        self.out.write("".join(f"{line}\n" for line in prose(text, self.width, indent)))

    def table(self, lines: list[str]) -> None:
        self.out.write("".join(f"  {line}\n" for line in lines))


def against_slo(
    checks: list[Check],
    headroom: float,
    say: Say,
    value: str,
    doubts: Mapping[str, str] | None = None,
) -> bool:
    """A table, one row per SLO metric: `value` vs target with the headroom (if the budget
    sets one); all fit? A metric in `doubts` (its label -> why) shows the doubt, not a fit."""
    doubts = doubts or {}
    rows = [(n, v, t) for n, v, t in checks if t is not None and v is not None]
    if not rows:  # the budget sets none of these targets
        return True
    limits = [t * (1 - headroom) for _, _, t in rows]
    fit = [v <= lim for (_, v, _), lim in zip(rows, limits, strict=True)]
    columns = [
        column(value, [ms(v) for _, v, _ in rows], right=True),
        column("target", [ms(t) for _, _, t in rows], right=True),
    ]
    if headroom:
        limited = [ms(x) for x in limits]
        columns.append(column(f"with {setting_pct(headroom)} headroom", limited, right=True))
    room = [
        pct(100 * (t - v) / t, signed=True) if v <= t and n not in doubts else ""
        for n, v, t in rows
    ]
    columns.append(column("headroom", room, right=True))
    words = [
        f"doubtful ({doubts[n]})" if n in doubts else _word(v, t, ok)
        for (n, v, t), ok in zip(rows, fit, strict=True)
    ]
    columns.append(column("verdict", words, group=1))
    inner = None if say.width is None else say.width - 2
    say.table(table(column("SLO", [n for n, _, _ in rows]), columns, inner))
    return all(fit)


def _word(value: float, target: float, ok: bool) -> str:
    """Fits; or how far over the target ("9.3x over" past twice it, else "47.7% over")."""
    if value > target:
        if value >= 2 * target:
            return f"{numbers.times(value / target)} over"
        return f"{pct(100 * (value - target) / target)} over"
    return "fits" if ok else "fits the SLO, not the headroom"
