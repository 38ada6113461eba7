"""Make `tests/data/aiperf/aiperf_0_3_profile_export_aiperf.json`: an aggregate in the shape of
AIPerf 0.2 / 0.3 (November 2025), which has no `schema_version` or `aiperf_version`.

    python tools/aiperf_nov2025_sample.py

No published aggregate of those versions could be found. AIPerf 0.3.0's writer
(`exporters/metrics_json_exporter.py`, the PyPI wheel) dumps `JsonExportData(input_config,
was_cancelled, error_summary, start_time, end_time)` with each metric set as
`MetricResult.to_json_result()` (`unit` and the `STAT_KEYS` avg, min, max, p1 ... p99, std),
`exclude_unset=True`. This takes the real `generated/aiperf/base` aggregate (AIPerf 0.13.0)
and keeps what 0.3.0 writes: the metrics `JsonExportData` declares, each with `unit` and the
`STAT_KEYS` (0.13's later `count` / `sum` dropped), then `was_cancelled`, `error_summary`,
`start_time`, `end_time`. The version keys, 0.13's newer metrics and `input_config` (0.13's
shape) are left out; every number kept is the tool's.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parents[1] / "tests" / "data"
# AIPerf 0.3.0 common/models/export_models.py JsonExportData, in its order
METRICS = [
    "request_throughput",
    "request_latency",
    "request_count",
    "time_to_first_token",
    "time_to_second_token",
    "inter_token_latency",
    "output_token_throughput",
    "output_token_throughput_per_user",
    "output_sequence_length",
    "input_sequence_length",
    "goodput",
    "good_request_count",
    "output_token_count",
    "reasoning_token_count",
    "min_request_timestamp",
    "max_response_timestamp",
    "inter_chunk_latency",
    "total_output_tokens",
    "total_reasoning_tokens",
    "benchmark_duration",
    "total_isl",
    "total_osl",
    "error_request_count",
    "error_isl",
    "total_error_isl",
]
STAT_KEYS = [
    "avg",
    "min",
    "max",
    "p1",
    "p5",
    "p10",
    "p25",
    "p50",
    "p75",
    "p90",
    "p95",
    "p99",
    "std",
]  # common/constants.py


def nov2025(doc: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in METRICS:
        if name in doc:
            stats = doc[name]
            out[name] = {"unit": stats["unit"], **{k: stats.get(k) for k in STAT_KEYS}}
    for name in ("was_cancelled", "error_summary", "start_time", "end_time"):
        out[name] = doc[name]
    return out


def main() -> None:
    doc = json.loads((DATA / "generated/aiperf/base/profile_export_aiperf.json").read_text())
    path = DATA / "aiperf" / "aiperf_0_3_profile_export_aiperf.json"
    path.write_text(json.dumps(nov2025(doc), indent=2))
    print(path)


if __name__ == "__main__":
    main()
