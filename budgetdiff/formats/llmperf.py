"""Reader for LLMPerf's `*_individual_responses.json` (per request) and `*_summary.json`.

Per request (seconds): `ttft_s`, `end_to_end_latency_s`, token counts; a request with an
`error_code` failed. LLMPerf keeps only each request's mean inter-token latency, so there is no
ITL, only decode = total - TTFT. The summary yields a Run with `n == 0` and percentiles of TTFT
and total. Its `inter_token_latency_s` is left out: LLMPerf divides each request's end-to-end
time (TTFT included) by its output tokens, which is neither TPOT ((total - TTFT) / (tokens - 1))
nor a per-token gap.
"""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np

from budgetdiff.formats import ReadOptions
from budgetdiff.formats._checks import (
    Ctx,
    finite,
    key,
    load_json,
    number,
    obj,
    optional_number,
)
from budgetdiff.table import Run

NAME = "llmperf"
HINT = "an LLMPerf `*_individual_responses.json` or `*_summary.json` file"

_INDIVIDUAL = re.compile(rb"^\s*\[\s*\{")
_SUMMARY_KEY = re.compile(rb'"results_(?:ttft_s|end_to_end_latency_s)_quantiles_p\d+"\s*:')
_SUMMARY = {
    "ttft_s": ("ttft", "first_token"),
    "end_to_end_latency_s": ("total",),
}
_QUANTILE = re.compile(r"results_(\w+?)_quantiles_p(\d{1,2}(?:\.\d+)?)")


def sniff(head: bytes, name: str) -> bool:
    """A list of objects with `ttft_s` and `end_to_end_latency_s`, or `results_*_quantiles_*`."""
    if _SUMMARY_KEY.search(head):
        return True
    return (
        _INDIVIDUAL.search(head) is not None
        and re.search(rb'"ttft_s"\s*:', head) is not None
        and re.search(rb'"end_to_end_latency_s"\s*:', head) is not None
    )


def read(data: bytes, source: str, options: ReadOptions) -> list[Run]:
    ctx = Ctx(NAME, source, HINT)
    doc = load_json(data, ctx)
    if isinstance(doc, dict):
        return [_summary(doc, ctx)]
    if not isinstance(doc, list):
        raise ctx.error("top level", "must be a list of requests or a summary object")
    if not doc:
        raise ctx.error("top level", "is an empty list (no requests)")
    n = len(doc)
    ttft = np.full(n, np.nan)
    total = np.full(n, np.nan)
    isl = np.full(n, np.nan)
    osl = np.full(n, np.nan)
    ok = np.ones(n, dtype=bool)
    for i, raw in enumerate(doc):
        row = _plain_row(raw)
        if row is None:  # something to check and name: the checked path
            row = _checked_row(raw, i, ctx)
        ok[i], isl[i], osl[i], ttft[i], total[i] = row
    decode = total - ttft
    bad = ok & (decode < -1e-6)
    if bad.any():
        raise ctx.error(
            f"[{int(np.argmax(bad))}] key 'end_to_end_latency_s'", "is shorter than ttft_s"
        )
    return [
        Run(
            source=source,
            n=n,
            slices={"first_token": ttft, "decode": np.maximum(decode, 0.0)},
            ttft=ttft,
            total=total,
            ok=ok,
            input_tokens=None if np.isnan(isl).all() else isl,
            output_tokens=None if np.isnan(osl).all() else osl,
            meta={"tool": "llmperf", "schema": "individual responses"},
        )
    ]


_Row = tuple[bool, float, float, float, float]  # ok, input and output tokens, ttft, total (ms)


def _plain_row(raw: Any) -> _Row | None:
    """A well-formed request without building a message; None when anything needs a check."""
    if type(raw) is not dict:
        return None
    tokens = [raw.get("number_input_tokens"), raw.get("number_output_tokens")]
    if not all(
        t is None or type(t) is float or (type(t) is int and abs(t) < 1 << 63) for t in tokens
    ):
        return None
    isl, osl = (math.nan if t is None else float(t) for t in tokens)
    if raw.get("error_code") is not None:
        return False, isl, osl, math.nan, math.nan
    ttft, total = raw.get("ttft_s"), raw.get("end_to_end_latency_s")
    if not (type(ttft) is float and type(total) is float):
        return None
    if not (0.0 <= ttft < math.inf and 0.0 <= total < math.inf):
        return None
    return True, isl, osl, ttft * 1000.0, total * 1000.0


def _checked_row(raw: Any, i: int, ctx: Ctx) -> _Row:
    where = f"[{i}]"
    row = obj(raw, where, ctx)
    failed = row.get("error_code") is not None
    isl = optional_number(row.get("number_input_tokens"), f"{where}.number_input_tokens", ctx)
    osl = optional_number(row.get("number_output_tokens"), f"{where}.number_output_tokens", ctx)
    if failed:
        return False, isl, osl, math.nan, math.nan
    ttft_total = []
    for name in ("ttft_s", "end_to_end_latency_s"):
        value = key(row, name, ctx, f"{where} key '{name}'")
        ttft_total.append(number(value, f"{where} key '{name}'", ctx, latency=True) * 1000.0)
    return True, isl, osl, ttft_total[0], ttft_total[1]


def _summary(doc: dict[str, Any], ctx: Ctx) -> Run:
    summary: dict[str, dict[float, float]] = {}
    for name, value in doc.items():
        match = _QUANTILE.fullmatch(name)
        if match is None or match.group(1) not in _SUMMARY:
            continue
        ms = number(value, f"key '{name}'", ctx, latency=True) * 1000.0
        for out in _SUMMARY[match.group(1)]:
            summary.setdefault(out, {})[float(match.group(2))] = ms
    if "ttft" not in summary and "total" not in summary:
        raise ctx.error(
            "key 'results_end_to_end_latency_s_quantiles_p50'", "is missing (no percentiles)"
        )
    count = finite(doc.get("results_num_completed_requests"))
    meta: dict[str, str | float] = {"tool": "llmperf", "schema": "summary"}
    # failures from the summary's own count (the percentiles are of the completed requests)
    errors = finite(doc.get("results_number_errors"))
    started = finite(doc.get("results_num_requests_started"))
    rate = finite(doc.get("results_error_rate"))
    if errors is None and rate is not None and started is not None:
        errors = float(round(rate * started))
    if errors is not None:
        meta["failures"] = errors
        count = started if started is not None else (count or 0.0) + errors
    for out_key, in_key in (("model", "model"), ("provider", "framework"), ("name", "name")):
        value = doc.get(in_key)
        if isinstance(value, str):
            meta[out_key] = value
    concurrency = finite(doc.get("num_concurrent_requests"))
    if concurrency is not None:
        meta["concurrency"] = concurrency
    return Run(
        source=ctx.source,
        n=0,
        summary=summary,
        summary_count=int(count) if count is not None else None,
        meta=meta,
    )
