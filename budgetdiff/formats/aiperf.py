"""Reader for AIPerf's exports: `profile_export.jsonl` (one record per request) and
`profile_export_aiperf.json` (aggregate percentiles only).

Per-request records carry `{"value": v, "unit": "ms"}` metrics; the inter-chunk gaps of every
request become the ITL. Warm-up records are skipped; records with an `error` are failed
requests. The aggregate file yields a Run with `n == 0` and `summary` percentiles.

Three aggregate schemas: the current one (`schema_version` and `aiperf_version` at the top,
AIPerf 0.4 on), that of AIPerf 0.2 and 0.3 (November 2025: the same metrics, no version key;
told from genai-perf's file, which it mimics, by AIPerf's own metrics such as
`inter_chunk_latency` or `benchmark_duration`), and the earlier one of AIPerf 0.1 (autumn
2025): the metrics wrapped in `records` with `tag` / `header`, and the short names `ttft` /
`ttst` (records: `credit_phase`, `timestamp_ns`). All map to the same names.

The time-sliced export (`--slice-duration`: `{"timeslices": [{"timeslice_index": 0, <metric>:
{...}}, ...]}`) is one scenario per slice, `timeslice 0`, `timeslice 1`, ...: each slice's
percentiles are of the requests that started in it, so a base and a head slice of the same
index are compared (a slice AIPerf marks `is_complete: false`, the trailing partial one, says so).

`profile_export_aiperf.csv`, the aggregate as a table (`Metric,avg,min,max,...,p1,p5,...,std`
rows such as `Time to First Token (ms)`, then `Metric,Value` rows such as `Request Count`),
gives the same numbers as the JSON of the run, to the two decimals AIPerf writes there.

A failed request's record has an `error` and no latency metric (0.8 and 0.13 write only
`error_isl`, 0.1 `error_request_count`; an empty `"metrics": {}` is read the same); a run
whose every request failed has an aggregate without latency percentiles, only
`error_request_count`: both are read as that many failed requests (AIPerf 0.13 writes no
aggregate at all then, only the records). Where 0.13 writes no `error_request_count`, its
`completed_request_count` (success + error) less `request_count` is the failures: 0. Where a
file has neither (0.3 writes no error count when nothing failed), none failed if its
`request_count` is every request the run was asked for (`input_config`'s request count), and
the count is unknown otherwise (a `--benchmark-duration` run, a cancelled one, fewer successes).

A record AIPerf marks `was_cancelled` is a request it cut short (`--request-cancellation-rate`),
counted as failed, with a note; an aggregate marked `was_cancelled` is a run stopped before its
end (Ctrl-C), read with a note saying so. Its records carry no such mark: AIPerf leaves the
requests it cut at the end out of them.
"""

from __future__ import annotations

import csv
import io
import math
import re
from dataclasses import dataclass, field, replace
from typing import Any, TypeGuard

import numpy as np

from budgetdiff.formats import ReadOptions
from budgetdiff.formats._checks import (
    Ctx,
    arr,
    finite,
    is_number,
    iter_json_values,
    key,
    list_at,
    literal,
    load_object,
    ms_per,
    number,
    number_lists,
    obj,
    object_at,
    percentiles,
)
from budgetdiff.numbers import count
from budgetdiff.table import FloatArray, Ids, Itl, Run
from budgetdiff.units import MS_PER

NAME = "aiperf"
HINT = "an AIPerf `profile_export.jsonl` or `profile_export_aiperf.json` file"

