"""Reader for Locust's reports: `--csv PREFIX`'s `PREFIX_stats.csv` and `PREFIX_stats_history.csv`,
and `--json` / `--json-file`'s per-endpoint summary.

Locust keeps no request one by one, only a histogram of response times per endpoint (each time
rounded to about two significant digits: 147 ms counts as 150), from which it prints its
percentiles. So every file is an aggregate input: Locust's own percentiles of the response time,
read as the end to end (`total`), one scenario per endpoint (`POST /v1/chat/completions`); the
`Aggregated` row, every endpoint's requests mixed, is left out where the file has endpoints.
Locust times whatever the locustfile's task timed (a streamed request with `stream=True` only up
to its response headers, unless the task sets the time itself), and its percentiles count the
failed requests' times too: the notes say both. Failures are Locust's failure counts.

- `_stats.csv`: one row per endpoint, its percentile columns (`50%` ... `99.99%`) as written.
- `_stats.json` (`--json`): per endpoint, the histogram (`response_times`); the percentiles
  are computed from it by Locust's own rule (`calculate_response_time_percentile`: the value at
  rank floor(n * p) of the sorted times).
- `_stats_history.csv`: a row per second; its last `Aggregated` row is the whole run up to
  then (cumulative percentiles). With `--csv-full-history` its percentiles are those of the last
  ten seconds only: refused, naming `_stats.csv`.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import replace
from typing import Any

import numpy as np

from budgetdiff import numbers
from budgetdiff.formats import ReadOptions
from budgetdiff.formats._checks import (
    Ctx,
    arr,
    finite,
    key,
    load_json,
    number,
    obj,
    unique_names,
)
from budgetdiff.table import Run

NAME = "locust"
HINT = "a Locust `--csv` `_stats.csv` / `_stats_history.csv` or `--json` report"

# Locust 2.x names the counts `Request Count` / `Failure Count`, 1.x `# requests` / `# failures`
_STATS = re.compile(rb"\A\s*Type,Name,(?:Request Count|# requests),(?:Failure Count|# failures),")
_HISTORY = re.compile(rb"\A\s*Timestamp,User Count,Type,Name,")
# a stats entry of the JSON report: its keys, in Locust's order
_JSON_ENTRY = re.compile(rb'"num_requests"\s*:.*?"num_none_requests"\s*:', re.DOTALL)
_JSON_TIMES = re.compile(rb'"response_times"\s*:\s*\{')
_PERCENT = re.compile(r"(\d{1,2}(?:\.\d+)?)%")  # a percentile column: `50%`, `99.9%` (not 100%)
_COUNTS = (("Request Count", "Failure Count"), ("# requests", "# failures"))
_HISTORY_COUNTS = ("Total Request Count", "Total Failure Count")
# Locust's default PERCENTILES_TO_REPORT, which `--json` does not write: its CSV columns
JSON_PERCENTILES = (50.0, 66.0, 75.0, 80.0, 90.0, 95.0, 98.0, 99.0, 99.9, 99.99)
AGGREGATED = "Aggregated"
TIMED = (
    "Locust's response time is what the locustfile's task timed (for a streamed request with "
    "stream=True, only up to the response headers unless the task sets it), read as the end "
    "to end; its percentiles are over times rounded to two significant digits"
)


def sniff(head: bytes, name: str) -> bool:
    """Locust's stats CSV or stats-history CSV header, or its JSON list of stats entries."""
    if _STATS.match(head) is not None or _HISTORY.match(head) is not None:
        return True
    return (
        head.lstrip()[:1] == b"["
        and _JSON_ENTRY.search(head) is not None
        and _JSON_TIMES.search(head) is not None
    )


def read(data: bytes, source: str, options: ReadOptions) -> list[Run]:
    ctx = Ctx(NAME, source, HINT)
    head = data[:4096]
    if _STATS.match(head) is not None:
        return _named(_stats_csv(_table(data, ctx), ctx))
    if _HISTORY.match(head) is not None:
        return [_history_csv(_table(data, ctx), ctx)]
    return _named(_json_entries(load_json(data, ctx), ctx))


