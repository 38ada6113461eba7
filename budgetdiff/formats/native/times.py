"""A native table's `start_time` column as seconds (any origin): numbers, Arrow timestamps or
dates, or ISO 8601 text; integer stamps are subtracted while still exact."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from budgetdiff.errors import ReadError
from budgetdiff.formats.native.columns import NULL_TEXT, NUMBER, as_float, decoded, first_true
from budgetdiff.formats.native.tables import NAME, Table
from budgetdiff.table import FloatArray
from budgetdiff.units import PER_SECOND


def _relative_seconds(ints: pa.Array, per_second: float, source: str) -> FloatArray:
    """Integer time stamps as float seconds since the earliest: subtracted while still exact."""
    import pyarrow.compute as pc

    low = pc.min(ints)
    try:
        since = pc.subtract_checked(ints, low) if low.is_valid else ints
    except pa.ArrowInvalid:
        raise ReadError.at(
            NAME, source, "column 'start_time': the times span more than an int64 can hold"
        ) from None
    floats = pc.fill_null(pc.cast(since, pa.float64(), safe=False), float("nan"))
    return np.asarray(floats.to_numpy(zero_copy_only=False), dtype=np.float64) / per_second


def start_times(table: Table, column: str, source: str) -> FloatArray:
    """A start time column in seconds (any origin): numbers, timestamps or dates, or ISO 8601
    text."""
    arr = decoded(table.get(column))
    kind = arr.type
    if pa.types.is_floating(kind) or pa.types.is_null(kind):
        return as_float(table, column, source)
    import pyarrow.compute as pc  # 25-40 ms of start-up: not for seconds as floats

    if pa.types.is_timestamp(kind):
        return _relative_seconds(pc.cast(arr, pa.int64()), PER_SECOND[kind.unit], source)
    if pa.types.is_date32(kind):
        return _relative_seconds(pc.cast(pc.cast(arr, pa.int32()), pa.int64()), 1 / 86400, source)
    if pa.types.is_integer(kind):
        return _relative_seconds(arr, 1.0, source)
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        blank = pc.fill_null(pc.match_substring_regex(arr, NULL_TEXT), True)
        number = pc.fill_null(pc.match_substring_regex(arr, NUMBER, ignore_case=True), False)
        if not pc.all(pc.or_(blank, number)).as_py():
            return _iso_times(arr, blank, number, column, source)
    return as_float(table, column, source)


def _iso_times(
    arr: pa.Array, blank: pa.Array, number: pa.Array, column: str, source: str
) -> FloatArray:
    """ISO 8601 text as seconds; else the row that is neither a number nor such a time."""
    import pyarrow.compute as pc

    text = pc.if_else(blank, pa.scalar(None, pa.string()), pc.utf8_trim_whitespace(arr))
    for zone in (None, "UTC"):  # naive times, else times with a zone offset
        try:
            stamps = pc.cast(text, pa.timestamp("ns", tz=zone))
        except pa.ArrowInvalid:
            continue
        return _relative_seconds(pc.cast(stamps, pa.int64()), 1e9, source)
    numeric = np.asarray(number.to_numpy(zero_copy_only=False), dtype=bool)
    for i, value in enumerate(text.to_pylist()):
        if value is None or numeric[i] or _iso(value):
            continue
        raise ReadError.at(
            NAME,
            source,
            f"row {i + 1}, column {column!r}: {value[:40]!r} is neither seconds nor an ISO "
            "8601 time (such as 2024-05-01T12:00:00.250Z); write one of them in every row",
        )
    mix = (
        f"seconds (row {first_true(numeric) + 1}) with ISO 8601 times"
        if numeric.any()
        else "ISO 8601 times with and without a zone offset"
    )
    raise ReadError.at(
        NAME, source, f"column {column!r} mixes {mix}; write the same kind in every row"
    )


def _iso(value: str) -> bool:
    import pyarrow.compute as pc

    for zone in (None, "UTC"):
        try:
            pc.cast(pa.array([value]), pa.timestamp("ns", tz=zone))
        except pa.ArrowInvalid:
            continue
        return True
    return False


def span_seconds(table: Table, start: str, end: str, source: str) -> FloatArray:
    """`end - start` in seconds for time columns that are not plain numbers (timestamps, dates,
    ISO 8601 text): both converted as one column, so that they share one origin."""
    s, e = decoded(table.get(start)), decoded(table.get(end))
    if s.type != e.type:
        s, e = s.cast(pa.string()), e.cast(pa.string())
    joint = start_times(_Joint(pa.concat_arrays([s, e])), start, source)
    return joint[table.n :] - joint[: table.n]


class _Joint(Table):
    """Two time columns end to end, read as one."""

    def __init__(self, arr: pa.Array) -> None:
        super().__init__("times", ["times"])
        self.n = len(arr)
        self._arr = arr

    def get(self, column: str) -> pa.Array:
        return self._arr
