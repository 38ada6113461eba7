"""The columns of a native table as numpy arrays in ms, checked: latencies, inter-token gaps,
the error flag and the request ids. Bulk conversions through Arrow; a Python loop runs only to
name the row an error is on.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from budgetdiff import numbers
from budgetdiff.errors import ReadError
from budgetdiff.formats.native.tables import NAME, Table, utf8
from budgetdiff.table import FloatArray, Itl, all_finite, arrow_numpy
from budgetdiff.units import MS_PER

if TYPE_CHECKING:
    import numpy.typing as npt

NUMBER = r"^\s*[+-]?(\d+\.?\d*([eE][+-]?\d+)?|\.\d+([eE][+-]?\d+)?|inf|infinity|nan)\s*$"
NULL_TEXT = r"^\s*$"
_ITL_SEPARATOR = r"[\s,;]+"  # between the gaps of a text cell
# An `error` cell that says the request succeeded: empty, OK and the ways to write "nothing"
_FALSE_TEXT = frozenset(
    {"", "false", "0", "no", "none", "null", "nil", "nan", "n/a", "na", "-", "ok", "success"}
    | {"succeeded", "no error", "noerror"}
)
# Below this many rows a loop over an error column's texts is faster than importing
# pyarrow.compute (25-40 ms of every run's start-up); above it the kernels win.
_KERNELS_FROM_ROWS = 20_000


# ---------------------------------------------------------------- columns -> arrays


def first_true(mask: np.ndarray[Any, Any]) -> int:
    return int(np.flatnonzero(mask)[0])


_GROUPED = re.compile(r"^\s*[-+]?\d{1,3}(,\d{3})+(\.\d+)?\s*$")


def _fix(value: object, column: str) -> str:
    """What to do about a cell that is not a number, by what it looks like."""
    text = str(value).strip()
    if text.lower() == column.strip().lower():  # the header again: files joined with `cat`
        return (
            "the header repeats there: pass each file as its own --head/--base (repeated runs) "
            "instead of joining them"
        )
    if _GROUPED.match(text):
        return "export the numbers without thousands separators (4171.3, not 4,171.3)"
    return "write plain numbers (the unit goes in the column name suffix)"


def as_float(table: Table, column: str, source: str) -> FloatArray:
    """The column as float64 (nulls -> NaN), or an error naming the first non-numeric row."""
    arr = table.get(column)
    kind = arr.type
    if pa.types.is_dictionary(kind):
        arr = arr.cast(kind.value_type)
        kind = arr.type
    if pa.types.is_null(kind):
        return np.full(len(arr), np.nan)
    if pa.types.is_integer(kind) or pa.types.is_floating(kind):
        # nulls -> NaN; an integer above 2**53 (epoch nanoseconds) rounds
        return np.asarray(arrow_numpy(arr), dtype=np.float64)
    if pa.types.is_duration(kind):  # counts of its unit (kind.unit), which the reader applies
        counts = arr.cast(pa.int64()).to_numpy(zero_copy_only=False)
        return np.asarray(counts, dtype=np.float64)
    import pyarrow.compute as pc  # 40 ms of start-up: imported where it is needed

    if pa.types.is_decimal(kind):
        out = pc.fill_null(pc.cast(arr, pa.float64(), safe=False), float("nan"))
        return np.asarray(out.to_numpy(zero_copy_only=False), dtype=np.float64)
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        blank = pc.fill_null(pc.match_substring_regex(arr, NULL_TEXT), True)
        ok = pc.or_(
            blank, pc.fill_null(pc.match_substring_regex(arr, NUMBER, ignore_case=True), False)
        )
        good = np.asarray(ok.to_numpy(zero_copy_only=False), dtype=bool)
        if not good.all():
            i = first_true(~good)
            value = arr[i].as_py()
            raise ReadError.at(
                NAME,
                source,
                f"row {i + 1}, column {column!r}: {value!r} is not a number; "
                + _fix(value, column),
            )
        cleaned = pc.if_else(blank, pa.scalar(None, pa.string()), pc.utf8_trim_whitespace(arr))
        floats = pc.fill_null(pc.cast(cleaned, pa.float64()), float("nan"))
        return np.asarray(floats.to_numpy(zero_copy_only=False), dtype=np.float64)
    raise ReadError.at(
        NAME,
        source,
        f"column {column!r} holds {kind}, not numbers; write one number per request",
    )


def itl_of(table: Table, column: str, unit: str, source: str) -> tuple[Itl, bool]:
    """Per-request gap lists (list column, or a text list per CSV cell). Second value: scalar."""
    import pyarrow.compute as pc

    arr = table.get(column)
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    kind = arr.type
    scale = MS_PER[unit]
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        lengths = pc.fill_null(pc.list_value_length(arr), 0).to_numpy(zero_copy_only=False)
        offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        flat = arr.flatten()
        if not (pa.types.is_integer(flat.type) or pa.types.is_floating(flat.type)) and len(flat):
            raise ReadError.at(
                NAME, source, f"column {column!r}: the lists must hold numbers (ms gaps)"
            )
        if flat.type != pa.float64():
            flat = pc.cast(flat, pa.float64(), safe=False)
        # float64 without nulls: a view of Arrow's buffer (read-only), not a copy; nulls -> NaN
        values = flat.to_numpy(zero_copy_only=False)
        return Itl(values=values * scale if scale != 1.0 else values, offsets=offsets), False
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        cells = _itl_cells(arr)
        if cells is not None:
            values, offsets = cells
            # in ms already: Arrow's buffer as it is, not a copy of every gap
            return Itl(values=values * scale if scale != 1.0 else values, offsets=offsets), False
        # a token Arrow does not read as a number: Python's float() decides, and names the row
        pieces: list[float] = []
        offsets_list = [0]
        for i, cell in enumerate(arr.to_pylist()):
            if cell:
                for token in re.split(_ITL_SEPARATOR, cell.strip().strip("[]").strip()):
                    if not token:
                        continue
                    try:
                        pieces.append(float(token))
                    except ValueError:
                        raise ReadError.at(
                            NAME,
                            source,
                            f"row {i + 1}, column {column!r}: {token!r} is not a number; "
                            "write the gaps as a list such as [10.2, 11.0]",
                        ) from None
            offsets_list.append(len(pieces))
        return Itl(
            values=np.asarray(pieces, dtype=np.float64) * scale,
            offsets=np.asarray(offsets_list, dtype=np.int64),
        ), False
    values = as_float(table, column, source) * scale
    has = ~np.isnan(values)
    offsets = np.concatenate([[0], np.cumsum(has)]).astype(np.int64)
    return Itl(values=values[has], offsets=offsets), True


def _itl_cells(arr: pa.Array) -> tuple[FloatArray, npt.NDArray[np.int64]] | None:
    """Text cells such as `[10.2, 11.0]` split and cast by Arrow, no Python loop per token;
    None when a token is not a number Arrow reads (the caller then names it)."""
    import pyarrow.compute as pc

    text = pc.utf8_trim_whitespace(pc.utf8_trim(pc.utf8_trim_whitespace(arr), "[]"))
    # The fastest split that fits: at ", " (as Python prints a list), at "," with the tokens
    # trimmed, at any run of separators (a regex, 5x slower). A token that still holds a
    # separator or a blank is no number: the cast refuses it and the next split is tried.
    for pattern, trim in ((", ", False), (",", True), (_ITL_SEPARATOR, False)):
        if pattern == _ITL_SEPARATOR:
            cells = pc.split_pattern_regex(text, pattern)
        else:
            cells = pc.split_pattern(text, pattern)
        tokens = pc.list_flatten(cells)
        if trim:
            tokens = pc.utf8_trim_whitespace(tokens)
        blank = pc.equal(tokens, "")
        some_blank = pc.any(blank).as_py()
        try:
            values = pc.cast(pc.filter(tokens, pc.invert(blank)) if some_blank else tokens, "f8")
        except pa.ArrowInvalid:
            continue
        if some_blank:  # "[]", or "1,,2": blanks are no gaps
            owner = pc.list_parent_indices(cells).to_numpy()
            kept = ~blank.to_numpy(zero_copy_only=False)
            counts = np.bincount(owner[kept], minlength=len(arr))
        else:
            counts = pc.fill_null(pc.list_value_length(cells), 0).to_numpy()
        offsets = np.concatenate([np.zeros(1, dtype=np.int64), np.cumsum(counts, dtype=np.int64)])
        return values.to_numpy(), offsets
    return None


def decoded(arr: pa.Array | pa.ChunkedArray) -> pa.Array:
    """One array; dictionary-encoded columns as their values."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if pa.types.is_dictionary(arr.type):
        arr = arr.cast(arr.type.value_type)
    return arr


