"""Issue 23's meaning side, one test per item through `check` / `compare`, on tables of that
shape; every truth is computed here with numpy from the same columns."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.support.helpers import budget_file, compare_json, run, slices, write_table


def check_json(
    capsys: pytest.CaptureFixture[str], head: Path, budget: Path, *extra: str
) -> tuple[int, dict[str, Any]]:
    argv = ["check", "--head", str(head), "--budget", str(budget), "--output", "json", *extra]
    code, out, err = run(argv, capsys)
    assert code in (0, 1), err
    return code, json.loads(out)


def slo_row(report: dict[str, Any], metric: str) -> dict[str, Any]:
    return next(r for r in report["slo"] if r["metric"] == metric)


def kinds(report: dict[str, Any]) -> list[str]:
    return [f["kind"] for f in report["findings"]]


def _ttft_and_decode(seed: int, n: int = 2000) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {
        "request_id": np.array([f"r{i}" for i in range(n)]),
        "ttft_ms": rng.lognormal(np.log(700), 0.3, n).round(3),
        "decode_ms": rng.lognormal(np.log(4500), 0.15, n).round(3),
    }


# ---- 2. the total and TTFT from everything the table has ----------------------------------


def test_ttft_and_decode_without_a_total_breach_where_decode_alone_would_pass(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    t = _ttft_and_decode(1)
    truth = float(np.percentile(t["ttft_ms"] + t["decode_ms"], 95))
    decode_alone = float(np.percentile(t["decode_ms"], 95))
    target = round((truth + decode_alone) / 2)  # the old reading passed, the truth breaches
    text = f"version: 1\npercentile: 95\nslo: {{ttft: 1500, total: {target}}}\n"
    budget = budget_file(tmp_path, text + "slices: {decode: 4200}\n")
    code, report = check_json(capsys, write_table(tmp_path / "h.csv", t), budget)
    total = slo_row(report, "total")
    assert total["head_ms"] == pytest.approx(truth, abs=0.001)
    assert total["status"] == "breach" and code == 1
    # the TTFT column stands for the slices before the first token: a row of its own
    first = next(r for r in report["slices"] if r["name"] == "first_token")
    assert first["budget_ms"] is None and "unattributed" not in [
        r["name"] for r in report["slices"]
    ]
    assert any("the budget leaves out first_token" in n for n in report["notes"])


def test_a_budget_of_two_slices_of_five_counts_all_five(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rng = np.random.default_rng(2)
    n = 2000
    t = {
        "network_ms": rng.lognormal(np.log(60), 0.3, n).round(3),
        "queue_ms": rng.exponential(120, n).round(3),
        "prefill_ms": rng.lognormal(np.log(400), 0.3, n).round(3),
        "decode_ms": rng.lognormal(np.log(4000), 0.2, n).round(3),
        "app_ms": rng.lognormal(np.log(300), 0.3, n).round(3),
    }
    total = float(np.percentile(sum(t.values()), 95))
    ttft = float(np.percentile(t["network_ms"] + t["queue_ms"] + t["prefill_ms"], 95))
    budget = budget_file(
        tmp_path,
        "version: 1\npercentile: 95\nslo: {ttft: 700, total: 6000}\n"
        "slices: {prefill: 600, decode: 5000}\nfirst_token_after: prefill\n",
    )
    code, report = check_json(capsys, write_table(tmp_path / "h.csv", t), budget)
    assert slo_row(report, "total")["head_ms"] == pytest.approx(total, abs=0.001)
    assert slo_row(report, "ttft")["head_ms"] == pytest.approx(ttft, abs=0.001)
    assert total > 6000 and ttft > 700 and code == 1  # both breach, as the data says
    rows = {r["name"]: r for r in report["slices"]}
    assert {"network", "queue", "app"} <= set(rows)  # shown, never dropped
    assert rows["queue"]["budget_ms"] is None and rows["queue"]["over_budget"] is None
    parts = sum(r["part_ms"] for r in report["slices"])
    assert parts == pytest.approx(total, abs=0.01)  # the parts add up to the whole total


def test_rebudget_and_whatif_fit_the_whole_total(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    t = _ttft_and_decode(3)
    both = t["ttft_ms"] + t["decode_ms"]
    head = write_table(tmp_path / "h.csv", t)
    budget = budget_file(
        tmp_path,
        "version: 1\npercentile: 95\nslo: {ttft: 1500, total: 8000}\nslices: {decode: 4200}\n",
    )
    _, report = check_json(capsys, head, budget)
    detail = report["rebudget_detail"]
    assert detail["fits"] and set(report["rebudget"]) == {"decode", "first_token"}
    assert sum(report["rebudget"].values()) <= detail["target_ms"]
    parts = {r["name"]: r["part_ms"] for r in report["slices"]}
    assert all(report["rebudget"][s] >= parts[s] for s in parts)
    code, _, err = run(
        ["rebudget", "--head", str(head), "--budget", str(budget), "--write"], capsys
    )
    assert code == 0, err
    code, after = check_json(capsys, head, budget)  # the written budget reads the table back
    assert not [r for r in after["slices"] if r["over_budget"]] and code == 0
    # whatif: halving the time to the first token moves TTFT and the total by the truth
    code, out, err = run(
        ["whatif", "--head", str(head), "--budget", str(budget), "--scale", "first_token=0.5"],
        capsys,
    )
    assert code in (0, 1), err
    said = re.search(r"p95 end to end: [\d,.]+ ms -> ([\d,.]+) ms", out)
    assert said is not None, out
    halved = float(np.percentile(0.5 * t["ttft_ms"] + t["decode_ms"], 95))
    assert float(said.group(1).replace(",", "")) == pytest.approx(halved, abs=0.5)
    assert float(np.percentile(both, 95)) > halved


def test_timestamps_give_the_total(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    t = slices(4, n=1500)
    rng = np.random.default_rng(4)
    start = np.cumsum(rng.exponential(0.2, 1500)).round(6)
    sliced = t["queue_ms"] + t["prefill_ms"] + t["decode_ms"]
    end = (start + (sliced + rng.lognormal(np.log(400), 0.5, 1500)) / 1000).round(6)
    head = write_table(tmp_path / "h.csv", {**t, "start_time": start, "end_time": end})
    _, report = check_json(capsys, head, budget_file(tmp_path))
    span = 1000 * (end - start)
    assert slo_row(report, "total")["head_ms"] == pytest.approx(
        float(np.percentile(span, 95)), abs=0.01
    )
    assert "missing_slice" in kinds(report)  # the time between the slices and the span


# ---- 5. too few requests, said in check too -----------------------------------------------


# enough to measure the percentile (100 / (100 - p), issue 35), too few to test a change
@pytest.mark.parametrize(("p", "n"), [(99, 150), (95, 40), (99.9, 1000)])
def test_check_on_too_few_requests_is_inconclusive_not_a_silent_pass(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], p: float, n: int
) -> None:
    t = slices(5, n=n)
    budget = budget_file(
        tmp_path, f"version: 1\npercentile: {p}\nslo: {{ttft: 20000, total: 60000}}\n"
    )
    code, report = check_json(capsys, write_table(tmp_path / "h.csv", t), budget)
    # the fewest n for a finite distribution-free interval: (p/100)^n <= (1 - 0.95) / 2
    need = next(m for m in range(1, 100_000) if (max(p, 100 - p) / 100) ** m <= 0.025)
    total = slo_row(report, "total")
    assert total["change"] == "inconclusive" and total["needed"] == need
    assert total["status"] == "ok"  # the point estimate is far below the target
    found = next(f for f in report["findings"] if f["kind"] == "inconclusive")
    assert f"{need:,}" in found["message"] and not found["fails"]
    assert report["verdict"] == "warn" and code == 0  # as compare: said, not failed


# ---- 6. pairing proven, not assumed -----------------------------------------------------------


def _with_tokens(seed: int, n: int, ids: str = "r") -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    t = slices(seed, n=n)
    t["request_id"] = np.array([f"{ids}{i}" for i in range(n)])
    t["input_tokens"] = rng.integers(50, 3000, n)
    t["output_tokens"] = rng.integers(20, 600, n)
    return t


def test_runs_that_number_their_requests_alike_are_not_paired(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    b, h = (
        write_table(tmp_path / "b.csv", _with_tokens(6, 1000)),
        write_table(tmp_path / "h.csv", _with_tokens(7, 1000)),
    )
    budget = budget_file(tmp_path)
    _, report = compare_json(capsys, b, h, budget)
    assert report["paired"] is False
    assert any("not the same requests" in n for n in report["notes"])
    _, forced = compare_json(capsys, b, h, budget, "--pair")
    assert forced["paired"] is True and any("(--pair)" in n for n in forced["notes"])


def test_no_pair_never_pairs_and_pair_needs_ids(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    t = _with_tokens(8, 500)
    b = write_table(tmp_path / "b.csv", t)
    h = write_table(tmp_path / "h.csv", {**t, "decode_ms": t["decode_ms"] * 1.1})
    budget = budget_file(tmp_path)
    assert compare_json(capsys, b, h, budget)[1]["paired"] is True  # same prompts, proven
    assert compare_json(capsys, b, h, budget, "--no-pair")[1]["paired"] is False
    no_ids = write_table(tmp_path / "x.csv", {k: v for k, v in t.items() if k != "request_id"})
    argv = ["compare", "--base", str(no_ids), "--head", str(h), "--budget", str(budget), "--pair"]
    code, _, err = run(argv, capsys)
    assert code == 2 and err.count("\n") == 1 and "--pair" in err and "no request ids" in err


def test_a_head_that_reran_part_of_the_base_is_compared_on_the_common_requests(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = _with_tokens(9, 2000)
    short = np.sort(np.argsort(base["input_tokens"], kind="stable")[:500])
    head = {k: v[short] for k, v in base.items()}
    for k in ("queue_ms", "prefill_ms", "decode_ms"):
        head[k] = (head[k] * 1.2).round(3)  # the common 500 regressed 20%
    _, report = compare_json(
        capsys,
        write_table(tmp_path / "b.csv", base),
        write_table(tmp_path / "h.csv", head),
        budget_file(tmp_path, "version: 1\npercentile: 95\nslo: {ttft: 3000, total: 9000}\n"),
    )
    whole = base["queue_ms"] + base["prefill_ms"] + base["decode_ms"]
    total = slo_row(report, "total")
    assert total["base_ms"] == pytest.approx(float(np.percentile(whole[short], 95)), abs=0.001)
    assert total["change"] == "regression" and report["paired"] is True
    assert any("compared on the 500 both ran" in n for n in report["notes"])


def test_longer_prompts_are_a_different_workload_not_a_ttft_regression(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = _with_tokens(10, 1500)
    head = _with_tokens(11, 1500, ids="h")
    head["input_tokens"] = (head["input_tokens"] * 1.8).round()
    head["prefill_ms"] = (head["prefill_ms"] * 1.8).round(3)  # longer prompts: longer prefill
    b, h = write_table(tmp_path / "b.csv", base), write_table(tmp_path / "h.csv", head)
    budget = budget_file(tmp_path)
    _, report = compare_json(capsys, b, h, budget)
    ratio = head["input_tokens"].mean() / base["input_tokens"].mean()
    assert ratio > 1.7 and "not_comparable" in kinds(report)
    argv = ["compare", "--base", str(b), "--head", str(h), "--budget", str(budget)]
    _, out, _ = run([*argv, "--output", "markdown"], capsys)
    heading = out.splitlines()[0]
    assert "different workloads" in heading and "regressed" not in heading


# ---- 8. the missing slice named where it shows ------------------------------------------------


def test_time_in_no_slice_is_named_in_the_heading_not_blamed_on_a_slice(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    t = slices(12, n=2000)
    rng = np.random.default_rng(12)
    gap = rng.lognormal(np.log(900), 0.6, 2000)
    total = t["queue_ms"] + t["prefill_ms"] + t["decode_ms"] + gap
    t["total_ms"] = total.round(3)
    decode = float(np.percentile(t["decode_ms"], 95))
    text = (
        f"version: 1\npercentile: 95\nslo: {{ttft: 3000, total: 5000}}\n"
        f"slices: {{queue: 300, prefill: 800, decode: {round(decode) + 1}}}\n"
    )
    head = write_table(tmp_path / "h.csv", t)
    code, report = check_json(capsys, head, budget_file(tmp_path, text))
    missing = next(f for f in report["findings"] if f["kind"] == "missing_slice")
    assert not missing["fails"] and missing["subject"] == "unattributed"
    share = float(np.mean(gap)) / float(np.mean(total))  # a fifth of the time, roughly
    assert share > 0.15 and "%" in missing["message"]
    argv = ["check", "--head", str(head), "--budget", str(tmp_path / "budget.yml")]
    _, out, _ = run([*argv, "--output", "markdown"], capsys)
    heading = out.splitlines()[0]
    assert "in no slice" in heading and "decode" not in heading
    # `unattributed` fails only where the budget gives it a budget
    text += "fail_on: [over_budget]\n"
    budgeted = text.replace("}\nfail_on", ", unattributed: 100}\nfail_on")
    code, report = check_json(capsys, head, budget_file(tmp_path, budgeted, "b2.yml"))
    over = [f for f in report["findings"] if f["kind"] == "over_budget"]
    assert [f["subject"] for f in over if f["fails"]] == ["unattributed"] and code == 1
    assert "missing_slice" not in kinds(report)


def test_timestamps_that_end_before_they_start_are_said_not_used(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    t = slices(13, n=300)
    start = np.arange(300, dtype=float)
    end = start + (t["queue_ms"] + t["prefill_ms"] + t["decode_ms"]) / 1000 + 0.5
    end[7] = start[7] - 1.0  # request #8 ends before it starts
    head = write_table(tmp_path / "h.csv", {**t, "start_time": start, "end_time": end.round(6)})
    _, report = check_json(capsys, head, budget_file(tmp_path))
    whole = t["queue_ms"] + t["prefill_ms"] + t["decode_ms"]
    span = (end.round(6) - start) * 1000  # the span where it is one, else the slices
    truth = np.where(span >= 0, span, whole)
    assert slo_row(report, "total")["head_ms"] == pytest.approx(
        float(np.percentile(truth, 95)), abs=0.01
    )
    said = [f["message"] for f in report["findings"] if f["kind"] == "impossible"]
    assert any("request #8" in m and "end_time" in m and "their slices" in m for m in said)
