"""Cases a review of the core found wrong, kept right."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from tests.helpers import BUDGET, compare_json, run, slices, write_table

NO_SLICES = "version: 1\npercentile: 95\nslo: {ttft: 1200, total: 6000}\n"


def budget_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "budget.yml"
    path.write_text(text)
    return path


def test_a_single_run_pairs_with_the_same_load_in_a_file_of_several(
    samples: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    one = samples / "generated/vllm/base/vllm_bench_serve.json"  # concurrency 8, unnamed
    runs = []
    for concurrency in (8, 16):
        doc = json.loads((samples / "generated/vllm/head/vllm_bench_serve.json").read_text())
        doc["max_concurrency"] = concurrency
        runs.append(json.dumps(doc))
    several = tmp_path / "head.json"
    several.write_text("\n".join(runs))
    _, report = compare_json(capsys, one, several, budget_file(tmp_path, NO_SLICES))
    by_name = {s["name"]: s for s in report["scenarios"]}
    assert "decode" in by_name["concurrency=8"]["regressions"]  # paired with the lone base run
    assert by_name["concurrency=16"]["findings"][0]["kind"] == "no_base"
    # and the other way round: a base scenario that head lacks is said, not dropped
    _, report = compare_json(capsys, several, one, budget_file(tmp_path, NO_SLICES))
    assert any(
        f["kind"] == "scenario_missing" and f["subject"] == "concurrency=16"
        for f in report["findings"]
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


def test_a_small_workload_difference_is_not_a_failure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    b, h = slices(1, n=6), slices(2, n=6)
    b["output_tokens"] = np.array([100, 120, 90, 110, 100, 95])
    h["output_tokens"] = b["output_tokens"] * 1.2
    code, report = compare_json(
        capsys,
        write_table(tmp_path / "b.csv", b),
        write_table(tmp_path / "h.csv", h),
        budget_file(tmp_path, BUDGET),
    )
    assert "not_comparable" not in [f["kind"] for f in report["findings"]] and code == 0


def test_rebudget_of_aggregates_is_a_clear_error(
    samples: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    agg = samples / "generated/aiperf/head/profile_export_aiperf.json"
    budget = budget_file(tmp_path, NO_SLICES + "slices: {first_token: 200, decode: 900}\n")
    code, _, err = run(["rebudget", "--head", str(agg), "--budget", str(budget)], capsys)
    assert code == 2 and "per request" in err and "Traceback" not in err


def test_blank_request_ids_do_not_pair(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    b, h = slices(1, n=300), slices(2, n=300)
    b["request_id"] = h["request_id"] = np.array([""] * 300)
    _, report = compare_json(
        capsys,
        write_table(tmp_path / "b.csv", b),
        write_table(tmp_path / "h.csv", h),
        budget_file(tmp_path, BUDGET),
    )
    assert report["paired"] is False


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


def test_tail_changes_add_up_when_slices_differ_and_overlap(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    b, h = slices(1, n=2000), slices(1, n=2000)  # the same requests (ids) on both sides
    h["decode_ms"] = h["decode_ms"] * 1.2
    h["app_ms"] = np.full(2000, 50.0)  # a slice only head measures
    b["total_ms"] = (b["queue_ms"] + b["prefill_ms"] + b["decode_ms"]).round(3)
    h["total_ms"] = (h["queue_ms"] + h["prefill_ms"] + h["decode_ms"] + 50).round(3) - 30  # overlap
    _, report = compare_json(
        capsys,
        write_table(tmp_path / "b.csv", b),
        write_table(tmp_path / "h.csv", h),
        budget_file(tmp_path, NO_SLICES),
    )
    total = next(r for r in report["slo"] if r["metric"] == "total")
    parts = sum(r["tail_change_ms"] for r in report["slices"])
    assert report["paired"] and parts == pytest.approx(total["delta_ms"], abs=0.01)
    assert any("different slices" in n for n in report["notes"])


def test_the_last_resort_cut_keeps_whole_lines() -> None:
    from budgetdiff.budget import load_budget
    from budgetdiff.compare import compare
    from budgetdiff.formats import ReadOptions, detect
    from budgetdiff.judge import judge
    from budgetdiff.prepare import prepare
    from budgetdiff.render.markdown import render_markdown
    from budgetdiff.report import Report, Scenario
    from tests.conftest import DEMO

    budget = load_budget(DEMO / "budget.yml")
    options = ReadOptions(slices=tuple(budget.slices))
    base, head = (
        prepare(detect.read((DEMO / f"{side}.csv").read_bytes(), side, "auto", options)[0], budget)
        for side in ("base", "head")
    )
    c = compare(base, head, budget)
    findings, verdict = judge(c, budget, budget.fail_on)
    report = Report("default", "compare", (Scenario(c, tuple(findings), verdict),))
    assert len(render_markdown(report)) > 2000
    for limit in (400, 600, 1000):
        cut = render_markdown(report, limit)
        assert len(cut) <= limit and "Cut to fit" in cut
        assert all(e.endswith(";") for e in re.findall(r"&#\d*;?", cut))  # no entity half-cut
