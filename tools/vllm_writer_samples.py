"""Make the vLLM samples of issue 24 by vLLM's own writer (`vllm/benchmarks/serve.py`).

    python tools/vllm_writer_samples.py

No published vLLM file of these shapes could be found, so both are derived from the real
`generated/vllm/base` run (`vllm bench serve --save-result --save-detailed`, 100 requests) by
what vllm-project/vllm `vllm/benchmarks/serve.py` at def9ce85ba1079af970a58ed3d42dd861ae35d58
writes:

- `vllm_no_latencies_vllm_bench_serve.json`: that version's `benchmark()` result has `ttfts`,
  `itls`, `input_lens`, `output_lens`, `generated_texts`, `errors` but no `latencies`,
  `start_times` or `queue_times` (nor `rtfx`): the run with those four keys removed, every
  other key and number as the tool wrote it.
- `vllm_all_failed_vllm_bench_serve.json`: the same run had every request failed, saved
  without `--save-detailed`: `calculate_metrics` counts `completed` 0 and `failed` 100, the
  token totals and throughputs 0, and writes each statistic of the default percentile
  metrics (`ttft,tpot,itl`, `--metric-percentiles 99`) as `np.mean(ttfts or 0) * 1000` etc.:
  0.0. The header keys (`date` ... `max_concurrency`) and `duration` are the run's.
- `vllm_sweep_summary.json`: a `vllm bench sweep serve` combination's `summary.json` as
  `vllm/benchmarks/sweep/serve.py` (at 0031557f20f592111a8ea7d709730fad151bdae5) writes it:
  `json.dump(comb_data, f, indent=4)`, a list of the runs' results, each with `run_number`
  (`_update_run_data`; no sweep parameters here). The runs are the real `vllm_aggregate_base`
  and `vllm_aggregate_head` results as runs 0 and 1: their numbers are the tool's, but the two
  ran against servers of different decode delays, which one sweep combination would not.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

DATA = Path(__file__).resolve().parents[1] / "tests" / "data"
HEADER = ("date", "endpoint_type", "backend", "label", "model_id", "tokenizer_id", "num_prompts")
TRAFFIC = ("request_rate", "burstiness", "max_concurrency")


def no_latencies(run: dict[str, Any]) -> dict[str, Any]:
    return {
        k: v for k, v in run.items() if k not in ("latencies", "start_times", "queue_times", "rtfx")
    }


def all_failed(run: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {k: run[k] for k in (*HEADER, *TRAFFIC)}
    none: list[float] = []  # no request succeeded: vLLM's lists stay empty
    out |= {
        "duration": run["duration"],
        "completed": 0,
        "failed": run["num_prompts"],
        "total_input_tokens": 0,
        "total_output_tokens": 0,
        "request_throughput": 0 / run["duration"],
        "request_goodput": None,  # no --goodput
        "output_throughput": 0 / run["duration"],
        "total_token_throughput": 0 / run["duration"],
        "max_output_tokens_per_s": 0.0,
        "max_concurrent_requests": 0,
    }
    for metric in ("ttft", "tpot", "itl"):
        out[f"mean_{metric}_ms"] = float(np.mean(none or 0) * 1000)
        out[f"median_{metric}_ms"] = float(np.median(none or 0) * 1000)
        out[f"std_{metric}_ms"] = float(np.std(none or 0) * 1000)
        out[f"p99_{metric}_ms"] = float(np.percentile(none or 0, 99.0) * 1000)
    return out


def sweep_summary(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{**run, "run_number": number} for number, run in enumerate(runs)]


def main() -> None:
    run = json.loads((DATA / "generated/vllm/base/vllm_bench_serve.json").read_text())
    for name, make in (("no_latencies", no_latencies), ("all_failed", all_failed)):
        path = DATA / "vllm" / f"vllm_{name}_vllm_bench_serve.json"
        path.write_text(json.dumps(make(run)))  # json.dump(result_json, outfile), as vLLM
        print(path)
    sides = [
        DATA / "vllm" / f"vllm_aggregate_{side}_vllm_bench_serve.json" for side in ("base", "head")
    ]
    path = DATA / "vllm" / "vllm_sweep_summary.json"
    path.write_text(json.dumps(sweep_summary([json.loads(p.read_text()) for p in sides]), indent=4))
    print(path)


if __name__ == "__main__":
    main()
