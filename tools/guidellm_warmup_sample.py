"""Make `tests/data/guidellm/guidellm_warmup_cooldown_benchmarks.json` with GuideLLM's own code.

    pip download --no-deps -d /tmp/gl guidellm==0.5.0 && unzip -q /tmp/gl/*.whl -d /tmp/gl/src
    python tools/guidellm_warmup_sample.py /tmp/gl/src \\
        tests/data/generated/guidellm/base/benchmarks.json \\
        tests/data/guidellm/guidellm_warmup_cooldown_benchmarks.json

No public GuideLLM >= 0.5 file with a warm-up could be found, so this takes the real
`generated/guidellm/base` run (100 requests) and gives it the 1-second warm-up and cool-down
of `--warmup 1 --cooldown 1`: the measured period is [first request + 1 s, last request - 1 s]
(GuideLLM 0.5's `TransientPhaseConfig.compute_transition_time`), the requests counted are
those GuideLLM's `get_within_range` keeps, and `request_totals`, `time_to_first_token_ms` and
`request_latency` are recomputed by GuideLLM 0.5.0's own `DistributionSummary.from_values`
(loaded from the unpacked wheel; it needs only numpy and pydantic). The per-request lists are
kept whole, as GuideLLM writes them; the other metrics are left out (no reader uses them).
Before changing anything it checks that GuideLLM's code gives back the file's own percentiles.
"""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path
from typing import Any

import pydantic


def _distribution_summary(wheel: Path) -> Any:
    """GuideLLM's `DistributionSummary`, with its two base classes stood in by pydantic's."""

    class StandardBaseModel(pydantic.BaseModel):
        model_config = pydantic.ConfigDict(arbitrary_types_allowed=True)

    class StatusBreakdown(StandardBaseModel):
        def __class_getitem__(cls, item: object) -> Any:
            return cls

    base = types.ModuleType("guidellm.schemas.base")
    base.StandardBaseModel = StandardBaseModel  # type: ignore[attr-defined]
    base.StatusBreakdown = StatusBreakdown  # type: ignore[attr-defined]
    for name in ("guidellm", "guidellm.schemas"):
        sys.modules[name] = types.ModuleType(name)
    sys.modules["guidellm.schemas.base"] = base
    stats = types.ModuleType("guidellm.schemas.statistics")
    sys.modules[stats.__name__] = stats
    source = wheel / "guidellm" / "schemas" / "statistics.py"
    exec(compile(source.read_text(), str(source), "exec"), stats.__dict__)
    return stats.DistributionSummary


def main(wheel: Path, source: Path, target: Path) -> None:
    summarise = _distribution_summary(wheel)

    def summary(values: list[float]) -> Any:
        return json.loads(summarise.from_values(values).model_dump_json())

    doc = json.loads(source.read_text())
    bench = doc["benchmarks"][0]
    requests = bench["requests"]["successful"]
    for metric in ("time_to_first_token_ms", "request_latency"):
        got = summary([r[metric] or 0.0 for r in requests])["percentiles"]
        assert got == bench["metrics"][metric]["successful"]["percentiles"], metric
    scheduler = bench["scheduler_metrics"]
    start = scheduler["request_start_time"] + 1.0
    end = scheduler["request_end_time"] - 1.0
    counted = [
        r
        for r in requests
        if r["request_end_time"] >= start
        and (
            r["request_start_time"] <= end
            if r["request_start_time"] is not None
            else r["request_end_time"] <= end
        )
    ]
    scheduler["measure_start_time"], scheduler["measure_end_time"] = start, end
    bench["start_time"], bench["end_time"], bench["duration"] = start, end, end - start
    bench["warmup_duration"] = start - scheduler["request_start_time"]
    bench["cooldown_duration"] = scheduler["request_end_time"] - end
    for phase in ("warmup", "cooldown"):
        bench["config"][phase] = {"percent": None, "value": 1.0, "mode": "prefer_duration"}
    empty = summary([])
    n = len(counted)
    metrics: dict[str, Any] = {
        "request_totals": {"successful": n, "errored": 0, "incomplete": 0, "total": n}
    }
    for metric in ("time_to_first_token_ms", "request_latency"):
        s = summary([r[metric] or 0.0 for r in counted])
        metrics[metric] = {"successful": s, "errored": empty, "incomplete": empty, "total": s}
    bench["metrics"] = metrics
    target.write_text(json.dumps(doc, separators=(",", ":")) + "\n")
    print(f"{target}: {len(requests)} listed, {n} counted")


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]))
