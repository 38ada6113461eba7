"""The real tools' files, end to end through the CLI with `--format auto`.

Every generated pair differs only in the server's decode delay (+20%): a correct comparison
finds a decode / inter-token regression, no TTFT regression, and decode owning the change.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.support.helpers import run

PAIRS = {
    "vllm": ("vllm/{}/vllm_bench_serve.json",),
    "sglang": ("sglang/{}/sglang_bench_serving.jsonl",),
    "aiperf": ("aiperf/{}/profile_export.jsonl",),
    "genai-perf": ("genai-perf/{}/profile_export.json",),
    "guidellm": ("guidellm/{}/benchmarks.json",),
    "inference-perf": ("inference-perf/{}/per_request_lifecycle_metrics.json",),
    "otlp-vllm": ("otlp-json/vllm-{}/vllm_style_server_spans.otlp.json",),
    "otlp-aiperf": ("otlp-json/aiperf-{}/server_spans.otlp.json",),
    "aiperf+otlp": ("aiperf/{}/profile_export.jsonl", "otlp-json/aiperf-{}/server_spans.otlp.json"),
}
BUDGET = "version: 1\npercentile: 95\nslo: {ttft: 1200, total: 6000}\n"


def compare(
    samples: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    base: list[str],
    head: list[str],
    budget: str = BUDGET,
) -> tuple[int, dict]:
    (tmp_path / "budget.yml").write_text(budget)
    argv = ["compare", "--budget", str(tmp_path / "budget.yml"), "--output", "json"]
    for b in base:
        argv += ["--base", str(samples / b)]
    for h in head:
        argv += ["--head", str(samples / h)]
    code, out, err = run(argv, capsys)
    assert code in (0, 1), err
    return code, json.loads(out)


@pytest.mark.parametrize("name", list(PAIRS))
def test_decode_regression_and_no_ttft_regression(
    name: str, samples: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = PAIRS[name]
    gen = samples / "generated"
    code, report = compare(
        gen, tmp_path, capsys, [f.format("base") for f in files], [f.format("head") for f in files]
    )
    slo = {r["metric"]: r for r in report["slo"]}
    slices = {r["name"]: r for r in report["slices"]}
    assert code == 1 and report["verdict"] == "fail"
    assert slices["decode"]["change"] == "regression"
    assert 12 < slices["decode"]["delta_pct"] < 40
    assert slo["ttft"]["change"] in ("none", "improvement")
    per_token = [m for m in ("itl", "tpot") if m in slo]
    assert per_token and all(slo[m]["change"] == "regression" for m in per_token)
    for quiet in ("first_token", "queue", "prefill", "network"):
        if quiet in slices:
            assert slices[quiet]["change"] != "regression", quiet
    # decode owns the change of the tail, and the parts add up
    owner = max(slices.values(), key=lambda r: r["tail_change_ms"])
    assert owner["name"] == "decode"
    assert "decode" in report["headline"]
    assert abs(sum(r["tail_share_pct"] for r in slices.values()) - 100) < 0.5


def test_client_joined_with_server_spans_covers_every_hop(
    samples: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = PAIRS["aiperf+otlp"]
    budget = BUDGET + "slices: {network: 100, queue: 100, prefill: 200, decode: 2000}\n"
    _, report = compare(
        samples / "generated",
        tmp_path,
        capsys,
        [f.format("base") for f in files],
        [f.format("head") for f in files],
        budget,
    )
    names = [r["name"] for r in report["slices"]]
    assert names[:4] == ["network", "queue", "prefill", "decode"]
    network = report["slices"][0]
    assert network["head_ms"] is not None and network["head_ms"] >= 0


def test_prometheus_scrapes_give_rows_and_say_when_buckets_are_too_coarse(
    samples: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    prom = "prometheus/vllm-{}/metrics_{}.prom"
    _, report = compare(
        samples / "generated",
        tmp_path,
        capsys,
        [prom.format("base", "before"), prom.format("base", "after")],
        [prom.format("head", "before"), prom.format("head", "after")],
    )
    slo = {r["metric"]: r for r in report["slo"]}
    slices = {r["name"]: r for r in report["slices"]}
    assert {"ttft", "total"} <= set(slo) and {"queue", "prefill", "decode"} <= set(slices)
    assert report["requests"] == {"base": 96, "head": 96}
    assert slo["ttft"]["change"] == "inconclusive"
    assert any("too coarse" in n for n in slo["ttft"]["notes"])
    assert slices["decode"]["change"] != "none"  # the decode histogram did move buckets


def _own_p95_total_ms(path: Path) -> float:
    """The p95 end to end as the tool itself states it (or, for per-request files, as numpy
    computes it from the file's successful requests): what budgetdiff must report."""
    doc = json.loads(path.read_text())
    if isinstance(doc, list):  # LLMPerf individual responses
        ok = [r["end_to_end_latency_s"] for r in doc if r.get("error_code") is None]
        return float(np.percentile(ok, 95)) * 1000
    if "results_end_to_end_latency_s_quantiles_p95" in doc:  # LLMPerf summary
        return float(doc["results_end_to_end_latency_s_quantiles_p95"]) * 1000
    return float(doc["successes"]["latency"]["request_latency"]["p95"]) * 1000  # inference-perf


@pytest.mark.parametrize(
    "base,head",
    [
        (
            "inference-perf/vllm_summary_lifecycle_metrics.json",
            "inference-perf/vllm-eagle_summary_lifecycle_metrics.json",
        ),
        (
            "inference-perf/vllm_stage_6_lifecycle_metrics.json",
            "inference-perf/vllm-eagle_stage_6_lifecycle_metrics.json",
        ),
        (
            "llmperf/anyscale_70b_individual_responses.json",
            "llmperf/together_70b_individual_responses.json",
        ),
        ("llmperf/anyscale_70b_summary.json", "llmperf/fireworks_70b_summary.json"),
    ],
)
def test_fetched_files_give_the_tools_own_percentiles(
    base: str, head: str, samples: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, report = compare(samples / "fetched", tmp_path, capsys, [base], [head])
    slo = {r["metric"]: r for r in report["slo"]}
    assert {"ttft", "total"} <= set(slo)
    for side, name in (("base", base), ("head", head)):
        want = _own_p95_total_ms(samples / "fetched" / name)
        assert slo["total"][f"{side}_ms"] == pytest.approx(want, rel=1e-3), side
    assert all(slo[m]["head_ms"] > 0 and slo[m]["base_ms"] > 0 for m in ("ttft", "total"))
    if "summary" in head:
        # aggregates: no interval, so never judged silently
        assert all(r["change"] == "inconclusive" for r in slo.values())
