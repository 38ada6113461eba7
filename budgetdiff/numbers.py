"""The one number formatter, so every rendering shows the same digits.

Every number a person reads (a table cell, a finding, the headline, a re-budget message) is
worded here; the modules that compute and decide pass numbers, never format strings. A shape
that exists only to keep today's output byte for byte says so in its docstring.
"""

from __future__ import annotations

import math


def num(x: float | None, signed: bool = False) -> str:
    """Milliseconds without the unit: 3 significant digits below 100, whole numbers above."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    sign = "+" if signed and x > 0 else ""
    a = abs(x)
    if a >= 100:
        return f"{sign}{x:,.0f}"
    if a >= 10:
        return f"{sign}{x:.1f}"
    return f"{sign}{x:.2f}"


def ms(x: float | None) -> str:
    return "–" if x is None else f"{num(x)} ms"


def signed_ms(x: float | None) -> str:
    return "–" if x is None else f"{num(x, signed=True)} ms"


def pct(x: float | None, digits: int = 1, signed: bool = False) -> str:
    if x is None or math.isnan(x):
        return "–"
    return f"{x:+.{digits}f}%" if signed else f"{x:.{digits}f}%"


def percentile(p: float) -> str:
    """`p95`, `p99.9`: the name of a percentile."""
    return f"p{p:g}"


def count(n: int) -> str:
    """A count of things, grouped by thousands: `1,000`."""
    return f"{n:,}"


def times(x: float) -> str:
    """A ratio, one decimal: `9.3x`."""
    return f"{x:.1f}x"


def points(x: float) -> str:
    """A change of a percentage, in percentage points: `+1.9 points`."""
    return f"{x:+.1f} points"


def interval(lo: float, hi: float, *, signed: bool = True, unit: str = "") -> str:
    """An interval of percentages, one decimal: `[+13.1, +16.7]`, `[+1.2%, +3.4%]` with
    `unit="%"`, `[98.1, 99.5]` unsigned."""
    sign = "+" if signed else ""
    return f"[{lo:{sign}.1f}{unit}, {hi:{sign}.1f}{unit}]"


def p_value(p: float | None) -> str:
    """`p < 0.0001` or `p = 0.0032` (two significant digits)."""
    return "p < 0.0001" if (p or 0) < 1e-4 else f"p = {p:.2g}"


def rate(x: float | None) -> str:
    """Per second, two decimals: `12.34/s`."""
    return "–" if x is None else f"{x:.2f}/s"


def fine_ms(x: float) -> str:
    """Milliseconds to two decimals, without the unit, for per-token times: `0.85`, `12.40`."""
    return f"{x:.2f}"


def budget_ms(x: float | None) -> str:
    """Milliseconds as a budget holds them, without the unit: whole numbers grouped like `num`
    (`48`, `4,200`, not `48.0`), a fraction as it is (`7.5`)."""
    if x is None or not float(x).is_integer():
        return num(x)
    return f"{x:,.0f}"


def change_ms(x: float) -> str:
    """A signed change for a sentence: `+420 ms`, `-4.2 ms`, `+1,234 ms` (whole from 10 ms;
    the attribution headline rounds its parts to the same digits, `share_ms`)."""
    return share_ms(x, change_decimals(x))


def change_decimals(x: float) -> int:
    """The decimals `change_ms` shows for `x`: 0 from 10 ms (as rounded), else 1."""
    return 0 if abs(x) >= 9.95 else 1


def share_ms(x: float, decimals: int) -> str:
    """A signed part of a change with a fixed number of decimals: `+560 ms`, `+1.5 ms`."""
    return f"{x:+,.{decimals}f} ms"


def setting_pct(fraction: float) -> str:
    """A budget setting's fraction as a percentage, as short as it is: `10%`, `12.5%`."""
    return f"{fraction * 100:g}%"


def schema_bound(x: float) -> str:
    """A bound of the budget schema, in an error message: `1,000`, `0.5`."""
    return f"{x:,.0f}" if x.is_integer() else f"{x:g}"


def given(x: float) -> str:
    """A number as a person or a file gave it, in its shortest form: `0.8`, `1200`, `2.5e+06`
    (a flag's value echoed back, a histogram's bucket bound, a value refused as absurd)."""
    return f"{x:g}"


def gib(n_bytes: float) -> str:
    """A size in GiB, one decimal: `3.2 GiB`."""
    return f"{n_bytes / (1 << 30):.1f} GiB"


def signed_given(x: float) -> str:
    """`given` with its sign: `+50`, `-50`."""
    return f"{x:+g}"


def steps(x: float | None) -> str:
    """A count of agent steps, maybe a percentile between two: `5`, `7.4`."""
    if x is None or math.isnan(x):
        return "–"
    return f"{x:,.1f}".removesuffix(".0")


def amount(x: float | None, unit: str) -> str:
    """A value in its unit: `2,500 ms`, or (an agent's steps per task) `7 steps`."""
    return f"{steps(x)} steps" if unit == "steps" and x is not None else ms(x)
