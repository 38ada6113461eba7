"""OTLP/JSON traces -> one per-request `Run` of server-side (and user-span) slices.

Two kinds of span count:
- an LLM server's request span carrying vLLM's `gen_ai.latency.*` attributes (seconds):
  `time_in_queue` -> queue, `time_in_model_prefill` -> prefill, `time_in_model_decode` -> decode,
  `time_to_first_token` -> ttft, `e2e` -> total; the request id is `gen_ai.request.id`;
- a span whose name is a slice (the budget's, else a known slice name): its duration is added
  to that slice of its trace's request (the trace id names the request when no server span does);
- where the file has no server request span: an instrumented client's GenAI span, one per request
  (`gen_ai.operation.name` `chat`, `text_completion` or `generate_content`, not a server span),
  as OpenTelemetry's `opentelemetry-instrumentation-openai-v2` and OpenLLMetry's
  `opentelemetry-instrumentation-openai` write them: the span's duration is the client's end to
  end; TTFT is the first streamed chunk's event (OpenLLMetry's `gen_ai.content.completion.chunk`)
  or a `gen_ai.response.time_to_first_token` attribute (seconds), and unmeasured where the span
  has neither (openai-v2 records none); tokens from `gen_ai.usage.*`; status ERROR is a failure.

The file is one `ExportTraceServiceRequest` ({"resourceSpans": [...]}) or JSON Lines of them
(the OpenTelemetry Collector's file exporter), read a span at a time (`otlp_spans`): a request
keeps its numbers, never its span.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from budgetdiff.errors import ReadError
from budgetdiff.formats import ReadOptions
from budgetdiff.formats.otlp_spans import spans
from budgetdiff.table import KNOWN_SLICES, FloatArray, Ids, Run

NAME = "otlp"

# attribute -> (slice or metric, kind)
GEN_AI_LATENCY = {
    "gen_ai.latency.time_in_queue": "queue",
    "gen_ai.latency.time_in_model_prefill": "prefill",
    "gen_ai.latency.time_in_model_decode": "decode",
    "gen_ai.latency.time_to_first_token": "ttft",
    "gen_ai.latency.e2e": "total",
}
_SLICE_ORDER = ("queue", "prefill", "first_token", "decode")
REQUEST_ID = "gen_ai.request.id"
PROMPT_TOKENS = ("gen_ai.usage.prompt_tokens", "gen_ai.usage.input_tokens")
COMPLETION_TOKENS = ("gen_ai.usage.completion_tokens", "gen_ai.usage.output_tokens")
STATUS_ERROR = 2
# a GenAI client span: its operation, the events and attribute that give its first token
CLIENT_OPERATIONS = ("chat", "text_completion", "generate_content")
CHUNK_EVENTS = ("gen_ai.content.completion.chunk", "llm.content.completion.chunk")
CLIENT_TTFT = "gen_ai.response.time_to_first_token"
_SERVER_KINDS = (2, "SPAN_KIND_SERVER")
_MAX_NANOS = 2**64  # OTLP times are fixed64


def _fail(source: str, message: str) -> ReadError:
    return ReadError.at(NAME, source, message)


def sniff(head: bytes, name: str) -> bool:
    """An OTLP/JSON trace export: a JSON object whose first key is `resourceSpans`."""
    text = head.lstrip()
    if not text.startswith(b"{"):
        return False
    body = text[1:].lstrip()
    return body.startswith(b'"resourceSpans"')


def _value(value: Any, source: str, where: str) -> Any:
    """An OTLP AnyValue as Python (intValue may be a decimal string)."""
    if not isinstance(value, dict) or len(value) > 1:
        raise _fail(
            source,
            f'{where}: an attribute value must be one typed value such as {{"doubleValue": 0.5}}',
        )
    if not value:
        return None
    ((kind, raw),) = value.items()
    try:
        if kind == "stringValue":
            return str(raw)
        if kind == "intValue":
            if isinstance(raw, bool) or not isinstance(raw, int | str):
                raise ValueError
            out = int(raw)
            if not -(2**63) <= out < 2**63:  # OTLP's intValue is an int64
                raise ValueError
            return out
        if kind == "doubleValue":
            if isinstance(raw, bool) or not isinstance(raw, int | float | str):
                raise ValueError
            return float(raw)
        if kind == "boolValue":
            if not isinstance(raw, bool):
                raise ValueError
            return raw
    except (ValueError, OverflowError):
        raise _fail(
            source,
            f"{where}: {kind} {_shown(raw)} is not valid; OTLP/JSON writes an int64 or a double "
            "there",
        ) from None
    return raw  # arrayValue, kvlistValue, bytesValue: kept opaque


def _nanos(span: dict[str, Any], key: str, source: str, where: str) -> int:
    raw = span.get(key)
    if raw is None:
        raise _fail(source, f"{where}: no {key!r}; OTLP/JSON writes one on every span and event")
    try:
        if isinstance(raw, bool) or not isinstance(raw, int | str):
            raise ValueError
        out = int(raw)
        if not 0 <= out < _MAX_NANOS:
            raise ValueError
        return out
    except ValueError:
        raise _fail(
            source,
            f"{where}: {key} {_shown(raw)} is not unix nanoseconds (an integer from 0 to 2**64)",
        ) from None


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


@dataclass(slots=True)
class _Request:
    key: str
    start_ns: int
    end_ns: int
    request_id: str
    values: dict[str, float] = field(default_factory=dict)
    input_tokens: float = float("nan")
    output_tokens: float = float("nan")
    failed: bool = False


def _attributes(span: dict[str, Any], source: str, where: str) -> dict[str, Any]:
    attrs = span.get("attributes", [])
    if not isinstance(attrs, list):
        raise _fail(source, f"{where}.attributes is not a list of {{key, value}}")
    out: dict[str, Any] = {}
    for a in attrs:
        if not isinstance(a, dict) or "key" not in a:
            raise _fail(source, f"{where}.attributes: an entry without 'key'")
        out[str(a["key"])] = _value(a.get("value", {}), source, f"{where} attribute {a['key']!r}")
    return out


def _number(attrs: dict[str, Any], keys: tuple[str, ...]) -> float:
    for key in keys:
        value = attrs.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value) if math.isfinite(value) else math.nan
    return math.nan


def read(data: bytes, source: str, options: ReadOptions) -> list[Run]:
    """All request spans (and slice-named spans) of the file as one per-request Run; a file
    without server request spans gives its GenAI client spans instead."""
    slice_names = set(options.slices) | set(KNOWN_SLICES)  # the budget's, and every known one
    found = _Found()
    for where, span in spans(data, source):
        _span(found, span, source, where, slice_names)
    side = "server"
    if not found.requests and found.clients:
        side = "client"
        for client in found.clients:
            found.add(client)
    user_slices = found.own_user_spans()
    if not found.requests:
        names = ", ".join(list(found.span_names)[:10]) or "(no spans)"
        raise _fail(
            source,
            "no request spans (with gen_ai.latency.* attributes), no GenAI client spans "
            f"(gen_ai.operation.name {' or '.join(CLIENT_OPERATIONS)}) and no spans named after "
            f"a slice ({', '.join(sorted(slice_names))}); span names are: {names}",
        )
    return [_run(found.requests, user_slices, source, side)]


@dataclass
class _Found:
    """The spans that count: requests (by trace too), and user spans named after a slice."""

    requests: list[_Request] = field(default_factory=list)
    clients: list[_Request] = field(default_factory=list)  # GenAI client spans, one a request
    by_trace: dict[str, list[_Request]] = field(default_factory=dict)
    user: list[tuple[str, str, int, int]] = field(default_factory=list)  # trace, slice, start, end
    span_names: dict[str, None] = field(default_factory=dict)

    def add(self, request: _Request) -> None:
        self.requests.append(request)
        self.by_trace.setdefault(request.key, []).append(request)

    def own_user_spans(self) -> dict[str, None]:
        """Each user span's duration added to its request (the one of its trace it falls in, or
        a request of its own for a trace without one); the names of those slices."""
        user_slices: dict[str, None] = {}
        for trace, name, start, end in self.user:
            owners = self.by_trace.get(trace)
            if not owners:
                owner = _Request(key=trace, start_ns=start, end_ns=end, request_id=trace)
                self.add(owner)
            else:
                inside = [r for r in owners if r.start_ns <= start <= r.end_ns]
                owner = (inside or owners)[0]
                owner.start_ns = min(owner.start_ns, start)
            owner.values[name] = owner.values.get(name, 0.0) + (end - start) / 1e6
            user_slices[name] = None
        return user_slices


def _span(
    found: _Found, span: dict[str, Any], source: str, where: str, slice_names: set[str]
) -> None:
    """One span into `found`: a request span, a user span named after a slice, or neither."""
    name = str(span.get("name", ""))
    found.span_names[name] = None
    trace = str(span.get("traceId", ""))
    if not trace:
        raise _fail(source, f"{where}: no 'traceId'")
    attrs = _attributes(span, source, where)
    latency = {k: v for k, v in attrs.items() if k in GEN_AI_LATENCY}
    client = not latency and _is_client(span, attrs)
    if not latency and not client and name not in slice_names:
        return
    start = _nanos(span, "startTimeUnixNano", source, where)
    end = _nanos(span, "endTimeUnixNano", source, where)
    if end < start:
        raise _fail(source, f"{where}: ends before it starts (endTimeUnixNano < start)")
    if client:
        found.clients.append(_client(span, attrs, (trace, start, end), source, where))
        return
    if not latency:
        found.user.append((trace, name, start, end))
        return
    req = _Request(
        key=trace,
        start_ns=start,
        end_ns=end,
        request_id=str(attrs.get(REQUEST_ID) or trace),
        input_tokens=_number(attrs, PROMPT_TOKENS),
        output_tokens=_number(attrs, COMPLETION_TOKENS),
        failed=_failed(span),
    )
    for key, value in latency.items():
        if not isinstance(value, int | float) or isinstance(value, bool):
            raise _fail(source, f"{where} attribute {key!r}: expected seconds as a number")
        if not (math.isfinite(value) and value >= 0):
            raise _fail(
                source, f"{where} attribute {key!r}: {value} is not a latency (finite, >= 0)"
            )
        req.values[GEN_AI_LATENCY[key]] = float(value) * 1000.0
    found.add(req)


def _failed(span: dict[str, Any]) -> bool:
    status = span.get("status") or {}
    return isinstance(status, dict) and status.get("code") in (STATUS_ERROR, "STATUS_CODE_ERROR")


def _is_client(span: dict[str, Any], attrs: dict[str, Any]) -> bool:
    """A GenAI client span: an operation of a model call, not the server's own span."""
    return attrs.get("gen_ai.operation.name") in CLIENT_OPERATIONS and (
        span.get("kind") not in _SERVER_KINDS
    )


