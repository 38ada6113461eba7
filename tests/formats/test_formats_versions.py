"""Every version of every tool's file: each shape read from a real (cut-down) file, its numbers
checked against the tool's own summary of the same run, and its requests and failures counted."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest
import yaml

from budgetdiff.errors import InputError
from budgetdiff.formats import (
    ReadOptions,
    aiperf,
    detect,
    genai_perf,
    guidellm,
    inference_perf,
    llmperf,
    prometheus,
    sglang,
    vllm,
)
from budgetdiff.table import Run
from tests.support.helpers import compare_json, run
from tests.support.paths import SAMPLES

# the budget most of these checks hold a file to (95 is also the default percentile)
BUDGET_P95 = "version: 1\npercentile: 95\nslo: {ttft: 1200, total: 6000}\n"


def _check_argv(tmp_path: Path, head: Path, budget: str, *flags: str) -> list[str]:
    """`budgetdiff check --head HEAD` against a budget of that text (written to tmp_path)."""
    path = tmp_path / "b.yml"
    path.write_text(budget)
    return ["check", "--head", str(head), "--budget", str(path), *flags]


OPTS = ReadOptions()
PCTS = (50.0, 90.0, 95.0, 99.0)


def _only(module: object, path: Path) -> Run:
    data = path.read_bytes()
    assert detect.detect(data, path.name, OPTS).module is module, path
    (one,) = detect.read(data, path.name, "auto", OPTS)
    return one


# ---------------------------------------------------------------- AIPerf 0.1 (autumn 2025)
AIPERF_EARLY = SAMPLES / "aiperf"


def test_aiperf_early_records_match_its_own_aggregate() -> None:
    """`ttft` / `ttst` instead of `time_to_first_token`: TTFT is read, not dropped."""
    records = _only(aiperf, AIPERF_EARLY / "aiperf_early_schema_profile_export.jsonl")
    agg = json.loads((AIPERF_EARLY / "aiperf_early_schema_profile_export_aiperf.json").read_text())
    stats = agg["records"]
    assert records.n == 100 and records.ok is not None
    assert int(records.ok.sum()) == stats["request_count"]["avg"] == 89
    assert int((~records.ok).sum()) == stats["error_request_count"]["avg"] == 11
    assert records.ttft is not None and records.total is not None
    ok = records.ok
    for q in PCTS:
        assert np.percentile(records.ttft[ok], q) == pytest.approx(stats["ttft"][f"p{q:g}"])
        want = stats["request_latency"][f"p{q:g}"]
        assert np.percentile(records.total[ok], q) == pytest.approx(want)
    assert set(records.slices) == {"first_token", "decode"}
    assert records.meta["schema"] == aiperf.EARLY_SCHEMA


def test_aiperf_early_aggregate_is_detected_and_read() -> None:
    path = AIPERF_EARLY / "aiperf_early_schema_profile_export_aiperf.json"
    stats = json.loads(path.read_text())["records"]
    agg = _only(aiperf, path)
    assert agg.n == 0 and agg.summary_count == 100 and agg.meta["failures"] == 11
    for name, metric in (
        ("ttft", "ttft"),
        ("total", "request_latency"),
        ("tpot", "inter_token_latency"),
    ):
        assert agg.summary[name] == {
            float(k[1:]): v for k, v in stats[metric].items() if k.startswith("p")
        }
    assert agg.meta["model"] == "openai/gpt-oss-20b" and agg.meta["concurrency"] == 100


def test_aiperf_early_aggregate_under_format_aiperf(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    budget = tmp_path / "b.yml"
    budget.write_text("version: 1\npercentile: 95\nslo: {ttft: 5000, total: 10000}\n")
    path = AIPERF_EARLY / "aiperf_early_schema_profile_export_aiperf.json"
    argv = ["check", "--head", str(path), "--budget", str(budget), "--format", "aiperf"]
    code, out, err = run([*argv, "--output", "json"], capsys)
    assert code == 0, err
    report = json.loads(out)
    assert report["requests"]["head"] == 100 and report["failed"]["head"] == 11
    ttft = next(r for r in report["slo"] if r["metric"] == "ttft")
    assert ttft["head_ms"] == pytest.approx(3825.278, abs=1e-3)  # the file's own p95


# ---------------------------------------------------------------- what the report says it read
def test_report_names_format_and_schema_of_each_side(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    budget = tmp_path / "b.yml"
    budget.write_text("version: 1\npercentile: 95\nslo: {ttft: 5000, total: 10000}\n")
    base = SAMPLES / "generated/aiperf/base/profile_export_aiperf.json"
    head = AIPERF_EARLY / "aiperf_early_schema_profile_export_aiperf.json"
    argv = ["compare", "--base", str(base), "--head", str(head), "--budget", str(budget)]
    code, out, err = run([*argv, "--output", "json"], capsys)
    assert code in (0, 1), err
    inputs = json.loads(out)["inputs"]
    assert inputs["base"] == {
        "source": str(base),
        "format": "aiperf",
        "schema": "1.4",
        "tool_version": "0.13.0",
        "percentile_method": "the tool's own",  # an aggregate: the file's percentiles
        "tool_percentiles": None,  # none beside budgetdiff's: there are no budgetdiff's
        "columns": [],  # a tool's own format: no table of columns to map
    }
    assert inputs["head"]["format"] == "aiperf"
    assert inputs["head"]["schema"] == aiperf.EARLY_SCHEMA
    assert inputs["head"]["tool_version"] is None
    _, table, _ = run(argv, capsys)
    read = "read: base aiperf (schema 1.4, aiperf 0.13.0) · head aiperf (schema 0.1 (records/tag"
    assert read in " ".join(table.split())  # wrapped at 80 columns
    _, markdown, _ = run([*argv, "--output", "markdown"], capsys)
    assert markdown.rstrip().splitlines()[-1].startswith("<sub>read: base aiperf (schema 1.4")


# ---------------------------------------------------------------- LLMPerf with failures
LLMPERF_FAILURES = SAMPLES / "llmperf" / "llmperf_failures_bedrock_70b_{}.json"


def test_llmperf_summary_counts_its_own_failures() -> None:
    """49 of 150 requests failed: the summary says so in `results_number_errors`."""
    path = Path(str(LLMPERF_FAILURES).format("summary"))
    doc = json.loads(path.read_text())
    summary = _only(llmperf, path)
    assert summary.summary_count == doc["results_num_requests_started"] == 150
    assert summary.meta["failures"] == doc["results_number_errors"] == 49
    assert doc["results_error_rate"] == pytest.approx(49 / 150)
    rows = _only(llmperf, Path(str(LLMPERF_FAILURES).format("individual_responses")))
    assert rows.n == 150 and rows.ok is not None and int((~rows.ok).sum()) == 49
    assert rows.ttft is not None and rows.total is not None
    for q in PCTS:  # the summary's percentiles are of the completed requests
        want = doc[f"results_ttft_s_quantiles_p{q:g}"] * 1000
        assert np.percentile(rows.ttft[rows.ok], q) == pytest.approx(want)
        assert summary.summary["ttft"][q] == pytest.approx(want)
        want = doc[f"results_end_to_end_latency_s_quantiles_p{q:g}"] * 1000
        assert np.percentile(rows.total[rows.ok], q) == pytest.approx(want)


def test_llmperf_failures_reach_the_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Against a run of the same benchmark with no failure, 49 of 150 is a higher failure rate."""
    budget = tmp_path / "b.yml"
    budget.write_text("version: 1\npercentile: 95\nslo: {ttft: 5000, total: 10000}\n")
    for kind in ("summary", "individual_responses"):
        base = SAMPLES / f"fetched/llmperf/together_70b_{kind}.json"
        head = str(LLMPERF_FAILURES).format(kind)
        argv = ["compare", "--base", str(base), "--head", head, "--budget", str(budget)]
        code, out, err = run([*argv, "--output", "json"], capsys)
        assert code == 1, err
        report = json.loads(out)
        assert (report["requests"]["head"], report["failed"]["head"]) == (150, 49), kind
        assert (report["requests"]["base"], report["failed"]["base"]) == (150, 0), kind
        (finding,) = [f for f in report["findings"] if f["kind"] == "failure_rate"]
        assert finding["fails"] and "49 of 150 requests failed at head" in finding["message"]


