"""Reader for evalscope's perf results (ModelScope: `evalscope perf ...` writes, per run,
`benchmark_data.db`, `benchmark_percentile.json`, `benchmark_summary.json` and
`benchmark_args.json` in `<outputs>/<time>/<name>/parallel_<c>_number_<n>/`).

- `benchmark_data.db`, SQLite, table `result`: one row per request, the per-request truth. Read
  per request: `first_chunk_latency` (seconds) is TTFT and `first_token`, `latency` the end to
  end, `inter_token_latencies` (a JSON list of seconds) the gaps (`itl`), `decode` = latency -
  TTFT; `success` 0 is a failed request. As evalscope's own percentiles do, a request that was
  not streamed (`is_stream` 0) has no TTFT of its own: it has none here either. The file is
  opened read-only from a private copy, its queries bounded; its pickled `response_messages` are
  never read.
- `benchmark_percentile.json`: a table of percentile rows (`min`, `1%` ... `99%`, `max`), each
  with every metric's value at that percentile: evalscope's own percentiles, read as an aggregate
  (TTFT, end to end, ITL, TPOT; in the unit each column names), never as requests. evalscope
  1.14 takes the nearest rank (the value at rank ceil(n * p) of the sorted successful
  requests) and rounds it to four decimals (`Latency (s)` to 0.1 ms). The file holds no
  request count.
- Read from the database, a run names `benchmark_percentile.json` as its companion
  (`COMPANION`): where the file edge finds that file in the database's own folder (never
  elsewhere), `with_own` keeps evalscope's percentiles beside budgetdiff's
  (`Run.tool_percentiles`, nearest rank), once it has checked them to be of these requests
  (the table's end-to-end rows equal these requests' by evalscope's rule).
- `benchmark_summary.json` (averages and counts) and `benchmark_args.json` (the run's settings)
  hold no percentile and no request: refused, naming the file to pass.
"""

from __future__ import annotations

import contextlib
import os
import re
import sqlite3
import tempfile
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import numpy as np

from budgetdiff import numbers
from budgetdiff.formats import ReadOptions
from budgetdiff.formats._checks import (
    Ctx,
    JsonProblem,
    arr,
    load_json,
    number,
    number_lists,
    obj,
    parse_json,
)
from budgetdiff.table import Ids, Itl, Run

NAME = "evalscope"
HINT = "an evalscope perf `benchmark_data.db` or `benchmark_percentile.json`"

SQLITE = b"SQLite format 3\x00"
_PERCENTILES = re.compile(rb'\A\s*\[\s*\{\s*"Percentiles"\s*:\s*"(?:min|\d+(?:\.\d+)?%)"')
_SUMMARY = re.compile(rb'"(?:Test Duration \(s\)|Time taken for tests \(s\))"\s*:')
_ARGS = re.compile(rb'"parallel"\s*:')
_ARGS_KEYS = re.compile(rb'"(?:api|outputs_dir|number)"\s*:')
_COLUMN = re.compile(r"(TTFT|ITL|TPOT|Latency) \((ms|s)\)")
_PERCENT = re.compile(r"(\d{1,2}(?:\.\d+)?)%")
_NAMES = {"TTFT": ("ttft", "first_token"), "ITL": ("itl",), "TPOT": ("tpot",)}
_NAMES |= {"Latency": ("total",)}
_MS_PER = {"ms": 1.0, "s": 1000.0}
# the table evalscope writes, and the columns read (the others, its pickled messages among
# them, are left alone)
TABLE = "result"
NEEDED = ("success", "latency", "first_chunk_latency", "inter_token_latencies")
OPTIONAL = ("prompt_tokens", "completion_tokens", "start_time", "is_stream", "request_id")
MAX_STEPS = 200_000  # progress-handler calls (each 1,000 SQLite instructions) before a query stops
COMPANION = "benchmark_percentile.json"  # beside benchmark_data.db: evalscope's own percentiles
METHOD = "nearest rank"  # evalscope 1.14's rule (budgetdiff interpolates)
OWN = ("ttft", "total", "itl", "tpot")  # its percentiles kept beside budgetdiff's
PASS = "pass benchmark_data.db (per request) or benchmark_percentile.json from the same folder"


def sniff(head: bytes, name: str) -> bool:
    """evalscope's SQLite result table, its percentile table, or its summary / args JSON."""
    if head.startswith(SQLITE):
        return b"first_chunk_latency" in head and b"inter_token_latencies" in head
    if _PERCENTILES.match(head) is not None:
        return True
    text = head.lstrip()
    if text[:1] != b"{":
        return False
    if _SUMMARY.search(head) is not None:
        return True
    return (
        _ARGS.search(head) is not None
        and _ARGS_KEYS.search(head) is not None
        and (b'"api_key"' in head or b'"tokenizer_path"' in head)
    )


