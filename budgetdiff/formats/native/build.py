"""The native per-request table (CSV, TSV, Parquet, JSON Lines, JSON array) -> Runs.

One row per request. Every column is read through one explicit mapping (`native_map`, from
the names in `native_names.RULES` and the budget's `column:`/`unit:`): slices, SLO metrics,
token counts, an id, failure markers, times and a class; the rest is listed as not used. The
values are then checked (`native_checks`): failures from every marker, summary rows left out,
units and impossible rows named. A class column splits the table into one Run per class.
Everything is converted with pyarrow and numpy in bulk; a Python loop runs only to find the row
an error is on.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pyarrow as pa

from budgetdiff import numbers
from budgetdiff.errors import ReadError
from budgetdiff.formats.native.checks import (
    StartReading,
    epoch_unit,
    figure,
    impossible_rows,
    itl_cumulative,
    itl_from_start,
    marker_failed,
    median,
    numbers_of,
    start_unit,
    summary_rows,
    unit_doubts,
    unit_fix,
)
from budgetdiff.formats.native.columns import (
    as_float,
    check_itl,
    check_latency,
    decoded,
    itl_of,
    request_ids,
)
from budgetdiff.formats.native.derive import derived_for, with_client_slices
from budgetdiff.formats.native.load import load, load_parquet
from budgetdiff.formats.native.mapping import Mapping, known_slices, map_columns
from budgetdiff.formats.native.names import (
    CLASS,
    FAILURE,
    FROM_TYPE,
    GUESSED,
    ID,
    LATENCY_ROLES,
    METRIC,
    SLICE,
    TIME,
    TOKENS,
    UNUSED,
    cut,
    normalize,
)
from budgetdiff.formats.native.sniff import has_slices, sniff
from budgetdiff.formats.native.tables import NAME, ArrowTable, Table
from budgetdiff.formats.native.times import span_seconds, start_times
from budgetdiff.formats.options import ReadOptions
from budgetdiff.table import (
    KNOWN_SLICES,
    BoolArray,
    ColumnUse,
    Doubt,
    FloatArray,
    Ids,
    Itl,
    Run,
    all_finite,
)
from budgetdiff.units import MS_PER, PER_SECOND

__all__ = ["NAME", "has_slices", "read", "read_arrow", "sniff"]

MAX_CLASSES = 100  # a class column with more values is an id, not classes of traffic


def read(data: bytes, source: str, options: ReadOptions) -> list[Run]:
    """Read one native table: one Run, or one per class of traffic."""
    return _runs(load(data, source), source, options)


def read_parquet(path: str, source: str, options: ReadOptions) -> list[Run]:
    """`read` of a Parquet table from its path (`load_parquet`)."""
    return _runs(load_parquet(path, source), source, options)


def read_arrow(table: pa.Table, source: str, options: ReadOptions) -> list[Run]:
    """The same from a table already in memory (the Python API: DataFrames, dicts of arrays)."""
    runs = _runs(ArrowTable("arrow", table, source), source, options)
    return [replace(r, meta={**r.meta, "schema": "in-memory table"}) for r in runs]


def _runs(table: Table, source: str, options: ReadOptions) -> list[Run]:
    if table.n == 0:
        raise ReadError.at(
            NAME, source, "the table has a header but no rows; write one row per request"
        )
    mapping = _typed_units(map_columns(table.columns, options, source), table)
    _require(mapping, table, source, options)
    derive = derived_for(mapping, options.slices)
    doubts: list[Doubt] = []
    latencies = {u.column: _ms(table, u, source) for u in _latency_uses(mapping)}
    leftmost = table.columns[0] if table.columns else ""
    labels = [u for u in mapping.uses if u.role in (ID, CLASS) or _label_column(u, leftmost)]
    dropped, how = summary_rows(table, labels, latencies)
    if dropped.all():
        raise ReadError.at(
            NAME,
            source,
            f"a summary, not requests: every row is {how}; pass the per-request file it was "
            "made from (one row per request)",
        )
    if dropped.any():
        first = int(np.flatnonzero(dropped)[0])
        doubts.append(
            Doubt(
                "impossible",
                "rows",
                f"{source}: {numbers.count(int(dropped.sum()))} row(s) {how} (first: row "
                f"{first + 1}) are a summary, not requests: left out",
                fails=False,
            )
        )
        table = table.subset(~dropped)
    classes = mapping.one(CLASS, "class")
    if classes is None:  # the columns as read above, when no summary row was left out
        latest = None if dropped.any() else latencies
        runs = [_run(table, mapping, source, None, doubts, latest)]
    else:
        runs = [
            _run(table.subset(mask), mapping, source, name, doubts)
            for name, mask in _classes(table, classes.column, source)
        ]
    return [with_client_slices(r) for r in runs] if derive else runs


# Unused columns a harness writes a summary row's label in (`mean`, `p95`): by their names only,
# so that a table of many text columns is not scanned cell by cell.
_LABEL_COLUMNS = frozenset(
    {"", "name", "label", "stat", "statistic", "statistics", "metric", "type", "kind", "row"}
    | {"summary", "request", "unnamed_0", "index", "percentile", "percentiles", "quantile"}
    | {"quantiles", "pct", "stats", "measure", "aggregate", "agg"}
)


def _label_column(use: ColumnUse, first: str) -> bool:
    """An unused column by a label's name, or the table's first (where a summary's labels are:
    evalscope's `Percentiles`, pandas' nameless index)."""
    return use.role == UNUSED and (
        use.column == first or normalize(use.column).base in _LABEL_COLUMNS
    )


def _require(mapping: Mapping, table: Table, source: str, options: ReadOptions) -> None:
    """The budget's slices are all there, and at least one latency is."""
    listed = ", ".join(cut(c, 80) for c in table.columns[:50]) or "(none)"
    have = {u.target for u in mapping.all(SLICE)}
    if derived_for(mapping, options.slices):  # TTFT and the end to end give them
        have |= set(options.slices)
    for name in options.slices:
        if name not in have:
            raise ReadError.at(
                NAME,
                source,
                f"no column for slice {name!r} (looked for {name}, {name}_ms, {name}_s, "
                f"{name}_us); columns are: {listed}; map it with "
                f"`{name}: {{budget: ..., column: NAME}}`",
            )
    if not _latency_uses(mapping):
        raise ReadError.at(
            NAME,
            source,
            f"no latency columns (columns are: {listed}); name them after the slices "
            f"({', '.join(KNOWN_SLICES)}) or ttft/total with a unit suffix such as _ms "
            "(docs/native-table.md lists every name read)",
        )


