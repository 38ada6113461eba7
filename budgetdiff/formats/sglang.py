"""Reader for `python -m sglang.bench_serving --output-file F --output-details` (JSON Lines).

Each line is one benchmark (several lines: scenarios named from their load settings) with the
per-request lists vLLM writes, minus the end-to-end latencies: the total is the time to the
last token (TTFT + the sum of the inter-token gaps) and decode is that sum. The file holds
`Infinity` for an unlimited request rate, which Python's JSON reader accepts.
"""

from __future__ import annotations

import re

from budgetdiff.formats import ReadOptions
from budgetdiff.formats._checks import Ctx
from budgetdiff.formats.vllm import read_results
from budgetdiff.table import Run

NAME = "sglang"
HINT = "a `python -m sglang.bench_serving --output-details` file"

_SGLANG_ANY = re.compile(
    rb'"(?:sharegpt_output_len|random_range_ratio|total_output_tokens_retokenized'
    rb'|mean_e2e_latency_ms|accept_length)"\s*:'
)


def sniff(head: bytes, name: str) -> bool:
    """SGLang writes dataset arguments and `mean_e2e_latency_ms` (vLLM: `mean_e2el_ms`)."""
    has_completed = re.search(rb'"completed"\s*:', head) is not None
    return has_completed and _SGLANG_ANY.search(head) is not None


def read(data: bytes, source: str, options: ReadOptions) -> list[Run]:
    ctx = Ctx(NAME, source, HINT)
    return read_results(data, ctx, tool="sglang.bench_serving", latency_key=None)
