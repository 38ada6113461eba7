"""Reader for genai-perf's exports: `profile_export.json` (raw per-request timestamps) and
`profile_export_genai_perf.json` (aggregate percentiles only).

From the raw file, as genai-perf itself does, streamed responses without content (the role
chunk, `[DONE]`) are dropped; TTFT is the first content response minus the request timestamp,
the total is the last one minus it, and the ITL is every gap between content responses.
Each entry of `experiments` is one scenario. The aggregate file yields a Run with `n == 0`.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np
import orjson

from budgetdiff.formats import ReadOptions
from budgetdiff.formats._checks import (
    Ctx,
    arr,
    finite,
    key,
    list_at,
    load_name,
    load_object,
    ms_per,
    number,
    obj,
    percentiles,
    pooled,
    unique_names,
)
from budgetdiff.formats.aiperf import AIPERF_ONLY
from budgetdiff.table import FloatArray, Run

if TYPE_CHECKING:
    import numpy.typing as npt

NAME = "genai-perf"
HINT = "a genai-perf `profile_export.json` or `profile_export_genai_perf.json` file"

_RAW = re.compile(rb'"experiments"\s*:\s*\[')
_RAW_ANY = re.compile(rb'"(?:response_timestamps|request_inputs|experiment)"\s*:')
_STATS = re.compile(rb'"time_to_first_token"\s*:\s*\{\s*"unit"')
_GENAI_ANY = re.compile(rb'"(?:perf_analyzer|request_goodput|request_throughput)"\s*:')
_AIPERF = re.compile(rb'"(?:aiperf_version|schema_version|timeslices)"\s*:')

_SUMMARY_NAMES = {
    "time_to_first_token": ("ttft", "first_token"),
    "request_latency": ("total",),
    "inter_token_latency": ("tpot",),  # genai-perf's ITL is a per-request average
}


def sniff(head: bytes, name: str) -> bool:
    """The raw export (`experiments` of `requests` with `response_timestamps`) or the aggregate."""
    if _RAW.search(head) and _RAW_ANY.search(head):
        return True
    aiperf = _AIPERF.search(head) or AIPERF_ONLY.search(head)  # AIPerf mimics this file
    return bool(_STATS.search(head) and _GENAI_ANY.search(head) and not aiperf)


def read(data: bytes, source: str, options: ReadOptions) -> list[Run]:
    ctx = Ctx(NAME, source, HINT)
    doc = load_object(data, ctx)
    if "experiments" not in doc and "time_to_first_token" in doc:
        return [_aggregate(doc, ctx)]
    experiments = list_at(doc, "experiments", ctx)
    if not experiments:
        raise ctx.error("key 'experiments'", "is empty")
    openai = doc.get("service_kind", "openai") == "openai"
    meta: dict[str, str | float] = {"tool": "genai-perf"}
    for out_key, in_key in (("tool_version", "version"), ("endpoint", "endpoint")):
        value = doc.get(in_key)
        if isinstance(value, str):
            meta[out_key] = value
    runs = [
        _experiment(obj(e, f"key 'experiments'[{i}]", ctx), i, ctx, openai, meta)
        for i, e in enumerate(experiments)
    ]
    if len(runs) == 1:
        return runs
    names = unique_names([_load_name(r.meta) for r in runs])
    return [_named(r, n) for r, n in zip(runs, names, strict=True)]


def _load_name(meta: dict[str, str | float]) -> str:
    concurrency = meta.get("concurrency")
    rate = meta.get("rate")
    return load_name(
        float(concurrency) if isinstance(concurrency, float) else None,
        float(rate) if isinstance(rate, float) else None,
    )


def _named(run: Run, name: str) -> Run:
    return replace(run, scenario=name)


def _experiment(
    exp: dict[str, Any], index: int, ctx: Ctx, openai: bool, base_meta: dict[str, str | float]
) -> Run:
    where = f"key 'experiments'[{index}]"
    meta = dict(base_meta)
    setting = exp.get("experiment")
    if isinstance(setting, dict):
        mode, value = setting.get("mode"), finite(setting.get("value"))
        if value is not None:
            if mode == "concurrency":
                meta["concurrency"] = value
            elif mode == "request_rate":
                meta["rate"] = value
    requests = list_at(exp, "requests", ctx, f"{where}.requests")
    n = len(requests)
    ttft = np.full(n, np.nan)
    total = np.full(n, np.nan)
    start = np.full(n, np.nan)
    ok = np.zeros(n, dtype=bool)
    gaps: list[FloatArray] = []
    for i, raw in enumerate(requests):
        start[i], rel_ms = _request(raw, f"{where}.requests[{i}]", ctx, openai)
        if rel_ms is None:
            gaps.append(np.empty(0))
            continue
        ok[i] = True
        ttft[i] = rel_ms[0]
        total[i] = rel_ms[-1]
        gaps.append(np.diff(rel_ms))
    if n == 0:
        raise ctx.error(f"{where}.requests", "is empty")
    model = _model(requests)
    if model is not None:
        meta["model"] = model
    return Run(
        source=ctx.source,
        n=n,
        slices={"first_token": ttft, "decode": total - ttft},
        ttft=ttft,
        total=total,
        ok=ok,
        itl=pooled(gaps),
        start_time=start,
        duration_s=_duration(exp),
        meta=meta,
    )


def _duration(exp: dict[str, Any]) -> float | None:
    """Seconds between the experiment's first and last window boundary, where it has them."""
    bounds = exp.get("window_boundaries")
    if isinstance(bounds, list) and len(bounds) >= 2:
        first, last = finite(bounds[0]), finite(bounds[-1])
        if first is not None and last is not None and last >= first:
            return (last - first) / 1e9
    return None