def _typed_units(mapping: Mapping, table: Table) -> Mapping:
    """A duration column (Parquet's, or pandas' Timedelta through the Python API) carries its
    unit in its type: that unit, not the name's or a guess. An `itl` column of one number per
    request is each request's mean gap: a TPOT (`_itl_per_request`)."""
    uses = []
    tpot = mapping.one(METRIC, "tpot") is not None
    for use in mapping.uses:
        kind = _value_type(table, use.column) if use.role in LATENCY_ROLES else None
        if kind is not None and pa.types.is_duration(kind):
            use = replace(use, unit=kind.unit, unit_from=FROM_TYPE)
        if kind is not None and use.role == METRIC and use.target == "itl":
            use = _itl_per_request(use, kind, tpot)
        uses.append(use)
    return Mapping(tuple(uses))


def _value_type(table: Table, column: str) -> pa.DataType:
    """The column's type (a dictionary's values'), without combining its chunks (`decoded`
    copies a column of ten million values to say it)."""
    kind = table.get(column).type
    return kind.value_type if pa.types.is_dictionary(kind) else kind


ITL_PER_REQUEST = "one number per request, its per-request mean gap (a TPOT), not its gaps"


def _itl_per_request(use: ColumnUse, kind: pa.DataType, tpot: bool) -> ColumnUse:
    """An `itl` column of numbers (not lists) holds one value per request, its mean gap: read
    as the TPOT (unless the table has one: then not read), never pooled as if it were every
    gap between tokens."""
    numeric = pa.types.is_integer(kind) or pa.types.is_floating(kind)
    if not (numeric or pa.types.is_decimal(kind) or pa.types.is_duration(kind)):
        return use
    if tpot:
        return ColumnUse(use.column, UNUSED, note=f"{ITL_PER_REQUEST}; the TPOT column is read")
    return replace(use, target="tpot", note=ITL_PER_REQUEST)


def _latency_uses(mapping: Mapping) -> list[ColumnUse]:
    """The columns read as one duration per request (not the gap lists)."""
    return [u for u in mapping.uses if u.role in LATENCY_ROLES and u.target != "itl"]


