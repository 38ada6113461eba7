"""OTLP/JSON traces -> one per-request `Run` of server-side (and user-span) slices.

Two kinds of span count:
- an LLM server's request span carrying vLLM's `gen_ai.latency.*` attributes (seconds):
  `time_in_queue` -> queue, `time_in_model_prefill` -> prefill, `time_in_model_decode` -> decode,
  `time_to_first_token` -> ttft, `e2e` -> total; the request id is `gen_ai.request.id`;
- a span whose name is a slice (the budget's, else a known slice name): its duration is added
  to that slice of its trace's request (the trace id names the request when no server span does).

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
from budgetdiff.table import KNOWN_SLICES, FloatArray, Run

NAME = "otlp"

# attribute -> (slice or metric, kind)
GEN_AI_LATENCY = {
    "gen_ai.latency.time_in_queue": "queue",
    "gen_ai.latency.time_in_model_prefill": "prefill",
    "gen_ai.latency.time_in_model_decode": "decode",
    "gen_ai.latency.time_to_first_token": "ttft",
    "gen_ai.latency.e2e": "total",
}
_SLICE_ORDER = ("queue", "prefill", "decode")
REQUEST_ID = "gen_ai.request.id"
PROMPT_TOKENS = ("gen_ai.usage.prompt_tokens", "gen_ai.usage.input_tokens")
COMPLETION_TOKENS = ("gen_ai.usage.completion_tokens", "gen_ai.usage.output_tokens")
STATUS_ERROR = 2
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
        raise _fail(source, f"{where}: no {key!r}; every OTLP span has start and end times")
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
    """All request spans (and slice-named spans) of the file as one per-request Run."""
    slice_names = set(options.slices) | set(KNOWN_SLICES)  # the budget's, and every known one
    found = _Found()
    for where, span in spans(data, source):
        _span(found, span, source, where, slice_names)
    user_slices = found.own_user_spans()
    if not found.requests:
        names = ", ".join(list(found.span_names)[:10]) or "(no spans)"
        raise _fail(
            source,
            "no request spans (with gen_ai.latency.* attributes) and no spans named after a "
            f"slice ({', '.join(sorted(slice_names))}); span names are: {names}",
        )
    return [_run(found.requests, user_slices, source)]


@dataclass
class _Found:
    """The spans that count: requests (by trace too), and user spans named after a slice."""

    requests: list[_Request] = field(default_factory=list)
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
    if not latency and name not in slice_names:
        return
    start = _nanos(span, "startTimeUnixNano", source, where)
    end = _nanos(span, "endTimeUnixNano", source, where)
    if end < start:
        raise _fail(source, f"{where}: ends before it starts (endTimeUnixNano < start)")
    if not latency:
        found.user.append((trace, name, start, end))
        return
    status = span.get("status") or {}
    req = _Request(
        key=trace,
        start_ns=start,
        end_ns=end,
        request_id=str(attrs.get(REQUEST_ID) or trace),
        input_tokens=_number(attrs, PROMPT_TOKENS),
        output_tokens=_number(attrs, COMPLETION_TOKENS),
        failed=isinstance(status, dict)
        and status.get("code") in (STATUS_ERROR, "STATUS_CODE_ERROR"),
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


def _run(requests: list[_Request], user_slices: dict[str, None], source: str) -> Run:
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
        request_id=np.array([r.request_id for r in requests], dtype=str),
        input_tokens=np.array([r.input_tokens for r in requests], dtype=np.float64),
        output_tokens=np.array([r.output_tokens for r in requests], dtype=np.float64),
        start_time=np.array([r.start_ns / 1e9 for r in requests], dtype=np.float64),
        meta={"format": NAME, "side": "server"},
    )
