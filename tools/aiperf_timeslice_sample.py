"""Make `tests/data/aiperf/aiperf_timeslices_profile_export_aiperf_timeslices.json`: AIPerf's
time-sliced export (`--slice-duration`) of the real `generated/aiperf/base` run.

    python tools/aiperf_timeslice_sample.py

No published time-sliced export could be found. AIPerf 0.3.0 (the PyPI wheel) puts a request
in slice `int(request_start_ns / slice_duration_ns)` (`post_processors/
timeslice_metric_results_processor.py`), numbers the slices 0, 1, ... in time order, summarises
each metric of a slice by `MetricArray.to_result` (`np.percentile(arr, [1, 5, 10, 25, 50, 75,
90, 95, 99])`, `np.mean`, `np.std`, min, max) and writes `TimesliceCollectionExportData`
(`{"timeslices": [{"timeslice_index": i, <metric>: {unit, avg, min, max, p1 ... p99, std}}]}`,
`exclude_unset`). This does the same with a 2-second slice for the metrics budgetdiff reads,
from the run's own records: `time_to_first_token`, `request_latency`, `inter_chunk_latency`
(every gap of the slice's requests), and `request_count` (`avg` only, as a counter).
`input_config` is left out.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

DATA = Path(__file__).resolve().parents[1] / "tests" / "data"
SLICE_NS = 2_000_000_000
QS = [1, 5, 10, 25, 50, 75, 90, 95, 99]


def to_result(values: list[float], unit: str) -> dict[str, Any]:
    """AIPerf's `MetricArray.to_result`, in `JsonMetricResult`'s order."""
    arr = np.array(values, dtype=np.float64)
    ps = np.percentile(arr, QS)
    out: dict[str, Any] = {"unit": unit, "avg": float(np.mean(arr))}
    out |= {"min": float(np.min(arr)), "max": float(np.max(arr))}
    out |= {f"p{q}": float(v) for q, v in zip(QS, ps, strict=True)}
    out["std"] = float(np.std(arr))
    return out


def main() -> None:
    lines = (DATA / "generated/aiperf/base/profile_export.jsonl").read_text().splitlines()
    slices: dict[int, list[dict[str, Any]]] = {}
    for line in lines:
        record = json.loads(line)
        if record["metadata"]["benchmark_phase"] != "profiling" or "error" in record:
            continue
        slices.setdefault(record["metadata"]["request_start_ns"] // SLICE_NS, []).append(record)
    out = []
    for index, key in enumerate(sorted(slices)):
        records = [r["metrics"] for r in slices[key]]
        data: dict[str, Any] = {"timeslice_index": index}
        for name in ("request_latency", "time_to_first_token"):
            data[name] = to_result([m[name]["value"] for m in records], "ms")
        data["request_count"] = {"unit": "requests", "avg": float(len(records))}
        gaps = [g for m in records for g in m["inter_chunk_latency"]["value"]]
        data["inter_chunk_latency"] = to_result(gaps, "ms")
        out.append(data)
    path = DATA / "aiperf" / "aiperf_timeslices_profile_export_aiperf_timeslices.json"
    path.write_text(json.dumps({"timeslices": out}, indent=2))
    print(path, [len(slices[k]) for k in sorted(slices)])


if __name__ == "__main__":
    main()