_RECORD_ANY = re.compile(rb'"(?:x_request_id|request_start_ns|benchmark_phase)"\s*:')
# AIPerf's metric shape: "metrics": {"request_latency": {"value": ...
_RECORD_METRIC = re.compile(rb'"metrics"\s*:\s*\{\s*"\w+"\s*:\s*\{\s*"value"\s*:')
_AGGREGATE = re.compile(rb'"aiperf_version"\s*:')
# AIPerf 0.1's aggregate: {"records": {"<metric>": {"tag": "<metric>", ...
_EARLY_AGGREGATE = re.compile(rb'^\s*\{\s*"records"\s*:\s*\{\s*"\w+"\s*:\s*\{\s*"tag"\s*:')
# AIPerf 0.1's short metric names -> the current ones
_EARLY_NAMES = {"ttft": "time_to_first_token", "ttst": "time_to_second_token"}
EARLY_SCHEMA = "0.1 (records/tag, ttft/ttst)"
# AIPerf 0.2 / 0.3's aggregate: genai-perf's shape and names, with metrics genai-perf never writes
AIPERF_ONLY = re.compile(
    rb'"(?:inter_chunk_latency|benchmark_duration|min_request_timestamp|max_response_timestamp'
    rb'|error_request_count)"\s*:\s*\{\s*"unit"'
)
NOV_2025_SCHEMA = "0.2-0.3 (no schema_version)"
CSV_SCHEMA = "aggregate CSV"
TIMESLICE_SCHEMA = "time-sliced"
_TIMESLICES = re.compile(rb'^\s*\{\s*"timeslices"\s*:\s*\[')
# the CSV's statistics header: AIPerf writes the percentiles rising (genai-perf's fall)
_CSV = re.compile(rb"^Metric,avg,min,max,(?:sum,)?p1,p5,", re.MULTILINE)
_CSV_ROW = re.compile(r"(.+?)(?: \(([^()]+)\))?")  # "Time to First Token (ms)", "Request Count"
# the CSV's row headers -> the JSON's metric names (AIPerf's `header` of each metric)
_CSV_NAMES = {
    "Time to First Token": "time_to_first_token",
    "Request Latency": "request_latency",
    "Inter Chunk Latency": "inter_chunk_latency",
    "Decode Duration": "decode_duration",
    "Inter Token Latency": "inter_token_latency",
    "Request Count": "request_count",
    "Error Request Count": "error_request_count",
    "Completed Requests": "completed_request_count",  # "(Success + Error)", as a unit would be
    "Benchmark Duration": "benchmark_duration",
}
_STATS = re.compile(
    rb'"(?:time_to_first_token|request_latency|error_request_count)"\s*:\s*\{\s*"unit"'
)
# a failed request's record: no metric, an `error` object
_RECORD_FAILED = re.compile(rb'"metrics"\s*:\s*\{\s*\}\s*,\s*"error"\s*:\s*\{')


# aggregate metric -> the summary names it fills
_SUMMARY_NAMES = {
    "time_to_first_token": ("ttft", "first_token"),
    "request_latency": ("total",),
    "inter_chunk_latency": ("itl",),
    "decode_duration": ("decode",),
    "inter_token_latency": ("tpot",),
}


def sniff(head: bytes, name: str) -> bool:
    """A per-request record (`metadata` + `metrics` objects) or the aggregate (`aiperf_version`,
    or AIPerf 0.1's `records` of `tag`ged metrics)."""
    if (_AGGREGATE.search(head) or AIPERF_ONLY.search(head)) and _STATS.search(head):
        return True
    if _EARLY_AGGREGATE.search(head) or _CSV.match(head.lstrip()):
        return True
    if _TIMESLICES.search(head) and _STATS.search(head):
        return True
    return (
        (_RECORD_METRIC.search(head) is not None or _RECORD_FAILED.search(head) is not None)
        and re.search(rb'"metadata"\s*:\s*\{', head) is not None
        and _RECORD_ANY.search(head) is not None
    )


def read(data: bytes, source: str, options: ReadOptions) -> list[Run]:
    ctx = Ctx(NAME, source, HINT)
    head = data[:65536]
    if _CSV.match(head.lstrip()):
        return [_aggregate(_csv_doc(data, ctx), ctx, CSV_SCHEMA)]
    if _TIMESLICES.search(head):
        return _timeslices(load_object(data, ctx), ctx)
    if _EARLY_AGGREGATE.search(head):
        doc = load_object(data, ctx)
        records = object_at(doc, "records", ctx)
        flat = {_EARLY_NAMES.get(k, k): v for k, v in records.items()}
        config = doc.get("input_config")
        return [_aggregate({**flat, "input_config": config}, ctx, EARLY_SCHEMA)]
    per_request = _RECORD_METRIC.search(head) or _RECORD_FAILED.search(head)
    if (_AGGREGATE.search(head) or AIPERF_ONLY.search(head)) and not per_request:
        doc = load_object(data, ctx)
        version = doc.get("schema_version")
        known = isinstance(version, str) and 0 < len(version) <= 20
        if known:
            return [_aggregate(doc, ctx, str(version))]
        return [_aggregate(doc, ctx, "current" if "aiperf_version" in doc else NOV_2025_SCHEMA)]
    return [_records(data, ctx)]


