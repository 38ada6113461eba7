"""The one number formatter, so every rendering shows the same digits."""

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