def _text(arr: pa.Array, column: str, source: str) -> pa.Array:
    """A binary column as UTF-8 text, or the row whose bytes are not UTF-8."""
    import pyarrow.compute as pc

    try:
        return pc.cast(arr, pa.string())
    except pa.ArrowInvalid:
        row = next((i for i, v in enumerate(arr.to_pylist()) if not utf8(v)), 0)
        raise ReadError.at(
            NAME, source, f"row {row + 1}, column {column!r}: bytes that are not UTF-8 text"
        ) from None


def failed(table: Table, column: str, source: str) -> np.ndarray[Any, np.dtype[np.bool_]]:
    arr = decoded(table.get(column))
    kind = arr.type
    if pa.types.is_null(kind):  # an error column left empty: no compute kernels (start-up)
        return np.zeros(len(arr), dtype=bool)
    is_text = pa.types.is_string(kind) or pa.types.is_large_string(kind)
    if is_text and len(arr) < _KERNELS_FROM_ROWS:
        texts = arr.to_pylist()
        return np.array(
            [t is not None and t.strip().lower() not in _FALSE_TEXT for t in texts], dtype=bool
        )
    import pyarrow.compute as pc  # 25-40 ms of start-up: only for a long or non-text column

    if pa.types.is_boolean(kind):
        return np.asarray(pc.fill_null(arr, False).to_numpy(zero_copy_only=False), dtype=bool)
    if pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_decimal(kind):
        floats = pc.fill_null(pc.cast(arr, pa.float64(), safe=False), 0.0)
        return np.asarray(floats.to_numpy(zero_copy_only=False) != 0, dtype=bool)
    if pa.types.is_binary(kind) or pa.types.is_large_binary(kind):
        arr = _text(arr, column, source)
    elif not is_text:
        raise ReadError.at(
            NAME,
            source,
            f"column {column!r} holds {kind}; write the error as text, true/false or a status "
            "code (empty, false or 0 for a request that succeeded)",
        )
    text = pc.utf8_lower(pc.utf8_trim_whitespace(arr))
    benign = pc.or_kleene(pc.is_null(text), pc.is_in(text, value_set=pa.array(sorted(_FALSE_TEXT))))
    return ~np.asarray(benign.to_numpy(zero_copy_only=False), dtype=bool)


