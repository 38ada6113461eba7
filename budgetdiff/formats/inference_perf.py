"""inference-perf's reports -> Runs.

- `per_request_lifecycle_metrics.json` (a list of requests with monotonic `start_time`,
  `end_time` and `info.response_metrics.output_token_times`, seconds): one per-request Run with
  the slices first_token and decode (= end - first token), ttft, total, itl and tokens, and
  TPOT as inference-perf's own summary defines it: (last token - first token) / (output
  tokens - 1), not from `end_time` (which comes after the last token: the usage chunk and the
  end of the stream); a request without two token times has none, as in inference-perf;
- `stage_N_lifecycle_metrics.json` / `summary_lifecycle_metrics.json` (client-side percentiles
  under `successes.latency`) and `*_prometheus_metrics.json` (the server's percentiles directly
  under `successes`): an aggregate Run (n == 0) with `summary` {name: {percentile: ms}};
- `inference-perf.partial.stage_N.yaml` (from 0.7, beside the JSON reports of every stage):
  the same stage's numbers as the llm-d benchmark report (BR 0.2), the schema llm-d keeps its
  runs in: `results.request_performance.aggregate.latency.<metric>` with its `units` and
  `p0p1` ... `p99p9`, `requests.total` / `failures`; an aggregate Run as the JSON one.
A stage is a scenario named after its load (`rate 10/s`), or its number (`stage 0`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from budgetdiff.errors import ReadError
from budgetdiff.formats import ReadOptions
from budgetdiff.formats._checks import Ctx, finite, load_document, numbers
from budgetdiff.numbers import given, ms
from budgetdiff.table import BoolArray, FloatArray, Ids, Itl, Run

NAME = "inference-perf"
HINT = (
    "inference-perf's per_request_lifecycle_metrics.json or a *_lifecycle_metrics.json / "
    "*_prometheus_metrics.json report"
)

# client-side lifecycle latency -> summary names
LIFECYCLE: dict[str, tuple[str, ...]] = {
    "time_to_first_token": ("ttft", "first_token"),
    "request_latency": ("total",),
    "inter_token_latency": ("itl",),
    "time_per_output_token": ("tpot",),
}
# server-side (Prometheus) summary -> summary names
SERVER: dict[str, tuple[str, ...]] = {
    "request_latency": ("total",),
    "time_to_first_token": ("ttft",),
    "time_per_output_token": ("itl",),
    "inter_token_latency": ("itl",),
    "request_queue_time": ("queue",),
    "queue_time": ("queue",),
    "request_prefill_time": ("prefill",),
    "prefill_time": ("prefill",),
    "request_decode_time": ("decode",),
    "decode_time": ("decode",),
}
_PER_REQUEST = re.compile(rb'^\s*\[\s*\{\s*"(start_time|end_time|request|response|info|error)"')
_LOAD_SUMMARY = re.compile(rb'"load_summary"\s*:\s*\{')
_SUCCESSES = re.compile(rb'"successes"\s*:\s*\{')
_YAML_LOAD_SUMMARY = re.compile(rb"(?:---\s*\n)?load_summary:[ \t]*\r?\n")
_YAML_SUCCESSES = re.compile(rb"^successes:[ \t]*\r?$", re.MULTILINE)
_STAGE = re.compile(r"stage_(\d+)[_.]")
# the llm-d benchmark report: `version: 0.2.1` at the top, its results further down
_BR_VERSION = re.compile(rb"\A(?:---\s*\n)?version:[ \t]*['\"]?0\.2(?:\.\d+)?['\"]?[ \t]*\r?\n")
_BR_RESULTS = re.compile(rb"^[ \t]+request_performance:[ \t]*\r?$", re.MULTILINE)
# BR latency metric -> summary names (its normalized_time_per_output_token has no counterpart)
BR_LATENCY: dict[str, tuple[str, ...]] = LIFECYCLE
_BR_UNITS = {"s": 1000.0, "ms": 1.0, "s/token": 1000.0, "ms/token": 1.0}
_BR_PCT = re.compile(r"^p(\d+)(?:p(\d+))?$")  # p99p9 is the 99.9th
_ID = re.compile(r'"id"\s*:\s*"([^"]+)"')
# a comment block (and blank lines) a person or a script put above a report kept as YAML
_YAML_COMMENTS = re.compile(rb"\A(?:[ \t]*(?:#[^\n]*)?\r?\n)*")
_PCT = re.compile(r"^p(\d+(?:\.\d+)?)$")


def _fail(source: str, message: str) -> ReadError:
    return ReadError.at(NAME, source, message)


def sniff(head: bytes, name: str) -> bool:
    """A per-request lifecycle list, a report object that starts with `load_summary` (in
    JSON, or kept as YAML), or an llm-d benchmark report 0.2 (YAML) with request results; the
    YAML under any comment block put above it."""
    if head.lstrip().startswith(b"{") and _LOAD_SUMMARY.search(head):
        return _SUCCESSES.search(head) is not None or len(head) >= 65536
    comments = _YAML_COMMENTS.match(head)
    text = head[comments.end() if comments else 0 :].lstrip()
    if _BR_VERSION.match(text):
        return _BR_RESULTS.search(head) is not None
    if _YAML_LOAD_SUMMARY.match(text):
        return _YAML_SUCCESSES.search(head) is not None or len(head) >= 65536
    if _PER_REQUEST.match(head):
        return b'"start_time"' in head and b'"end_time"' in head and b'"info"' in head
    return False


def read(data: bytes, source: str, options: ReadOptions) -> list[Run]:
    doc = load_document(data, Ctx(NAME, source, HINT))
    if isinstance(doc, list):
        return [_per_request(doc, source)]
    if isinstance(doc, dict) and "successes" in doc:
        return [_aggregate(doc, source)]
    if isinstance(doc, dict) and isinstance(doc.get("results"), dict):
        return [_benchmark_report(doc, source)]
    raise _fail(
        source,
        "expected per_request_lifecycle_metrics.json (a list of requests), a "
        "*_lifecycle_metrics.json / *_prometheus_metrics.json report (with 'successes') or "
        "an llm-d benchmark report (with 'results')",
    )


# ---------------------------------------------------------------- per request


def _seconds(record: dict[str, Any], key: str, source: str, i: int) -> float:
    value = finite(record.get(key))
    if value is None:
        raise _fail(
            source,
            f"request {i}: {key!r} is {_shown(record.get(key))}, expected seconds as a "
            "finite number",
        )
    return value


@dataclass
class _Columns:
    """The per-request columns, filled one record at a time (times in seconds)."""

    start: FloatArray
    end: FloatArray
    first: FloatArray
    last: FloatArray
    ok: BoolArray
    inp: FloatArray
    out: FloatArray
    ids: list[str] = field(default_factory=list)
    gaps: list[FloatArray] = field(default_factory=list)

    @classmethod
    def sized(cls, n: int) -> _Columns:
        nan = np.full(n, np.nan)
        return cls(
            start=np.empty(n),
            end=np.empty(n),
            first=nan,
            last=nan.copy(),
            ok=np.ones(n, dtype=bool),
            inp=nan.copy(),
            out=nan.copy(),
        )


def _per_request(records: list[Any], source: str) -> Run:
    if not records:
        raise _fail(source, "the list of requests is empty")
    cols = _Columns.sized(len(records))
    ctx = Ctx(NAME, source, HINT)
    for i, rec in enumerate(records):
        if not isinstance(rec, dict):
            raise _fail(source, f"request {i}: not an object")
        _record(cols, i, rec, ctx)
    return _run(cols, source)


def _record(cols: _Columns, i: int, rec: dict[str, Any], ctx: Ctx) -> None:
    """Request `i` into the columns."""
    source = ctx.source
    cols.start[i] = _seconds(rec, "start_time", source, i)
    cols.end[i] = _seconds(rec, "end_time", source, i)
    cols.ok[i] = rec.get("error") in (None, "", {})
    info = rec.get("info") or {}
    if not isinstance(info, dict):
        raise _fail(source, f"request {i}: 'info' is not an object")
    response = info.get("response_metrics") or {}
    times = response.get("output_token_times") if isinstance(response, dict) else None
    if times is None and isinstance(response, dict):
        times = response.get("chunk_times")
    if times:
        stamps = numbers(times, f"request {i} key 'output_token_times'", ctx)
        gap = np.diff(stamps) * 1000.0
        if not np.isfinite(stamps).all() or (gap < 0).any():
            raise _fail(
                source,
                f"request {i}: 'output_token_times' must be finite seconds that only grow "
                "(a token time is NaN, infinite, or earlier than the one before it)",
            )
        cols.first[i], cols.last[i] = stamps[0], stamps[-1]
        cols.gaps.append(gap)
    else:
        cols.gaps.append(np.zeros(0))
    request_metrics = info.get("request_metrics") or {}
    text = request_metrics.get("text") if isinstance(request_metrics, dict) else None
    tokens = (text or {}).get("input_tokens") if isinstance(text, dict) else None
    tokens = info.get("input_tokens") if tokens is None else tokens
    cols.inp[i] = _count(tokens)
    if isinstance(response, dict):
        cols.out[i] = _count(response.get("output_tokens"))
    match = _ID.search(str(rec.get("response") or "")[:2000])
    cols.ids.append(match.group(1) if match else str(i))


def _run(cols: _Columns, source: str) -> Run:
    """The columns as a Run in ms; a negative duration names its request."""
    start, end, first, last, ok, out = (
        cols.start,
        cols.end,
        cols.first,
        cols.last,
        cols.ok,
        cols.out,
    )
    total = (end - start) * 1000.0
    ttft = (first - start) * 1000.0
    with np.errstate(invalid="ignore", divide="ignore"):
        tpot = np.where(out > 1, (last - first) * 1000.0 / (out - 1), np.nan)
    decode = (end - first) * 1000.0
    for name, values in (("total", total), ("ttft", ttft), ("decode", decode)):
        bad = ok & (values < 0)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise _fail(
                source,
                f"request {i}: negative {name} ({ms(values[i])}): end_time or the token "
                "times come before start_time",
            )
    slices: dict[str, FloatArray] = {}
    if not np.isnan(ttft[ok]).all():
        slices = {"first_token": ttft, "decode": decode}
    lengths = np.array([len(g) for g in cols.gaps], dtype=np.int64)
    itl = Itl(
        values=np.concatenate(cols.gaps) if cols.gaps else np.zeros(0),
        offsets=np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64),
    )
    return Run(
        source=source,
        n=len(start),
        slices=slices,
        ttft=ttft if slices else None,
        total=total,
        ok=None if ok.all() else ok,
        request_id=Ids(np.array(cols.ids, dtype=str)),
        input_tokens=cols.inp,
        output_tokens=out,
        itl=itl if lengths.sum() else None,
        start_time=start,
        duration_s=float(np.max(end) - np.min(start)),
        tpot=tpot,
        meta={"format": NAME, "side": "client"},
    )


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _count(value: Any) -> float:
    """A token count, or NaN when absent or not a finite number."""
    out = finite(value)
    return np.nan if out is None else out


# ---------------------------------------------------------------- aggregates


def _percentiles(stats: Any, source: str, where: str) -> dict[float, float]:
    if not isinstance(stats, dict):
        raise _fail(source, f"{where} is {type(stats).__name__}, expected percentiles")
    out: dict[float, float] = {}
    for key, value in stats.items():
        m = _PCT.match(key)
        pct = 50.0 if key == "median" else float(m.group(1)) if m else None
        if pct is None or value is None:
            continue
        seconds = finite(value)
        if seconds is None or seconds < 0:
            raise _fail(
                source, f"{where}.{key} is {_shown(value)}, expected seconds (finite, >= 0)"
            )
        out[pct] = seconds * 1000.0
    return out


def _aggregate(doc: dict[str, Any], source: str) -> Run:
    successes = doc["successes"]
    if not isinstance(successes, dict):
        raise _fail(source, "'successes' is not an object")
    if "latency" in successes:
        latency, names, side, prefix = (
            successes["latency"],
            LIFECYCLE,
            "client",
            "successes.latency",
        )
        if not isinstance(latency, dict):
            raise _fail(source, "'successes.latency' is not an object")
    else:
        latency, names, side, prefix = successes, SERVER, "server", "successes"
    summary = _summary(latency, names, _percentiles, source, prefix)
    if not summary:
        raise _fail(
            source,
            f"no latency percentiles under {prefix!r} (looked for {', '.join(names)}); "
            "this does not look like an inference-perf report",
        )
    raw_count = successes.get("count")
    count = finite(raw_count)
    if count is None or count < 0:
        raise _fail(
            source,
            f"'successes.count' is {_shown(raw_count)}, expected a number of requests",
        )
    load = doc.get("load_summary") or {}
    rate = finite(load.get("requested_rate")) if isinstance(load, dict) else None
    duration = finite(load.get("send_duration")) if isinstance(load, dict) else None
    stage = _STAGE.search(source.rsplit("/", 1)[-1])
    scenario = f"stage {stage.group(1)}" if stage else None
    meta: dict[str, str | float] = {"format": NAME, "side": side}
    if rate is not None:
        meta["requested_rate"] = rate
        scenario = scenario or f"rate {given(rate)}/s"
    failures = doc.get("failures") or {}
    failed = finite(failures.get("count")) if isinstance(failures, dict) else None
    if failed is not None:
        meta["failures"] = failed
    return Run(
        source=source,
        n=0,
        summary=summary,
        summary_count=int(count + (failed or 0.0)),  # every request, as the other readers
        scenario=scenario,
        duration_s=duration,
        meta=meta,
    )


def _summary(
    latency: dict[str, Any],
    names: Mapping[str, Sequence[str]],
    read: Callable[[Any, str, str], dict[float, float]],  # (stats, source, where)
    source: str,
    prefix: str,
) -> dict[str, dict[float, float]]:
    """Each named latency's percentiles (`read` of its stats, named `prefix.key` in errors)
    under every metric or slice it stands for; a latency with a mean only gives none."""
    summary: dict[str, dict[float, float]] = {}
    for key, targets in names.items():
        stats = latency.get(key)
        values = read(stats, source, f"{prefix}.{key}") if stats is not None else {}
        for target in targets if values else ():
            summary.setdefault(target, values)
    return summary


# ---------------------------------------------------------------- llm-d benchmark report


def _benchmark_report(doc: dict[str, Any], source: str) -> Run:
    """BR 0.2: `results.request_performance.aggregate`, each latency with its own `units`."""
    where = "results.request_performance.aggregate"
    aggregate: Any = doc
    for part in where.split("."):
        aggregate = aggregate.get(part) if isinstance(aggregate, dict) else None
    if not isinstance(aggregate, dict):
        raise _fail(source, f"{where!r} is missing: this benchmark report holds no results")
    latency = aggregate.get("latency")
    if not isinstance(latency, dict):
        raise _fail(source, f"'{where}.latency' is missing or not an object")
    summary = _summary(latency, BR_LATENCY, _br_percentiles, source, f"{where}.latency")
    if not summary:
        raise _fail(
            source,
            f"no latency percentiles under '{where}.latency' (looked for {', '.join(BR_LATENCY)})",
        )
    requests = aggregate.get("requests")
    requests = requests if isinstance(requests, dict) else {}
    total = finite(requests.get("total"))
    if total is None or total < 0:
        raise _fail(
            source,
            f"'{where}.requests.total' is {_shown(requests.get('total'))}, expected a number "
            "of requests",
        )
    meta = _br_meta(doc, requests)
    stage = _STAGE.search(source.rsplit("/", 1)[-1])
    return Run(
        source=source,
        n=0,
        summary=summary,
        summary_count=int(total),  # BR's total counts the failures too
        scenario=f"stage {stage.group(1)}" if stage else None,
        meta=meta,
    )


def _br_meta(doc: dict[str, Any], requests: dict[str, Any]) -> dict[str, str | float]:
    """The schema, the load generator where the report names it, and the failures."""
    version = doc.get("version")
    meta: dict[str, str | float] = {
        "format": NAME,
        "side": "client",
        "schema": f"llm-d benchmark report {version if isinstance(version, str) else '0.2'}",
    }
    # llm-d's own reports name the load generator (inference-perf's partial leaves it out)
    scenario = doc.get("scenario")
    load = scenario.get("load") if isinstance(scenario, dict) else None
    tool = load.get("standardized") if isinstance(load, dict) else None
    for name in ("tool", "tool_version"):
        value = tool.get(name) if isinstance(tool, dict) else None
        if isinstance(value, str | int | float) and not isinstance(value, bool):
            meta[name] = str(value)
    failed = finite(requests.get("failures"))
    if failed is not None:
        meta["failures"] = failed
    return meta


def _br_percentiles(stats: Any, source: str, where: str) -> dict[float, float]:
    """`p50`, `p0p1` (the 0.1th), `p99p9` ... in milliseconds, scaled by the metric's units."""
    if not isinstance(stats, dict):
        raise _fail(source, f"{where} is {type(stats).__name__}, expected percentiles")
    units = stats.get("units")
    scale = _BR_UNITS.get(units) if isinstance(units, str) else None
    if scale is None:
        raise _fail(
            source,
            f"{where}.units is {_shown(units)}, expected one of {', '.join(_BR_UNITS)}",
        )
    out: dict[float, float] = {}
    for key, value in stats.items():
        m = _BR_PCT.match(key)
        if m is None or value is None:
            continue
        pct = float(f"{m.group(1)}.{m.group(2) or 0}")
        number = finite(value)
        if number is None or number < 0:
            raise _fail(source, f"{where}.{key} is {_shown(value)}, expected a finite number >= 0")
        out[pct] = number * scale
    return dict(sorted(out.items()))
