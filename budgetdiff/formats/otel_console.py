"""Reader for OpenTelemetry's ConsoleSpanExporter output (the Python SDK's `span.to_json()`,
pretty-printed objects one after another), as inference-perf writes it with console export.

One client span per request (`llm.completions` and the like) carrying the OpenLLMetry
attributes `gen_ai.response.time_to_first_token` and `gen_ai.response.total_latency` (seconds),
and token counts. Client-side, so it yields `first_token` (= TTFT) and `decode` (total - TTFT),
like the other client tools; a span with status ERROR is a failed request. Spans without those
attributes (a parent `benchmark` span, say) are not requests and are skipped.

A file without such spans gives its GenAI client spans instead, as an instrumented OpenAI client
writes them (OpenTelemetry's `opentelemetry-instrumentation-openai-v2`, OpenLLMetry's
`opentelemetry-instrumentation-openai`): one CLIENT span per request with `gen_ai.operation.name`
`chat` (or `text_completion`, `generate_content`); its duration (end_time - start_time, to the
microsecond the exporter writes) is the end to end; TTFT is its first streamed-chunk event
(OpenLLMetry's `gen_ai.content.completion.chunk`), unmeasured where it has none (openai-v2).
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Any

import numpy as np

from budgetdiff.formats import ReadOptions
from budgetdiff.formats._checks import Ctx, finite, iter_json_values, number, obj
from budgetdiff.table import Ids, Run

NAME = "otel-console"
HINT = "the console output of OpenTelemetry's ConsoleSpanExporter"

TTFT = "gen_ai.response.time_to_first_token"
TOTAL = "gen_ai.response.total_latency"
PROMPT_TOKENS = ("gen_ai.usage.prompt_tokens", "gen_ai.usage.input_tokens")
COMPLETION_TOKENS = ("gen_ai.usage.completion_tokens", "gen_ai.usage.output_tokens")
OPERATION = "gen_ai.operation.name"
CLIENT_OPERATIONS = ("chat", "text_completion", "generate_content")
CHUNK_EVENTS = ("gen_ai.content.completion.chunk", "llm.content.completion.chunk")
SERVER_KIND = "SpanKind.SERVER"
# In any key order (a span written by another JSON encoder, or its keys reversed): an object
# whose context has the SDK's `0x` hex trace and span ids.
_SPAN = re.compile(rb'^\s*\{\s*"')
_TRACE_ID = re.compile(rb'"trace_id"\s*:\s*"0x[0-9a-f]')
_SPAN_ID = re.compile(rb'"span_id"\s*:\s*"0x[0-9a-f]')
_CLIENT = re.compile(
    rb'"gen_ai\.operation\.name"\s*:\s*"(?:chat|text_completion|generate_content)"'
)


def sniff(head: bytes, name: str) -> bool:
    """`to_json()` of an SDK span: an object with `"context": {"trace_id": "0x..."`, and the
    LLM attributes somewhere in the first spans."""
    return (
        _SPAN.match(head) is not None
        and _TRACE_ID.search(head) is not None
        and _SPAN_ID.search(head) is not None
        and (TTFT.encode() in head or _CLIENT.search(head) is not None)
    )


def read(data: bytes, source: str, options: ReadOptions) -> list[Run]:
    ctx = Ctx(NAME, source, HINT)
    rows, clients = [], []
    for line, value in iter_json_values(data, ctx):
        span = obj(value, f"line {line}:", ctx)
        attrs = obj(span.get("attributes", {}), f"line {line}: key 'attributes'", ctx)
        where = f"line {line}: span {_name(span)}"
        if TTFT in attrs or TOTAL in attrs:
            rows.append(_request(span, attrs, where, ctx))
        elif attrs.get(OPERATION) in CLIENT_OPERATIONS and span.get("kind") != SERVER_KIND:
            clients.append(_client(span, attrs, where, ctx))
    if not rows and clients:
        return [_run(clients, source, "opentelemetry console exporter (GenAI client spans)", True)]
    if not rows:
        raise ctx.error(
            "",
            f"holds no request span with {TTFT} and {TOTAL}, and no GenAI client span "
            f"({OPERATION} {' or '.join(CLIENT_OPERATIONS)})",
        )
    failed = np.array([r["failed"] for r in rows], dtype=bool)
    ttft = np.array([r["ttft"] for r in rows])
    total = np.array([r["total"] for r in rows])
    for i in np.flatnonzero(~failed & ~(total >= ttft)):
        raise ctx.error(f"span #{int(i) + 1}", f"has {TOTAL} below {TTFT}")
    return [_run(rows, source, "opentelemetry console exporter", False)]


def _run(rows: list[dict[str, Any]], source: str, tool: str, client: bool) -> Run:
    """The spans as requests; a client's without any first-token time have no TTFT."""
    failed = np.array([r["failed"] for r in rows], dtype=bool)
    ttft = np.array([r["ttft"] for r in rows])
    total = np.array([r["total"] for r in rows])
    start = np.array([r["start"] for r in rows])
    measured = not client or bool(np.isfinite(ttft).any())
    slices = {"first_token": ttft, "decode": total - ttft} if measured else {}
    return Run(
        source=source,
        n=len(rows),
        slices=slices,
        ttft=ttft if measured else None,
        total=total,
        ok=~failed,
        request_id=Ids(np.array([r["id"] for r in rows], dtype=object)),
        input_tokens=np.array([r["input"] for r in rows]),
        output_tokens=np.array([r["output"] for r in rows]),
        start_time=start - np.nanmin(start) if np.isfinite(start).any() else None,
        meta={"tool": tool, "side": "client"},
    )


