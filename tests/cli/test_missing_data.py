"""What the data lacks: slices, per-request values, served requests; said, never guessed."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.support.helpers import (
    BUDGET,
    NO_SLICES,
    budget_file,
    compare_json,
    run,
    slices,
    write_table,
)


def test_ttft_without_budget_slices_comes_from_the_data(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cols = slices(1, n=500)
    cols["prefill_ms"] = cols["prefill_ms"] * 5  # p95 TTFT well over 1,200 ms
    head = write_table(tmp_path / "h.csv", cols)
    budget = budget_file(tmp_path, NO_SLICES)
    code, out, _ = run(
        ["check", "--head", str(head), "--budget", str(budget), "--output", "json"], capsys
    )
    report = json.loads(out)
    ttft = next(r for r in report["slo"] if r["metric"] == "ttft")
    assert ttft["status"] == "breach" and code == 1
    budget.write_text(NO_SLICES.replace("total: 6000", "total: 6000, itl: 20"))
    _, out, _ = run(
        ["check", "--head", str(head), "--budget", str(budget), "--output", "json"], capsys
    )
    finding = next(f for f in json.loads(out)["findings"] if f["kind"] == "unmeasured")
    assert finding["subject"] == "itl" and not finding["fails"]


def test_rebudget_of_aggregates_is_a_clear_error(
    samples: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    agg = samples / "generated/aiperf/head/profile_export_aiperf.json"
    budget = budget_file(tmp_path, NO_SLICES + "slices: {first_token: 200, decode: 900}\n")
    code, _, err = run(["rebudget", "--head", str(agg), "--budget", str(budget)], capsys)
    assert code == 2 and "per request" in err and "Traceback" not in err


def test_every_head_request_failing_is_a_failing_verdict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    b, h = slices(1, n=300), slices(2, n=300)
    h["error"] = np.array(["timeout"] * 300)
    budget = budget_file(tmp_path, BUDGET)
    code, report = compare_json(
        capsys, write_table(tmp_path / "b.csv", b), write_table(tmp_path / "h.csv", h), budget
    )
    assert code == 1 and report["verdict"] == "fail"
    assert any(f["kind"] == "breach" and f["subject"] == "requests" for f in report["findings"])
    # a base that never served anything is no base at all
    code, report = compare_json(
        capsys, write_table(tmp_path / "h.csv", h), write_table(tmp_path / "b.csv", b), budget
    )
    assert report["findings"][0]["kind"] == "no_base"
