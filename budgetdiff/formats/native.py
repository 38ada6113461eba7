"""The native per-request table (CSV, TSV, Parquet, JSON Lines, JSON array) -> one `Run`.

One row per request; one column per slice named `<slice>`, `<slice>_ms`, `<slice>_s` or
`<slice>_us` (the suffix is the unit, none means ms) or mapped by the budget's `column:`.
Everything is converted with pyarrow and numpy in bulk; a Python loop runs only to find the row
an error is on. Nothing is derived here: `ttft`/`total` are set only when measured columns exist.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pyarrow as pa

from budgetdiff.errors import ReadError
from budgetdiff.formats.native_columns import (
    as_float,
    check_itl,
    check_latency,
    failed,
    find,
    itl_of,
    request_ids,
    slice_columns,
)
from budgetdiff.formats.native_load import load
from budgetdiff.formats.native_sniff import has_slices, sniff, unit_of
from budgetdiff.formats.native_tables import NAME, ArrowTable, Table
from budgetdiff.formats.native_times import start_and_end, start_times
from budgetdiff.formats.options import ReadOptions
from budgetdiff.table import KNOWN_SLICES, BoolArray, FloatArray, Run
from budgetdiff.units import UNIT_TO_MS

__all__ = ["NAME", "has_slices", "read", "read_arrow", "sniff"]


def read(data: bytes, source: str, options: ReadOptions) -> list[Run]:
    """Read one native table; one Run (the file is one scenario)."""
    return _runs(load(data, source), source, options)


def read_arrow(table: pa.Table, source: str, options: ReadOptions) -> list[Run]:
    """The same from a table already in memory (the Python API: DataFrames, dicts of arrays)."""
    runs = _runs(ArrowTable("arrow", table, source), source, options)
    return [replace(r, meta={**r.meta, "schema": "in-memory table"}) for r in runs]


def _runs(table: Table, source: str, options: ReadOptions) -> list[Run]:
    if table.n == 0:
        raise ReadError.at(
            NAME, source, "the table has a header but no rows; write one row per request"
        )
    has_error = "error" in table.columns
    ok = ~failed(table, "error", source) if has_error else np.ones(table.n, dtype=bool)
    slices, measured = _latencies(table, source, options, ok)
    meta: dict[str, str | float] = {"format": NAME, "layout": table.layout}
    itl = None
    itl_column = find(table, "itl")
    if itl_column is not None:
        itl, scalar = itl_of(table, itl_column, unit_of(itl_column), source)
        if scalar:
            meta["itl"] = "one value per request (a per-request mean), not per-token gaps"
        check_itl(itl, ok, itl_column, source)

    def numeric(column: str) -> FloatArray | None:
        return as_float(table, column, source) if column in table.columns else None

    columns = table.columns
    start, end = (
        start_and_end(table, source)
        if "start_time" in columns and "end_time" in columns
        else (start_times(table, source) if "start_time" in columns else None, None)
    )
    return [
        Run(
            source=source,
            n=table.n,
            slices=slices,
            ttft=measured.get("ttft"),
            total=measured.get("total"),
            ok=ok if has_error else None,
            request_id=request_ids(table, source) if "request_id" in columns else None,
            input_tokens=numeric("input_tokens"),
            output_tokens=numeric("output_tokens"),
            itl=itl,
            start_time=start,
            end_time=end,
            prompt_hash=request_ids(table, source, "prompt_hash")
            if "prompt_hash" in columns
            else None,
            meta=meta,
        )
    ]


def _latencies(
    table: Table, source: str, options: ReadOptions, ok: BoolArray
) -> tuple[dict[str, FloatArray], dict[str, FloatArray]]:
    """The slices the budget wants, and the measured TTFT and total where the table has them,
    in ms and checked; at least one of them, else the error says how to name the columns."""
    slices: dict[str, FloatArray] = {}
    for name, column, unit in slice_columns(table, source, options):
        values = as_float(table, column, source) * UNIT_TO_MS[unit]
        check_latency(values, ok, column, source)
        slices[name] = values
    for name, column in _other_slices(table, options, slices):
        values = as_float(table, column, source) * UNIT_TO_MS[unit_of(column)]
        check_latency(values, ok, column, source)
        slices[name] = values  # not budgeted, but time of the request: in its total
    measured: dict[str, FloatArray] = {}
    for metric in ("ttft", "total"):
        found = find(table, metric)
        if found is None:
            continue
        values = as_float(table, found, source) * UNIT_TO_MS[unit_of(found)]
        check_latency(values, ok, found, source)
        measured[metric] = values
    if not slices and not measured:
        raise ReadError.at(
            NAME,
            source,
            f"no latency columns (columns are: {', '.join(table.columns)}); name them after "
            f"the slices ({', '.join(KNOWN_SLICES)}) with a unit suffix such as _ms",
        )
    return slices, measured


def _other_slices(
    table: Table, options: ReadOptions, wanted: dict[str, FloatArray]
) -> list[tuple[str, str]]:
    """(slice, column) of the known slices the table has beyond the budget's: a budget that
    names two of five slices still has requests that spend time in all five."""
    if not options.slices:  # no budget slices: `slice_columns` read every known one already
        return []
    mapped = {column for column, _ in options.columns.values()}
    out = []
    for name in KNOWN_SLICES:
        column = find(table, name)
        if name not in wanted and column is not None and column not in mapped:
            out.append((name, column))
    return out