def read(data: bytes, source: str, options: ReadOptions) -> list[Run]:
    ctx = Ctx(NAME, source, HINT)
    if data.startswith(SQLITE):
        return [_database(data, ctx)]
    doc = load_json(data, ctx)
    if isinstance(doc, list):
        return [_percentile_table(doc, ctx)]
    obj(doc, "top level", ctx)
    head = data[:65536]
    if _SUMMARY.search(head) is not None:
        what = "is evalscope perf's benchmark_summary.json: averages and counts"
    elif _ARGS.search(head) is not None and _ARGS_KEYS.search(head) is not None:
        what = "is evalscope perf's benchmark_args.json: the run's settings"
    else:
        what = "is a JSON object, not one of evalscope perf's result files"
    raise ctx.error("", f"{what}, no percentile and no request; {PASS}")


# ---------------------------------------------------------------- benchmark_percentile.json
def _percentile_table(rows: list[Any], ctx: Ctx) -> Run:
    summary: dict[str, dict[float, float]] = {}
    for i, raw in enumerate(arr(rows, "top level", ctx)):
        row = obj(raw, f"[{i}]", ctx)
        label = row.get("Percentiles")
        match = _PERCENT.fullmatch(label) if isinstance(label, str) else None
        if match is None:  # `min`, `max`: not percentiles
            continue
        p = float(match.group(1))
        for column, value in row.items():
            found = _COLUMN.fullmatch(column)
            if found is None or value is None:
                continue
            scaled = number(value, f"[{i}].{column!r}", ctx, latency=True)
            for name in _NAMES[found.group(1)]:
                summary.setdefault(name, {})[p] = scaled * _MS_PER[found.group(2)]
    if "total" not in summary:
        raise ctx.error("", "has no 'Latency (s)' percentile row; is it a complete file?")
    note = (
        f"{ctx.source}: evalscope's own percentiles (nearest rank over the successful "
        "requests, rounded to four decimals); the request counts are in benchmark_summary.json, "
        "not read"
    )
    return Run(
        source=ctx.source,
        n=0,
        summary={k: dict(sorted(v.items())) for k, v in summary.items()},
        meta={"tool": "evalscope", "schema": "benchmark_percentile.json", "note": note},
    )


# ---------------------------------------------------------------- benchmark_data.db
@contextlib.contextmanager
def _connected(data: bytes) -> Iterator[sqlite3.Connection]:
    """The database read-only, from a private copy (sqlite3 reads files, not bytes), every
    query stopped after MAX_STEPS progress calls, no trusted schema."""
    with tempfile.TemporaryDirectory(prefix="budgetdiff-") as folder:
        path = os.path.join(folder, "benchmark_data.db")
        with open(path, "wb") as out:
            out.write(data)
        con = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
        try:
            steps = iter(range(MAX_STEPS))
            con.set_progress_handler(lambda: next(steps, None) is None, 1000)
            con.execute("PRAGMA trusted_schema = OFF")
            con.execute("PRAGMA query_only = ON")
            yield con
        finally:
            con.close()


def _rows(data: bytes, ctx: Ctx) -> tuple[list[str], list[tuple[Any, ...]]]:
    try:
        with _connected(data) as con:
            kind = con.execute("SELECT type FROM sqlite_master WHERE name = ?", (TABLE,)).fetchone()
            if kind is None or kind[0] != "table":
                raise ctx.error(f"table '{TABLE}'", "is missing (not an evalscope perf database)")
            have = {row[1] for row in con.execute(f"PRAGMA table_info({TABLE})")}
            missing = [c for c in NEEDED if c not in have]
            if missing:
                raise ctx.error(f"table '{TABLE}'", f"has no column {missing[0]!r}")
            columns = [*NEEDED, *(c for c in OPTIONAL if c in have)]
            # only our own column names go into the query, never a name read from the file
            query = f"SELECT {', '.join(columns)} FROM {TABLE} ORDER BY rowid"
            return columns, con.execute(query).fetchall()
    except sqlite3.Error as e:
        what = str(e).splitlines()[0][:200] if str(e) else type(e).__name__
        if what == "interrupted":  # the progress handler stopped the query
            raise ctx.error("", "takes more work to read than a results file may") from None
        raise ctx.error("", f"is not a readable SQLite database ({what})") from None


