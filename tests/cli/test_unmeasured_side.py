"""Issue 35 item 1 for files: a side with too few requests to measure the budget's percentile
fails the gate (an `unmeasured` side), whatever `fail_on` names; a side with enough does not.
The threshold is computed here independently: the fewest n with n (1 - p) >= 1, so at least
one request lies above the p-th percentile."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from budgetdiff.cli import main


def fewest(percentile: float) -> int:
    return math.ceil(round(100 / (100 - percentile), 9))


def table(path: Path, n: int, seed: int) -> str:
    totals = np.random.default_rng(seed).lognormal(np.log(400), 0.3, n)
    path.write_text("total_ms\n" + "".join(f"{t:.3f}\n" for t in totals), encoding="utf-8")
    return str(path)


def compare(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], base: int, head: int, percentile: float
) -> tuple[int, dict]:
    budget = tmp_path / "budget.yml"
    budget.write_text(f"percentile: {percentile}\nslo: {{total: 6000}}\n", encoding="utf-8")
    argv = ["compare", "--base", table(tmp_path / "base.csv", base, 1),
            "--head", table(tmp_path / "head.csv", head, 2), "--budget", str(budget),
            "--output", "json", "--fail-on", "regression"]  # fmt: skip
    code = main(argv, environ={})
    return code, json.loads(capsys.readouterr().out)


def side_findings(report: dict) -> list[dict]:
    return [f for f in report["findings"] if f["subject"] in ("base", "head")]


@pytest.mark.parametrize(("percentile", "side"), [(95, "head"), (99, "base"), (50, "head")])
def test_too_few_to_measure_the_percentile_fails(
    percentile: float, side: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    few = fewest(percentile) - 1
    sizes = {"base": 500, "head": 500, side: few}
    code, report = compare(tmp_path, capsys, sizes["base"], sizes["head"], percentile)
    assert code == 1 and report["verdict"] == "fail"
    [finding] = side_findings(report)
    assert finding == {**finding, "kind": "unmeasured", "subject": side, "fails": True}
    assert f"{side} has {few} request" in finding["message"]
    assert f"needs at least {fewest(percentile)}" in finding["message"]


def test_enough_to_measure_the_percentile_is_no_side_finding(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, report = compare(tmp_path, capsys, 500, fewest(95), 95)
    assert code == 0, report["findings"]
    assert side_findings(report) == []