def _ms(table: Table, use: ColumnUse, source: str) -> FloatArray:
    """The column in ms: as read when it is in ms (no copy of a column that is right as it is)."""
    factor = MS_PER[use.unit or "ms"]
    values = as_float(table, use.column, source)
    return values if factor == 1.0 else values * factor


def _classes(table: Table, column: str, source: str) -> list[tuple[str, np.ndarray]]:
    """(name, rows) per class of traffic, in order of first appearance."""
    values = decoded(table.get(column)).to_pylist()
    texts = [cut("" if v is None else str(v), 60) or "(none)" for v in values]
    names = list(dict.fromkeys(texts))
    if len(names) > MAX_CLASSES:
        raise ReadError.at(
            NAME,
            source,
            f"column {cut(column, 80)!r} has {len(names)} different values: a class column "
            f"holds a few classes of traffic (at most {MAX_CLASSES}); rename it if it is not one",
        )
    arr = np.array(texts, dtype=object)
    return [(name, arr == name) for name in names]


def _run(
    table: Table,
    mapping: Mapping,
    source: str,
    scenario: str | None,
    doubts: list[Doubt],
    latencies: dict[str, FloatArray] | None = None,
) -> Run:
    where = source if scenario is None else f"{source} [{scenario}]"
    values = latencies or {u.column: _ms(table, u, source) for u in _latency_uses(mapping)}
    ok, empty = _succeeded(table, mapping, source, values)
    notes = _notes(mapping, where, empty)
    for column, v in values.items():
        check_latency(v, ok, column, source)
    columns = {u.target: u.column for u in mapping.all(SLICE) if u.target}
    slices = {name: values[columns[name]] for name in known_slices(mapping)}
    metrics = [u for u in mapping.all(METRIC) if u.target in ("ttft", "total", "tpot")]
    measured = {u.target: values[u.column] for u in metrics}
    meta: dict[str, str | float] = {"format": NAME, "layout": table.layout}
    output_tokens = _tokens(table, mapping, "output_tokens", source)
    checked = [(u, values[u.column]) for u in _latency_uses(mapping)]
    total = measured.get("total")
    run_doubts = list(doubts)
    if total is None and mapping.one(TIME, "start_time") is not None:
        spanned = _total_from_times(table, mapping, source, slices, where)
        if spanned is not None:
            total, use, said = spanned
            checked.append((use, total))
            run_doubts += said
            notes.append(f"{where}: end to end read as {use.column} (no total column)")
    start, said = _start(table, mapping, source, ok, (total, slices), where)
    run_doubts += [*said, *unit_doubts(checked, ok, output_tokens, where)]
    run_doubts += impossible_rows(measured.get("ttft"), total, ok, where)
    whole = (measured.get("ttft"), total)
    itl, itl_doubts = _itl(table, mapping, source, ok, whole, output_tokens, meta)
    run_doubts += itl_doubts
    if notes:
        meta["note"] = " ".join(notes)
    has_ok = bool(mapping.all(FAILURE)) or bool(empty)
    request_id, prompt_hash, labels = _labels(table, mapping, source)
    return Run(
        source=source,
        n=table.n,
        slices=slices,
        ttft=measured.get("ttft"),
        total=total,
        ok=ok if has_ok else None,
        request_id=request_id,
        prompt_hash=prompt_hash,
        input_tokens=_tokens(table, mapping, "input_tokens", source),
        output_tokens=output_tokens,
        itl=itl,
        start_time=start,
        scenario=scenario,
        meta=meta,
        tpot=measured.get("tpot"),
        columns=mapping.uses,
        doubts=tuple(run_doubts),
        run=labels,
    )


def _labels(
    table: Table, mapping: Mapping, source: str
) -> tuple[Ids | None, np.ndarray | None, np.ndarray | None]:
    """The request ids, the prompt hashes and each row's run, where the table has them."""
    ids, prompts, runs = (mapping.one(ID, t) for t in ("request_id", "prompt_hash", "run"))
    return (
        Ids(request_ids(table, ids.column, source)) if ids else None,
        request_ids(table, prompts.column, source).to_numpy(zero_copy_only=False)
        if prompts
        else None,
        _run_labels(table, runs.column) if runs else None,
    )