def _request(raw: Any, rwhere: str, ctx: Ctx, openai: bool) -> tuple[float, FloatArray | None]:
    """One request: when it was sent (s), and its responses' times in ms after that (None for a
    request with no response that holds content: a failed one)."""
    request = obj(raw, rwhere, ctx)
    sent_raw = key(request, "timestamp", ctx, f"{rwhere}.timestamp")
    sent = number(sent_raw, f"{rwhere}.timestamp", ctx, latency=True)
    stamps = arr(
        key(request, "response_timestamps", ctx, f"{rwhere}.response_timestamps"),
        f"{rwhere}.response_timestamps",
        ctx,
    )
    whole = _int_stamps(stamps)  # epoch ns as int64: one array, no check per stamp
    if whole is None:
        for j, stamp in enumerate(stamps):  # each a number a float holds, before subtracting
            number(stamp, f"{rwhere}.response_timestamps[{j}]", ctx)
    keep = list(range(len(stamps)))
    if openai:
        outputs = arr(
            key(request, "response_outputs", ctx, f"{rwhere}.response_outputs"),
            f"{rwhere}.response_outputs",
            ctx,
        )
        if len(outputs) != len(stamps):
            raise ctx.error(
                f"{rwhere}.response_outputs",
                f"has {len(outputs)} entries but response_timestamps has {len(stamps)}",
            )
        keep = [j for j, out in enumerate(outputs) if _has_content(out)]
    if not keep:
        return sent / 1e9, None
    # subtract before converting: epoch nanoseconds do not fit a float64 exactly
    if whole is not None and type(sent_raw) is int and 0 <= sent_raw < 1 << 62:
        rel_ms = (whole[keep] - sent_raw).astype(np.float64)
    else:
        rel_ms = np.array(
            [number(stamps[j] - sent_raw, f"{rwhere}.response_timestamps[{j}]", ctx) for j in keep]
        )
    rel_ms /= 1e6
    if not np.isfinite(rel_ms).all() or (rel_ms < 0).any() or (np.diff(rel_ms) < 0).any():
        raise ctx.error(
            f"{rwhere}.response_timestamps",
            "must be finite, after the request timestamp and in increasing order",
        )
    return sent / 1e9, rel_ms


