"""Reader for OpenTelemetry's ConsoleSpanExporter output (the Python SDK's `span.to_json()`,
pretty-printed objects one after another), as inference-perf writes it with console export.

One client span per request (`llm.completions` and the like) carrying the OpenLLMetry
attributes `gen_ai.response.time_to_first_token` and `gen_ai.response.total_latency` (seconds),
and token counts. Client-side, so it yields `first_token` (= TTFT) and `decode` (total - TTFT),
like the other client tools; a span with status ERROR is a failed request. Spans without those
attributes (a parent `benchmark` span, say) are not requests and are skipped.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

import numpy as np

from budgetdiff.formats import ReadOptions
from budgetdiff.formats._checks import Ctx, finite, iter_json_values, number, obj
from budgetdiff.table import Run

NAME = "otel-console"
HINT = "the console output of OpenTelemetry's ConsoleSpanExporter"

TTFT = "gen_ai.response.time_to_first_token"
TOTAL = "gen_ai.response.total_latency"
PROMPT_TOKENS = ("gen_ai.usage.prompt_tokens", "gen_ai.usage.input_tokens")
COMPLETION_TOKENS = ("gen_ai.usage.completion_tokens", "gen_ai.usage.output_tokens")
# In any key order (a span written by another JSON encoder, or its keys reversed): an object
# whose context has the SDK's `0x` hex trace and span ids.
_SPAN = re.compile(rb'^\s*\{\s*"')
_TRACE_ID = re.compile(rb'"trace_id"\s*:\s*"0x[0-9a-f]')
_SPAN_ID = re.compile(rb'"span_id"\s*:\s*"0x[0-9a-f]')


def sniff(head: bytes, name: str) -> bool:
    """`to_json()` of an SDK span: an object with `"context": {"trace_id": "0x..."`, and the
    LLM attributes somewhere in the first spans."""
    return (
        _SPAN.match(head) is not None
        and _TRACE_ID.search(head) is not None
        and _SPAN_ID.search(head) is not None
        and TTFT.encode() in head
    )


def read(data: bytes, source: str, options: ReadOptions) -> list[Run]:
    ctx = Ctx(NAME, source, HINT)
    rows = []
    for line, value in iter_json_values(data, ctx):
        span = obj(value, f"line {line}:", ctx)
        attrs = obj(span.get("attributes", {}), f"line {line}: key 'attributes'", ctx)
        if TTFT in attrs or TOTAL in attrs:
            rows.append(_request(span, attrs, f"line {line}: span {_name(span)}", ctx))
    if not rows:
        raise ctx.error("", f"holds no request span with {TTFT} and {TOTAL}")
    failed = np.array([r["failed"] for r in rows], dtype=bool)
    ttft = np.array([r["ttft"] for r in rows])
    total = np.array([r["total"] for r in rows])
    for i in np.flatnonzero(~failed & ~(total >= ttft)):
        raise ctx.error(f"span #{int(i) + 1}", f"has {TOTAL} below {TTFT}")
    start = np.array([r["start"] for r in rows])
    return [
        Run(
            source=source,
            n=len(rows),
            slices={"first_token": ttft, "decode": total - ttft},
            ttft=ttft,
            total=total,
            ok=~failed,
            request_id=np.array([r["id"] for r in rows], dtype=object),
            input_tokens=np.array([r["input"] for r in rows]),
            output_tokens=np.array([r["output"] for r in rows]),
            start_time=start - np.nanmin(start) if np.isfinite(start).any() else None,
            meta={"tool": "opentelemetry console exporter"},
        )
    ]


def _request(span: dict[str, Any], attrs: dict[str, Any], where: str, ctx: Ctx) -> dict[str, Any]:
    status = span.get("status")
    failed = isinstance(status, dict) and status.get("status_code") == "ERROR"
    if failed:
        ttft, total = np.nan, np.nan
    else:
        ttft = 1000.0 * number(attrs.get(TTFT), f"{where} attribute '{TTFT}'", ctx, latency=True)
        total = 1000.0 * number(attrs.get(TOTAL), f"{where} attribute '{TOTAL}'", ctx, latency=True)
    context = span.get("context")
    trace = context.get("trace_id") if isinstance(context, dict) else None
    return {
        "failed": failed,
        "ttft": ttft,
        "total": total,
        "id": trace if isinstance(trace, str) else "",
        "input": _first_number(attrs, PROMPT_TOKENS),
        "output": _first_number(attrs, COMPLETION_TOKENS),
        "start": _seconds(span.get("start_time")),
    }


def _first_number(attrs: dict[str, Any], keys: tuple[str, ...]) -> float:
    for k in keys:
        value = finite(attrs.get(k))
        if value is not None:
            return value
    return np.nan


def _seconds(value: object) -> float:
    """An ISO 8601 time as epoch seconds; NaN when absent or not a time (it only orders)."""
    if not isinstance(value, str):
        return np.nan
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return np.nan


def _name(span: dict[str, Any]) -> str:
    name = span.get("name")
    return repr(name[:60]) if isinstance(name, str) else "(unnamed)"
