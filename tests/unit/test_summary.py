"""What every rendering puts first is decided once, by the judge (`judge.summarize`), and the
markdown, JSON and Python renderings say the same; the words of the report are enums whose
values are the old strings."""

from __future__ import annotations

import json
from dataclasses import replace
from importlib.resources import files

import pandas as pd
import pytest

import budgetdiff
from budgetdiff.judge.findings import at_risk, summarize
from budgetdiff.measure.results import Change, Comparison, Finding, Kind, Row, Side, Status, Verdict
from budgetdiff.render.markdown import render_markdown
from budgetdiff.render.summary import sentence, verbatim

HEAD = Side(source="head.csv", requests=100, failed=0, attainment=None, meta={})


def _slo(name: str, status: Status | None, headroom: float | None, **kw: object) -> Row:
    return Row(name, "slo", 1000.0, 800.0, 900.0, status=status, headroom_pct=headroom, **kw)


def _slice(name: str, **kw: object) -> Row:
    return Row(name, "slice", 500.0, 400.0, 450.0, **kw)


def _comparison(slo: tuple[Row, ...] = (), slices: tuple[Row, ...] = ()) -> Comparison:
    return Comparison(
        name=None,
        percentile=95.0,
        base=HEAD,
        head=HEAD,
        slo=slo,
        slices=slices,
        headline=None,
        rebudget=None,
        feasibility=(),
        not_comparable=(),
        paired=False,
        notes=(),
    )


def test_a_breach_is_at_risk_before_any_headroom() -> None:
    ttft = _slo("ttft", Status.LOW_HEADROOM, 2.0, change=Change.REGRESSION)
    total = _slo("total", Status.BREACH, -5.0)
    itl = _slo("itl", Status.OK, 40.0)
    assert at_risk(_comparison((ttft, total, itl))) is total


def test_among_equals_a_regressed_row_comes_first_then_the_least_headroom() -> None:
    ttft = _slo("ttft", Status.OK, 10.0)
    total = _slo("total", Status.OK, 30.0, change=Change.REGRESSION)
    tpot = _slo("tpot", Status.OK, 5.0)
    assert at_risk(_comparison((ttft, total, tpot))) is total
    assert at_risk(_comparison((ttft, tpot))) is tpot


def test_without_targets_the_largest_regression_is_at_risk() -> None:
    small = _slo("ttft", None, None, change=Change.REGRESSION, delta_pct=4.0)
    large = _slo("total", None, None, change=Change.REGRESSION, delta_pct=12.0)
    flat = _slo("itl", None, None, change=Change.NONE, delta_pct=30.0)
    assert at_risk(_comparison((small, large, flat))) is large
    assert at_risk(_comparison((flat,))) is None


def test_the_cause_is_the_regressed_slices_largest_part_first() -> None:
    queue = _slice("queue", change=Change.REGRESSION, tail_change_ms=20.0)
    decode = _slice("decode", change=Change.REGRESSION, tail_change_ms=300.0)
    prefill = _slice("prefill", over_budget=True)
    also_over = _slice("app", change=Change.REGRESSION, over_budget=True, tail_change_ms=1.0)
    c = _comparison(slices=(queue, decode, prefill, also_over))
    findings = [Finding(Kind.REGRESSION, "decode", True, "m"), Finding(Kind.DRIFT, "x", False, "m")]
    s = summarize(c, findings, Verdict.FAIL)
    assert [r.name for r in s.regressed] == ["decode", "queue", "app"]
    assert [r.name for r in s.over_budget] == ["prefill"]  # a regressed slice is named once
    assert s.owners == s.regressed
    assert s.also == ()  # a slice regressed: no other kind is named
    assert sentence(s, 95.0, verbatim) == (
        # no SLO row: no SLO part; each regressed slice with its part of the total's change
        "decode, queue and app regressed (+300 ms, +20.0 ms and +1.00 ms of the end to end's "
        "change), prefill over budget"
    )


def test_without_a_regressed_slice_other_kinds_are_named_once_up_to_three() -> None:
    kinds = [Kind.NO_BASE, Kind.MISSING_SLICE, Kind.UNMEASURED, Kind.UNMEASURED, Kind.FAILURES]
    kinds += [Kind.INFEASIBLE, Kind.DRIFT]
    findings = [Finding(k, "s", False, "m") for k in kinds]
    s = summarize(_comparison(), findings, Verdict.WARN)
    assert s.no_base and s.regressed == () and s.at_risk is None
    assert s.also == (Kind.UNMEASURED, Kind.FAILURES, Kind.INFEASIBLE)
    assert sentence(s, 95.0, verbatim) == (
        # failures beside the others, never as one of the causes (issue 38)
        "no base results, a target not measured, SLO not reachable (also: some requests failed)"
    )


def test_a_breach_with_no_row_at_risk_is_named() -> None:
    """Every request failed: no SLO row has a value to be at risk, so the breach finding is
    said by its kind, never an empty headline."""
    findings = [Finding(k, "s", True, "m") for k in (Kind.BREACH, Kind.UNMEASURED)]
    s = summarize(_comparison(), findings, Verdict.FAIL)
    assert s.at_risk is None and s.also == (Kind.BREACH, Kind.UNMEASURED)
    assert sentence(s, 99.0, verbatim) == "SLO breached, a target not measured"
    ttft = _slo("ttft", Status.BREACH, -10.0)  # a row over its target says the breach itself
    s = summarize(_comparison((ttft,)), findings, Verdict.FAIL)
    assert s.at_risk is ttft and s.also == (Kind.UNMEASURED,)


def test_a_pass_says_every_slo_holds() -> None:
    total = _slo("total", Status.OK, 10.0)
    s = summarize(_comparison((total,)), [], Verdict.PASS)
    assert sentence(s, 95.0, verbatim) == (
        "End to end p95 900 ms, 10.0% headroom left: no regression, every SLO holds"
    )
    check = summarize(replace(_comparison((total,)), base=None), [], Verdict.PASS)
    assert sentence(check, 95.0, verbatim).endswith(": every SLO holds")


@pytest.fixture(scope="module")
def demo() -> budgetdiff.Report:
    folder = files("budgetdiff") / "demo"
    base = pd.read_csv(str(folder / "base.csv"))
    head = pd.read_csv(str(folder / "head.csv"))
    return budgetdiff.compare(base, head, str(folder / "budget.yml"))


def test_the_comment_and_the_json_report_share_the_headline(demo: budgetdiff.Report) -> None:
    summary = demo.to_dict()["summary"]
    first_line = render_markdown(demo).splitlines()[0]
    assert first_line == f"### ❌ {summary['text']}"  # the demo's words need no escaping
    assert summary["at_risk"] == "total" and summary["regressed"] == ["decode"]
    # the judge's choice, read independently of the renderings: the least headroom, regressed
    rows = demo.main.comparison.slo
    least = min((r for r in rows if r.headroom_pct is not None), key=lambda r: r.headroom_pct or 0)
    assert least.name == summary["at_risk"]


def test_the_words_of_the_report_are_their_values_in_json(demo: budgetdiff.Report) -> None:
    doc = json.loads(demo.to_json())
    assert doc["verdict"] == "fail" and type(doc["verdict"]) is str
    assert {f["kind"] for f in doc["findings"]} <= {k.value for k in Kind}
    assert str(Kind.REGRESSION) == f"{Kind.REGRESSION}" == "regression"
    assert Kind("over_budget") is Kind.OVER_BUDGET and Kind.OVER_BUDGET == "over_budget"
    assert {r["status"] for r in doc["slo"]} - {None} <= {s.value for s in Status}