@dataclass
class _Records:
    """The profiling records' values, one list item per record (ms, or tokens)."""

    ttft: list[float] = field(default_factory=list)
    total: list[float] = field(default_factory=list)
    gaps: list[Any] = field(default_factory=list)  # raw JSON lists, converted in one go
    gap_ms: list[float] = field(default_factory=list)  # ms per unit of each record's gaps
    lines: list[int] = field(default_factory=list)
    isl: list[float] = field(default_factory=list)
    osl: list[float] = field(default_factory=list)
    ids: list[str] = field(default_factory=list)
    start: list[float] = field(default_factory=list)
    end: list[float] = field(default_factory=list)
    ok: list[bool] = field(default_factory=list)
    has_ttft: bool = False
    early: bool = False  # the early schema's `ttft` key
    cancelled: int = 0  # records AIPerf marks `was_cancelled`


def _records(data: bytes, ctx: Ctx) -> Run:
    r = _Records()
    for line, value in iter_json_values(data, ctx):
        where = f"line {line}:"
        record = obj(value, where, ctx)
        metadata = _sub(record, "metadata", f"{where} key 'metadata'", ctx)
        phase = metadata.get("benchmark_phase", metadata.get("credit_phase"))
        if isinstance(phase, str) and phase == "warmup":
            continue
        metrics = _sub(record, "metrics", f"{where} key 'metrics'", ctx)
        failed = record.get("error") is not None
        r.ok.append(not failed)
        latency = _metric(metrics, "request_latency", where, ctx, required=not failed)
        ttft_name = "time_to_first_token" if "time_to_first_token" in metrics else "ttft"
        r.early = r.early or "ttft" in metrics  # a failed record has neither name
        r.cancelled += metadata.get("was_cancelled") is True
        first = _metric(metrics, ttft_name, where, ctx, required=False)
        r.has_ttft = r.has_ttft or not math.isnan(first)
        r.total.append(math.nan if failed else latency)
        r.ttft.append(math.nan if failed else first)
        raw_gaps, scale = ([], 1.0) if failed else _gaps(metrics, where, ctx)
        r.gaps.append(raw_gaps)
        r.gap_ms.append(scale)
        r.lines.append(line)
        r.isl.append(_metric(metrics, "input_sequence_length", where, ctx, required=False, scale=1))
        r.osl.append(
            _metric(metrics, "output_sequence_length", where, ctx, required=False, scale=1)
        )
        request_id = metadata.get("x_request_id")
        r.ids.append(request_id if isinstance(request_id, str) else "")
        r.start.append(_ns(metadata, "request_start_ns", where, ctx))
        r.end.append(_ns(metadata, "request_end_ns", where, ctx))
    if not r.ok:
        raise ctx.error("", "holds no profiling records")
    return _records_run(r, ctx)


