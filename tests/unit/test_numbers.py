"""The one number formatter: the digits each shape shows, so a change of digits is deliberate
(the golden files show them in context)."""

from __future__ import annotations

import math

import pytest

from budgetdiff import numbers


@pytest.mark.parametrize(
    "x,text", [(1234.5, "1,234"), (123.4, "123"), (38.0, "38.0"), (4.256, "4.26"), (None, "–")]
)
def test_milliseconds_keep_three_significant_digits_below_100(x: float | None, text: str) -> None:
    assert numbers.num(x) == text


def test_signed_and_percent_shapes() -> None:
    assert numbers.signed_ms(1082.4) == "+1,082 ms" and numbers.signed_ms(-3.514) == "-3.51 ms"
    assert numbers.pct(6.66) == "6.7%" and numbers.pct(24.2, 0, signed=True) == "+24%"
    assert numbers.pct(math.nan) == "–"
    assert numbers.points(1.74) == "+1.7 points"
    assert numbers.interval(13.14, 16.66) == "[+13.1, +16.7]"
    assert numbers.interval(1.2, 3.44, unit="%") == "[+1.2%, +3.4%]"
    assert numbers.interval(98.64, 99.5, signed=False) == "[98.6, 99.5]"


def test_sentence_shapes() -> None:
    assert numbers.percentile(95.0) == "p95" and numbers.percentile(99.9) == "p99.9"
    assert numbers.count(2000) == "2,000"
    assert numbers.p_value(0.00003) == "p < 0.0001" and numbers.p_value(0.0123) == "p = 0.012"
    assert numbers.change_ms(1082.4) == "+1,082 ms" and numbers.change_ms(-4.23) == "-4.2 ms"
    assert numbers.change_ms(9.96) == "+10 ms"  # whole from 10 ms as rounded
    assert numbers.share_ms(560.0, 0) == "+560 ms"
    assert numbers.budget_ms(5400.0) == "5,400" and numbers.budget_ms(48) == "48"
    assert numbers.budget_ms(7.5) == "7.50" and numbers.budget_ms(None) == "–"
    assert numbers.setting_pct(0.1) == "10%" and numbers.setting_pct(0.125) == "12.5%"
    assert numbers.fine_ms(0.854) == "0.85" and numbers.rate(12.345) == "12.35/s"
    assert numbers.schema_bound(1000.0) == "1,000" and numbers.schema_bound(0.5) == "0.5"
