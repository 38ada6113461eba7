"""Client-side benchmark readers against the real tool outputs in tests/data."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from budgetdiff.errors import InputError
from budgetdiff.formats import ReadOptions, aiperf, genai_perf, guidellm, llmperf, sglang, vllm
from budgetdiff.table import Run
from tests.support.paths import SAMPLES, sample_files, sample_roots

GEN = SAMPLES / "generated"
LLMPERF = SAMPLES / "fetched" / "llmperf"
MODULES = (vllm, sglang, aiperf, genai_perf, guidellm, llmperf)

# Which sample files each reader owns (every other sample file must not sniff as it).
OWN = {
    "vllm": ["generated/vllm/*/vllm_bench_serve.json", "vllm/vllm_*"],
    "sglang": ["generated/sglang/*/sglang_bench_serving.jsonl", "sglang/sglang_aggregate_*"],
    "aiperf": [
        "generated/aiperf/*/profile_export.jsonl",
        "generated/aiperf/*/profile_export_aiperf.json",
        "generated/aiperf/*/profile_export_aiperf.csv",
        "aiperf/aiperf_*",
    ],
    "genai-perf": [
        "generated/genai-perf/*/profile_export.json",
        "generated/genai-perf/*/profile_export_genai_perf.json",
    ],
    "guidellm": ["generated/guidellm/*/benchmarks.json", "guidellm/guidellm_*"],
}


def _own_files(module: ModuleType) -> set[Path]:
    roots = sample_roots()
    if module is llmperf:
        folders = [root / "fetched" / "llmperf" for root in roots] + [SAMPLES / "llmperf"]
        return {p for folder in folders for p in folder.glob("*.json")}
    return {p for root in roots for pattern in OWN[module.NAME] for p in root.glob(pattern)}


def _read(module: ModuleType, path: Path) -> list[Run]:
    runs: list[Run] = module.read(path.read_bytes(), str(path), ReadOptions())
    return runs


def _one(module: ModuleType, path: Path) -> Run:
    runs = _read(module, path)
    assert len(runs) == 1
    assert runs[0].scenario is None
    return runs[0]


# ---------------------------------------------------------------- detection


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.NAME)
def test_sniff_claims_own_files_and_no_other_sample(module: ModuleType) -> None:
    own = _own_files(module)
    assert own, f"no sample files for {module.NAME}"
    for path in sample_files():
        head = path.read_bytes()[:65536]
        assert module.sniff(head, path.name) == (path in own), path


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.NAME)
def test_sniff_ignores_the_file_name(module: ModuleType) -> None:
    for path in _own_files(module):
        assert module.sniff(path.read_bytes()[:65536], "results.dat")


# ---------------------------------------------------------------- per-request values


@pytest.mark.parametrize("side", ["base", "head"])
@pytest.mark.parametrize(
    ("module", "filename", "total_key"),
    [
        (vllm, "vllm_bench_serve.json", "median_e2el_ms"),
        (sglang, "sglang_bench_serving.jsonl", "median_e2e_latency_ms"),
    ],
    ids=["vllm", "sglang"],
)
def test_vllm_sglang_match_their_printed_aggregates(
    module: ModuleType, filename: str, total_key: str, side: str
) -> None:
    path = GEN / module.NAME / side / filename
    doc = json.loads(path.read_text())
    run = _one(module, path)
    assert run.n == len(doc["ttfts"]) == doc["completed"]
    assert run.ttft is not None and run.total is not None and run.itl is not None
    assert np.array_equal(run.slices["first_token"], run.ttft, equal_nan=True)
    assert np.median(run.ttft) == pytest.approx(doc["median_ttft_ms"], rel=1e-9)
    assert np.mean(run.itl.values) == pytest.approx(doc["mean_itl_ms"], rel=1e-9)
    assert np.percentile(run.itl.values, 95) == pytest.approx(doc["p95_itl_ms"], rel=1e-9)
    # SGLang has no end-to-end list: the time to the last token is within 0.1 % of it
    assert np.median(run.total) == pytest.approx(doc[total_key], rel=1e-3)
    assert np.allclose(run.slices["decode"], run.total - run.ttft)
    assert run.itl.offsets[-1] == sum(len(g) for g in doc["itls"])
    assert run.meta["concurrency"] == 8.0
    assert run.output_tokens is not None and run.output_tokens.sum() == doc["total_output_tokens"]
    assert run.succeeded.all()


def test_vllm_start_times_and_meta() -> None:
    run = _one(vllm, GEN / "vllm" / "base" / "vllm_bench_serve.json")
    assert run.start_time is not None and len(run.start_time) == run.n
    assert run.meta["model"] == "mock-model"
    assert run.meta["rate"] == "inf"
    assert run.duration_s == pytest.approx(10.307, abs=0.01)


@pytest.mark.parametrize("side", ["base", "head"])
def test_aiperf_records_match_the_aggregate(side: str) -> None:
    folder = GEN / "aiperf" / side
    run = _one(aiperf, folder / "profile_export.jsonl")
    agg = json.loads((folder / "profile_export_aiperf.json").read_text())
    assert run.n == agg["request_count"]["avg"] == 100
    assert run.ttft is not None and run.total is not None and run.itl is not None
    for name, values in (
        ("time_to_first_token", run.ttft),
        ("request_latency", run.total),
        ("decode_duration", run.slices["decode"]),
        ("inter_chunk_latency", run.itl.values),
    ):
        for p in (50, 95, 99):
            assert np.percentile(values, p) == pytest.approx(agg[name][f"p{p}"], rel=1e-6), name
    assert len(run.itl.values) == agg["inter_chunk_latency"]["count"]
    assert run.request_id is not None and len(set(run.request_id.tolist())) == run.n
    assert run.duration_s == pytest.approx(agg["benchmark_duration"]["avg"], rel=1e-3)


def test_aiperf_request_ids_join_the_server_timings() -> None:
    folder = GEN / "aiperf" / "base"
    run = _one(aiperf, folder / "profile_export.jsonl")
    server = [json.loads(line) for line in (folder / "mock_server_timings.jsonl").open()]
    server_ids = {str(v) for row in server for v in row.values() if isinstance(v, str)}
    assert run.request_id is not None
    assert set(run.request_id.tolist()) <= server_ids


@pytest.mark.parametrize("side", ["base", "head"])
def test_genai_perf_timestamps_match_the_aggregate(side: str) -> None:
    folder = GEN / "genai-perf" / side
    run = _one(genai_perf, folder / "profile_export.json")
    agg = json.loads((folder / "profile_export_genai_perf.json").read_text())
    assert run.n == agg["request_count"]["avg"]
    assert run.ttft is not None and run.total is not None and run.itl is not None
    for p in (50, 90, 99):
        want = agg["time_to_first_token"][f"p{p}"]
        assert np.percentile(run.ttft, p) == pytest.approx(want, rel=1e-6)
        assert np.percentile(run.total, p) == pytest.approx(agg["request_latency"][f"p{p}"], 1e-6)
    # genai-perf's ITL is each request's mean gap: (last - first) / (tokens - 1)
    per_request = (run.total - run.ttft) / 63
    assert np.median(per_request) == pytest.approx(agg["inter_token_latency"]["p50"], rel=1e-6)
    assert np.array_equal(np.diff(run.itl.offsets), np.full(run.n, 63))


def test_genai_perf_base_and_head_differ_in_request_count() -> None:
    base, head = (
        _one(genai_perf, GEN / "genai-perf" / side / "profile_export.json")
        for side in ("base", "head")
    )
    assert (base.n, head.n) == (144, 120)


@pytest.mark.parametrize("side", ["base", "head"])
def test_guidellm_matches_its_statistics(side: str) -> None:
    path = GEN / "guidellm" / side / "benchmarks.json"
    bench = json.loads(path.read_text())["benchmarks"][0]
    run = _one(guidellm, path)
    metrics = bench["metrics"]
    assert run.n == metrics["request_totals"]["total"]
    assert run.ttft is not None and run.total is not None
    ttft_stats = metrics["time_to_first_token_ms"]["successful"]
    # GuideLLM's percentiles use its own interpolation: agree within 1 %
    assert np.median(run.ttft) == pytest.approx(ttft_stats["median"], rel=0.01)
    assert np.mean(run.ttft) == pytest.approx(ttft_stats["mean"], rel=1e-9)
    latency = metrics["request_latency"]["successful"]
    assert np.mean(run.total) == pytest.approx(latency["mean"] * 1000, rel=1e-9)
    assert run.itl is None
    assert run.meta["concurrency"] == 8.0
    assert run.request_id is not None


@pytest.mark.parametrize("provider", ["anyscale", "fireworks", "together"])
def test_llmperf_individual_and_summary(provider: str) -> None:
    rows = _one(llmperf, LLMPERF / f"{provider}_70b_individual_responses.json")
    summary = _one(llmperf, LLMPERF / f"{provider}_70b_summary.json")
    doc = json.loads((LLMPERF / f"{provider}_70b_summary.json").read_text())
    assert rows.n == len(
        json.loads((LLMPERF / f"{provider}_70b_individual_responses.json").read_text())
    )
    assert summary.n == 0 and summary.summary_count == doc["results_num_completed_requests"]
    assert rows.ttft is not None and rows.total is not None
    ok = rows.succeeded
    for p in (50, 90, 99):
        assert np.percentile(rows.ttft[ok], p) == pytest.approx(summary.summary["ttft"][p], 1e-6)
        assert np.percentile(rows.total[ok], p) == pytest.approx(summary.summary["total"][p], 1e-6)
    assert summary.summary["first_token"] == summary.summary["ttft"]
    assert "itl" not in summary.summary and rows.itl is None
    # LLMPerf's inter_token_latency_s is e2e / output tokens (TTFT included): not a TPOT
    assert set(summary.summary) == {"ttft", "first_token", "total"}
    assert "results_inter_token_latency_s_quantiles_p95" in doc


@pytest.mark.parametrize(
    ("module", "filename", "expect"),
    [
        (aiperf, "profile_export_aiperf.json", {"ttft", "first_token", "total", "itl", "decode"}),
        (genai_perf, "profile_export_genai_perf.json", {"ttft", "first_token", "total", "tpot"}),
    ],
    ids=["aiperf", "genai-perf"],
)
def test_aggregates_hold_percentiles_only(
    module: ModuleType, filename: str, expect: set[str]
) -> None:
    path = GEN / module.NAME / "base" / filename
    run = _one(module, path)
    doc = json.loads(path.read_text())
    assert run.n == 0 and not run.per_request
    assert expect <= set(run.summary)
    assert run.summary["ttft"][50.0] == doc["time_to_first_token"]["p50"]
    assert run.summary["total"][99.0] == doc["request_latency"]["p99"]
    assert run.summary_count == int(doc["request_count"]["avg"])
    assert run.meta["model"] == "mock-model" and run.meta["concurrency"] == 8.0


# ---------------------------------------------------------------- base vs head sanity

PAIRS: list[tuple[ModuleType, str, Callable[[Run], np.ndarray]]] = [
    (vllm, "vllm_bench_serve.json", lambda r: _itl(r)),
    (sglang, "sglang_bench_serving.jsonl", lambda r: _itl(r)),
    (aiperf, "profile_export.jsonl", lambda r: _itl(r)),
    (genai_perf, "profile_export.json", lambda r: _itl(r)),
    (guidellm, "benchmarks.json", lambda r: r.slices["decode"]),
]


def _itl(run: Run) -> np.ndarray:
    assert run.itl is not None
    return run.itl.values


@pytest.mark.parametrize(("module", "filename", "gaps"), PAIRS, ids=[p[0].NAME for p in PAIRS])
def test_head_decodes_about_20_percent_slower_and_ttft_is_unchanged(
    module: ModuleType, filename: str, gaps: Callable[[Run], np.ndarray]
) -> None:
    base = _one(module, GEN / module.NAME / "base" / filename)
    head = _one(module, GEN / module.NAME / "head" / filename)
    assert base.ttft is not None and head.ttft is not None
    ratio = np.percentile(gaps(head), 95) / np.percentile(gaps(base), 95)
    assert 1.10 < ratio < 1.45, ratio
    decode = np.median(head.slices["decode"]) / np.median(base.slices["decode"])
    assert 1.12 < decode < 1.28, decode
    assert abs(np.median(head.ttft) / np.median(base.ttft) - 1) < 0.08


# ---------------------------------------------------------------- several scenarios, failures


def test_vllm_appended_runs_are_scenarios_named_by_load(tmp_path: Path) -> None:
    base = json.loads((GEN / "vllm" / "base" / "vllm_bench_serve.json").read_text())
    other = dict(base, max_concurrency=16, request_rate=10.0)
    path = tmp_path / "results.json"
    path.write_text(json.dumps(base) + "\n" + json.dumps(other) + "\n")
    runs = _read(vllm, path)
    assert [r.scenario for r in runs] == ["concurrency=8", "concurrency=16, rate=10.0/s"]
    assert all(r.n == 100 for r in runs)


def test_vllm_failed_request_is_not_ok(tmp_path: Path) -> None:
    doc = json.loads((GEN / "vllm" / "base" / "vllm_bench_serve.json").read_text())
    doc["errors"][3] = "HTTP 500"
    run = vllm.read(json.dumps(doc).encode(), "f.json", ReadOptions())[0]
    assert run.ttft is not None and run.itl is not None
    assert not run.succeeded[3] and run.succeeded.sum() == 99
    assert np.isnan(run.ttft[3]) and run.itl.offsets[4] == run.itl.offsets[3]


def test_guidellm_benchmarks_are_scenarios(tmp_path: Path) -> None:
    doc = json.loads((GEN / "guidellm" / "base" / "benchmarks.json").read_text())
    second = json.loads(json.dumps(doc["benchmarks"][0]))
    second["config"]["strategy"] = {"type_": "constant", "rate": 5}
    third = json.loads(json.dumps(doc["benchmarks"][0]))
    third["config"]["strategy"] = {"type_": "synchronous"}
    doc["benchmarks"] += [second, third]
    runs = guidellm.read(json.dumps(doc).encode(), "b.json", ReadOptions())
    assert [r.scenario for r in runs] == ["concurrency=8", "rate=5.0/s", "synchronous"]


def test_genai_perf_experiments_are_scenarios() -> None:
    doc = json.loads((GEN / "genai-perf" / "base" / "profile_export.json").read_text())
    second = dict(doc["experiments"][0], experiment={"mode": "request_rate", "value": 10})
    doc["experiments"].append(second)
    runs = genai_perf.read(json.dumps(doc).encode(), "p.json", ReadOptions())
    assert [r.scenario for r in runs] == ["concurrency=8", "rate=10.0/s"]


# ---------------------------------------------------------------- broken files

Edit = Callable[[Any], None]


def _set(path: list[Any], value: Any) -> Edit:
    def edit(doc: Any) -> None:
        for step in path[:-1]:
            doc = doc[step]
        doc[path[-1]] = value

    return edit


def _drop(path: list[Any]) -> Edit:
    def edit(doc: Any) -> None:
        for step in path[:-1]:
            doc = doc[step]
        del doc[path[-1]]

    return edit


BROKEN: list[tuple[ModuleType, str, str, Edit, str]] = [
    (vllm, "vllm/base/vllm_bench_serve.json", "missing", _drop(["ttfts"]), "ttfts"),
    (vllm, "vllm/base/vllm_bench_serve.json", "type", _set(["latencies"], "fast"), "latencies"),
    (vllm, "vllm/base/vllm_bench_serve.json", "item", _set(["itls", 2, 0], "0.1"), "itls"),
    (vllm, "vllm/base/vllm_bench_serve.json", "negative", _set(["ttfts", 0], -1.0), "ttfts"),
    (
        vllm,
        "vllm/base/vllm_bench_serve.json",
        "nan",
        _set(["latencies", 5], float("nan")),
        "latencies",
    ),
    (vllm, "vllm/base/vllm_bench_serve.json", "length", _set(["ttfts"], [0.1]), "ttfts"),
    (vllm, "vllm/base/vllm_bench_serve.json", "huge", _set(["ttfts", 1], 10**400), "ttfts"),
    (sglang, "sglang/base/sglang_bench_serving.jsonl", "missing", _drop(["itls"]), "itls"),
    (sglang, "sglang/base/sglang_bench_serving.jsonl", "type", _set(["ttfts"], {"a": 1}), "ttfts"),
    (
        aiperf,
        "aiperf/base/profile_export_aiperf.json",
        "missing",
        _drop(["request_latency"]),
        "request_latency",
    ),
    (
        aiperf,
        "aiperf/base/profile_export_aiperf.json",
        "type",
        _set(["time_to_first_token", "p50"], "x"),
        "time_to_first_token",
    ),
    (
        genai_perf,
        "genai-perf/base/profile_export.json",
        "missing",
        _drop(["experiments", 0, "requests", 3, "response_timestamps"]),
        "response_timestamps",
    ),
    (
        genai_perf,
        "genai-perf/base/profile_export.json",
        "type",
        _set(["experiments", 0, "requests", 1, "timestamp"], "now"),
        "timestamp",
    ),
    (
        genai_perf,
        "genai-perf/base/profile_export_genai_perf.json",
        "missing",
        _drop(["request_latency"]),
        "request_latency",
    ),
    (
        genai_perf,
        "genai-perf/base/profile_export_genai_perf.json",
        "type",
        _set(["request_latency", "p95"], None),
        "request_latency",
    ),
    (
        guidellm,
        "guidellm/base/benchmarks.json",
        "missing",
        _drop(["benchmarks", 0, "requests", "successful", 4, "request_latency"]),
        "request_latency",
    ),
    (
        guidellm,
        "guidellm/base/benchmarks.json",
        "type",
        _set(["benchmarks", 0, "requests", "successful", 2, "time_to_first_token_ms"], "fast"),
        "time_to_first_token_ms",
    ),
    (guidellm, "guidellm/base/benchmarks.json", "top", _set(["benchmarks"], {}), "benchmarks"),
]
BROKEN_LLMPERF: list[tuple[str, str, Edit, str]] = [
    ("anyscale_70b_individual_responses.json", "missing", _drop([7, "ttft_s"]), "ttft_s"),
    (
        "anyscale_70b_individual_responses.json",
        "type",
        _set([2, "end_to_end_latency_s"], "2.5"),
        "end_to_end_latency_s",
    ),
    (
        "anyscale_70b_summary.json",
        "type",
        _set(["results_ttft_s_quantiles_p50"], "x"),
        "results_ttft_s_quantiles_p50",
    ),
]


def _assert_names(exc: pytest.ExceptionInfo[InputError], module: ModuleType, path: Path, k: str):
    message = str(exc.value)
    assert message.startswith(f"{module.NAME}: {path}: "), message
    assert k in message, message
    assert "\n" not in message


@pytest.mark.parametrize(
    ("module", "relpath", "what", "edit", "k"),
    BROKEN,
    ids=[f"{b[0].NAME}-{Path(b[1]).name}-{b[2]}" for b in BROKEN],
)
def test_broken_file_names_format_file_and_key(
    tmp_path: Path, module: ModuleType, relpath: str, what: str, edit: Edit, k: str
) -> None:
    _check_broken(tmp_path, module, GEN / relpath, edit, k)


@pytest.mark.parametrize(("filename", "what", "edit", "k"), BROKEN_LLMPERF)
def test_broken_llmperf(tmp_path: Path, filename: str, what: str, edit: Edit, k: str) -> None:
    _check_broken(tmp_path, llmperf, LLMPERF / filename, edit, k)


def _check_broken(tmp_path: Path, module: ModuleType, sample: Path, edit: Edit, k: str) -> None:
    doc = json.loads(sample.read_text())
    edit(doc)
    path = tmp_path / sample.name
    path.write_text(json.dumps(doc))
    with pytest.raises(InputError) as exc:
        module.read(path.read_bytes(), str(path), ReadOptions())
    _assert_names(exc, module, path, k)


def test_broken_aiperf_record(tmp_path: Path) -> None:
    lines = (GEN / "aiperf" / "base" / "profile_export.jsonl").read_text().splitlines()
    record = json.loads(lines[4])
    del record["metrics"]["request_latency"]
    lines[4] = json.dumps(record)
    record = json.loads(lines[9])
    record["metrics"]["inter_chunk_latency"]["value"] = "fast"
    path = tmp_path / "profile_export.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError) as exc:
        aiperf.read(path.read_bytes(), str(path), ReadOptions())
    _assert_names(exc, aiperf, path, "request_latency")
    assert "line 5" in str(exc.value)
    lines[4] = (GEN / "aiperf" / "base" / "profile_export.jsonl").read_text().splitlines()[4]
    lines[9] = json.dumps(record)
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError) as exc:
        aiperf.read(path.read_bytes(), str(path), ReadOptions())
    _assert_names(exc, aiperf, path, "inter_chunk_latency")


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.NAME)
def test_truncated_files_raise_input_error(tmp_path: Path, module: ModuleType) -> None:
    for sample in sorted(_own_files(module)):
        data = sample.read_bytes()
        path = tmp_path / sample.name
        for cut in (len(data) // 2, len(data) - 3, 10):
            path.write_bytes(data[:cut])
            with pytest.raises(InputError) as exc:
                module.read(path.read_bytes(), str(path), ReadOptions())
            assert str(exc.value).startswith(f"{module.NAME}: {path}: ")


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.NAME)
@pytest.mark.parametrize(
    "data",
    [b"", b"null", b"[1, 2]", b'{"a": 1}', b"\xff\xfe", b"[" * 100000, b"[" + b"9" * 5000 + b"]"],
    ids=str,
)
def test_junk_raises_input_error_not_a_traceback(module: ModuleType, data: bytes) -> None:
    with pytest.raises(InputError, match=f"^{module.NAME}: junk.json: "):
        module.read(data, "junk.json", ReadOptions())
