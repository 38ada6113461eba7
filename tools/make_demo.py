"""Regenerate the demo pair bundled in budgetdiff/demo (fixed seed: the output never changes).

A chat service's per-request slices; head is a change that slows decode for the longest answers
(a batching change: the median is unchanged, the tail is not). Run: python tools/make_demo.py
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

N = 2000
OUT = Path(__file__).resolve().parents[1] / "budgetdiff" / "demo"


def run(seed: int, tail_slowdown: float) -> list[dict[str, object]]:
    prompts = np.random.default_rng(1)  # both runs replay the same prompts
    input_tokens = np.clip(prompts.lognormal(np.log(900), 0.5, N), 20, 8000).round()
    output_tokens = np.clip(prompts.lognormal(np.log(140), 0.35, N), 2, 1024).round()
    rng = np.random.default_rng(seed)
    network = rng.lognormal(np.log(45), 0.35, N)
    queue = rng.exponential(35, N) + rng.binomial(1, 0.05, N) * rng.exponential(120, N)
    prefill = 0.28 * input_tokens * rng.lognormal(0, 0.15, N) + 40
    tpot = rng.lognormal(np.log(16), 0.12, N)
    long = output_tokens >= np.quantile(output_tokens, 0.85)
    tpot = np.where(long, tpot * tail_slowdown, tpot)
    decode = (output_tokens - 1) * tpot
    app = rng.lognormal(np.log(60), 0.3, N)
    start = np.cumsum(rng.exponential(0.25, N))
    return [
        {
            "request_id": f"req-{i:05d}",
            "start_time": f"{start[i]:.3f}",
            "input_tokens": int(input_tokens[i]),
            "output_tokens": int(output_tokens[i]),
            "network_ms": f"{network[i]:.2f}",
            "queue_ms": f"{queue[i]:.2f}",
            "prefill_ms": f"{prefill[i]:.2f}",
            "decode_ms": f"{decode[i]:.2f}",
            "app_ms": f"{app[i]:.2f}",
            "error": "",
        }
        for i in range(N)
    ]


def write(path: Path, rows: list[dict[str, object]]) -> None:
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


if __name__ == "__main__":
    base = run(7, 1.0)
    head = run(8, 1.25)
    head[17]["error"] = "upstream timeout"
    write(OUT / "base.csv", base)
    write(OUT / "head.csv", head)
