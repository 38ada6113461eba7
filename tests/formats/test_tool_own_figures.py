"""What the known tools' newer files say of themselves, kept (issue 37):

- GuideLLM's own percentiles (nearest rank) shown beside budgetdiff's (linear interpolation),
  each with its definition, in the JSON report and the notes;
- an AIPerf aggregate without an error count: 0 failed where its counts say every request
  it was asked for completed, unknown (null) only where they do not say;
- an inference-perf report kept as YAML under a comment block reads as its JSON twin.

Every truth is read from the tool's own file here (json / yaml), never from budgetdiff.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.support.helpers import run
from tests.support.paths import SAMPLES

BUDGET = "version: 1\npercentile: 95\nslo: {ttft: 5000, total: 60000}\n"


def _report(argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    budget = tmp_path / "b.yml"
    budget.write_text(BUDGET)
    code, out, err = run([*argv, "--budget", str(budget), "--output", "json"], capsys)
    assert code in (0, 1), err
    return json.loads(out)  # type: ignore[no-any-return]


def _scenarios(report: dict[str, Any]) -> list[dict[str, Any]]:
    return list(report.get("scenarios") or [report])


# ---------------------------------------------------------------- GuideLLM's own percentiles

GUIDELLM = SAMPLES / "guidellm"
PER_REQUEST_RUNS = [
    "guidellm_v0_8_400_requests_benchmarks.json",
    "guidellm_v0_5_warmup_cooldown_benchmarks.json",
    "guidellm_v0_8_warmup_cooldown_benchmarks.json",
]
_METRICS = {"ttft": ("time_to_first_token_ms", 1.0), "total": ("request_latency", 1000.0)}


def _own(bench: dict[str, Any], metric: str, q: str = "p95") -> float:
    name, scale = _METRICS[metric]
    return float(bench["metrics"][name]["successful"]["percentiles"][q]) * scale


@pytest.mark.parametrize("name", PER_REQUEST_RUNS)
def test_guidellm_own_percentile_is_shown_beside_budgetdiffs_with_each_definition(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = GUIDELLM / name
    benchmarks = json.loads(path.read_text())["benchmarks"]
    report = _report(["check", "--head", str(path)], tmp_path, capsys)
    scenarios = _scenarios(report)
    assert len(scenarios) == len(benchmarks)
    for s, bench in zip(scenarios, benchmarks, strict=True):
        side = s["inputs"]["head"]
        assert side["percentile_method"] == "linear interpolation"
        own = side["tool_percentiles"]
        assert own["by"] == "guidellm" and own["method"] == "nearest rank"
        for metric in ("ttft", "total"):
            assert own["ms"][metric]["95"] == pytest.approx(_own(bench, metric), abs=2e-3)
            assert own["ms"][metric]["50"] == pytest.approx(_own(bench, metric, "p50"), abs=2e-3)
            row = next(r for r in s["slo"] if r["metric"] == metric)
            assert row["tool_ms"] == {
                "base": None,
                "head": pytest.approx(_own(bench, metric), abs=2e-3),
            }
        said = " ".join(s["notes"])
        assert "GuideLLM's own p95" in said and "nearest rank" in said, s["notes"]
        assert "linear interpolation" in said


def test_guidellm_own_percentiles_on_both_sides_of_a_compare(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = GUIDELLM / "guidellm_v0_5_warmup_cooldown_benchmarks.json"
    head = GUIDELLM / "guidellm_v0_8_warmup_cooldown_benchmarks.json"
    (b,) = json.loads(base.read_text())["benchmarks"]
    (h,) = json.loads(head.read_text())["benchmarks"]
    report = _report(["compare", "--base", str(base), "--head", str(head)], tmp_path, capsys)
    row = next(r for r in report["slo"] if r["metric"] == "total")
    assert row["tool_ms"]["base"] == pytest.approx(_own(b, "total"), abs=2e-3)
    assert row["tool_ms"]["head"] == pytest.approx(_own(h, "total"), abs=2e-3)
    budget = tmp_path / "b.yml"
    _, text, _ = run(
        ["compare", "--base", str(base), "--head", str(head), "--budget", str(budget)], capsys
    )
    flat = " ".join(text.split())
    assert "nearest rank" in flat and "linear interpolation" in flat, text


def test_a_table_without_a_tools_own_percentiles_says_none(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = SAMPLES / "user_tables" / "e2e_ms.csv"
    report = _report(["check", "--head", str(path)], tmp_path, capsys)
    assert report["inputs"]["head"]["tool_percentiles"] is None
    assert report["inputs"]["head"]["percentile_method"] == "linear interpolation"
    assert all(r["tool_ms"] is None for r in report["slo"])


def test_an_aggregate_inputs_percentiles_are_the_tools_own(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = SAMPLES / "aiperf" / "aiperf_0_8_0_failures_profile_export_aiperf.json"
    report = _report(["check", "--head", str(path)], tmp_path, capsys)
    assert report["inputs"]["head"]["percentile_method"] == "the tool's own"


# ---------------------------------------------------------------- AIPerf without an error count

AIPERF_03 = SAMPLES / "aiperf" / "aiperf_0_3_0_profile_export_aiperf.json"


def test_aiperf_aggregate_whose_counts_say_every_request_completed_has_0_failed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """AIPerf 0.3.0 writes no `error_request_count` when nothing failed: its `request_count`
    (the requests that succeeded) equals the `--request-count` it was asked for."""
    doc = json.loads(AIPERF_03.read_text())
    assert doc["error_request_count"] is None and not doc["was_cancelled"]
    assert doc["request_count"]["avg"] == doc["input_config"]["loadgen"]["request_count"] == 60
    report = _report(["check", "--head", str(AIPERF_03)], tmp_path, capsys)
    assert report["failed"]["head"] == 0 and report["requests"]["head"] == 60


@pytest.mark.parametrize("change", ["asked for more", "no request count", "cancelled"])
def test_aiperf_aggregate_whose_counts_do_not_say_leaves_failed_unknown(
    change: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = json.loads(AIPERF_03.read_text())
    loadgen = doc["input_config"]["loadgen"]
    if change == "asked for more":  # 70 asked, 60 succeeded: 10 failed or never ran
        loadgen["request_count"] = 70
    elif change == "no request count":  # a --benchmark-duration run
        del loadgen["request_count"]
    else:
        doc["was_cancelled"] = True
    path = tmp_path / "profile_export_aiperf.json"
    path.write_text(json.dumps(doc))
    report = _report(["check", "--head", str(path), "--format", "aiperf"], tmp_path, capsys)
    assert report["failed"]["head"] is None


# ---------------------------------------------------------------- inference-perf YAML, commented

INFERENCE_PERF = SAMPLES / "inference-perf"
TWINS = [
    (
        INFERENCE_PERF / "inference_perf_vllm_summary_lifecycle_metrics.yaml",
        SAMPLES / "fetched" / "inference-perf" / "vllm_summary_lifecycle_metrics.json",
    ),
    (
        INFERENCE_PERF / "inference_perf_v0_7_partial_stage_0.yaml",
        INFERENCE_PERF / "inference_perf_v0_7_stage_0_lifecycle_metrics.json",
    ),
]
COMMENT = "# inference-perf run, kept as YAML\n# model: test\n\n#   config: stage 0\n"


@pytest.mark.parametrize(("yaml_path", "json_path"), TWINS, ids=["lifecycle", "llm-d report"])
@pytest.mark.parametrize("start", ["", "---\n"])
def test_inference_perf_yaml_under_a_comment_block_reads_as_its_json_twin(
    yaml_path: Path,
    json_path: Path,
    start: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    commented = tmp_path / yaml_path.name
    body = yaml_path.read_text()
    commented.write_text(COMMENT + start + body.removeprefix("---\n"))
    from_yaml = _report(["check", "--head", str(commented)], tmp_path, capsys)
    from_json = _report(["check", "--head", str(json_path)], tmp_path, capsys)
    assert from_yaml["inputs"]["head"]["format"] == "inference-perf"
    for key in ("requests", "failed"):
        assert from_yaml[key] == from_json[key]
    for a, b in zip(from_yaml["slo"], from_json["slo"], strict=True):
        assert a["metric"] == b["metric"]
        assert a["head_ms"] == pytest.approx(b["head_ms"], rel=1e-9)
        assert np.isfinite(a["head_ms"])


# ---------------------------------------------------------------- evalscope's own, beside the db

EVALSCOPE = SAMPLES / "evalscope"
_EVALSCOPE_COLUMNS = {"ttft": ("TTFT (ms)", 1.0), "total": ("Latency (s)", 1000.0)}


def _evalscope_own(side: str, metric: str, q: str = "95%") -> float:
    rows = json.loads((EVALSCOPE / side / "benchmark_percentile.json").read_text())
    column, scale = _EVALSCOPE_COLUMNS[metric]
    return float(next(r for r in rows if r["Percentiles"] == q)[column]) * scale


def test_evalscope_own_percentiles_from_the_dbs_folder_are_shown_beside_budgetdiffs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base, head = (EVALSCOPE / s / "benchmark_data.db" for s in ("base", "head"))
    report = _report(["compare", "--base", str(base), "--head", str(head)], tmp_path, capsys)
    for side in ("base", "head"):
        own = report["inputs"][side]["tool_percentiles"]
        assert own["by"] == "evalscope" and own["method"] == "nearest rank"
        assert report["inputs"][side]["percentile_method"] == "linear interpolation"
        for metric in ("ttft", "total"):
            for q in ("50", "95", "99"):
                want = _evalscope_own(side, metric, f"{q}%")
                assert own["ms"][metric][q] == pytest.approx(want, abs=1e-3)  # the report rounds
            row = next(r for r in report["slo"] if r["metric"] == metric)
            assert row["tool_ms"][side] == pytest.approx(_evalscope_own(side, metric), abs=1e-3)
    said = " ".join(report["notes"])
    assert "evalscope's own p95 (nearest rank)" in said and "linear interpolation" in said
    assert f"{EVALSCOPE / 'head' / 'benchmark_percentile.json'}: evalscope's own" in said


def test_evalscope_db_alone_or_beside_another_runs_table_shows_none(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    alone = tmp_path / "alone" / "benchmark_data.db"
    alone.parent.mkdir()
    alone.write_bytes((EVALSCOPE / "base" / "benchmark_data.db").read_bytes())
    report = _report(["check", "--head", str(alone)], tmp_path, capsys)
    assert report["inputs"]["head"]["tool_percentiles"] is None
    other = tmp_path / "alone" / "benchmark_percentile.json"  # head's table beside base's db
    other.write_bytes((EVALSCOPE / "head" / "benchmark_percentile.json").read_bytes())
    report = _report(["check", "--head", str(alone)], tmp_path, capsys)
    assert report["inputs"]["head"]["tool_percentiles"] is None
    assert all(r["tool_ms"] is None for r in report["slo"])
    assert "is not of its requests" in " ".join(report["notes"]), report["notes"]
    other.write_text("{not json")
    report = _report(["check", "--head", str(alone)], tmp_path, capsys)
    assert report["inputs"]["head"]["tool_percentiles"] is None
    assert "cannot be read" in " ".join(report["notes"]), report["notes"]
