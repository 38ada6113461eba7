"""30 minutes of vLLM's latency histograms for three deployments, as OpenMetrics text for
`promtool tsdb create-blocks-from openmetrics` (a backfill: a scrape every 30 s).

vLLM's own names, labels and bucket bounds (vllm/engine/metrics.py: the request-latency
buckets for queue, prefill, decode and end to end; the TTFT buckets). `stable` and `stable-b`
draw their requests from the same distributions (other seeds); `canary`'s decode takes 25%
longer. Each deployment runs two pods, so a side is a `sum by (le)` over series.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

LATENCY_BUCKETS = (0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0,
                   60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0)  # fmt: skip
TTFT_BUCKETS = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5,
                5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0)  # fmt: skip
FAMILIES = {
    "vllm:request_queue_time_seconds": LATENCY_BUCKETS,
    "vllm:request_prefill_time_seconds": LATENCY_BUCKETS,
    "vllm:request_decode_time_seconds": LATENCY_BUCKETS,
    "vllm:time_to_first_token_seconds": TTFT_BUCKETS,
    "vllm:e2e_request_latency_seconds": LATENCY_BUCKETS,
}
DEPLOYMENTS = {"stable": (1, 1.0), "stable-b": (2, 1.0), "canary": (3, 1.25)}  # seed, decode x
# Argo Rollouts' pod label, as Prometheus relabels it (examples/argo/analysis-template.yml)
POD_TEMPLATE_HASH = {"stable": "6d4f8b7c9", "stable-b": "5b8c7d6f4", "canary": "7f9c6d5b8"}
PODS = ("pod-0", "pod-1")
REQUESTS = 1500  # per pod
WINDOW_S = 1800
STEP_S = 30


@dataclass(frozen=True)
class Requests:
    """One pod's requests: when each ended (s) and each slice's time (s)."""

    ended: np.ndarray
    seconds: dict[str, np.ndarray]


def requests(seed: int, decode_factor: float, start: float) -> Requests:
    rng = np.random.default_rng(seed)
    queue = rng.lognormal(np.log(0.12), 0.3, REQUESTS)
    prefill = rng.lognormal(np.log(0.40), 0.35, REQUESTS)
    decode = rng.lognormal(np.log(1.10), 0.30, REQUESTS) * decode_factor
    seconds = {
        "vllm:request_queue_time_seconds": queue,
        "vllm:request_prefill_time_seconds": prefill,
        "vllm:request_decode_time_seconds": decode,
        "vllm:time_to_first_token_seconds": queue + prefill,
        "vllm:e2e_request_latency_seconds": queue + prefill + decode,
    }
    # ends strictly inside the window, so the first scrape (at its start) counts none
    ended = start + rng.uniform(1.0, WINDOW_S - 1.0, REQUESTS)
    return Requests(ended=ended, seconds=seconds)


def openmetrics(end: int) -> tuple[str, dict[str, dict[str, np.ndarray]]]:
    """The backfill file for a window ending at `end` (Unix seconds, a multiple of STEP_S), and
    every deployment's observed values per family (both pods), for the tests' own numbers."""
    start = end - WINDOW_S
    scrapes = np.arange(start, end + 1, STEP_S)
    pods = {
        (name, pod): requests(seed * 10 + i, factor, start)
        for name, (seed, factor) in DEPLOYMENTS.items()
        for i, pod in enumerate(PODS)
    }
    lines: list[str] = []
    for family, bounds in FAMILIES.items():
        lines += [f"# TYPE {family} histogram", f"# HELP {family} vLLM latency, backfilled"]
        for (name, pod), r in pods.items():
            labels = (
                f'instance="{pod}",model_name="mock-model",version="{name}",'
                f'rollouts_pod_template_hash="{POD_TEMPLATE_HASH[name]}"'
            )
            lines += _series(family, labels, bounds, r, scrapes)
    lines.append("# EOF")
    observed = {
        name: {
            family: np.concatenate([pods[(name, pod)].seconds[family] for pod in PODS])
            for family in FAMILIES
        }
        for name in DEPLOYMENTS
    }
    return "\n".join(lines) + "\n", observed


def _series(
    family: str, labels: str, bounds: tuple[float, ...], r: Requests, scrapes: np.ndarray
) -> list[str]:
    values = r.seconds[family]
    out = []
    for t in scrapes:
        done = values[r.ended <= t]
        for le in bounds:
            out.append(f'{family}_bucket{{{labels},le="{le}"}} {int(np.sum(done <= le))} {t}')
        out.append(f'{family}_bucket{{{labels},le="+Inf"}} {len(done)} {t}')
        out.append(f"{family}_count{{{labels}}} {len(done)} {t}")
        out.append(f"{family}_sum{{{labels}}} {float(np.sum(done))!r} {t}")
    return out