def _client(
    span: dict[str, Any],
    attrs: dict[str, Any],
    times: tuple[str, int, int],
    source: str,
    where: str,
) -> _Request:
    """A GenAI client span as a request: its duration the end to end, its first chunk's event
    (or a TTFT attribute, in seconds) the first token, else no TTFT."""
    trace, start, end = times
    req = _Request(
        key=trace,
        start_ns=start,
        end_ns=end,
        request_id=trace,
        input_tokens=_number(attrs, PROMPT_TOKENS),
        output_tokens=_number(attrs, COMPLETION_TOKENS),
        failed=_failed(span),
    )
    total = (end - start) / 1e6
    req.values["total"] = total
    first = _first_chunk(span, source, where)
    ttft: float | None = None
    if first is not None:
        if not start <= first <= end:
            raise _fail(source, f"{where}: a chunk event outside its span's start and end")
        ttft = (first - start) / 1e6
    elif CLIENT_TTFT in attrs:
        value = attrs[CLIENT_TTFT]
        if (
            not isinstance(value, int | float)
            or isinstance(value, bool)
            or not (math.isfinite(value) and 0 <= value * 1000.0 <= total)
        ):
            raise _fail(
                source,
                f"{where} attribute {CLIENT_TTFT!r}: {_shown(value)} is not a time to first "
                "token in seconds within the span",
            )
        ttft = float(value) * 1000.0
    if ttft is not None:
        req.values.update(ttft=ttft, first_token=ttft, decode=total - ttft)
    return req