def _records_run(r: _Records, ctx: Ctx) -> Run:
    """The records as one per-request Run; TTFT in every succeeded record or in none."""
    lines = r.lines
    itl = number_lists(r.gaps, lambda i: f"line {lines[i]}: {_GAPS_WHERE}", ctx, latency=True)
    lengths = np.diff(itl.offsets)
    if lengths.any():
        itl = Itl(values=itl.values * np.repeat(np.array(r.gap_ms), lengths), offsets=itl.offsets)
    ok_arr = np.array(r.ok, dtype=bool)
    total_arr = np.array(r.total, dtype=np.float64)
    ttft_arr = np.array(r.ttft, dtype=np.float64)
    slices: dict[str, FloatArray] = {}
    if r.has_ttft:
        missing = ok_arr & np.isnan(ttft_arr)
        if missing.any():
            raise ctx.error(
                f"record {int(np.argmax(missing)) + 1}: key 'metrics.time_to_first_token'",
                "is missing (other records have it)",
            )
        decode = total_arr - ttft_arr
        bad = ok_arr & (decode < -1e-6)
        if bad.any():
            raise ctx.error(
                f"record {int(np.argmax(bad)) + 1}: key 'metrics.request_latency'",
                "is shorter than time_to_first_token",
            )
        slices = {"first_token": ttft_arr, "decode": np.maximum(decode, 0.0)}
    start_arr = np.array(r.start, dtype=np.float64)
    end_arr = np.array(r.end, dtype=np.float64)
    duration = None
    if np.isfinite(start_arr).any() and np.isfinite(end_arr).any():
        duration = float(np.nanmax(end_arr) - np.nanmin(start_arr))
    isl_arr = np.array(r.isl, dtype=np.float64)
    osl_arr = np.array(r.osl, dtype=np.float64)
    meta: dict[str, str | float] = {
        "tool": "aiperf",
        "schema": EARLY_SCHEMA if r.early else "current",
    }
    if r.cancelled:  # AIPerf cut these requests short (e.g. its --request-cancellation-rate)
        meta["cancelled"] = "requests"  # the judge turns it into a `failures` finding
        meta["note"] = (
            f"{ctx.source}: AIPerf cancelled {count(r.cancelled)} of the {count(len(r.ok))} "
            "requests before they completed (was_cancelled); they count as failed"
        )
    return Run(
        source=ctx.source,
        n=len(r.ok),
        slices=slices,
        ttft=ttft_arr if r.has_ttft else None,
        total=total_arr,
        ok=ok_arr,
        request_id=Ids(np.array(r.ids, dtype=np.str_)) if any(r.ids) else None,
        input_tokens=None if np.isnan(isl_arr).all() else isl_arr,
        output_tokens=None if np.isnan(osl_arr).all() else osl_arr,
        itl=itl if lengths.any() else None,
        start_time=None if np.isnan(start_arr).all() else start_arr,
        duration_s=duration,
        meta=meta,
    )


def _metric(
    metrics: dict[str, Any],
    name: str,
    where: str,
    ctx: Ctx,
    *,
    required: bool,
    scale: float | None = None,
) -> float:
    """One `{"value": v, "unit": u}` metric in ms (or times `scale`); NaN when absent."""
    entry = metrics.get(name)
    if type(entry) is dict:  # the common case first, without building messages
        value = entry.get("value")
        if _plain(value):
            return value * (scale if scale is not None else _unit_ms(entry, name, where, ctx))
    prefix = f"{where} key 'metrics.{name}"
    if name not in metrics:
        if required:
            raise ctx.error(f"{prefix}'", "is missing")
        return math.nan
    entry = obj(metrics[name], f"{prefix}'", ctx)
    value = number(key(entry, "value", ctx, f"{prefix}.value'"), f"{prefix}.value'", ctx)
    if not (math.isfinite(value) and value >= 0.0):
        raise ctx.error(f"{prefix}.value'", f"must be a finite value >= 0, not {value!r}")
    if scale is None:
        scale = ms_per(key(entry, "unit", ctx, f"{prefix}.unit'"), f"{prefix}.unit'", ctx)
    return value * scale


def _sub(mapping: dict[str, Any], name: str, where: str, ctx: Ctx) -> dict[str, Any]:
    return obj(key(mapping, name, ctx, where), where, ctx)


_GAPS = "inter_chunk_latency"
_GAPS_WHERE = f"key 'metrics.{_GAPS}.value'"


def _gaps(metrics: dict[str, Any], where: str, ctx: Ctx) -> tuple[list[Any], float]:
    """One request's gaps as the JSON list (its numbers are checked with every other request's)
    and the ms per unit they are in."""
    prefix = f"{where} key 'metrics.{_GAPS}"
    if _GAPS not in metrics:
        return [], 1.0
    entry = obj(metrics[_GAPS], f"{prefix}'", ctx)
    raw = key(entry, "value", ctx, f"{prefix}.value'")
    if is_number(literal(raw)):  # a request with one gap may be written as a bare number
        raw = [raw]
    values = arr(raw, f"{prefix}.value'", ctx)
    return values, ms_per(key(entry, "unit", ctx, f"{prefix}.unit'"), f"{prefix}.unit'", ctx)


def _plain(value: Any) -> TypeGuard[int | float]:
    """A finite number >= 0 that multiplies without overflow (the checks' fast path)."""
    kind = type(value)
    return (kind is float and 0.0 <= value < math.inf) or (kind is int and 0 <= value < 1 << 63)


