"""The real tools' files, end to end through the CLI with `--format auto`.

Every generated pair differs only in the server's decode delay (+20%): a correct comparison
finds a decode / inter-token regression, no TTFT regression, and decode owning the change.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import run

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
def test_fetched_files_give_a_report(
    base: str, head: str, samples: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, report = compare(samples / "fetched", tmp_path, capsys, [base], [head])
    assert report["slo"] and all(
        r["head_ms"] is not None for r in report["slo"] if r["metric"] in ("ttft", "total")
    )
    if report["requests"]["head"] and "summary" in head:
        # aggregates: no interval, so never judged silently
        assert all(r["change"] == "inconclusive" for r in report["slo"])