# ---------------------------------------------------------------- vLLM / SGLang without details
@pytest.mark.parametrize(
    ("module", "name", "total_key"),
    [
        (vllm, "vllm_bench_serve.json", "e2el"),
        (sglang, "sglang_bench_serving.jsonl", "e2e_latency"),
    ],
    ids=["vllm", "sglang"],
)
@pytest.mark.parametrize("side", ["base", "head"])
def test_result_without_details_is_an_aggregate_of_the_same_run(
    module: ModuleType, name: str, total_key: str, side: str
) -> None:
    """The tool's own percentiles, checked against the per-request lists of the same run."""
    path = SAMPLES / module.NAME / f"{module.NAME}_aggregate_{side}_{name}"
    doc = json.loads(path.read_text())
    agg = _only(module, path)
    assert agg.n == 0 and agg.meta["schema"] == vllm.AGGREGATE
    assert agg.summary_count == doc["completed"] + doc.get("failed", 0) == 100
    assert agg.meta.get("failures", 0.0) == doc.get("failed", 0)
    detailed = _only(module, SAMPLES / "generated" / module.NAME / side / name)
    assert detailed.ttft is not None and detailed.itl is not None and detailed.total is not None
    for q, key in ((50.0, "median"), (99.0, "p99")):
        assert agg.summary["ttft"][q] == pytest.approx(np.percentile(detailed.ttft, q))
        assert agg.summary["itl"][q] == pytest.approx(np.percentile(detailed.itl.values, q))
        assert agg.summary["total"][q] == doc[f"{key}_{total_key}_ms"]
        # SGLang keeps no per-request end to end: its time to the last token is within 0.5 %
        want = np.percentile(detailed.total, q)
        assert agg.summary["total"][q] == pytest.approx(want, rel=5e-3)
    assert set(agg.summary) == {"ttft", "first_token", "total", "tpot", "itl"}