def _unit_ms(entry: dict[str, Any], name: str, where: str, ctx: Ctx) -> float:
    unit = entry.get("unit")
    # the unit strings AIPerf writes (`ms_per` below takes other spellings too)
    scale = MS_PER.get(unit) if type(unit) is str else None
    if scale is not None:
        return scale
    prefix = f"{where} key 'metrics.{name}"
    return ms_per(key(entry, "unit", ctx, f"{prefix}.unit'"), f"{prefix}.unit'", ctx)


def _ns(metadata: dict[str, Any], name: str, where: str, ctx: Ctx) -> float:
    value = metadata.get(name)
    if value is None:
        return math.nan
    if _plain(value):
        return value / 1e9
    return number(value, f"{where} key 'metadata.{name}'", ctx, latency=True) / 1e9


def _aggregate(doc: dict[str, Any], ctx: Ctx, schema: str) -> Run:
    summary: dict[str, dict[float, float]] = {}
    for metric, names in _SUMMARY_NAMES.items():
        if doc.get(metric) is None:  # AIPerf 0.3: null when not computed
            continue
        where = f"key '{metric}'"
        stats = obj(doc[metric], where, ctx)
        unit_where = f"key '{metric}.unit'"
        scale = ms_per(key(stats, "unit", ctx, unit_where), unit_where, ctx)
        values = percentiles(stats, where, ctx, scale)
        if values:
            for summary_name in names:
                summary[summary_name] = dict(values)
    succeeded = _avg(doc, "request_count", ctx)  # AIPerf counts the requests that succeeded
    errors = _avg(doc, "error_request_count", ctx)
    completed = _avg(doc, "completed_request_count", ctx)  # 0.13: success + error
    if errors is None and completed is not None and succeeded is not None:
        if completed < succeeded:
            raise ctx.error("key 'completed_request_count'", "is less than request_count")
        errors = completed - succeeded  # no error count written: none failed (0.13 on)
    said = None
    if errors is None and succeeded is not None and doc.get("was_cancelled") is not True:
        errors, said = _none_failed(doc, succeeded, ctx)
    if "total" not in summary and not (errors and not succeeded):  # all failed: no percentile
        raise ctx.error("key 'request_latency'", "is missing (no latency percentiles)")
    duration = _avg(doc, "benchmark_duration", ctx)
    meta = {**_aggregate_meta(doc), "schema": schema}
    if doc.get("was_cancelled") is True:  # the run was stopped (Ctrl-C) before its end
        meta["cancelled"] = "run"
        meta["note"] = f"{ctx.source}: AIPerf cancelled the run (was_cancelled) before it finished"
    if said is not None:
        meta["note"] = said
    total = succeeded
    if errors is not None:
        meta["failures"] = errors
        total = (total or 0.0) + errors
    return Run(
        source=ctx.source,
        n=0,
        summary=summary,
        summary_count=int(total) if total is not None else None,
        duration_s=duration,
        meta=meta,
    )


def _timeslices(doc: dict[str, Any], ctx: Ctx) -> list[Run]:
    """One aggregate Run per slice, named by its place in time."""
    slices = list_at(doc, "timeslices", ctx)
    if not slices:
        raise ctx.error("key 'timeslices'", "is empty")
    runs = []
    for i, raw in enumerate(slices):
        piece = obj(raw, f"key 'timeslices'[{i}]", ctx)
        run = _aggregate(piece, ctx, TIMESLICE_SCHEMA)
        if piece.get("is_complete") is False:
            note = f"{ctx.source}: timeslice {i} is AIPerf's trailing partial slice"
            run = replace(run, meta={**run.meta, "note": note})
        runs.append(replace(run, scenario=f"timeslice {i}"))
    return runs