def _database(data: bytes, ctx: Ctx) -> Run:
    columns, rows = _rows(data, ctx)
    if not rows:
        raise ctx.error(f"table '{TABLE}'", "has no rows (no request ran)")
    at = {name: i for i, name in enumerate(columns)}
    n = len(rows)

    def where(i: int, column: str) -> str:
        return f"table '{TABLE}' row {i + 1} column {column!r}"

    def cells(column: str, scale: float, ok: np.ndarray[Any, Any] | None) -> np.ndarray[Any, Any]:
        out = np.full(n, np.nan)
        if column not in at:
            return out
        for i, row in enumerate(rows):
            value = row[at[column]]
            if value is not None and (ok is None or ok[i]):
                out[i] = number(value, where(i, column), ctx, latency=True) * scale
        return out

    ok = cells("success", 1.0, None) == 1.0
    total = cells("latency", 1000.0, ok)
    ttft = cells("first_chunk_latency", 1000.0, ok)
    for i in np.flatnonzero(ok & ~np.isfinite(total)):
        raise ctx.error(where(int(i), "latency"), "is empty for a successful request")
    streamed = cells("is_stream", 1.0, None)
    ttft[streamed == 0.0] = np.nan  # not streamed: no first token of its own (as evalscope)
    decode = total - ttft
    for i in np.flatnonzero(ok & (decode < -1e-6)):
        raise ctx.error(where(int(i), "latency"), "is shorter than first_chunk_latency")
    itl = _gaps(rows, at["inter_token_latencies"], ok, ctx, where)
    ids = [row[at["request_id"]] if "request_id" in at else None for row in rows]
    return Run(
        source=ctx.source,
        n=n,
        slices={"first_token": ttft, "decode": np.maximum(decode, 0.0)},
        ttft=ttft if np.isfinite(ttft).any() else None,
        total=total,
        ok=ok,
        itl=itl,
        request_id=Ids(np.array([str(x) for x in ids], dtype=object))
        if all(isinstance(x, str) and x for x in ids)
        else None,
        input_tokens=cells("prompt_tokens", 1.0, None),
        output_tokens=cells("completion_tokens", 1.0, None),
        start_time=cells("start_time", 1.0, None) if "start_time" in at else None,
        meta={"tool": "evalscope", "schema": "benchmark_data.db", "companion": COMPANION},
    )


def _gaps(
    rows: list[tuple[Any, ...]], column: int, ok: np.ndarray[Any, Any], ctx: Ctx, where: Any
) -> Itl:
    """Each successful request's `inter_token_latencies` (a JSON list of seconds) in ms."""
    lists: list[Any] = []
    for i, row in enumerate(rows):
        text = row[column]
        if not ok[i] or text is None:
            lists.append([])
            continue
        if not isinstance(text, str | bytes):
            raise ctx.error(where(i, "inter_token_latencies"), "must be a JSON list of seconds")
        try:
            lists.append(parse_json(text))
        except JsonProblem:
            raise ctx.error(where(i, "inter_token_latencies"), "is not a JSON list") from None
    itl = number_lists(lists, lambda i: where(i, "inter_token_latencies"), ctx, latency=True)
    return Itl(values=itl.values * 1000.0, offsets=itl.offsets)


# ---------------------------------------------------------------- evalscope's own, beside
def nearest_rank(values: np.ndarray[Any, Any], p: float) -> float:
    """evalscope 1.14's percentile: the value at rank ceil(n p / 100) of the sorted values
    (numpy's `inverted_cdf`)."""
    return float(np.percentile(values, p, method="inverted_cdf"))


def with_own(run: Run, table: Run, source: str) -> Run:
    """The database's run with evalscope's own percentiles (`table`, read from `source`, its
    companion in the same folder) beside budgetdiff's, where the table is of these requests
    (its end-to-end rows are theirs by evalscope's rule); else a note saying why not."""
    if run.meta.get("schema") != "benchmark_data.db":
        return run
    if table.meta.get("schema") != COMPANION or "total" not in table.summary:
        return _noted(run, f"{source}, beside {run.source}, is not evalscope's percentile table")
    ends = run.total[run.succeeded] if run.total is not None else np.empty(0)
    for p, theirs in table.summary["total"].items():
        mine = round(nearest_rank(ends, p) / 1000.0, 4) * 1000.0 if len(ends) else np.nan
        if not abs(mine - theirs) <= 0.05 + 1e-9:  # `Latency (s)`: four decimals, 0.1 ms
            return _noted(
                run,
                f"{source}, beside {run.source}, is not of its requests (its "
                f"{numbers.percentile(p)} end to end {numbers.ms(theirs)}, these requests' by "
                f"its rule {numbers.ms(mine)}): evalscope's own percentiles are not shown",
            )
    own = {k: v for k, v in table.summary.items() if k in OWN}
    meta = {**run.meta, "percentiles_by": "evalscope", "percentile_method": METHOD}
    said = (
        f"{source}: evalscope's own percentiles of the same requests, found in the folder of "
        f"{run.source} and shown beside budgetdiff's"
    )
    return replace(run, tool_percentiles=own, meta=with_note(meta, said))


def _noted(run: Run, text: str) -> Run:
    return replace(run, meta=with_note(run.meta, text))


def with_note(meta: dict[str, str | float], text: str) -> dict[str, str | float]:
    old = meta.get("note")
    return {**meta, "note": f"{old}; {text}" if isinstance(old, str) else text}
