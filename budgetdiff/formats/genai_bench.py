"""Reader for genai-bench's per-run file (sgl-project/genai-bench: `genai-bench benchmark`
writes one `<scenario>_<task>_num_concurrency_<c>_time_<t>s.json` per traffic scenario and
concurrency, beside the experiment's `experiment_metadata.json`).

The run file holds `aggregated_metrics` (genai-bench's statistics: numpy's percentiles p25 ...
p99 of each metric over the successful requests) and `individual_request_metrics`, one entry
per request: `ttft`, `e2e_latency`, `output_latency` (= e2e - TTFT), token counts, and an
`error_code` for a failed one (its times null). Times are in the unit `_time_unit` names (`s`
or `ms`, `--metrics-time-unit`); 0.0.1 and 0.0.2 wrote no `_time_unit` and always seconds.

Read per request: `first_token` (= TTFT), `decode` (`output_latency`), `ttft`, `total`
(`e2e_latency`); no per-token gaps (genai-bench keeps none) and no request times. With
`--warmup-ratio` / `--cooldown-ratio`, genai-bench's statistics leave out the first and last
requests while the list keeps them all, and the file does not say how many of each: when the
list's successful requests are not the ones the statistics count (their number, from the
statistics' own sum / mean), the statistics are read instead, as an aggregate, with a note.

`experiment_metadata.json` holds the experiment's settings and no measurement: refused, naming
the run file to pass.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from budgetdiff import numbers
from budgetdiff.formats import ReadOptions
from budgetdiff.formats._checks import (
    Ctx,
    finite,
    key,
    list_at,
    load_object,
    number,
    obj,
    object_at,
    optional_number,
    percentiles,
)
from budgetdiff.table import FloatArray, Run

NAME = "genai-bench"
HINT = "a genai-bench run file (`..._num_concurrency_<c>_time_<t>s.json`)"

_RUN = re.compile(rb'\A\s*\{\s*"aggregated_metrics"\s*:\s*\{')
_RUN_KEYS = re.compile(rb'"(?:error_codes_frequency|num_concurrency|iteration_type)"\s*:')
_METADATA = re.compile(rb'"benchmark_version"\s*:')
_METADATA_KEYS = re.compile(rb'"(?:experiment_folder_name|server_model_tokenizer)"\s*:')
_MS_PER = {"s": 1000.0, "ms": 1.0}
NO_UNIT_SCHEMA = "0.0.1-0.0.2 (no _time_unit: seconds)"
# the latency statistics genai-bench writes -> the summary names they fill (an aggregate read)
_STATS = {"ttft": ("ttft", "first_token"), "e2e_latency": ("total",), "tpot": ("tpot",)}
_STATS |= {"output_latency": ("decode",)}


def sniff(head: bytes, name: str) -> bool:
    """A run file (`aggregated_metrics` first, with genai-bench's run keys), or the
    experiment's `experiment_metadata.json` (claimed to be refused by name)."""
    if _RUN.match(head) is not None and _RUN_KEYS.search(head) is not None:
        return True
    return _METADATA.search(head) is not None and _METADATA_KEYS.search(head) is not None


def read(data: bytes, source: str, options: ReadOptions) -> list[Run]:
    ctx = Ctx(NAME, source, HINT)
    doc = load_object(data, ctx)
    if "aggregated_metrics" not in doc and "benchmark_version" in doc:
        raise ctx.error(
            "",
            "is genai-bench's experiment_metadata.json: the experiment's settings, no "
            "measurement; pass one of its run files from the same folder "
            "(<scenario>_<task>_num_concurrency_<c>_time_<t>s.json)",
        )
    agg = object_at(doc, "aggregated_metrics", ctx)
    scale, schema = _unit(doc, ctx)
    meta = _meta(agg, doc, schema)
    rows = list_at(doc, "individual_request_metrics", ctx)
    run = _per_request(rows, scale, ctx, meta, finite(agg.get("run_duration")))
    counted = _counted(agg, ctx)
    kept = int(run.succeeded.sum())
    if counted is not None and counted != kept:
        return [_aggregate(agg, scale, ctx, meta, counted, kept, len(rows))]
    return [run]


def _unit(doc: dict[str, Any], ctx: Ctx) -> tuple[float, str]:
    """Milliseconds per unit of the file's times, and the schema that says so."""
    if "_time_unit" not in doc:
        return 1000.0, NO_UNIT_SCHEMA
    unit = doc["_time_unit"]
    if not isinstance(unit, str) or unit not in _MS_PER:
        raise ctx.error("key '_time_unit'", f"is {unit!r}; genai-bench writes 's' or 'ms'")
    return _MS_PER[unit], f"run file (_time_unit {unit})"


def _meta(agg: dict[str, Any], doc: dict[str, Any], schema: str) -> dict[str, str | float]:
    meta: dict[str, str | float] = {"tool": "genai-bench", "schema": schema}
    concurrency = finite(agg.get("num_concurrency"))
    if concurrency is not None and agg.get("iteration_type", "num_concurrency") == (
        "num_concurrency"
    ):
        meta["concurrency"] = concurrency
    scenario = agg.get("scenario")
    if isinstance(scenario, str) and scenario:
        meta["traffic_scenario"] = scenario[:200]
    return meta


def _column(
    rows: list[dict[str, Any]], name: str, scale: float, ok: np.ndarray[Any, Any], ctx: Ctx
) -> FloatArray:
    out = np.full(len(rows), np.nan)
    for i, row in enumerate(rows):
        where = f"individual_request_metrics[{i}].{name}"
        if ok[i]:
            out[i] = number(key(row, name, ctx, where), where, ctx, latency=True) * scale
        else:
            out[i] = optional_number(row.get(name), where, ctx) * scale
    return out


def _per_request(
    raw: list[Any], scale: float, ctx: Ctx, meta: dict[str, str | float], duration: float | None
) -> Run:
    rows = [obj(r, f"individual_request_metrics[{i}]", ctx) for i, r in enumerate(raw)]
    if not rows:
        raise ctx.error("key 'individual_request_metrics'", "is empty (no request ran)")
    ok = np.array([not r.get("error_code") for r in rows], dtype=bool)
    ttft = np.where(ok, _column(rows, "ttft", scale, ok, ctx), np.nan)
    total = np.where(ok, _column(rows, "e2e_latency", scale, ok, ctx), np.nan)
    decode = np.where(ok, _column(rows, "output_latency", scale, ok, ctx), np.nan)
    bad = ok & (decode < -1e-6)
    if bad.any():
        where = f"individual_request_metrics[{int(np.argmax(bad))}].output_latency"
        raise ctx.error(where, "is negative (e2e_latency shorter than ttft)")
    tokens = {
        name: np.array(
            [
                optional_number(r.get(name), f"individual_request_metrics[{i}].{name}", ctx)
                for i, r in enumerate(rows)
            ]
        )
        for name in ("num_input_tokens", "num_output_tokens")
    }
    return Run(
        source=ctx.source,
        n=len(rows),
        slices={"first_token": ttft, "decode": np.maximum(decode, 0.0)},
        ttft=ttft,
        total=total,
        ok=ok,
        input_tokens=tokens["num_input_tokens"],
        output_tokens=tokens["num_output_tokens"],
        duration_s=duration,
        meta=meta,
    )


def _counted(agg: dict[str, Any], ctx: Ctx) -> int | None:
    """How many requests genai-bench's statistics count: their end-to-end sum / mean."""
    stats = agg.get("stats")
    e2e = stats.get("e2e_latency") if isinstance(stats, dict) else None
    if not isinstance(e2e, dict):
        return None
    total, mean = finite(e2e.get("sum")), finite(e2e.get("mean"))
    if total is None or mean is None or mean <= 0:
        return None
    return round(total / mean)


def _aggregate(
    agg: dict[str, Any],
    scale: float,
    ctx: Ctx,
    meta: dict[str, str | float],
    counted: int,
    kept: int,
    listed: int,
) -> Run:
    """genai-bench's own statistics, when its list holds other requests than they count."""
    stats = obj(key(agg, "stats", ctx, "key 'aggregated_metrics.stats'"), "stats", ctx)
    summary: dict[str, dict[float, float]] = {}
    for metric, names in _STATS.items():
        where = f"key 'aggregated_metrics.stats.{metric}'"
        values = percentiles(obj(key(stats, metric, ctx, where), where, ctx), where, ctx, scale)
        for name in names:
            summary[name] = dict(values)
    failed = int(listed - kept)
    note = (
        f"{ctx.source}: genai-bench's statistics count {numbers.count(counted)} of the "
        f"{numbers.count(kept)} successful requests listed (a --warmup-ratio or "
        "--cooldown-ratio left the others out); the percentiles are genai-bench's own"
    )
    return Run(
        source=ctx.source,
        n=0,
        summary=summary,
        summary_count=counted + failed,
        duration_s=finite(agg.get("run_duration")),
        meta={**meta, "failures": float(failed), "note": note},
    )