def _client(span: dict[str, Any], attrs: dict[str, Any], where: str, ctx: Ctx) -> dict[str, Any]:
    """A GenAI client span: its duration the end to end; its first chunk event the TTFT."""
    status = span.get("status")
    begin, end = _time(span, "start_time", where, ctx), _time(span, "end_time", where, ctx)
    if end < begin:
        raise ctx.error(where, "ends before it starts (end_time < start_time)")
    total = _ms(end - begin)
    ttft = np.nan
    events = span.get("events") or []
    if not isinstance(events, list):
        raise ctx.error(f"{where} key 'events'", "must be a list")
    chunks = [
        _time(e, "timestamp", f"{where} event {i}", ctx)
        for i, e in enumerate(events)
        if isinstance(e, dict) and e.get("name") in CHUNK_EVENTS
    ]
    if chunks:
        first = min(chunks)
        if not begin <= first <= end:
            raise ctx.error(where, "has a chunk event outside its start and end")
        ttft = _ms(first - begin)
    context = span.get("context")
    trace = context.get("trace_id") if isinstance(context, dict) else None
    return {
        "failed": isinstance(status, dict) and status.get("status_code") == "ERROR",
        "ttft": ttft,
        "total": total,
        "id": trace if isinstance(trace, str) else "",
        "input": _first_number(attrs, PROMPT_TOKENS),
        "output": _first_number(attrs, COMPLETION_TOKENS),
        "start": begin.timestamp(),
    }


def _time(span: dict[str, Any], name: str, where: str, ctx: Ctx) -> datetime:
    value = span.get(name)
    parsed = _parsed(value)
    if parsed is None:
        raise ctx.error(f"{where} key {name!r}", "must be an ISO 8601 time, as the SDK writes")
    return parsed


def _ms(delta: timedelta) -> float:
    """A duration in ms, exact to the microsecond (no epoch floats subtracted)."""
    return (delta.days * 86_400_000_000 + delta.seconds * 1_000_000 + delta.microseconds) / 1000.0


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
    parsed = _parsed(value)
    return np.nan if parsed is None else parsed.timestamp()


def _parsed(value: object) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def _name(span: dict[str, Any]) -> str:
    name = span.get("name")
    return repr(name[:60]) if isinstance(name, str) else "(unnamed)"