def _run_labels(table: Table, column: str) -> np.ndarray:
    """Each row's run as 0, 1, ... in order of first appearance (a label is any text)."""
    values = decoded(table.get(column)).to_pylist()
    texts = ["" if v is None else str(v) for v in values]
    index = {name: i for i, name in enumerate(dict.fromkeys(texts))}
    return np.array([index[t] for t in texts], dtype=np.int64)


def _succeeded(
    table: Table, mapping: Mapping, source: str, values: dict[str, FloatArray]
) -> tuple[BoolArray, int]:
    """Which requests succeeded: no failure marker says they failed, and they have a latency
    (a row whose every latency is empty or 0 is a failed request, not a fast one). Also how
    many failed only for want of a latency."""
    by_marker = np.zeros(table.n, dtype=bool)
    for use in mapping.all(FAILURE):
        by_marker |= marker_failed(table, use, source)
    empty = np.ones(table.n, dtype=bool)
    with np.errstate(invalid="ignore"):
        for v in values.values():  # column by column: no stacked copy of every latency
            if all_finite(v) and np.count_nonzero(v) == v.size:  # no NaN, no 0: none empty
                empty[:] = False  # (two reductions, not three passes of every column)
                break
            empty &= np.isnan(v) | (v == 0)
    return ~by_marker & ~empty, int((empty & ~by_marker).sum())


def _notes(mapping: Mapping, where: str, empty: int) -> list[str]:
    """What the report must say about the reading: unused columns that look like latencies or
    failure markers, an `itl` column of per-request means, and rows with no latency at all."""
    notes = [
        _itl_note(u, where) for u in mapping.uses if (u.note or "").startswith(ITL_PER_REQUEST)
    ]
    odd = [u for u in mapping.all(UNUSED) if u.note and u.note.startswith("looks like")]
    if odd:
        named = ", ".join(f"{cut(u.column, 60)} ({u.note})" for u in odd[:8])
        notes.append(
            f"{where}: not read: {named}; map a column with the budget's `column:` to read it"
        )
    if empty:
        notes.append(
            f"{where}: {numbers.count(empty)} request(s) have no latency (every latency column "
            "empty or 0): counted as failed"
        )
    return notes


def _itl_note(use: ColumnUse, where: str) -> str:
    said = f"{where}: {cut(use.column, 60)} holds {use.note}"
    return said if use.role == UNUSED else f"{said}: read as the TPOT (an ITL needs the gaps)"


def _tokens(table: Table, mapping: Mapping, target: str, source: str) -> FloatArray | None:
    use = mapping.one(TOKENS, target)
    return as_float(table, use.column, source) if use else None


def _times(
    table: Table, mapping: Mapping, source: str, ok: np.ndarray
) -> tuple[FloatArray | None, list[Doubt], bool]:
    """`start_time` in seconds (any origin), with a `units` doubt when its numbers are not
    seconds (epoch milliseconds read as seconds); and whether seconds are only a guess for
    numbers that are no epoch time (`_start_unit` then asks the requests)."""
    use = mapping.one(TIME, "start_time")
    if use is None:
        return None, [], False
    raw = numbers_of(table, use.column, source)
    if raw is None:  # timestamps or ISO text: their unit is their own
        return start_times(table, use.column, source), [], False
    unit, doubts = _time_unit(use, raw)
    guessed = use.unit_from == GUESSED and epoch_unit(raw) is None
    if pa.types.is_integer(decoded(table.get(use.column)).type):  # subtracted while exact
        return start_times(table, use.column, source) / PER_SECOND[unit], doubts, guessed
    return raw / PER_SECOND[unit], doubts, guessed


def _start(
    table: Table,
    mapping: Mapping,
    source: str,
    ok: BoolArray,
    whole: tuple[FloatArray | None, dict[str, FloatArray]],
    where: str,
) -> tuple[FloatArray | None, list[Doubt]]:
    """`start_time` in seconds (`_times`); where seconds are only a guess and there is no end
    time, its unit asked of the requests (`_start_unit`), whose end to end is `whole`: the
    total, else the sum of the slices."""
    start, doubts, guessed = _times(table, mapping, source, ok)
    use = mapping.one(TIME, "start_time")
    if start is None or use is None or not guessed or mapping.one(TIME, "end_time") is not None:
        return start, doubts
    total, slices = whole
    if total is None and slices:
        total = np.sum(list(slices.values()), axis=0)
    start, said = _start_unit(use.column, start, total, ok, where)
    return start, [*doubts, *said]