def request_ids(table: Table, column: str, source: str) -> Any:
    """The column's ids as Arrow text in Parquet's chunks (an integer as its decimal text, a
    missing id ""): never Python strings, which cost 2 s and 0.6 GB at ten million, nor one
    combined array, a copy of every id (issue 36)."""
    arr = table.get(column)
    if pa.types.is_dictionary(arr.type):
        arr = decoded(arr)
    kind = arr.type
    if pa.types.is_binary(kind) or pa.types.is_large_binary(kind):
        arr = _text(arr, column, source)
    elif not (
        pa.types.is_null(kind)
        or pa.types.is_string(kind)
        or pa.types.is_large_string(kind)
        or pa.types.is_integer(kind)
    ):
        raise ReadError.at(
            NAME,
            source,
            f"column {column!r} holds {kind}; write one id (text or an integer) per request",
        )
    if not (pa.types.is_string(kind) and arr.null_count == 0):
        import pyarrow.compute as pc

        arr = pc.fill_null(pc.cast(arr, pa.string()), "")
    return arr


def check_itl(itl: Itl, ok: np.ndarray[Any, np.dtype[np.bool_]], column: str, source: str) -> None:
    """Every gap >= 0, and finite in a request that succeeded; else the row it is on."""
    values = itl.values
    with np.errstate(invalid="ignore"):
        bad = ~np.isfinite(values)
        if not ok.all():
            bad &= np.repeat(ok, np.diff(itl.offsets))
        bad |= values < 0
    if bad.any():
        k = first_true(bad)
        row = int(np.searchsorted(itl.offsets, k, side="right")) - 1
        raise ReadError.at(
            NAME,
            source,
            f"row {row + 1}, column {column!r}: inter-token gap {numbers.given(values[k])} (gap "
            f"{k - int(itl.offsets[row])}); a gap is a finite number >= 0, or mark the "
            "request failed with a non-empty `error` column",
        )


def check_latency(
    values: FloatArray, ok: np.ndarray[Any, np.dtype[np.bool_]], column: str, source: str
) -> None:
    if all_finite(values) and (not len(values) or float(values.min()) >= 0):
        return  # the usual column, told by two reductions: none of the searches' temporaries
    bad = np.isnan(values) & ok
    if bad.any():
        i = first_true(bad)
        raise ReadError.at(
            NAME,
            source,
            f"row {i + 1}, column {column!r}: empty or NaN in a request that succeeded; fill it "
            "in, or mark the request failed with a non-empty `error` column",
        )
    with np.errstate(invalid="ignore"):
        neg = values < 0
    if neg.any():
        i = first_true(neg)
        # -1, or one negative value in several rows: a marker, not a clock gone wrong
        same = bool(np.all(values[neg] == values[i]))
        sentinel = values[i] == -1 or (same and int(neg.sum()) > 1)
        fix = (
            "if it marks a failed request, leave that row's latencies empty (a row with none "
            "counts as failed) or mark it in an `error` column"
            if sentinel
            else "a duration cannot be negative, check how the column is computed"
        )
        raise ReadError.at(
            NAME,
            source,
            f"row {i + 1}, column {column!r}: negative latency ({numbers.given(values[i])}); {fix}",
        )
    inf = np.isinf(values)
    if inf.any():
        i = first_true(inf)
        raise ReadError.at(NAME, source, f"row {i + 1}, column {column!r}: infinite latency")
