"""Which runs and requests are compared with which: load, workload, request ids."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.support.helpers import BUDGET, NO_SLICES, budget_file, compare_json, slices, write_table


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


def test_a_small_workload_difference_is_not_a_failure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # 24 requests a side: enough to measure a p95 (20, issue 35)
    b, h = slices(1, n=24), slices(2, n=24)
    b["output_tokens"] = np.tile([100, 120, 90, 110, 100, 95], 4)
    h["output_tokens"] = b["output_tokens"] * 1.2
    code, report = compare_json(
        capsys,
        write_table(tmp_path / "b.csv", b),
        write_table(tmp_path / "h.csv", h),
        budget_file(tmp_path, BUDGET),
    )
    assert "not_comparable" not in [f["kind"] for f in report["findings"]] and code == 0


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