def _int_stamps(stamps: list[Any]) -> npt.NDArray[np.int64] | None:
    """Integer time stamps in [0, 2**62) as an int64 array; None for anything else."""
    if not stamps or not set(map(type, stamps)) <= {int}:
        return None
    try:
        whole = np.array(stamps, dtype=np.int64)
    except OverflowError:
        return None
    return whole if whole.min() >= 0 and whole.max() < 1 << 62 else None


def _has_content(output: Any) -> bool:
    """Whether one recorded response carries generated text (genai-perf's own rule)."""
    if not isinstance(output, dict):
        return False
    text = output.get("response")
    if not isinstance(text, str):
        return bool(output)  # a non-OpenAI output object: any output counts
    text = text.strip()
    if not text.startswith("data:"):
        return _json_has_content(text)
    for event in text.split("\n\n"):
        payload = event.strip().removeprefix("data:").strip()
        if payload and payload != "[DONE]" and _json_has_content(payload):
            return True
    return False


def _json_has_content(payload: str) -> bool:
    try:
        body = orjson.loads(payload)  # one call per streamed chunk: the fast parser
    except orjson.JSONDecodeError:
        try:  # what orjson refuses (NaN, a huge int, deep nesting) the stdlib may still read
            body = json.loads(payload)
        except (json.JSONDecodeError, RecursionError, ValueError):
            return False
    choices = body.get("choices") if isinstance(body, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return False
    choice = choices[0]
    for part in (choice.get("delta"), choice.get("message"), choice):
        if isinstance(part, dict):
            for field in ("content", "text", "reasoning_content"):
                value = part.get(field)
                if isinstance(value, str) and value:
                    return True
    return False


def _model(requests: list[Any]) -> str | None:
    """The model named in the first request's payload, if it says."""
    if not requests or not isinstance(requests[0], dict):
        return None
    inputs = requests[0].get("request_inputs")
    payload = inputs.get("payload") if isinstance(inputs, dict) else None
    if not isinstance(payload, str):
        return None
    try:
        body = json.loads(payload)
    except (json.JSONDecodeError, RecursionError):
        return None
    model = body.get("model") if isinstance(body, dict) else None
    return model if isinstance(model, str) else None


def _aggregate(doc: dict[str, Any], ctx: Ctx) -> Run:
    summary: dict[str, dict[float, float]] = {}
    for metric, names in _SUMMARY_NAMES.items():
        if metric not in doc:
            continue
        where = f"key '{metric}'"
        stats = obj(doc[metric], where, ctx)
        unit_where = f"key '{metric}.unit'"
        scale = ms_per(key(stats, "unit", ctx, unit_where), unit_where, ctx)
        values = percentiles(stats, where, ctx, scale)
        for summary_name in names:
            summary[summary_name] = dict(values)
    if "total" not in summary:
        raise ctx.error("key 'request_latency'", "is missing (no latency percentiles)")
    count = None
    counts = doc.get("request_count")
    if isinstance(counts, dict) and "avg" in counts:
        count = int(number(counts["avg"], "key 'request_count.avg'", ctx, latency=True))
    return Run(
        source=ctx.source,
        n=0,
        summary=summary,
        summary_count=count,
        meta=_aggregate_meta(doc),
    )


def _aggregate_meta(doc: dict[str, Any]) -> dict[str, str | float]:
    meta: dict[str, str | float] = {"tool": "genai-perf"}
    config = doc.get("input_config")
    if not isinstance(config, dict):
        return meta
    models = config.get("model_names")
    if isinstance(models, list) and models and isinstance(models[0], str):
        meta["model"] = models[0]
    analyzer = config.get("perf_analyzer")
    stimulus = analyzer.get("stimulus") if isinstance(analyzer, dict) else None
    if isinstance(stimulus, dict):
        for out_key, in_key in (("concurrency", "concurrency"), ("rate", "request_rate")):
            value = finite(stimulus.get(in_key))
            if value is not None:
                meta[out_key] = value
    return meta