def test_aggregate_pair_compares_with_the_aggregate_note(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    budget = tmp_path / "b.yml"
    budget.write_text("version: 1\npercentile: 99\nslo: {ttft: 1200, total: 6000, itl: 60}\n")
    folder = SAMPLES / "sglang"
    base, head = (
        folder / f"sglang_aggregate_{s}_sglang_bench_serving.jsonl" for s in ("base", "head")
    )
    argv = ["compare", "--base", str(base), "--head", str(head), "--budget", str(budget)]
    code, out, err = run([*argv, "--output", "json"], capsys)
    assert code == 0, err
    report = json.loads(out)
    assert report["requests"] == {"base": 100, "head": 100}
    assert any("aggregate input" in n for n in report["notes"])
    itl = next(r for r in report["slo"] if r["metric"] == "itl")
    assert itl["head_ms"] > itl["base_ms"]  # decode 10 -> 12 ms per token
    assert report["inputs"]["head"]["schema"] == vllm.AGGREGATE


# ---------------------------------------------------------------- AIPerf 0.3.0 (November 2025)
# The files named `aiperf_<version>_*` are what that AIPerf version (PyPI) wrote, run against
# tools/mock_llm_server.py; tests/data/SOURCES.md gives each command and the server's own count.


def _aiperf_records(path: Path) -> list[dict[str, Any]]:
    """The records as plain JSON, read without budgetdiff: the truth to check it by."""
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _record_values(records: list[dict[str, Any]], metric: str) -> list[float]:
    """One metric of every record that has it, in ms; list values (the gaps) joined."""
    out: list[float] = []
    for record in records:
        entry = record["metrics"].get(metric)
        if entry is not None:
            assert entry["unit"] == "ms"
            value = entry["value"]
            out.extend(value if isinstance(value, list) else [value])
    return out


def test_aiperf_0_3_aggregate_without_schema_version_is_aiperf_with_its_itl(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """genai-perf's shape without a version key, metrics it did not compute written as null:
    AIPerf's, its inter-chunk latency is the ITL, and `--format aiperf` takes it."""
    path = AIPERF_EARLY / "aiperf_0_3_0_profile_export_aiperf.json"
    doc = json.loads(path.read_text())
    assert "schema_version" not in doc and "aiperf_version" not in doc
    assert doc["error_request_count"] is None  # no failure in this run
    agg = _only(aiperf, path)
    assert genai_perf.sniff(path.read_bytes()[:65536], path.name) is False
    assert agg.meta["schema"] == aiperf.NOV_2025_SCHEMA
    assert agg.summary_count == doc["request_count"]["avg"] == 60  # the server answered 60
    pairs = (
        ("itl", "inter_chunk_latency"),
        ("ttft", "time_to_first_token"),
        ("total", "request_latency"),
        ("tpot", "inter_token_latency"),
    )
    for name, metric in pairs:
        for q in PCTS:
            assert agg.summary[name][q] == doc[metric][f"p{q:g}"]
    # the same run's records give AIPerf's own percentiles (0.3.0 computes them with numpy)
    records_path = AIPERF_EARLY / "aiperf_0_3_0_profile_export.jsonl"
    records = _only(aiperf, records_path)
    assert records.n == 60 and records.itl is not None and records.ttft is not None
    assert len(records.itl.values) == len(
        _record_values(_aiperf_records(records_path), "inter_chunk_latency")
    )
    for values, metric in (
        (records.itl.values, "inter_chunk_latency"),
        (records.ttft, "time_to_first_token"),
        (records.total, "request_latency"),
    ):
        for q in PCTS:
            want = doc[metric][f"p{q:g}"]
            assert np.percentile(values, q) == pytest.approx(want, rel=1e-9), (metric, q)
    argv = _check_argv(
        tmp_path,
        path,
        "version: 1\npercentile: 95\nslo: {ttft: 1200, total: 6000, itl: 50}\n",
        "--format",
        "aiperf",
    )
    code, out, err = run([*argv, "--output", "json"], capsys)
    assert code == 0, err
    report = json.loads(out)
    assert report["inputs"]["head"]["schema"] == aiperf.NOV_2025_SCHEMA
    itl = next(r for r in report["slo"] if r["metric"] == "itl")
    assert itl["head_ms"] == pytest.approx(doc["inter_chunk_latency"]["p95"], abs=1e-3)


# ---------------------------------------------------------------- AIPerf's time-sliced export
@pytest.mark.parametrize("version", ["0_3_0", "0_13_0"])
def test_aiperf_time_sliced_export_is_one_scenario_per_slice(version: str) -> None:
    """`--slice-duration 2`: each slice's own percentiles, of the requests that started in it
    (0.3.0 numbers its slices, 0.13.0 gives their times and marks the trailing partial one)."""
    path = AIPERF_EARLY / f"aiperf_{version}_profile_export_aiperf_timeslices.json"
    slices = json.loads(path.read_text())["timeslices"]
    data = path.read_bytes()
    assert detect.detect(data, path.name, OPTS).module is aiperf
    assert genai_perf.sniff(data[:65536], path.name) is False
    runs = detect.read(data, path.name, "auto", OPTS)
    assert len(runs) == len(slices) >= 3
    assert [r.scenario for r in runs] == [f"timeslice {i}" for i in range(len(slices))]
    for got, piece in zip(runs, slices, strict=True):
        assert got.meta["schema"] == aiperf.TIMESLICE_SCHEMA
        assert got.summary_count == piece["request_count"]["avg"]
        for name, metric in (
            ("ttft", "time_to_first_token"),
            ("itl", "inter_chunk_latency"),
            ("total", "request_latency"),
        ):
            for q in PCTS:
                assert got.summary[name][q] == piece[metric][f"p{q:g}"]
        partial = piece.get("is_complete") is False
        assert ("trailing partial slice" in str(got.meta.get("note", ""))) == partial
    # the slices hold every request of the run: the server answered 60
    assert sum(r.summary_count or 0 for r in runs) == 60


def test_aiperf_0_3_slices_are_the_requests_that_started_in_them() -> None:
    """Slice the same run's records as AIPerf 0.3.0 says it does (`int(request_start_ns /
    slice_duration_ns)`, slices renumbered from 0): each slice's count and percentiles."""
    runs = detect.read(
        (AIPERF_EARLY / "aiperf_0_3_0_profile_export_aiperf_timeslices.json").read_bytes(),
        "t.json",
        "auto",
        OPTS,
    )
    groups: dict[int, list[dict[str, Any]]] = {}
    for record in _aiperf_records(AIPERF_EARLY / "aiperf_0_3_0_profile_export.jsonl"):
        groups.setdefault(int(record["metadata"]["request_start_ns"] / 2e9), []).append(record)
    assert len(groups) == len(runs)
    for got, key in zip(runs, sorted(groups), strict=True):
        records = groups[key]
        assert got.summary_count == len(records)
        for name, metric in (("ttft", "time_to_first_token"), ("itl", "inter_chunk_latency")):
            values = _record_values(records, metric)
            for q in PCTS:
                assert got.summary[name][q] == pytest.approx(np.percentile(values, q), rel=1e-9)


# ---------------------------------------------------------------- AIPerf's aggregate CSV
@pytest.mark.parametrize(
    ("csv_path", "json_path"),
    [
        (
            f"aiperf/aiperf_{run}_profile_export_aiperf.csv",
            f"aiperf/aiperf_{run}_profile_export_aiperf.json",
        )
        for run in (
            "early_schema",
            "0_3_0",
            "0_8_0_failures",
            "0_8_0_all_failed",
            "0_13_0_failures",
        )
    ]
    + [
        (
            "generated/aiperf/base/profile_export_aiperf.csv",
            "generated/aiperf/base/profile_export_aiperf.json",
        ),
    ],
)
def test_aiperf_aggregate_csv_gives_the_numbers_of_its_json(csv_path: str, json_path: str) -> None:
    """`profile_export_aiperf.csv`: the same run's JSON numbers, to AIPerf's two decimals
    (0.13's `(error-adjusted)` rows, another statistic, are not taken for the plain ones)."""
    from_csv = _only(aiperf, SAMPLES / csv_path)
    from_json = _only(aiperf, SAMPLES / json_path)
    assert from_csv.meta["schema"] == aiperf.CSV_SCHEMA
    assert from_csv.summary_count == from_json.summary_count
    if "asked for" in str(from_json.meta.get("note")):  # 0 failed from the run's own config,
        assert from_csv.meta.get("failures") is None  # which the CSV does not hold: unknown
    else:
        assert from_csv.meta.get("failures") == from_json.meta.get("failures")
    assert set(from_csv.summary) == set(from_json.summary)
    for name, by_q in from_json.summary.items():
        assert set(from_csv.summary[name]) <= set(by_q)
        for q, value in from_csv.summary[name].items():
            assert value == pytest.approx(by_q[q], rel=0.005, abs=0.005), (name, q)
    if from_json.duration_s is None:
        assert from_csv.duration_s is None
    else:
        assert from_csv.duration_s == pytest.approx(from_json.duration_s, abs=0.005)


# ---------------------------------------------------------------- AIPerf: failed and cancelled runs
@pytest.mark.parametrize(
    "name",
    [
        "aiperf_0_8_0_all_failed_profile_export.jsonl",
        "aiperf_0_8_0_all_failed_profile_export_aiperf.json",
        "aiperf_0_8_0_all_failed_profile_export_aiperf.csv",
        "aiperf_0_13_0_all_failed_profile_export.jsonl",  # 0.13.0 writes no aggregate then
    ],
)
def test_aiperf_run_whose_every_request_failed_is_a_breach_with_its_count(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every request answered HTTP 500 (the server's log: 32 of 32): read under --format auto
    and under --format aiperf alike."""
    path = AIPERF_EARLY / name
    got = _only(aiperf, path)
    if name.endswith(".jsonl"):
        records = _aiperf_records(path)
        assert len(records) == 32 and all(r["error"]["code"] == 500 for r in records)
        assert got.ok is not None and not got.ok.any() and got.n == 32
    else:
        assert got.summary == {} and got.summary_count == got.meta["failures"] == 32
    argv = _check_argv(tmp_path, path, BUDGET_P95, "--output", "json")
    for chosen in ("auto", "aiperf"):
        code, out, _ = run([*argv, "--format", chosen], capsys)
        report = json.loads(out)
        assert code == 1 and report["verdict"] == "fail", chosen
        assert report["requests"]["head"] == report["failed"]["head"] == 32
        assert report["summary"]["text"].startswith("SLO breached")  # not "a target not measured"
        assert any(
            f["kind"] == "breach" and "every one of the 32 head requests failed" in f["message"]
            for f in report["findings"]
        )
    # an aggregate with nothing measured has no SLO rows: the readable outputs show the
    # findings, not a table without rows (per request, an end-to-end row says `–`)
    rows = report["slo"]
    assert all(r["head_ms"] is None for r in rows) and bool(rows) == name.endswith(".jsonl")
    text = run(argv[:-2], capsys)[1]
    markdown = run([*argv[:-2], "--output", "markdown"], capsys)[1]
    assert ("SLO p95" in text) == ("| SLO at p95" in markdown) == bool(rows)
    assert "every one of the 32 head requests failed" in text


def test_aiperf_0_8_records_with_failures_keep_the_schema_and_match_the_aggregate() -> None:
    """16 of 60 requests answered HTTP 500 (the server's log): an error record has no latency
    metric and says nothing about the schema; the rest give AIPerf's own percentiles."""
    path = AIPERF_EARLY / "aiperf_0_8_0_failures_profile_export.jsonl"
    doc = json.loads(
        (AIPERF_EARLY / "aiperf_0_8_0_failures_profile_export_aiperf.json").read_text()
    )
    assert doc["schema_version"] == "1.1" and doc["aiperf_version"] == "0.8.0"
    got = _only(aiperf, path)
    assert got.meta["schema"] == "current"
    assert got.ok is not None and got.ttft is not None and got.total is not None
    assert got.n == 60 and int((~got.ok).sum()) == doc["error_request_count"]["avg"] == 16
    assert int(got.ok.sum()) == doc["request_count"]["avg"] == 44
    ok = got.ok
    for values, metric in (
        (got.ttft[ok], "time_to_first_token"),
        (got.total[ok], "request_latency"),
    ):
        for q in PCTS:
            want = doc[metric][f"p{q:g}"]
            assert np.percentile(values, q) == pytest.approx(want, rel=1e-9), (metric, q)
    # AIPerf 0.8.0's gap percentiles are its t-digest's estimate (crick, compression 500, which
    # gives back these numbers); the records hold the gaps themselves: close, not equal, in the tail
    assert got.itl is not None and len(got.itl.values) == doc["inter_chunk_latency"]["count"]
    for q, rel in ((50.0, 0.005), (90.0, 0.005), (95.0, 0.005), (99.0, 0.015)):
        want = doc["inter_chunk_latency"][f"p{q:g}"]
        assert np.percentile(got.itl.values, q) == pytest.approx(want, rel=rel), q


def test_aiperf_requests_it_cancelled_are_failures_said_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--request-cancellation-rate 40`: AIPerf cut 16 of 40 requests short (`was_cancelled`,
    error 499); the run itself went on. The records and the aggregate both say it."""
    path = AIPERF_EARLY / "aiperf_0_13_0_cancellation_rate_profile_export.jsonl"
    cancelled = sum(r["metadata"]["was_cancelled"] for r in _aiperf_records(path))
    assert cancelled == 16
    got = _only(aiperf, path)
    assert got.ok is not None and int((~got.ok).sum()) == cancelled and got.n == 40
    note = got.meta["note"]
    assert isinstance(note, str) and "cancelled 16 of the 40 requests before they completed" in note
    argv = _check_argv(tmp_path, path, BUDGET_P95, "--output", "json")
    report = json.loads(run(argv, capsys)[1])
    assert report["verdict"] == "warn"  # every SLO holds, but 40% of the requests did not finish
    (finding,) = [f for f in report["findings"] if f["kind"] == "failures"]
    message = "the tool cancelled head requests before they completed: 16 of 40 requests failed"
    assert finding["message"] == message
    aggregate = AIPERF_EARLY / "aiperf_0_13_0_cancellation_rate_profile_export_aiperf.json"
    doc = json.loads(aggregate.read_text())
    assert doc["was_cancelled"] is False  # the run was not
    assert doc["error_summary"][0]["error_details"]["type"] == "RequestCancellationError"
    agg = _only(aiperf, aggregate)
    assert agg.meta["failures"] == doc["error_request_count"]["avg"] == cancelled
    argv = _check_argv(tmp_path, aggregate, BUDGET_P95, "--output", "json")
    report = json.loads(run(argv, capsys)[1])
    assert report["verdict"] == "warn" and report["failed"]["head"] == 16
    assert any("16 of 40 requests failed" in f["message"] for f in report["findings"])


def test_aiperf_run_stopped_before_its_end_is_said_to_be_cancelled(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Ctrl-C (SIGINT) 63 requests into a 200-request run: AIPerf 0.13.0 writes the aggregate
    with `was_cancelled`; it must not pass as a finished run."""
    path = AIPERF_EARLY / "aiperf_0_13_0_interrupted_profile_export_aiperf.json"
    doc = json.loads(path.read_text())
    assert doc["was_cancelled"] is True and doc["request_count"]["avg"] == 63
    got = _only(aiperf, path)
    assert "cancelled the run" in str(got.meta["note"])
    argv = _check_argv(tmp_path, path, BUDGET_P95, "--output", "json")
    code, out, _ = run(argv, capsys)
    report = json.loads(out)
    assert code == 0 and report["verdict"] == "warn" and report["requests"]["head"] == 63
    # no `error_request_count`: 0.13's `completed_request_count` (success + error) says none failed
    assert doc["completed_request_count"]["avg"] == 63 and "error_request_count" not in doc
    assert report["failed"]["head"] == 0
    (finding,) = [f for f in report["findings"] if f["kind"] == "failures"]
    message = "the head run was cancelled before it finished: 0 of 63 requests failed"
    assert finding["message"] == message


def test_aiperf_completed_count_below_its_successes_is_refused() -> None:
    """`completed_request_count` is success + error: fewer than the successes is no count."""
    doc = json.loads((SAMPLES / "generated/aiperf/base/profile_export_aiperf.json").read_text())
    assert aiperf.read(json.dumps(doc).encode(), "agg.json", OPTS)[0].meta["failures"] == 0
    doc["completed_request_count"]["avg"] = 99.0
    with pytest.raises(InputError, match=r"key 'completed_request_count' is less than request_c"):
        aiperf.read(json.dumps(doc).encode(), "agg.json", OPTS)


# ---------------------------------------------------------------- vLLM: what some versions write
# Each file is real vLLM output: its `bench serve` / `bench sweep serve` run against
# tools/mock_llm_server.py (tests/data/SOURCES.md gives the version and the command).
VLLM = SAMPLES / "vllm"


def test_vllm_placeholders_of_a_run_where_nothing_completed_are_not_read_as_0_ms(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """vLLM 0.33 with every request answered 500 writes `np.percentile(ttfts or 0, p)`: 0.0 ms."""
    path = VLLM / "vllm_0_33_all_failed_vllm_bench_serve.json"
    doc = json.loads(path.read_text())
    placeholders = [k for k in doc if k.endswith("_ms")]
    assert doc["completed"] == 0 and doc["failed"] == doc["num_prompts"] == 50
    assert placeholders and all(doc[k] == 0.0 for k in placeholders)
    agg = _only(vllm, path)
    assert agg.summary == {} and agg.summary_count == doc["failed"]
    assert agg.meta["failures"] == doc["failed"]
    budget = tmp_path / "b.yml"
    budget.write_text("version: 1\npercentile: 99\nslo: {ttft: 1200}\n")
    code, out, _ = run(
        ["check", "--head", str(path), "--budget", str(budget), "--output", "json"], capsys
    )
    report = json.loads(out)
    assert code == 1 and report["verdict"] == "fail"
    assert report["failed"]["head"] == report["requests"]["head"] == 50
    breach = [f for f in report["findings"] if f["kind"] == "breach"]
    assert breach and "every one of the 50 head requests failed" in breach[0]["message"]
    assert all(r["head_ms"] is None for r in report["slo"])  # no TTFT 0.00 ms "ok"
    unmeasured = [f for f in report["findings"] if f["kind"] == "unmeasured"]
    assert unmeasured and "ttft" in unmeasured[0]["message"]
    assert any("placeholders, not measurements" in n for n in report["notes"])


def test_vllm_run_where_nothing_completed_saved_with_details_is_a_breach(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The same run saved with `--save-detailed` (vLLM 0.33): every request has an error, a
    0.0 TTFT and no gaps. Every row is unmeasured (no slice percentile of zero requests)."""
    path = VLLM / "vllm_0_33_all_failed_detailed_vllm_bench_serve.json"
    doc = json.loads(path.read_text())
    assert doc["completed"] == 0 and all(doc["errors"]) and set(doc["ttfts"]) == {0.0}
    got = _only(vllm, path)
    assert got.n == doc["failed"] == 50 and got.ok is not None and not got.ok.any()
    argv = _check_argv(
        tmp_path,
        path,
        "version: 1\npercentile: 99\nslo: {ttft: 1200}\nslices: {first_token: 500}\n",
        "--output",
        "json",
    )
    code, out, err = run(argv, capsys)
    assert code == 1, err
    report = json.loads(out)
    assert report["failed"]["head"] == report["requests"]["head"] == 50
    breach = [f for f in report["findings"] if f["kind"] == "breach"]
    assert breach and "every one of the 50 head requests failed" in breach[0]["message"]
    rows = report["slo"] + report["slices"]
    assert {r.get("metric", r.get("name")) for r in rows} >= {"ttft", "first_token", "decode"}
    assert all(r["head_ms"] is None for r in rows)
    assert report["summary"]["text"] == "SLO breached"  # not an empty headline


def test_vllm_0_14_without_latencies_reads_the_end_to_end_from_ttfts_and_itls() -> None:
    """vLLM 0.9 to 0.29 write `ttfts` and `itls` but no `latencies`: vLLM's own end to end of
    a streamed request is TTFT plus its gaps, so its percentiles come back."""
    path = VLLM / "vllm_0_14_no_latencies_vllm_bench_serve.json"
    doc = json.loads(path.read_text())
    assert "latencies" not in doc and "ttfts" in doc and "itls" in doc
    got = _only(vllm, path)
    assert got.n == doc["completed"] == 100 and doc["failed"] == 0
    assert got.ttft is not None and got.total is not None and got.itl is not None
    for q in (50, 90, 95, 99):
        assert np.percentile(got.ttft, q) == pytest.approx(doc[f"p{q}_ttft_ms"], rel=1e-9)
        assert np.percentile(got.itl.values, q) == pytest.approx(doc[f"p{q}_itl_ms"], rel=1e-9)
        assert np.percentile(got.total, q) == pytest.approx(doc[f"p{q}_e2el_ms"], rel=0.005)
    assert np.mean(got.total) == pytest.approx(doc["mean_e2el_ms"], rel=0.005)
    note = got.meta["note"]
    assert isinstance(note, str) and "no per-request 'latencies'" in note


def test_vllm_0_11_without_a_failed_key_says_the_failure_count_is_unknown(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """vLLM before 0.12 writes `completed` but no `failed`: 7 of this run's 50 requests got a
    500, which the file does not count. The JSON says null, never 0, and a note names the gap."""
    path = VLLM / "vllm_0_11_no_failed_key_vllm_bench_serve.json"
    doc = json.loads(path.read_text())
    assert "failed" not in doc and (doc["completed"], doc["num_prompts"]) == (43, 50)
    agg = _only(vllm, path)
    assert agg.summary_count == doc["completed"] and "failures" not in agg.meta
    for q, key in ((50.0, "p50"), (95.0, "p95"), (99.0, "p99")):
        assert agg.summary["ttft"][q] == doc[f"{key}_ttft_ms"]
        assert agg.summary["total"][q] == doc[f"{key}_e2el_ms"]
    argv = _check_argv(
        # p95: 43 requests measure it; a p99 needs 100 (issue 35: fewer fail as unmeasured)
        tmp_path,
        path,
        "version: 1\npercentile: 95\nslo: {ttft: 1200, total: 6000}\n",
    )
    report = json.loads(run([*argv, "--output", "json"], capsys)[1])
    assert report["failed"]["head"] is None and report["requests"]["head"] == 43
    (note,) = [n for n in report["notes"] if "no 'failed' key" in n]
    assert "43 of the 50 prompts" in note and "unknown, not 0 (7 not accounted for)" in note
    # and a finding, so the comment and the gate see it (a warning: they may not have failed)
    (finding,) = [f for f in report["findings"] if f["kind"] == "failures"]
    missing = doc["num_prompts"] - doc["completed"]
    assert f"{missing} of the {doc['num_prompts']} head requests asked for" in finding["message"]
    assert not finding["fails"] and report["verdict"] == "warn"
    table = " ".join(run(argv, capsys)[1].split())
    assert "0 failed" not in table and "7 not accounted for" in table


SWEEP = [VLLM / f"vllm_0_33_sweep_decode_{ms}_summary.json" for ms in (10, 12)]


@pytest.mark.parametrize("path", SWEEP, ids=lambda p: p.stem)
def test_vllm_sweep_summary_is_one_scenario_per_run(path: Path) -> None:
    """`vllm bench sweep serve`'s summary.json of one combination: a JSON array of the
    `bench serve` results of its runs, each with its `run_number` and the sweep's setting."""
    doc = json.loads(path.read_text())
    data = path.read_bytes()
    assert isinstance(doc, list) and [r["run_number"] for r in doc] == [0, 1]
    assert detect.detect(data, path.name, OPTS).module is vllm
    runs = detect.read(data, path.name, "auto", OPTS)
    assert [r.scenario for r in runs] == ["concurrency=8, run=0", "concurrency=8, run=1"]
    for got, result in zip(runs, doc, strict=True):
        assert got.summary_count == result["completed"] + result["failed"] == 40
        for key, name in (
            ("p99_ttft_ms", "ttft"),
            ("p99_itl_ms", "itl"),
            ("p99_tpot_ms", "tpot"),
            ("median_e2el_ms", "total"),
            ("p99_e2el_ms", "total"),
        ):
            q = 50.0 if key.startswith("median") else 99.0
            assert got.summary[name][q] == result[key]
        # vLLM 0.33 keeps the per-request `latencies` without --save-detailed: its own p99
        latencies_ms = np.asarray(result["latencies"]) * 1000.0
        for q in (50.0, 99.0):
            want = np.percentile(latencies_ms, q)
            assert got.summary["total"][q] == pytest.approx(want, rel=1e-9)


def test_vllm_sweep_summaries_compare_run_by_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The two server settings of one sweep (decode 10 and 12 ms a token) as base and head:
    each run is its own scenario, with the tool's own p99 on each side."""
    budget = tmp_path / "b.yml"
    budget.write_text("version: 1\npercentile: 99\nslo: {ttft: 2000, total: 6000, itl: 60}\n")
    base, head = SWEEP
    code, report = compare_json(capsys, base, head, budget)
    # 40 requests a run cannot measure a p99 (it needs 100, one above it): each side of each
    # run is an unmeasured side, which fails the gate (issue 35); the tool's p99s are shown
    assert code == 1
    for scenario in report["scenarios"]:
        sides = [f["subject"] for f in scenario["findings"] if f["kind"] == "unmeasured"]
        assert sides == ["base", "head"]
    docs = [json.loads(p.read_text()) for p in SWEEP]
    scenarios = report["scenarios"]
    assert [s["name"] for s in scenarios] == ["concurrency=8, run=0", "concurrency=8, run=1"]
    for number, scenario in enumerate(scenarios):
        assert scenario["requests"] == {"base": 40, "head": 40}
        itl = next(r for r in scenario["slo"] if r["metric"] == "itl")
        want = [d[number]["p99_itl_ms"] for d in docs]
        assert [itl["base_ms"], itl["head_ms"]] == pytest.approx(want, abs=5e-4)  # JSON: 3 places


def test_aggregate_inputs_show_the_files_other_percentiles_and_say_whose_they_are(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    budget = tmp_path / "b.yml"
    budget.write_text("version: 1\npercentile: 95\nslo: {ttft: 1200, total: 6000}\n")
    path = VLLM / "vllm_aggregate_head_vllm_bench_serve.json"
    doc = json.loads(path.read_text())
    argv = ["check", "--head", str(path), "--budget", str(budget), "--output", "json"]
    report = json.loads(run(argv, capsys)[1])
    assert any("percentiles are the tool's own" in n for n in report["notes"])
    (shown,) = [n for n in report["notes"] if n.startswith(f"head {path}")]
    for q in ("p50", "p99"):  # beside the budget's p95; vLLM wrote no p90 here
        assert f"{q} {doc[q + '_ttft_ms']:.0f} ms" in shown.split("; ")[0]
    prom = SAMPLES / "generated/prometheus/vllm-head/metrics_after.prom"
    argv = ["check", "--head", str(prom), "--budget", str(budget), "--output", "json"]
    notes = json.loads(run(argv, capsys)[1])["notes"]
    assert any("estimates from histogram buckets" in n for n in notes)
    assert not any("the tool's own" in n for n in notes)


# ---------------------------------------------------------------- GuideLLM: empty or sampled lists
GUIDELLM = SAMPLES / "guidellm"


@pytest.mark.parametrize(
    ("name", "held"),
    [
        ("guidellm_v2_empty_requests_benchmarks.json", "is empty"),
        ("guidellm_sampled_1_of_100_benchmarks.json", "holds 1"),
    ],
)
def test_guidellm_without_enough_requests_uses_its_own_percentiles(name: str, held: str) -> None:
    path = GUIDELLM / name
    doc = json.loads(path.read_text())
    metrics = doc["benchmarks"][0]["metrics"]
    agg = _only(guidellm, path)
    assert agg.n == 0 and agg.summary_count == metrics["request_totals"]["total"] == 100
    assert agg.meta["failures"] == 0 and agg.meta["schema"] == "v2"
    own = metrics["time_to_first_token_ms"]["successful"]["percentiles"]
    assert agg.summary["ttft"][95.0] == own["p95"] and agg.summary["ttft"][99.9] == own["p999"]
    own = metrics["request_latency"]["successful"]["percentiles"]
    assert agg.summary["total"][50.0] == pytest.approx(own["p50"] * 1000)
    note = agg.meta["note"]
    assert isinstance(note, str) and f"requests.successful {held} of the 100" in note
    # the full list of the same run gives the same p95 within GuideLLM's own rounding of ranks
    full = _only(guidellm, SAMPLES / "generated/guidellm/base/benchmarks.json")
    assert full.ttft is not None
    assert np.percentile(full.ttft, 95) == pytest.approx(agg.summary["ttft"][95.0], rel=0.02)


def test_guidellm_sample_large_enough_is_read_per_request_with_a_note(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """80 of 100 is enough for p95 (72 needed): read per request, and the report says k of n."""
    doc = json.loads((SAMPLES / "generated/guidellm/base/benchmarks.json").read_text())
    requests = doc["benchmarks"][0]["requests"]
    requests["successful"] = requests["successful"][:80]
    path = tmp_path / "benchmarks.json"
    path.write_text(json.dumps(doc))
    argv = _check_argv(tmp_path, path, BUDGET_P95, "--output", "json")
    code, out, err = run(argv, capsys)
    assert code == 0, err
    report = json.loads(out)
    assert report["requests"]["head"] == 80
    assert any("a sample: 80 of the 100 successful requests" in n for n in report["notes"])
    # at p99 (368 needed) the same file gives way to GuideLLM's own percentiles
    argv = _check_argv(tmp_path, path, BUDGET_P95.replace("95", "99"), "--output", "json")
    code, out, err = run(argv, capsys)
    report = json.loads(out)
    assert report["requests"]["head"] == 100
    own = doc["benchmarks"][0]["metrics"]["time_to_first_token_ms"]["successful"]["percentiles"]
    ttft = next(r for r in report["slo"] if r["metric"] == "ttft")
    assert ttft["head_ms"] == pytest.approx(own["p99"], abs=1e-3)
    assert any("too few for p99" in n for n in report["notes"])


GUIDELLM_WARMUP = GUIDELLM / "guidellm_v0_5_warmup_cooldown_benchmarks"  # .json and .yaml


def test_guidellm_leaves_out_warm_up_and_cool_down_as_its_statistics_do(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """GuideLLM 0.5.0 run with `--warmup 0.1 --cooldown 0.1`: its lists hold every request
    (57 successful, 3 errored), its statistics count those in the measured period."""
    path = GUIDELLM_WARMUP.with_suffix(".json")
    bench = json.loads(path.read_text())["benchmarks"][0]
    metrics, scheduler = bench["metrics"], bench["scheduler_metrics"]
    start, end = scheduler["measure_start_time"], scheduler["measure_end_time"]

    def counted(status: str) -> list[dict[str, float]]:
        return [
            r
            for r in bench["requests"][status]
            if r["request_end_time"] >= start and r["request_start_time"] <= end
        ]

    listed = bench["requests"]["successful"]
    assert (len(listed), len(bench["requests"]["errored"])) == (57, 3)
    totals = metrics["request_totals"]
    assert (len(counted("successful")), len(counted("errored"))) == (48, 2)
    assert (totals["successful"], totals["errored"]) == (48, 2)
    got = _only(guidellm, path)
    assert got.n == 50 and got.ok is not None and int(got.ok.sum()) == 48
    assert got.ttft is not None and got.total is not None
    ok = got.ok
    # the same requests as GuideLLM's: its means, and its percentiles (the nearest rank,
    # numpy's inverted_cdf, is how GuideLLM 0.5 takes them), come back exactly
    for metric, values, scale in (
        ("time_to_first_token_ms", got.ttft[ok], 1.0),
        ("request_latency", got.total[ok], 1000.0),
    ):
        own = metrics[metric]["successful"]
        assert own["count"] == 48
        assert np.mean(values) == pytest.approx(own["mean"] * scale, rel=1e-9)
        for q in (90.0, 95.0, 99.0):
            want = own["percentiles"][f"p{q:g}"] * scale
            assert np.percentile(values, q, method="inverted_cdf") == pytest.approx(want)
    # all 57 listed would give another mean
    every = np.mean([r["time_to_first_token_ms"] for r in listed])
    assert every != pytest.approx(metrics["time_to_first_token_ms"]["successful"]["mean"])
    note = got.meta["note"]
    assert (
        isinstance(note, str) and "10 of the 60 listed requests ran in GuideLLM's warm-up" in note
    )
    # the report's p95 (budgetdiff's linear interpolation) is within 0.5% of GuideLLM's own
    argv = _check_argv(tmp_path, path, BUDGET_P95, "--output", "json")
    code, out, err = run(argv, capsys)
    assert code == 0, err
    report = json.loads(out)
    assert report["requests"]["head"] == 50 and report["failed"]["head"] == 2
    rows = {r["metric"]: r["head_ms"] for r in report["slo"]}
    own_ttft = metrics["time_to_first_token_ms"]["successful"]["percentiles"]["p95"]
    own_total = metrics["request_latency"]["successful"]["percentiles"]["p95"] * 1000
    assert rows["ttft"] == pytest.approx(own_ttft, rel=0.005)
    assert rows["total"] == pytest.approx(own_total, rel=0.005)


def test_guidellm_0_8_counts_the_requests_of_request_totals() -> None:
    """GuideLLM 0.8.1, the same run: 60 listed, 49 counted. 0.8 windows TTFT by the first
    token, not the request's end (`GenerativeMetrics.compile`): one request whose first token
    came before the measured period counts in `request_totals` and `request_latency` but not in
    `time_to_first_token_ms` (46 of 47). budgetdiff keeps one set of requests, request_totals'."""
    path = GUIDELLM / "guidellm_v0_8_warmup_cooldown_benchmarks.json"
    bench = json.loads(path.read_text())["benchmarks"][0]
    metrics, scheduler = bench["metrics"], bench["scheduler_metrics"]
    start, end = scheduler["measure_start_time"], scheduler["measure_end_time"]
    listed = bench["requests"]["successful"]
    assert (len(listed), len(bench["requests"]["errored"])) == (58, 2)
    totals = metrics["request_totals"]
    assert (totals["successful"], totals["errored"]) == (47, 2)
    got = _only(guidellm, path)
    assert got.n == 49 and got.ok is not None and int(got.ok.sum()) == 47
    assert got.meta["tool_version"] == "0.8.1" and got.meta["schema"] == "v2"
    assert got.ttft is not None and got.total is not None
    latency = metrics["request_latency"]["successful"]
    assert latency["count"] == 47
    total = got.total[got.ok]
    assert np.mean(total) == pytest.approx(latency["mean"] * 1000, rel=1e-9)
    for q in (50.0, 90.0, 95.0, 99.0):  # nearest rank, as GuideLLM takes them
        want = latency["percentiles"][f"p{q:g}"] * 1000
        assert np.percentile(total, q, method="inverted_cdf") == pytest.approx(want)
    # TTFT: GuideLLM's own set is the requests whose first token is in the measured period
    ttft = metrics["time_to_first_token_ms"]["successful"]
    first = [
        r["time_to_first_token_ms"]
        for r in listed
        if r["info"]["timings"]["first_token_iteration"] >= start and r["request_start_time"] <= end
    ]
    assert ttft["count"] == len(first) == 46
    assert np.mean(first) == pytest.approx(ttft["mean"], rel=1e-9)
    # budgetdiff's 47 give GuideLLM's p95 within 0.5% all the same
    assert np.percentile(got.ttft[got.ok], 95) == pytest.approx(
        ttft["percentiles"]["p95"], rel=0.005
    )


def test_guidellm_0_8_larger_run_matches_its_own_percentiles_within_half_a_percent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """GuideLLM 0.8.1, 400 requests with a warm-up and a cool-down: on a run this size GuideLLM's
    nearest-rank percentiles and budgetdiff's interpolated ones agree within 0.5% (on the
    50-request runs above they may not: the difference is the definition, not the requests)."""
    path = GUIDELLM / "guidellm_v0_8_400_requests_benchmarks.json"
    bench = json.loads(path.read_text())["benchmarks"][0]
    metrics = bench["metrics"]
    listed = len(bench["requests"]["successful"]) + len(bench["requests"]["errored"])
    totals = metrics["request_totals"]
    assert listed == 400 and totals["total"] == 330 and totals["errored"] == 15
    argv = _check_argv(
        tmp_path,
        path,
        "version: 1\npercentile: 95\nslo: {ttft: 1000, total: 5000}\n",
        "--output",
        "json",
    )
    code, out, err = run(argv, capsys)
    assert code == 0, err
    report = json.loads(out)
    assert (report["requests"]["head"], report["failed"]["head"]) == (330, 15)
    rows = {r["metric"]: r for r in report["slo"]}
    for metric, key, scale in (
        ("ttft", "time_to_first_token_ms", 1),
        ("total", "request_latency", 1000),
    ):
        own = metrics[key]["successful"]["percentiles"]
        assert rows[metric]["head_ms"] == pytest.approx(own["p95"] * scale, rel=0.005)
        for q in (50, 90, 99):
            got = rows[metric]["percentiles"][f"p{q}"]["head_ms"]
            assert got == pytest.approx(own[f"p{q}"] * scale, rel=0.005), (metric, q)


def test_guidellm_yaml_output_of_the_same_run_reads_as_its_json() -> None:
    """GuideLLM 0.5 writes YAML with `yaml.dump` (keys sorted: `metadata` and `type_` come
    last, past the sniffed head): detected, and the same requests and numbers as the JSON."""
    from_json = _only(guidellm, GUIDELLM_WARMUP.with_suffix(".json"))
    from_yaml = _only(guidellm, GUIDELLM_WARMUP.with_suffix(".yaml"))
    assert from_yaml.n == from_json.n == 50
    for name in ("ttft", "total", "ok", "start_time", "output_tokens", "request_id"):
        np.testing.assert_array_equal(getattr(from_yaml, name), getattr(from_json, name))
    for name in from_json.slices:
        np.testing.assert_array_equal(from_yaml.slices[name], from_json.slices[name])
    same = {k: v for k, v in from_json.meta.items() if k != "note"}
    assert {k: v for k, v in from_yaml.meta.items() if k != "note"} == same
    assert same["tool_version"] == "0.5.0"


def test_guidellm_yaml_report_reads_as_its_json_twin() -> None:
    """GuideLLM's own fixture pair (0.3 schema): the same report as YAML and as JSON. Its
    authors cut the list to 1 of the 46 requests (`request_totals`), too few for p95: both
    give GuideLLM's own percentiles."""
    from_yaml = _only(guidellm, GUIDELLM / "guidellm_v0_3_benchmarks_stripped.yaml")
    from_json = _only(guidellm, GUIDELLM / "guidellm_v0_3_benchmarks_stripped.json")
    assert from_yaml.summary == from_json.summary
    assert from_yaml.summary_count == from_json.summary_count == 46
    doc = json.loads((GUIDELLM / "guidellm_v0_3_benchmarks_stripped.json").read_text())
    own = doc["benchmarks"][0]["metrics"]["time_to_first_token_ms"]["successful"]["percentiles"]
    assert (
        from_yaml.summary["ttft"][95.0] == own["p95"]
        and from_yaml.summary["ttft"][99.0] == own["p99"]
    )
    assert "holds 1 of the 46" in str(from_yaml.meta["note"])
    # 0.3 keeps the 50th percentile as `median` only, not in `percentiles`: read from there
    ttft = doc["benchmarks"][0]["metrics"]["time_to_first_token_ms"]["successful"]
    assert "p50" not in ttft["percentiles"]
    assert from_yaml.summary["ttft"][50.0] == from_json.summary["ttft"][50.0] == ttft["median"]


def test_aggregate_guidellm_shows_its_p50_beside_the_budgets_percentile(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = GUIDELLM / "guidellm_v0_3_benchmarks_stripped.yaml"
    doc = json.loads((GUIDELLM / "guidellm_v0_3_benchmarks_stripped.json").read_text())
    ttft = doc["benchmarks"][0]["metrics"]["time_to_first_token_ms"]["successful"]
    argv = _check_argv(tmp_path, path, BUDGET_P95, "--output", "json")
    report = json.loads(run(argv, capsys)[1])
    (shown,) = [n for n in report["notes"] if n.startswith(f"head {path}")]
    ttft_part = shown.split("; ")[0]
    for q, value in (("p50", ttft["median"]), ("p90", ttft["percentiles"]["p90"])):
        assert f"{q} {value:.1f} ms" in ttft_part


def test_yaml_anchors_are_refused_not_expanded() -> None:
    bomb = b"benchmarks:\n- type_: generative_benchmark\n  a: &a [x, x]\n  b: [*a, *a]\n"
    with pytest.raises(InputError, match="line 3 uses a YAML anchor or alias"):
        guidellm.read(bomb, "benchmarks.yaml", OPTS)


def test_inference_perf_report_kept_as_yaml_reads_as_its_json_twin() -> None:
    yaml_path = SAMPLES / "inference-perf" / "inference_perf_vllm_summary_lifecycle_metrics.yaml"
    json_path = SAMPLES / "fetched" / "inference-perf" / "vllm_summary_lifecycle_metrics.json"
    from_yaml, from_json = _only(inference_perf, yaml_path), _only(inference_perf, json_path)
    assert from_yaml.summary == from_json.summary and from_yaml.summary
    assert from_yaml.summary_count == from_json.summary_count == 38717
    assert from_yaml.meta == from_json.meta


INFERENCE_PERF_07 = SAMPLES / "inference-perf" / "inference_perf_v0_7"


def test_inference_perf_counts_its_failures_among_the_requests() -> None:
    """inference-perf 0.7.0, 60 requests of which 5 failed (the server's 500s): 60 requests,
    not the 55 of `successes.count`, as every other reader counts them."""
    path = Path(f"{INFERENCE_PERF_07}_stage_0_lifecycle_metrics.json")
    doc = json.loads(path.read_text())
    assert (doc["successes"]["count"], doc["failures"]["count"]) == (55, 5)
    assert doc["load_summary"]["count"] == 60
    agg = _only(inference_perf, path)
    assert agg.summary_count == 60 and agg.meta["failures"] == 5


def test_inference_perf_benchmark_report_yaml_reads_as_its_json_twin() -> None:
    """From 0.7 inference-perf writes each stage also as an llm-d benchmark report (BR 0.2.1,
    YAML): the same numbers as the stage's JSON, in seconds with their units, and more
    percentiles (p0p1 ... p99p9)."""
    yaml_path = Path(f"{INFERENCE_PERF_07}_partial_stage_0.yaml")
    json_path = Path(f"{INFERENCE_PERF_07}_stage_0_lifecycle_metrics.json")
    from_yaml, from_json = _only(inference_perf, yaml_path), _only(inference_perf, json_path)
    assert from_yaml.summary_count == from_json.summary_count == 60
    assert from_yaml.meta["failures"] == from_json.meta["failures"] == 5
    assert from_yaml.scenario == from_json.scenario == "stage 0"
    assert from_yaml.meta["schema"] == "llm-d benchmark report 0.2.1"
    assert (
        set(from_yaml.summary)
        == set(from_json.summary)
        == {
            "ttft",
            "first_token",
            "total",
            "itl",
            "tpot",
        }
    )
    latency = json.loads(json_path.read_text())["successes"]["latency"]
    for name, metric in (("ttft", "time_to_first_token"), ("total", "request_latency")):
        for q, key in ((50.0, "median"), (90.0, "p90"), (95.0, "p95"), (99.0, "p99")):
            want = latency[metric][key] * 1000
            assert from_yaml.summary[name][q] == from_json.summary[name][q] == want
    assert {0.1, 1.0, 5.0, 25.0, 75.0, 99.9} <= set(from_yaml.summary["ttft"])


def test_inference_perf_benchmark_report_units_are_read_not_assumed() -> None:
    path = Path(f"{INFERENCE_PERF_07}_partial_stage_0.yaml")
    doc = yaml.safe_load(path.read_text())
    ttft = doc["results"]["request_performance"]["aggregate"]["latency"]["time_to_first_token"]
    want = ttft["p95"] * 1000
    ttft.update({k: v * 1000 for k, v in ttft.items() if k != "units"}, units="ms")
    got = inference_perf.read(yaml.safe_dump(doc).encode(), "br.yaml", OPTS)[0]
    assert got.summary["ttft"][95.0] == pytest.approx(want)
    # llm-d's own reports name the load generator under `scenario.load.standardized`
    doc["scenario"] = {"load": {"standardized": {"tool": "guidellm", "tool_version": "0.5.0"}}}
    got = inference_perf.read(yaml.safe_dump(doc).encode(), "br.yaml", OPTS)[0]
    assert (got.meta["tool"], got.meta["tool_version"]) == ("guidellm", "0.5.0")
    ttft["units"] = "minutes"
    with pytest.raises(InputError, match=r"time_to_first_token\.units is 'minutes'"):
        inference_perf.read(yaml.safe_dump(doc).encode(), "br.yaml", OPTS)


# ---------------------------------------------------------------- inference-perf's TPOT
@pytest.mark.parametrize("side", ["base", "head"])
def test_inference_perf_tpot_is_the_one_its_summary_uses(
    side: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """inference-perf's summary: TPOT = (last token - first token) / (tokens - 1); not from
    end_time, which comes after the last token (the usage chunk, the end of the stream)."""
    folder = SAMPLES / "generated/inference-perf" / side
    path = folder / "per_request_lifecycle_metrics.json"
    summary = json.loads((folder / "summary_lifecycle_metrics.json").read_text())
    records = _only(inference_perf, path)
    assert records.n == summary["successes"]["count"] + summary["failures"]["count"] == 100
    assert records.tpot is not None
    own = summary["successes"]["latency"]["time_per_output_token"]
    for q, name in ((50.0, "median"), (90.0, "p90"), (95.0, "p95"), (99.0, "p99")):
        assert np.percentile(records.tpot, q) == pytest.approx(own[name] * 1000)
    assert np.mean(records.tpot) == pytest.approx(own["mean"] * 1000)
    # and so does the report, at the budget's percentile
    argv = _check_argv(
        tmp_path,
        path,
        "version: 1\npercentile: 90\nslo: {ttft: 1200, total: 6000}\n",
        "--output",
        "json",
    )
    code, out, err = run(argv, capsys)
    assert code == 0, err
    tpot = next(r for r in json.loads(out)["slo"] if r["metric"] == "tpot")
    assert tpot["head_ms"] == pytest.approx(own["p90"] * 1000, abs=1e-3)


# ---------------------------------------------------------------- Prometheus: requests in flight
def test_prometheus_scrape_with_requests_in_flight(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """TTFT counts 42 requests (past their first token), the rest 38 (finished): a note, and a
    percentile in the first bucket is too coarse, with the file's own _sum/_count beside it."""
    path = SAMPLES / "prometheus" / "prometheus_in_flight_vllm_metrics.prom"
    text = path.read_text()

    def own(name: str, suffix: str) -> float:
        line = next(x for x in text.splitlines() if x.startswith(f"vllm:{name}_{suffix}{{"))
        return float(line.rsplit(" ", 1)[1])

    scrape = _only(prometheus, path)
    assert {k: float(h.counts.sum()) for k, h in scrape.histograms.items()} == {
        "ttft": own("time_to_first_token_seconds", "count"),
        "total": own("e2e_request_latency_seconds", "count"),
        "queue": own("request_queue_time_seconds", "count"),
        "prefill": own("request_prefill_time_seconds", "count"),
        "decode": own("request_decode_time_seconds", "count"),
        "tpot": own("request_time_per_output_token_seconds", "count"),
    }
    assert (scrape.histograms["ttft"].counts.sum(), scrape.summary_count) == (42, 38)
    budget = tmp_path / "b.yml"
    budget.write_text(
        "version: 1\npercentile: 95\nslo: {ttft: 1200, total: 6000}\n"
        "slices: {queue: 100, prefill: 300, decode: 2000}\n"
    )
    argv = ["check", "--head", str(path), "--budget", str(budget), "--output", "json"]
    code, out, err = run(argv, capsys)
    assert code == 0, err
    report = json.loads(out)
    assert report["requests"]["head"] == 38
    (note,) = [n for n in report["notes"] if "count different requests" in n]
    assert "ttft 42" in note and "total 38" in note and "not compared with each other" in note
    rows = {r["name"]: r for r in report["slices"]}
    queue_mean = own("request_queue_time_seconds", "sum") * 1000 / 38
    assert rows["queue"]["head_ms"] is None  # (0, 300] ms says nothing of a ~20 ms queue
    (said,) = rows["queue"]["notes"]
    assert "first bucket (0, 300] ms: too coarse" in said and f"{queue_mean:.3g} ms" in said
    ttft = next(r for r in report["slo"] if r["metric"] == "ttft")
    assert 100 < ttft["head_ms"] <= 250  # the bucket p95 falls in, from the file's own counts


def test_schema_named_by_the_file_is_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = json.loads((SAMPLES / "generated/aiperf/head/profile_export_aiperf.json").read_text())
    doc["schema_version"] = "<img src=x>"
    doc["aiperf_version"] = "**[x](http://e.vil)**"
    path = tmp_path / "profile_export_aiperf.json"
    path.write_text(json.dumps(doc))
    argv = _check_argv(tmp_path, path, BUDGET_P95, "--output", "markdown")
    code, out, err = run(argv, capsys)
    assert code == 0, err
    footer = out.rstrip().splitlines()[-1]
    assert footer.startswith("<sub>read: head aiperf (schema ")
    assert "<img" not in out and "](http" not in footer and "**" not in footer
