"""Every real sample file under every --format: a report or one clean error, never a crash."""

from __future__ import annotations

from pathlib import Path

import pytest

from budgetdiff.formats.detect import FORMATS
from tests.support.helpers import run
from tests.support.paths import SAMPLES

FILES = [
    "generated/vllm/base/vllm_bench_serve.json",
    "generated/sglang/base/sglang_bench_serving.jsonl",
    "generated/aiperf/base/profile_export.jsonl",
    "generated/aiperf/base/profile_export_aiperf.json",
    "generated/aiperf/base/profile_export_aiperf.csv",
    "generated/genai-perf/base/profile_export.json",
    "generated/genai-perf/base/profile_export_genai_perf.json",
    "generated/guidellm/base/benchmarks.json",
    "generated/inference-perf/base/per_request_lifecycle_metrics.json",
    "generated/inference-perf-otel-console/base/console_spans.txt",
    "generated/otlp-json/vllm-base/vllm_style_server_spans.otlp.json",
    "generated/prometheus/vllm-base/metrics_after.prom",
    "generated/vllm/base/mock_server_timings.jsonl",
    "fetched/llmperf/anyscale_70b_individual_responses.json",
    "fetched/llmperf/anyscale_70b_summary.json",
    "fetched/inference-perf/vllm_summary_prometheus_metrics.json",
    "fetched/otel/trace.json",
    "fetched/otel/metrics.json",
]


@pytest.mark.parametrize("fmt", FORMATS)
def test_any_format_on_any_sample_is_a_report_or_one_clean_error(
    fmt: str, samples: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    budget = tmp_path / "b.yml"
    budget.write_text("version: 1\nslo: {ttft: 1200, total: 6000}\n")
    for name in FILES:
        path = SAMPLES / name
        code, out, err = run(
            [
                "check",
                "--head",
                str(path),
                "--budget",
                str(budget),
                "--format",
                fmt,
                "--output",
                "json",
            ],
            capsys,
        )
        assert code in (0, 1, 2), (name, fmt)
        if code == 2:
            assert err.startswith("budgetdiff: error: ") and str(path) in err, (name, fmt, err)
            assert err.count("\n") == 1 and out == "", (name, fmt, err)
