"""docs/native-table.md is generated from the reader's own list of names: it cannot drift."""

from __future__ import annotations

from collections import Counter

import pytest

from budgetdiff.formats.native.names import RULES, normalize, rule_for
from tools.native_doc import PAGE, render


def test_the_page_is_the_list() -> None:
    assert PAGE.read_text(encoding="utf-8") == render(), (
        "docs/native-table.md is out of date: python tools/native_doc.py"
    )


def test_every_name_is_in_one_rule() -> None:
    counts = Counter(name for rule in RULES for name in rule.names)
    assert [n for n, c in counts.items() if c > 1] == []


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.target)
def test_every_documented_name_reads_as_documented(rule: object) -> None:
    """Each name, as written and with a unit, is read as the page says."""
    for name in rule.names:  # type: ignore[attr-defined]
        for header in (name, f"{name}_ms", f"{name.upper()} (s)", name.replace("_", " ")):
            assert rule_for(header) is rule, header


@pytest.mark.parametrize(
    ("header", "base", "unit", "how"),
    [
        ("TTFT (ms)", "ttft", "ms", "header bracket"),
        ("Total Latency [s]", "total_latency", "s", "header bracket"),
        ("queue_time_ms", "queue_time", "ms", "suffix"),
        ("e2e_latency_seconds", "e2e_latency", "s", "suffix"),
        ("first_token_ns", "first_token_ns", None, None),  # a time stamp, not a duration
        ("status", "status", None, None),
        ("Queue [ns]", "queue", "ns", "header bracket"),
    ],
)
def test_headers_fold_to_a_name_and_a_unit(
    header: str, base: str, unit: str | None, how: str | None
) -> None:
    name = normalize(header)
    assert (name.base, name.unit, name.unit_from) == (base, unit, how)