def _start_unit(
    column: str, start: FloatArray, total: FloatArray | None, ok: BoolArray, where: str
) -> tuple[FloatArray, list[Doubt]]:
    """Start times guessed to be seconds, with no end time: read as milliseconds since the
    run began where the requests say so (a `units` doubt says it was), named as doubtful where
    they cannot tell (an informing doubt; the goodput, which the run's span gives, is left
    out)."""
    told = start_unit(start, total, ok) if total is not None else None
    if told is None or told[0] == "s":
        return start, []
    unit, as_s, as_ms = told
    name = cut(column, 80)
    busy = f"{figure(as_s.in_flight)} requests in flight on average over {_run_span(as_s)}"
    other = f"{figure(as_ms.in_flight)} over {_run_span(as_ms)}"
    if unit == "ms":
        follows = " (each request starting as an earlier one ends)" if as_ms.follows >= 0.5 else ""
        such = numbers.given(float(median(start[np.isfinite(start)])))
        message = (
            f"{where}: {name}: times such as {such} are not seconds: as seconds, {busy}; as "
            f"milliseconds since the run began, {other}{follows}: read as milliseconds; name "
            f"the column {cut(column, 60)}_ms to say it"
        )
        return start / 1000.0, [Doubt("units", name, message)]
    message = (
        f"{where}: {name}: read as seconds (guessed), {busy}; as milliseconds since the run "
        f"began, {other}: either could be, so the goodput (requests per second of the run) is "
        f"left out; name the column {cut(column, 60)}_s or {cut(column, 60)}_ms to say which"
    )
    return start, [Doubt("units", name, message, fails=False, affects=("start_time",))]


def _run_span(r: StartReading) -> str:
    """The run's span as a reader says it: `41.2 s`, `11.4 h`."""
    if r.span_s >= 7200:
        return f"{numbers.num(r.span_s / 3600)} h"
    return f"{numbers.num(r.span_s)} s"


def _time_unit(use: ColumnUse, raw: FloatArray) -> tuple[str, list[Doubt]]:
    epoch = epoch_unit(raw)
    unit = use.unit or "s"
    if epoch is None or epoch == unit:
        return unit, []
    if use.unit_from != GUESSED:
        return unit, [
            Doubt(
                "units",
                cut(use.column, 80),
                f"{cut(use.column, 80)}: times such as {numbers.given(float(raw[0]))} read "
                f"as {unit} (from the {use.unit_from}) look like epoch {epoch}; fix the name",
            )
        ]
    return epoch, [
        Doubt(
            "units",
            cut(use.column, 80),
            f"{cut(use.column, 80)}: times such as {numbers.given(float(raw[0]))} are not "
            f"seconds - they look like epoch {epoch} and are read so; name the column "
            f"{cut(use.column, 60)}_{epoch} to say it",
        )
    ]


def _total_from_times(
    table: Table, mapping: Mapping, source: str, slices: dict[str, FloatArray], where: str
) -> tuple[FloatArray, ColumnUse, list[Doubt]] | None:
    """The end to end as `end_time - start_time`, when the table has both; a request that
    ends before it starts takes the sum of its slices (if any) and is named."""
    span = _span(table, mapping, source)
    if span is None:
        return None
    total, backwards = _forwards(span[1])
    if backwards is None:
        return total, span[0], []
    if slices:
        total = np.where(backwards, np.sum(list(slices.values()), axis=0), total)
    return total, span[0], [_ends_before_start(backwards, where, bool(slices))]


def _forwards(span: FloatArray) -> tuple[FloatArray, BoolArray | None]:
    """The spans, with those of requests that end before they start (or have no end) made
    unknown; and which those are, if any."""
    with np.errstate(invalid="ignore"):
        bad = ~(span >= 0)
    if not bad.any():
        return span, None
    return np.where(bad, np.nan, span), bad


def _ends_before_start(bad: BoolArray, where: str, slices: bool) -> Doubt:
    first = int(np.flatnonzero(bad)[0])
    instead = "the sum of their slices" if slices else "unknown"
    return Doubt(
        "impossible",
        "end_time",
        f"{where}: {numbers.count(int(bad.sum()))} request(s) have an end_time before their "
        f"start_time or none (first: request #{first + 1}): their end to end is {instead}",
        fails=False,
    )


