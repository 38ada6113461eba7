"""Reader for `vllm bench serve --save-result --save-detailed` files (per-request lists, seconds).

One JSON object per benchmark; several runs appended to one file (one object per line) are
several scenarios, named from their load settings. SGLang's `bench_serving` writes the same
per-request lists, so `budgetdiff.formats.sglang` reuses `read_results`.

Without `--save-detailed` (SGLang: `--output-details`) the tool drops the per-request lists
(`ttfts`, `itls`, `errors`, ...) and keeps its own percentiles, `p99_ttft_ms`, `median_e2el_ms`
(SGLang: `p99_e2e_latency_ms`), `p95_tpot_ms`, `p99_itl_ms`: that object is an aggregate Run.
vLLM 0.33 keeps `latencies` there too (0.30 added them); they are not read: without `errors` a
failed request's 0.0 cannot be told from a measurement. vLLM before 0.12 writes no `failed`:
the failure count is then unknown (a note says how many of `num_prompts` did not complete).
`vllm bench sweep serve` keeps each combination's runs in a `summary.json`: a JSON array of
those results, each with its `run_number` (and the sweep's parameters): one scenario per run,
named from its load and run number.

When nothing completed (`completed` 0) vLLM still writes them, as 0.0 (`np.percentile(ttfts or
0, p)`): placeholders, not measurements, so they are left out and the run is all failures.

vLLM 0.9 to 0.29 (`vllm/benchmarks/serve.py`) write `ttfts` and `itls` but no `latencies`: the
end to end is then TTFT plus the inter-token gaps, as vLLM's own latency of a streamed request
is (within 0.01% of its `p99_e2el_ms` on a real 0.14 run), with a note.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from budgetdiff import numbers as numbers_text
from budgetdiff.formats import ReadOptions
from budgetdiff.formats._checks import (
    Ctx,
    finite,
    iter_json_values,
    literal,
    load_name,
    number,
    number_lists,
    numbers,
    obj,
    same_length,
    unique_names,
)
from budgetdiff.table import BoolArray, FloatArray, Itl, Run

NAME = "vllm"
HINT = "a `vllm bench serve --save-result --save-detailed` file"

_VLLM_KEYS = (b"model_id", b"tokenizer_id")
_VLLM_ANY = re.compile(rb'"(?:burstiness|ttfts|mean_e2el_ms|endpoint_type)"\s*:')
# the tool's own percentiles: p99_ttft_ms, median_e2el_ms, p90_e2e_latency_ms (SGLang), ...
_SUMMARY_KEY = re.compile(r"(median|p(\d+(?:\.\d+)?))_(ttft|tpot|itl|e2el|e2e_latency)_ms")
_SUMMARY_NAMES = {
    "ttft": ("ttft", "first_token"),
    "e2el": ("total",),
    "e2e_latency": ("total",),
    "tpot": ("tpot",),
    "itl": ("itl",),
}
DETAILED = "per request (--save-detailed / --output-details)"
AGGREGATE = "aggregate (no --save-detailed / --output-details)"


def sniff(head: bytes, name: str) -> bool:
    """vLLM names its header keys `model_id`, `tokenizer_id`, `burstiness` (SGLang does not)."""
    has_keys = all(re.search(b'"' + k + rb'"\s*:', head) for k in _VLLM_KEYS)
    return has_keys and _VLLM_ANY.search(head) is not None


def read(data: bytes, source: str, options: ReadOptions) -> list[Run]:
    ctx = Ctx(NAME, source, HINT)
    return read_results(data, ctx, tool="vllm bench serve", latency_key="latencies", sweep=True)


def read_results(
    data: bytes, ctx: Ctx, *, tool: str, latency_key: str | None, sweep: bool = False
) -> list[Run]:
    """Every JSON object of the file as one Run; more than one object means named scenarios.

    `latency_key` names the per-request end-to-end list (seconds); without one (SGLang), the
    total is the time to the last token, TTFT plus the sum of the inter-token gaps. With
    `sweep`, a file that is one JSON array (`vllm bench sweep`'s summary.json) holds the runs.
    """
    values = list(iter_json_values(data, ctx))
    if not values:
        raise ctx.error("", "is empty")
    if sweep and len(values) == 1 and isinstance(values[0][1], list):
        results = [(f"[{i}]: ", item) for i, item in enumerate(values[0][1])]
        if not results:
            raise ctx.error("top level", "is an empty list (a sweep summary without runs)")
    else:
        results = [(f"line {line}: " if len(values) > 1 else "", v) for line, v in values]
    runs, names = [], []
    for prefix, value in results:
        result = obj(value, prefix.rstrip(": ") or "top level", ctx)
        run = _one(result, ctx, prefix, tool, latency_key)
        runs.append(run)
        names.append(_name(run, finite(result.get("run_number"))))
    if len(runs) == 1:
        return runs
    return [_renamed(r, n) for r, n in zip(runs, unique_names(names), strict=True)]


def _name(run: Run, run_number: float | None) -> str:
    """The load settings, and the sweep's run number where the result has one."""
    name = load_name(_conc(run), _rate(run))
    return name if run_number is None else f"{name}, run={numbers_text.given(run_number)}"


def _conc(run: Run) -> float | None:
    value = run.meta.get("concurrency")
    return float(value) if isinstance(value, (int, float)) else None


def _rate(run: Run) -> float | None:
    value = run.meta.get("rate")
    return float(value) if isinstance(value, (int, float)) else None


def _renamed(run: Run, name: str) -> Run:
    return replace(run, scenario=name)


def _one(result: dict[str, Any], ctx: Ctx, prefix: str, tool: str, latency_key: str | None) -> Run:
    detailed = "ttfts" in result or "itls" in result  # one of them alone: a broken file
    if not detailed and any(_SUMMARY_KEY.fullmatch(k) for k in result):
        return _aggregate(result, ctx, prefix, tool)
    lists = _per_request(result, ctx, prefix, latency_key)
    n = lists.n
    errors = lists.errors
    ok = np.array([not e for e in errors], dtype=bool) if errors is not None else np.ones(n, bool)
    ttft = np.where(ok, lists.ttft_s * 1000.0, np.nan)
    gaps_ms = _succeeded_gaps(lists.gaps_s, ok)
    meta = {**_meta(result, tool), "schema": DETAILED}
    if latency_key is not None and lists.total_s is None:
        meta["note"] = (
            f"{ctx.source}: {prefix}no per-request '{latency_key}': end to end is TTFT plus "
            "the inter-token gaps"
        )
    if lists.total_s is not None:
        total = np.where(ok, lists.total_s * 1000.0, np.nan)
        decode = total - ttft
        if (decode < -1e-6).any():
            i = int(np.argmax(decode < -1e-6))
            raise ctx.error(
                f"{prefix}key '{latency_key}'[{i}]",
                f"is shorter than ttfts[{i}] (end to end before the first token)",
            )
        decode = np.maximum(decode, 0.0)
    else:
        decode = np.where(ok, _sums(gaps_ms), np.nan)
        total = ttft + decode
    return Run(
        source=ctx.source,
        n=n,
        slices={"first_token": ttft, "decode": decode},
        ttft=ttft,
        total=total,
        ok=ok,
        input_tokens=lists.input_tokens,
        output_tokens=lists.output_tokens,
        itl=gaps_ms,
        start_time=lists.start_time,
        duration_s=_opt_float(result, "duration"),
        meta=meta,
    )


@dataclass(frozen=True, slots=True)
class _Lists:
    """A detailed result's per-request lists, checked and of one length `n` (seconds)."""

    n: int
    ttft_s: FloatArray
    gaps_s: Itl
    total_s: FloatArray | None
    input_tokens: FloatArray | None
    output_tokens: FloatArray | None
    start_time: FloatArray | None
    errors: list[str] | None


def _per_request(result: dict[str, Any], ctx: Ctx, prefix: str, latency_key: str | None) -> _Lists:
    def need(name: str) -> Any:
        if name not in result:
            extra = " (run with --save-detailed / --output-details)" if name == "ttfts" else ""
            raise ctx.error(f"{prefix}key '{name}'", f"is missing{extra}")
        return result[name]

    ttft_s = numbers(need("ttfts"), f"{prefix}key 'ttfts'", ctx, latency=True)
    itl_lists = need("itls")
    if not isinstance(itl_lists, list):
        raise ctx.error(f"{prefix}key 'itls'", "must be a list of lists (one per request)")
    gaps_s = number_lists(itl_lists, lambda i: f"{prefix}key 'itls'[{i}]", ctx, latency=True)
    lists: dict[str, Any] = {"ttfts": ttft_s, "itls": itl_lists}
    total_s: FloatArray | None = None
    if latency_key is not None and result.get(latency_key) is not None:
        total_s = numbers(result[latency_key], f"{prefix}key '{latency_key}'", ctx, latency=True)
        lists[latency_key] = total_s
    optional = {
        name: _opt_numbers(result, name, ctx, prefix)
        for name in ("input_lens", "output_lens", "start_times")
    }
    lists.update({name: values for name, values in optional.items() if values is not None})
    errors = result.get("errors")
    if errors is not None:
        errors = _strings(errors, f"{prefix}key 'errors'", ctx)
        lists["errors"] = errors
    return _Lists(
        n=same_length(lists, ctx, prefix),
        ttft_s=ttft_s,
        gaps_s=gaps_s,
        total_s=total_s,
        input_tokens=optional["input_lens"],
        output_tokens=optional["output_lens"],
        start_time=optional["start_times"],
        errors=errors,
    )


def _aggregate(result: dict[str, Any], ctx: Ctx, prefix: str, tool: str) -> Run:
    """The tool's own percentiles of a result saved without the per-request lists."""
    summary: dict[str, dict[float, float]] = {}
    completed = finite(result.get("completed"))
    failed = finite(result.get("failed"))
    meta: dict[str, str | float] = {**_meta(result, tool), "schema": AGGREGATE}
    notes = []
    if completed == 0:  # every statistic is vLLM's 0.0 placeholder: nothing was measured
        notes.append(
            f"{ctx.source}: {prefix}no request completed: the file's 0.0 ms percentiles are "
            "placeholders, not measurements"
        )
    asked = finite(result.get("num_prompts"))
    if failed is None and completed is not None and asked is not None and asked > completed:
        notes.append(_uncounted(ctx.source, prefix, completed, asked))
        meta["unaccounted"] = asked - completed  # the judge's `failures` finding
    if notes:
        meta["note"] = "; ".join(notes)
    for name, value in result.items() if completed != 0 else ():
        match = _SUMMARY_KEY.fullmatch(name)
        if match is None or value is None:  # a metric the run had no data for is null
            continue
        q = 50.0 if match.group(1) == "median" else float(match.group(2))
        ms = number(value, f"{prefix}key '{name}'", ctx, latency=True)
        for out in _SUMMARY_NAMES[match.group(3)]:
            summary.setdefault(out, {}).setdefault(q, ms)  # p50 and median are the same
    if failed is not None:
        meta["failures"] = failed
    count = None if completed is None else int(completed + (failed or 0.0))
    return Run(
        source=ctx.source,
        n=0,
        summary=summary,
        summary_count=count,
        duration_s=_opt_float(result, "duration"),
        meta=meta,
    )


def _uncounted(source: str, prefix: str, completed: float, asked: float) -> str:
    """vLLM before 0.12 writes `completed` but no `failed`: the requests that did not complete
    are not counted as failed (the file does not say they were sent), only named."""
    rest = numbers_text.given(asked - completed)
    return (
        f"{source}: {prefix}no 'failed' key (vLLM before 0.12 does not write one): "
        f"{numbers_text.given(completed)} of the {numbers_text.given(asked)} prompts asked for "
        f"(num_prompts) completed; the failure count is unknown, not 0 ({rest} not accounted for)"
    )


def _succeeded_gaps(gaps_s: Itl, ok: BoolArray) -> Itl:
    """The gaps in ms, a failed request's left out."""
    lengths = np.where(ok, np.diff(gaps_s.offsets), 0)
    offsets = np.concatenate([np.zeros(1, dtype=np.int64), np.cumsum(lengths)])
    values = gaps_s.values if ok.all() else gaps_s.values[np.repeat(ok, np.diff(gaps_s.offsets))]
    return Itl(values=values * 1000.0, offsets=offsets)


def _sums(itl: Itl) -> FloatArray:
    """Each request's gaps summed (0 for a request without gaps)."""
    out = np.zeros(len(itl.offsets) - 1)
    has = np.diff(itl.offsets) > 0
    if has.any():
        out[has] = np.add.reduceat(itl.values, itl.offsets[:-1][has])
    return out


def _opt_numbers(result: dict[str, Any], name: str, ctx: Ctx, prefix: str) -> FloatArray | None:
    value = result.get(name)
    if value is None:
        return None
    return numbers(value, f"{prefix}key '{name}'", ctx, latency=True)


def _strings(value: Any, where: str, ctx: Ctx) -> list[str]:
    if not isinstance(value, list):
        raise ctx.error(where, "must be a list of strings (one per request)")
    out = []
    for i, item in enumerate(value):
        item = literal(item)  # a NaN stays what it is: not a string
        if item is None:
            item = ""
        if not isinstance(item, str):
            raise ctx.error(f"{where}[{i}]", "must be a string (the error text, empty if none)")
        out.append(item)
    return out


def _opt_float(result: dict[str, Any], name: str) -> float | None:
    return finite(result.get(name))


def _meta(result: dict[str, Any], tool: str) -> dict[str, str | float]:
    """Whatever the header says about the model, engine and load; wrong types are skipped."""
    meta: dict[str, str | float] = {"tool": tool}
    for out_key, in_keys in (
        ("model", ("model_id", "model")),
        ("engine", ("backend",)),
        ("date", ("date",)),
        ("dataset", ("dataset_name",)),
        ("label", ("label", "tag")),
    ):
        for in_key in in_keys:
            value = result.get(in_key)
            if isinstance(value, str) and value:
                meta[out_key] = value
                break
    concurrency = finite(result.get("max_concurrency"))
    if concurrency is not None:
        meta["concurrency"] = concurrency
    rate = literal(result.get("request_rate"))
    rate_value = finite(rate)
    if rate_value is not None:
        meta["rate"] = rate_value
    elif (isinstance(rate, str) and rate.strip().lower() in ("inf", "infinity")) or (
        isinstance(rate, float) and rate == math.inf
    ):
        meta["rate"] = "inf"  # vLLM writes "inf", SGLang Infinity: no limit on the rate
    num_prompts = finite(result.get("num_prompts"))
    if num_prompts is not None:
        meta["num_prompts"] = num_prompts
    return meta