def _csv_doc(data: bytes, ctx: Ctx) -> dict[str, Any]:
    """The CSV's rows in the JSON's shape: {"time_to_first_token": {"unit": "ms", "p50": ...}}."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise ctx.error("", f"is not UTF-8 text (byte {e.start})") from None
    if not text.endswith("\n"):  # AIPerf ends every line: a file without one was cut short
        raise ctx.error("", "is cut short (its last line has no line end)")
    doc: dict[str, Any] = {}
    columns: list[str] = []
    counts = False  # the `Metric,Value` block of counts, after the statistics
    for line, row in enumerate(csv.reader(io.StringIO(text)), start=1):
        if not row or not any(cell.strip() for cell in row):
            continue
        if row[0] == "Metric":  # a block's header: its columns name the cells below
            columns = [cell.strip() for cell in row]
            counts = counts or columns == ["Metric", "Value"]
            continue
        match = _CSV_ROW.fullmatch(row[0].strip())
        name = _CSV_NAMES.get(match.group(1)) if match else None
        if match is None or name is None:
            continue
        if len(row) != len(columns):
            raise ctx.error(f"line {line}", f"has {len(row)} cells; its header has {len(columns)}")
        stats: dict[str, Any] = {"unit": match.group(2) or "requests"}
        for column, cell in zip(columns[1:], row[1:], strict=False):
            if cell.strip():
                where = f"line {line}: {row[0]!r}, column {column!r}"
                stats["avg" if column == "Value" else column] = _csv_number(cell, where, ctx)
        doc[name] = stats
    if not counts:
        raise ctx.error("", "is cut short (no 'Metric,Value' block of counts)")
    return doc


def _csv_number(cell: str, where: str, ctx: Ctx) -> float:
    try:
        value = float(cell)
    except ValueError:
        raise ctx.error(where, f"must be a number, not {cell[:40]!r}") from None
    return number(value, where, ctx)


def _none_failed(
    doc: dict[str, Any], succeeded: float, ctx: Ctx
) -> tuple[float | None, str | None]:
    """An aggregate that writes no error count (AIPerf 0.3 with none failed): 0 failed where
    its successes are every request it was asked for (`--request-count`), with a note saying
    so; unknown (None) where they are fewer, or the run asked for none (`--benchmark-duration`)."""
    config = doc.get("input_config")
    config = config if isinstance(config, dict) else {}
    loadgen = config.get("loadgen")
    asked = finite(loadgen.get("request_count")) if isinstance(loadgen, dict) else None
    phases = config.get("phases")
    if asked is None and isinstance(phases, list):  # 0.13: the profiling phase's `requests`
        profiling = [p for p in phases if isinstance(p, dict) and p.get("kind") == "profiling"]
        asked = finite(profiling[0].get("requests")) if len(profiling) == 1 else None
    if asked is None or asked != succeeded:
        return None, None
    return 0.0, (
        f"{ctx.source}: no error count in the file; its {count(int(succeeded))} "
        "successful requests are every request the run was asked for (input_config's "
        "request_count): none failed"
    )


def _avg(doc: dict[str, Any], name: str, ctx: Ctx) -> float | None:
    if doc.get(name) is None:  # absent, or null (AIPerf 0.3: a declared metric not computed)
        return None
    stats = obj(doc[name], f"key '{name}'", ctx)
    if "avg" not in stats:
        return None
    return number(stats["avg"], f"key '{name}.avg'", ctx, latency=True)


def _aggregate_meta(doc: dict[str, Any]) -> dict[str, str | float]:
    meta: dict[str, str | float] = {"tool": "aiperf"}
    version = doc.get("aiperf_version")
    if isinstance(version, str):
        meta["tool_version"] = version
    config = doc.get("input_config")
    if not isinstance(config, dict):
        return meta
    endpoint, loadgen = config.get("endpoint"), config.get("loadgen")  # AIPerf 0.1
    names = endpoint.get("model_names") if isinstance(endpoint, dict) else None
    if isinstance(names, list) and names and isinstance(names[0], str):
        meta["model"] = names[0]
    for out_key, in_key in (("concurrency", "concurrency"), ("rate", "request_rate")):
        value = finite(loadgen.get(in_key)) if isinstance(loadgen, dict) else None
        if value is not None:
            meta[out_key] = value
    models = config.get("models")
    items = models.get("items") if isinstance(models, dict) else None
    if isinstance(items, list) and items and isinstance(items[0], dict):
        model = items[0].get("name")
        if isinstance(model, str):
            meta["model"] = model
    phases = config.get("phases")
    if isinstance(phases, list):
        for phase in phases:
            if not isinstance(phase, dict) or phase.get("kind", "profiling") != "profiling":
                continue
            for out_key, in_key in (("concurrency", "concurrency"), ("rate", "request_rate")):
                value = finite(phase.get(in_key))
                if value is not None:
                    meta[out_key] = value
    return meta