def _span(table: Table, mapping: Mapping, source: str) -> tuple[ColumnUse, FloatArray] | None:
    """The end to end from `end_time - start_time` (numbers), when the table gives no total;
    with the reading it comes from, so that its unit is checked like a column's."""
    end_use = mapping.one(TIME, "end_time")
    start_use = mapping.one(TIME, "start_time")
    if end_use is None or start_use is None:
        return None
    s_raw = numbers_of(table, start_use.column, source)
    e_raw = numbers_of(table, end_use.column, source)
    name = f"{cut(end_use.column, 60)} - {cut(start_use.column, 60)}"
    if s_raw is None or e_raw is None:  # timestamps, dates or ISO 8601 text: seconds apart
        span = span_seconds(table, start_use.column, end_use.column, source) * 1000.0
        return ColumnUse(name, METRIC, "total", "s", "the times themselves"), span
    s_unit, _ = _time_unit(start_use, s_raw)
    e_unit, _ = _time_unit(end_use, e_raw)
    span = (e_raw / PER_SECOND[e_unit] - s_raw / PER_SECOND[s_unit]) * 1000.0
    return ColumnUse(name, METRIC, "total", e_unit, end_use.unit_from), span


def _itl(
    table: Table,
    mapping: Mapping,
    source: str,
    ok: np.ndarray,
    whole: tuple[FloatArray | None, FloatArray | None],
    tokens: FloatArray | None,
    meta: dict[str, str | float],
) -> tuple[Itl | None, list[Doubt]]:
    """The gaps between tokens, each request's list (`whole`: its TTFT and end to end, which
    tell gap lists from lists of token times), with what was found wrong in them."""
    use = mapping.one(METRIC, "itl")
    if use is None:
        return None, []
    itl, scalar = itl_of(table, use.column, use.unit or "ms", source)
    doubts: list[Doubt] = []
    if scalar:
        meta["itl"] = "one value per request (a per-request mean), not per-token gaps"
    else:
        itl, doubts = _gap_lists(itl, cut(use.column, 80), source, ok, whole, tokens)
    check_itl(itl, ok, use.column, source)
    if len(itl.values):
        with np.errstate(invalid="ignore"):
            finite = itl.values[np.isfinite(itl.values)]
            m = median(finite) if len(finite) else 0.0
        if 0 < m < 0.1 or m > 10_000:
            raw = m / MS_PER[use.unit or "ms"]
            doubts.append(
                Doubt(
                    "units",
                    cut(use.column, 80),
                    f"{cut(use.column, 80)}: median gap {figure(raw)} read as "
                    f"{use.unit} ({use.unit_from}) - "
                    + ("looks like seconds" if m < 0.1 else "looks like another unit")
                    + f"; {unit_fix(use)}",
                    affects=("itl",),
                )
            )
    return itl, doubts


def _gap_lists(
    itl: Itl,
    name: str,
    source: str,
    ok: np.ndarray,
    whole: tuple[FloatArray | None, FloatArray | None],
    tokens: FloatArray | None,
) -> tuple[Itl, list[Doubt]]:
    """Lists of token times (since the first token, or the request's start) made gaps by
    differencing, with a note; lists that sum past the end to end and are no token times
    either, an `impossible` doubt; lists that start at the request's start (their first gap is
    the TTFT) without that first gap."""
    ttft, total = whole
    doubts = []
    gaps, past, of, first = itl_cumulative(itl, total, ok)
    if gaps is not None:
        itl = gaps
        said = f"summed, they run past the end to end in {numbers.count(past)} of {of} requests"
        doubts.append(
            Doubt(
                "impossible",
                name,
                f"{source}: the lists of {name} are token times, growing ({said}), not the gaps "
                "between tokens: the gaps are their differences",
                fails=False,
            )
        )
    elif past:
        doubts.append(
            Doubt(
                "impossible",
                name,
                f"{source}: the gap lists of {name} sum to more than the end to end in "
                f"{numbers.count(past)} of {of} requests (first: row {first + 1}) and do not "
                "grow as token times would: they are not the gaps between tokens; write each "
                "request's gaps",
                affects=("itl",),
            )
        )
    trimmed = itl_from_start(itl, ttft, tokens, ok)
    if trimmed is not None:
        itl = trimmed
        doubts.append(
            Doubt(
                "impossible",
                name,
                f"{source}: the gap lists of {name} start at the request's start (their first "
                "gap is the TTFT): the first gap of each is left out",
                fails=False,
            )
        )
    return itl, doubts
