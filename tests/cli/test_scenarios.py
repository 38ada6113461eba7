"""Files that hold several scenarios: every one compared, matched by load, the worst wins."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.helpers import (
    BUDGET,
    VLLM_SAMPLE,
    appended,
    compare_json,
    run,
    slices,
    write_table,
)


def test_every_scenario_is_compared_and_the_worst_wins(
    samples: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base, head = appended(samples, "base", tmp_path), appended(samples, "head", tmp_path)
    budget = tmp_path / "budget.yml"
    budget.write_text("version: 1\nslo: {ttft: 1200, total: 6000}\n")
    args = [
        "compare",
        "--base",
        str(base),
        "--head",
        str(head),
        "--budget",
        str(budget),
        "--output",
        "json",
    ]
    code, out, err = run(args, capsys)
    report = json.loads(out)
    assert code == 1, err
    by_name = {s["name"]: s for s in report["scenarios"]}
    assert set(by_name) == {"concurrency=8", "concurrency=16"}
    assert by_name["concurrency=8"]["verdict"] == "fail"
    assert by_name["concurrency=16"]["regressions"] == []
    assert report["verdict"] == "fail" and report["name"] == "concurrency=8"
    code, out, _ = run([*args, "--scenario", "concurrency=16"], capsys)
    assert code == 0 and "scenarios" not in json.loads(out)


def test_different_load_is_not_a_regression(
    samples: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = json.loads((samples / VLLM_SAMPLE.format("base")).read_text())
    head = json.loads((samples / VLLM_SAMPLE.format("head")).read_text())
    head["max_concurrency"] = 32
    (tmp_path / "b.json").write_text(json.dumps(base))
    (tmp_path / "h.json").write_text(json.dumps(head))
    (tmp_path / "budget.yml").write_text("version: 1\nslo: {total: 6000}\n")
    code, report = compare_json(
        capsys, tmp_path / "b.json", tmp_path / "h.json", tmp_path / "budget.yml"
    )
    kinds = [f["kind"] for f in report["findings"]]
    assert "not_comparable" in kinds and "regression" not in kinds
    assert code == 1  # fail_on names regression: a different load cannot pass silently


def test_too_few_requests_at_p99_is_inconclusive_and_says_how_many(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # 150 a side measure a p99 (100 do: one above it), too few to test its change (368)
    base = write_table(tmp_path / "b.csv", slices(1, n=150))
    head = write_table(tmp_path / "h.csv", slices(2, n=150))
    budget = tmp_path / "budget.yml"
    budget.write_text(BUDGET.replace("percentile: 95", "percentile: 99"))
    code, report = compare_json(capsys, base, head, budget)
    assert {r["change"] for r in report["slices"]} == {"inconclusive"}
    assert all(r["needed"] == 368 for r in report["slices"])
    finding = next(f for f in report["findings"] if f["kind"] == "inconclusive")
    assert "368" in finding["message"]
    assert report["verdict"] == "warn" and code == 0