def _named(entries: list[tuple[str, Run]]) -> list[Run]:
    """One scenario per endpoint, or the one endpoint's run as it is."""
    if not entries:
        return []
    if len(entries) == 1:
        return [entries[0][1]]
    names = unique_names([name for name, _ in entries])
    return [replace(run, scenario=name) for name, (_, run) in zip(names, entries, strict=True)]


def _table(data: bytes, ctx: Ctx) -> list[tuple[int, dict[str, str]]]:
    """The CSV's rows as {column: cell}, each with its line number."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise ctx.error("", f"is not UTF-8 text (byte {e.start})") from None
    reader = csv.reader(io.StringIO(text))
    first = next(reader, None)
    if first is None:
        raise ctx.error("", "is empty")
    header = [cell.strip() for cell in first]
    rows = []
    for line, cells in enumerate(reader, start=2):
        if not any(cell.strip() for cell in cells):
            continue
        if len(cells) != len(header):
            raise ctx.error(f"line {line}", f"has {len(cells)} cells; its header has {len(header)}")
        rows.append((line, dict(zip(header, cells, strict=True))))
    return rows


def _cell(row: dict[str, str], column: str, line: int, ctx: Ctx) -> float:
    raw = row.get(column)
    if raw is None:
        raise ctx.error(f"column {column!r}", "is missing")
    try:
        value = float(raw)
    except ValueError:
        raise ctx.error(
            f"line {line}, column {column!r}", f"is {raw[:40]!r}, not a number"
        ) from None
    return number(value, f"line {line}, column {column!r}", ctx, latency=True)


def _percentiles(row: dict[str, str], line: int, ctx: Ctx) -> dict[float, float]:
    """The row's percentile columns (`N/A` where Locust had no time yet: left out)."""
    out = {}
    for column, raw in row.items():
        match = _PERCENT.fullmatch(column)
        if match is None or raw.strip() == "N/A":
            continue
        out[float(match.group(1))] = _cell(row, column, line, ctx)
    return out


def _counts(row: dict[str, str], names: tuple[str, str], line: int, ctx: Ctx) -> tuple[int, int]:
    requests, failures = (int(_cell(row, name, line, ctx)) for name in names)
    if failures > requests:
        raise ctx.error(f"line {line}, column {names[1]!r}", f"is more than its {names[0]!r}")
    return requests, failures


def _stats_csv(rows: list[tuple[int, dict[str, str]]], ctx: Ctx) -> list[tuple[str, Run]]:
    if not rows:
        raise ctx.error("", "has no rows under its header (Locust ran no request)")
    names = next((pair for pair in _COUNTS if pair[0] in rows[0][1]), _COUNTS[0])
    endpoints = [(line, row) for line, row in rows if not _is_aggregated(row)]
    chosen = endpoints or rows  # a file of only the Aggregated row: that row
    out = []
    for line, row in chosen:
        requests, failures = _counts(row, names, line, ctx)
        label = f"{row.get('Type', '')} {row.get('Name', '')}".strip()
        note = _note(label, requests, failures, left_out=len(endpoints) > 1)
        run = _aggregate(_percentiles(row, line, ctx), requests, failures, ctx, note, "stats CSV")
        out.append((label, run))
    return out


def _is_aggregated(row: dict[str, str]) -> bool:
    return row.get("Name") == AGGREGATED and not row.get("Type")


