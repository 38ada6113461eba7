"""Make AIPerf's all-failed samples of issue 24 by AIPerf 0.13.0's own writer rules.

    python tools/aiperf_writer_samples.py

No published AIPerf run whose every request failed could be found, so both files are the real
`generated/aiperf/base` run (AIPerf 0.13.0, 100 requests) as AIPerf 0.13.0 (the wheel on PyPI;
0.8.0 is the same in these lines) writes it when every request gets an HTTP 500:

- `aiperf_all_failed_profile_export.jsonl`: each profiling record keeps its `metadata`; its
  `metrics` are `{}` (`error_request_count` is `NO_INDIVIDUAL_RECORDS`, so
  `MetricRecordDict.to_display_dict` leaves it out, and no other metric has a value without a
  response); `error` is `ErrorDetails(code=response.status, type=response.reason,
  message=await response.text())` of `transports/aiohttp_client.py`, with aiohttp's own 500 body;
  the writer dumps `exclude_none=True`.
- `aiperf_all_failed_profile_export_aiperf.json`: `JsonExportData` of `metrics_json_exporter.py`
  (`exclude_unset=True, exclude_none=True`): the run's `schema_version`, `aiperf_version`,
  `benchmark_id`, `start_time`, `end_time`; `error_request_count` (`avg` 100) and
  `error_summary` (one `ErrorDetailsCount` of 100); the metrics AIPerf computes from succeeded
  requests are absent; `input_config` left out (cut).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parents[1] / "tests" / "data"
BODY = "500 Internal Server Error\n\nServer got itself in trouble"  # aiohttp's default
ERROR = {"code": 500, "type": "Internal Server Error", "message": BODY}


def records(lines: list[str]) -> list[dict[str, Any]]:
    out = []
    for line in lines:
        record = json.loads(line)
        out.append({"metadata": record["metadata"], "metrics": {}, "error": ERROR})
    return out


def aggregate(run: dict[str, Any], failed: int) -> dict[str, Any]:
    head = {k: run[k] for k in ("schema_version", "aiperf_version", "benchmark_id")}
    return {
        **head,
        "error_request_count": {"unit": "requests", "avg": float(failed)},
        "was_cancelled": False,
        "error_summary": [{"error_details": ERROR, "count": failed}],
        "start_time": run["start_time"],
        "end_time": run["end_time"],
    }


def main() -> None:
    base = DATA / "generated/aiperf/base"
    lines = (base / "profile_export.jsonl").read_text().splitlines()
    failed = records([line for line in lines if line.strip()])
    out = DATA / "aiperf"
    jsonl = "".join(json.dumps(r, separators=(",", ":")) + "\n" for r in failed)
    (out / "aiperf_all_failed_profile_export.jsonl").write_text(jsonl)
    run = json.loads((base / "profile_export_aiperf.json").read_text())
    text = json.dumps(aggregate(run, len(failed)), indent=2)
    (out / "aiperf_all_failed_profile_export_aiperf.json").write_text(text)
    print(f"{len(failed)} records")


if __name__ == "__main__":
    main()