def _first_chunk(span: dict[str, Any], source: str, where: str) -> int | None:
    """The time of the span's first streamed-chunk event (unix ns), or None."""
    events = span.get("events") or []
    if not isinstance(events, list):
        raise _fail(source, f"{where}.events is not a list")
    first: int | None = None
    for i, event in enumerate(events):
        if isinstance(event, dict) and event.get("name") in CHUNK_EVENTS:
            at = _nanos(event, "timeUnixNano", source, f"{where}.events[{i}]")
            first = at if first is None else min(first, at)
    return first


def _run(requests: list[_Request], user_slices: dict[str, None], source: str, side: str) -> Run:
    def column(key: str) -> FloatArray:
        return np.array([r.values.get(key, np.nan) for r in requests], dtype=np.float64)

    order = [s for s in KNOWN_SLICES if s in _SLICE_ORDER or s in user_slices]
    order += [s for s in user_slices if s not in order]
    slices: dict[str, FloatArray] = {}
    for name in order:
        values = column(name)
        if not np.isnan(values).all():
            slices[name] = values
    # user spans: a request without a span of that slice spent no time in it
    for name in user_slices:
        slices[name] = np.nan_to_num(slices[name], nan=0.0)
    ttft = column("ttft")
    total = column("total")
    ok = np.array([not r.failed for r in requests], dtype=bool)
    return Run(
        source=source,
        n=len(requests),
        slices=slices,
        ttft=None if np.isnan(ttft).all() else ttft,
        total=None if np.isnan(total).all() else total,
        ok=ok if not ok.all() else None,
        request_id=Ids(np.array([r.request_id for r in requests], dtype=str)),
        input_tokens=np.array([r.input_tokens for r in requests], dtype=np.float64),
        output_tokens=np.array([r.output_tokens for r in requests], dtype=np.float64),
        start_time=np.array([r.start_ns / 1e9 for r in requests], dtype=np.float64),
        meta={"format": NAME, "side": side},
    )