def _history_csv(rows: list[tuple[int, dict[str, str]]], ctx: Ctx) -> Run:
    if any(not _is_aggregated(row) for _, row in rows):
        raise ctx.error(
            "",
            "is a stats history written with --csv-full-history, whose percentiles are those "
            "of the last ten seconds only; pass the run's <prefix>_stats.csv instead",
        )
    done = [(line, row) for line, row in rows if _cell(row, _HISTORY_COUNTS[0], line, ctx) > 0]
    if not done:
        raise ctx.error("", "has no row with a request (Locust ran no request)")
    line, row = done[-1]
    requests, failures = _counts(row, _HISTORY_COUNTS, line, ctx)
    note = (
        f"{_note('all endpoints', requests, failures, left_out=False)}; the last row of the "
        f"stats history (line {line}), every endpoint together: <prefix>_stats.csv has the "
        "final numbers per endpoint"
    )
    return _aggregate(_percentiles(row, line, ctx), requests, failures, ctx, note, "stats history")


def _json_entries(doc: Any, ctx: Ctx) -> list[tuple[str, Run]]:
    entries = arr(doc, "top level", ctx)
    if not entries:
        raise ctx.error("top level", "is empty (Locust ran no request)")
    out = []
    for i, raw in enumerate(entries):
        where = f"[{i}]"
        entry = obj(raw, where, ctx)
        requests = int(number(key(entry, "num_requests", ctx, f"{where}.num_requests"), where, ctx))
        failures = int(number(key(entry, "num_failures", ctx, f"{where}.num_failures"), where, ctx))
        if failures > requests or requests < 0:
            raise ctx.error(f"{where}.num_failures", "is more than num_requests")
        times = obj(key(entry, "response_times", ctx), f"{where}.response_times", ctx)
        label = f"{entry.get('method') or ''} {entry.get('name') or ''}".strip()
        pcts = _from_histogram(times, requests, f"{where}.response_times", ctx)
        note = _note(label, requests, failures, left_out=False)
        run = _aggregate(pcts, requests, failures, ctx, note, "JSON report")
        start, last = finite(entry.get("start_time")), finite(entry.get("last_request_timestamp"))
        if start is not None and last is not None and last >= start:
            run = replace(run, duration_s=last - start)
        out.append((label, run))
    return out


def _from_histogram(
    times: dict[str, Any], requests: int, where: str, ctx: Ctx
) -> dict[float, float]:
    """Locust's percentiles of its rounded response times: `calculate_response_time_percentile`
    counts down from the longest time and returns the first whose shorter times number at most
    floor(requests * p)."""
    if not times or requests == 0:
        return {}
    values = np.array([_bucket(k, where, ctx) for k in times], dtype=np.float64)
    counts = np.array([number(v, f"{where}.{k}", ctx, latency=True) for k, v in times.items()])
    order = np.argsort(-values)
    values, below = values[order], requests - np.cumsum(counts[order])
    out = {}
    for p in JSON_PERCENTILES:
        hit = np.flatnonzero(below <= int(requests * p / 100.0))
        out[p] = float(values[hit[0]]) if len(hit) else 0.0
    return out


def _bucket(raw: str, where: str, ctx: Ctx) -> float:
    try:
        value = float(raw)
    except ValueError:
        raise ctx.error(f"{where}", f"has key {raw[:40]!r}, not a response time in ms") from None
    return number(value, f"{where}.{raw}", ctx, latency=True)


def _note(label: str, requests: int, failures: int, *, left_out: bool) -> str:
    failed = (
        f"; its percentiles include the {numbers.count(failures)} failed requests' times"
        if failures
        else ""
    )
    mixed = "; the Aggregated row (every endpoint mixed) is left out" if left_out else ""
    return f"Locust, {label}: {numbers.count(requests)} requests{failed}; {TIMED}{mixed}"


def _aggregate(
    pcts: dict[float, float], requests: int, failures: int, ctx: Ctx, note: str, schema: str
) -> Run:
    if not pcts and requests > failures:
        raise ctx.error("", "has no response-time percentile for its requests")
    return Run(
        source=ctx.source,
        n=0,
        summary={"total": dict(sorted(pcts.items()))} if pcts else {},
        summary_count=requests,
        meta={"tool": "locust", "failures": float(failures), "note": note, "schema": schema},
    )
