"""The native per-request table (CSV, TSV, Parquet, JSON Lines, JSON array) -> one `Run`.

One row per request; one column per slice named `<slice>`, `<slice>_ms`, `<slice>_s` or
`<slice>_us` (the suffix is the unit, none means ms) or mapped by the budget's `column:`.
Everything is converted with pyarrow and numpy in bulk; a Python loop runs only to find the row
an error is on. Nothing is derived here: `ttft`/`total` are set only when measured columns exist.
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from budgetdiff.errors import InputError
from budgetdiff.formats import ReadOptions
from budgetdiff.table import KNOWN_SLICES, FloatArray, Itl, Run

NAME = "native"

UNITS = {"ms": 1.0, "s": 1000.0, "us": 0.001}
_SUFFIXES = ("", "_ms", "_s", "_us")
_METRIC_BASES = ("ttft", "total", "itl")
_LATENCY_NAMES = frozenset(
    base + suffix for base in (*KNOWN_SLICES, *_METRIC_BASES) for suffix in _SUFFIXES
)
# Keys that mark a benchmark tool's own JSON (read by that tool's format, not as a native table).
TOOL_KEYS = frozenset(
    {
        # LLMPerf individual responses
        "end_to_end_latency_s",
        "inter_token_latency_s",
        "request_output_throughput_token_per_s",
        "number_output_tokens",
        "error_msg",
        # vLLM / SGLang bench results
        "ttfts",
        "itls",
        "generated_texts",
        "backend",
        "completed",
        # AIPerf / genai-perf / guidellm / inference-perf
        "metadata",
        "metrics",
        "experiments",
        "benchmarks",
        "lifecycle",
        "load_summary",
        "resourceSpans",
    }
)
_NUMBER = r"^\s*[+-]?(\d+\.?\d*([eE][+-]?\d+)?|\.\d+([eE][+-]?\d+)?|inf|infinity|nan)\s*$"
_NULL_TEXT = r"^\s*$"
_ITL_SEPARATOR = r"[\s,;]+"  # between the gaps of a text cell
_FALSE_TEXT = frozenset({"", "false", "0", "no", "none", "null"})
# A Parquet file is compressed: a few KB can hold millions of rows. Refuse before decompressing.
MAX_PARQUET_ROWS = 50_000_000
MAX_PARQUET_BYTES = 8 << 30  # uncompressed, summed over the row groups
_PER_SECOND = {"s": 1.0, "ms": 1e3, "us": 1e6, "ns": 1e9}


def fail(fmt: str, source: str, message: str) -> InputError:
    """The one-line error every reader raises: `<format>: <file>: <what, where, fix>`."""
    return InputError(f"{fmt}: {source}: {message}")


def unit_of(column: str) -> str:
    """The unit a column name's suffix states (`_ms`, `_s`, `_us`), else ms."""
    for unit in ("ms", "us", "s"):
        if column.endswith("_" + unit):
            return unit
    return "ms"


# ---------------------------------------------------------------- sniffing


def _first_json_object(text: str) -> Any:
    """The first JSON value of a JSON-Lines text or the first element of a JSON array."""
    decoder = json.JSONDecoder()
    stripped = text.lstrip()
    if stripped.startswith("["):
        body = stripped[1:].lstrip()
        if not body or body.startswith("]"):
            return None
        return decoder.raw_decode(body)[0]
    return decoder.raw_decode(stripped)[0]


def _flat(obj: dict[str, Any]) -> bool:
    for value in obj.values():
        if isinstance(value, dict):
            return False
        if isinstance(value, list) and not all(
            isinstance(v, int | float) and not isinstance(v, bool) for v in value
        ):
            return False
    return True


def _looks_native_header(columns: Sequence[str]) -> bool:
    names = {c.strip() for c in columns}
    return bool(names & _LATENCY_NAMES) and not (names & TOOL_KEYS)


def sniff(head: bytes, name: str) -> bool:
    """Parquet magic, or a text table / flat JSON objects with a latency-looking column."""
    if head.startswith(b"PAR1"):
        return True
    header = _header(head)
    return header is not None and _looks_native_header(header)


def has_slices(head: bytes, slices: Sequence[str]) -> bool:
    """A text table / flat JSON objects with a column named after one of the budget's own
    slices (`retrieval_ms`, `guardrail`), and no benchmark tool's keys."""
    header = _header(head)
    if header is None:
        return False
    names = {c.strip() for c in header}
    wanted = {s + suffix for s in slices for suffix in _SUFFIXES}
    return bool(names & wanted) and not (names & TOOL_KEYS)


def _header(head: bytes) -> list[str] | None:
    """The column names of a text table, or the keys of the first flat JSON object."""
    try:
        text = head.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        # the head may end inside a multi-byte character
        if exc.start < len(head) - 4:
            return None
        text = head[: exc.start].decode("utf-8-sig")
    stripped = text.lstrip()
    if not stripped:
        return None
    if stripped[0] in "[{":
        try:
            first = _first_json_object(stripped)
        except (ValueError, RecursionError):
            return None
        return list(first) if isinstance(first, dict) and _flat(first) else None
    if "\x00" in text:
        return None
    line = stripped.splitlines()[0]
    delimiter = _delimiter(line)
    try:
        return next(csv.reader([line], delimiter=delimiter))
    except (csv.Error, StopIteration):
        return None


# ---------------------------------------------------------------- loading


def _delimiter(header_line: str) -> str:
    if "\t" in header_line:
        return "\t"
    if "," not in header_line and ";" in header_line:
        return ";"
    return ","


class _Table:
    """Column access over whatever the file was: Arrow columns, or JSON row objects."""

    def __init__(self, layout: str, columns: list[str]) -> None:
        self.layout = layout
        self.columns = columns
        self.n = 0

    def get(self, column: str) -> pa.Array | pa.ChunkedArray:
        raise NotImplementedError


def _twice(column: str, source: str) -> InputError:
    return fail(
        NAME,
        source,
        f"column {column!r} appears twice in the header; rename or drop one of them",
    )


class _ArrowTable(_Table):
    def __init__(self, layout: str, table: pa.Table, source: str) -> None:
        names = [str(c).strip() for c in table.column_names]
        seen: set[str] = set()
        for name in names:
            if name in seen and name:  # unnamed columns are never looked up
                raise _twice(name, source)
            seen.add(name)
        if names != table.column_names:
            table = table.rename_columns(names)
        super().__init__(layout, names)
        self.table = table
        self.n = table.num_rows

    def get(self, column: str) -> pa.Array | pa.ChunkedArray:
        return self.table.column(column)


class _RowsTable(_Table):
    def __init__(self, layout: str, rows: list[dict[str, Any]], source: str) -> None:
        # every row counts: a key such as `error` often appears only on the failed rows
        columns = dict.fromkeys(rows[0]) if rows else {}
        keys: set[str] = set().union(*rows)
        if len(keys) > len(columns):
            for row in rows:
                columns.update(dict.fromkeys(row))
        if any(k != k.strip() for k in keys):
            rows = [_stripped(row, source) for row in rows]
            columns = dict.fromkeys(k.strip() for k in columns)
        super().__init__(layout, list(columns))
        self.rows = rows
        self.n = len(rows)
        self.source = source

    def get(self, column: str) -> pa.Array | pa.ChunkedArray:
        values = [row.get(column) for row in self.rows]
        try:
            return pa.array(values)
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
            return _mixed(values, column, self.source)


def _stripped(row: dict[str, Any], source: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in row.items():
        name = k.strip()
        if name in out:
            raise _twice(name, source)
        out[name] = v
    return out


def _kind(value: Any) -> str:
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    return repr(value)[:40]


def _mixed(values: list[Any], column: str, source: str) -> pa.Array:
    """A JSON column pyarrow cannot type by itself: per-row lists of numbers, else one value per
    row as text (parsed, with its row named, where a number is wanted); else the row at fault."""
    where = f"column {column!r}"
    first = next((i for i, v in enumerate(values) if v is not None), 0)
    if isinstance(values[first], list):
        lists: list[list[float | None] | None] = []
        for i, value in enumerate(values):
            if value is None:
                lists.append(None)
                continue
            if not isinstance(value, list):
                raise fail(
                    NAME,
                    source,
                    f"row {i + 1}, {where}: {_kind(value)} where row {first + 1} holds a list; "
                    "write the same kind of value in every row",
                )
            lists.append([_list_item(x, i, j, where, source) for j, x in enumerate(value)])
        return pa.array(lists, type=pa.list_(pa.float64()))
    for i, value in enumerate(values):
        if isinstance(value, dict | list):
            raise fail(
                NAME,
                source,
                f"row {i + 1}, {where}: {_kind(value)} where row {first + 1} holds a single "
                "value; write one value per request in this column",
            )
    return pa.array([v if v is None or isinstance(v, str) else str(v) for v in values])


def _list_item(value: Any, row: int, item: int, where: str, source: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, int | float) and not isinstance(value, bool):
        try:
            return float(value)
        except OverflowError:
            pass
    raise fail(
        NAME,
        source,
        f"row {row + 1}, {where}: item {item} ({_kind(value)}) is not a number a float can "
        "hold; write the gaps as a list of numbers",
    )


def _first_byte(data: bytes) -> bytes:
    """The first non-blank byte, without copying a large file."""
    for i in range(0, len(data), 4096):
        chunk = data[i : i + 4096].lstrip()
        if chunk:
            return chunk[:1]
    return b""


def _load(data: bytes, source: str) -> _Table:
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    if not data or data.isspace():
        raise fail(NAME, source, "the file is empty; write one row per request with a header")
    if data.startswith(b"PAR1"):
        return _load_parquet(data, source)
    first = _first_byte(data)
    if first == b"[":
        return _load_json_array(data, source)
    if first == b"{":
        return _load_json_lines(data, source)
    return _load_csv(data, source)


def _load_parquet(data: bytes, source: str) -> _Table:
    import pyarrow.parquet as pq

    try:
        # ParquetFile, not read_table: read_table imports pyarrow.dataset (0.24 s of start-up)
        parquet = pq.ParquetFile(pa.BufferReader(data))
        meta = parquet.metadata
        rows = meta.num_rows
        size = sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
    except (pa.ArrowException, OSError) as exc:
        raise fail(NAME, source, f"not a readable Parquet file ({exc}); re-export it") from exc
    if rows > MAX_PARQUET_ROWS:
        raise fail(
            NAME,
            source,
            f"{rows:,} rows, more than budgetdiff reads ({MAX_PARQUET_ROWS:,}); write a random "
            "sample of the requests (a few hundred thousand give the same percentiles)",
        )
    if size > MAX_PARQUET_BYTES:
        raise fail(
            NAME,
            source,
            f"{size / (1 << 30):.1f} GiB uncompressed, more than budgetdiff reads "
            f"({MAX_PARQUET_BYTES >> 30} GiB); keep only the latency columns, or sample the rows",
        )
    try:
        table = parquet.read(use_threads=True)
    except (pa.ArrowException, OSError) as exc:
        raise fail(NAME, source, f"not a readable Parquet file ({exc}); re-export it") from exc
    return _ArrowTable("parquet", table, source)


def _load_csv(data: bytes, source: str) -> _Table:
    import pyarrow.csv as pacsv

    end = data.find(b"\n")
    header_line = (data if end < 0 else data[:end]).decode("utf-8", errors="replace")
    delimiter = _delimiter(header_line)
    layout = "tsv" if delimiter == "\t" else "csv"
    try:
        table = pacsv.read_csv(
            pa.BufferReader(data),
            read_options=pacsv.ReadOptions(use_threads=True, block_size=16 << 20),
            parse_options=pacsv.ParseOptions(delimiter=delimiter),
            convert_options=pacsv.ConvertOptions(strings_can_be_null=True),
        )
    except pa.ArrowInvalid as exc:
        msg = str(exc).splitlines()[0]
        if "Empty CSV file" in msg:
            # the data is not blank (checked before): a quote left open swallowed the header
            why = (
                'a double quote (") in line 1 is never closed, so the rest of the file reads as '
                "one value; close or remove the quote"
                if '"' in header_line
                else "write a header line, then one row per request"
            )
            raise fail(NAME, source, f"no header row could be read: {why}") from exc
        raise fail(
            NAME,
            source,
            f"not a readable {layout.upper()} table ({msg}); check the delimiter, the quoting "
            "and that every row has the header's number of fields, saved as UTF-8",
        ) from exc
    for name, column in zip(table.column_names, table.columns, strict=True):
        if pa.types.is_binary(column.type) or pa.types.is_large_binary(column.type):
            row = next(
                (i for i, v in enumerate(column.to_pylist()) if not _utf8(v)), len(column) - 1
            )
            raise fail(
                NAME,
                source,
                f"not a readable {layout.upper()} table: row {row + 1}, column {name!r} holds "
                "bytes that are not UTF-8; save the file as UTF-8",
            )
    return _ArrowTable(layout, table, source)


def _utf8(value: bytes | None) -> bool:
    try:
        (value or b"").decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _decode(data: bytes, source: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise fail(
            NAME, source, f"line {line}: bytes that are not UTF-8; save it as UTF-8"
        ) from exc


def _load_json_array(data: bytes, source: str) -> _Table:
    rows = _parse(_decode(data, source), source, None)
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise fail(NAME, source, "a JSON table must be an array of objects, one per request")
    return _RowsTable("json", rows, source)


def _parse(text: str, source: str, line: int | None) -> Any:
    """One JSON value; `line` numbers a JSON Lines row in the message (None: the whole file)."""
    at = "" if line is None else f"line {line}: "
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        where = f"line {exc.lineno}" if line is None else f"line {line}"
        raise fail(
            NAME, source, f"invalid JSON at {where} ({exc.msg}); fix or re-export it"
        ) from exc
    except ValueError as exc:  # an integer literal longer than Python's digit limit
        raise fail(NAME, source, f"{at}{_huge(exc)}; write plain numbers") from None
    except RecursionError:
        raise fail(NAME, source, f"{at}{_DEEP}") from None


def _load_json_lines(data: bytes, source: str) -> _Table:
    import pyarrow.json as pajson

    # pyarrow's JSON parser recurses: text nested some 10,000 deep crashes the process
    if _nesting(data) <= _FLAT_DEPTH:
        try:
            table = pajson.read_json(pa.BufferReader(data))
            if all(not pa.types.is_struct(t) for t in table.schema.types):
                return _ArrowTable("jsonl", table, source)
        except pa.ArrowInvalid:
            pass  # mixed types across rows, NaN literals...: the stdlib path names the row
    text = _decode(data, source)
    rows: list[dict[str, Any]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        row = _parse(line, source, number)
        if not isinstance(row, dict):
            raise fail(NAME, source, f"line {number}: expected one JSON object per line")
        rows.append(row)
    return _RowsTable("jsonl", rows, source)


_FLAT_DEPTH = 64  # a row is 2 deep (an object holding lists); pyarrow crashes past ~10,000
_NOT_SYNTAX = bytes(b for b in range(256) if b not in b'"[]{}\n')
_STEP = np.zeros(256, dtype=np.int64)
_STEP[list(b"[{")] = 1
_STEP[list(b"]}")] = -1


def _nesting(data: bytes) -> int:
    """How deep the JSON text's brackets nest, brackets inside strings left out; an over-estimate
    (never an under-estimate) for text that is not JSON."""
    if b"\\" in data:  # escaped backslashes, then escaped quotes: the other quotes delimit strings
        data = data.replace(b"\\\\", b"").replace(b'\\"', b"")
    # a string without brackets leaves two adjacent quotes here: they change no bracket's side
    syntax = np.frombuffer(data.translate(None, _NOT_SYNTAX).replace(b'""', b""), dtype=np.uint8)
    if not len(syntax):
        return 0
    quote = syntax == ord('"')
    inside = np.bitwise_xor.accumulate(quote.view(np.uint8)).view(bool)
    # a JSON string never holds a raw newline: a line with an odd count of quotes is no JSON
    if inside[-1] or inside[syntax == ord("\n")].any():
        return len(syntax)
    level = np.cumsum(_STEP[syntax[~(inside | quote)]])
    if not len(level):
        return 0
    return int(max(level.max(), (level - np.minimum.accumulate(level)).max()))


_DEEP = "nested too deeply to be a table; write one flat object per request"


def _huge(exc: ValueError) -> str:
    return f"a number with more digits than JSON numbers here may have ({exc})"


# ---------------------------------------------------------------- columns -> arrays


def _first_true(mask: np.ndarray[Any, Any]) -> int:
    return int(np.flatnonzero(mask)[0])


def _as_float(table: _Table, column: str, source: str) -> FloatArray:
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
        return np.asarray(arr.to_numpy(zero_copy_only=False), dtype=np.float64)
    import pyarrow.compute as pc  # 40 ms of start-up: imported where it is needed

    if pa.types.is_decimal(kind):
        out = pc.fill_null(pc.cast(arr, pa.float64(), safe=False), float("nan"))
        return np.asarray(out.to_numpy(zero_copy_only=False), dtype=np.float64)
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        blank = pc.fill_null(pc.match_substring_regex(arr, _NULL_TEXT), True)
        ok = pc.or_(
            blank, pc.fill_null(pc.match_substring_regex(arr, _NUMBER, ignore_case=True), False)
        )
        good = np.asarray(ok.to_numpy(zero_copy_only=False), dtype=bool)
        if not good.all():
            i = _first_true(~good)
            value = arr[i].as_py()
            raise fail(
                NAME,
                source,
                f"row {i + 1}, column {column!r}: {value!r} is not a number; "
                "write plain numbers (the unit goes in the column name suffix)",
            )
        cleaned = pc.if_else(blank, pa.scalar(None, pa.string()), pc.utf8_trim_whitespace(arr))
        floats = pc.fill_null(pc.cast(cleaned, pa.float64()), float("nan"))
        return np.asarray(floats.to_numpy(zero_copy_only=False), dtype=np.float64)
    raise fail(
        NAME,
        source,
        f"column {column!r} holds {kind}, not numbers; write one number per request",
    )


def _itl(table: _Table, column: str, unit: str, source: str) -> tuple[Itl, bool]:
    """Per-request gap lists (list column, or a text list per CSV cell). Second value: scalar."""
    import pyarrow.compute as pc

    arr = table.get(column)
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    kind = arr.type
    scale = UNITS[unit]
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        lengths = pc.fill_null(pc.list_value_length(arr), 0).to_numpy(zero_copy_only=False)
        offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        flat = arr.flatten()
        if not (pa.types.is_integer(flat.type) or pa.types.is_floating(flat.type)) and len(flat):
            raise fail(NAME, source, f"column {column!r}: the lists must hold numbers (ms gaps)")
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
                        raise fail(
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
    values = _as_float(table, column, source) * scale
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


def _decoded(arr: pa.Array | pa.ChunkedArray) -> pa.Array:
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
        row = next((i for i, v in enumerate(arr.to_pylist()) if not _utf8(v)), 0)
        raise fail(
            NAME, source, f"row {row + 1}, column {column!r}: bytes that are not UTF-8 text"
        ) from None


def _failed(table: _Table, column: str, source: str) -> np.ndarray[Any, np.dtype[np.bool_]]:
    import pyarrow.compute as pc

    arr = _decoded(table.get(column))
    kind = arr.type
    if pa.types.is_null(kind):
        return np.zeros(len(arr), dtype=bool)
    if pa.types.is_boolean(kind):
        return np.asarray(pc.fill_null(arr, False).to_numpy(zero_copy_only=False), dtype=bool)
    if pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_decimal(kind):
        floats = pc.fill_null(pc.cast(arr, pa.float64(), safe=False), 0.0)
        return np.asarray(floats.to_numpy(zero_copy_only=False) != 0, dtype=bool)
    if pa.types.is_binary(kind) or pa.types.is_large_binary(kind):
        arr = _text(arr, column, source)
    elif not (pa.types.is_string(kind) or pa.types.is_large_string(kind)):
        raise fail(
            NAME,
            source,
            f"column {column!r} holds {kind}; write the error as text, true/false or a status "
            "code (empty, false or 0 for a request that succeeded)",
        )
    text = pc.utf8_lower(pc.utf8_trim_whitespace(arr))
    benign = pc.or_kleene(pc.is_null(text), pc.is_in(text, value_set=pa.array(sorted(_FALSE_TEXT))))
    return ~np.asarray(benign.to_numpy(zero_copy_only=False), dtype=bool)


def _request_ids(table: _Table, source: str) -> np.ndarray[Any, np.dtype[Any]]:
    arr = _decoded(table.get("request_id"))
    kind = arr.type
    if pa.types.is_binary(kind) or pa.types.is_large_binary(kind):
        arr = _text(arr, "request_id", source)
    elif not (
        pa.types.is_null(kind)
        or pa.types.is_string(kind)
        or pa.types.is_large_string(kind)
        or pa.types.is_integer(kind)
    ):
        raise fail(
            NAME,
            source,
            f"column 'request_id' holds {kind}; write one id (text or an integer) per request",
        )
    if pa.types.is_string(kind) and arr.null_count == 0:
        return arr.to_numpy(zero_copy_only=False)  # type: ignore[no-any-return]
    import pyarrow.compute as pc

    ids = pc.fill_null(pc.cast(arr, pa.string()), "")
    # Python strings in an object array: 0.05 s for a million ids, a fixed-width str array 0.18 s
    return ids.to_numpy(zero_copy_only=False)  # type: ignore[no-any-return]


def _relative_seconds(ints: pa.Array, per_second: float, source: str) -> FloatArray:
    """Integer time stamps as float seconds since the earliest: subtracted while still exact."""
    import pyarrow.compute as pc

    low = pc.min(ints)
    try:
        since = pc.subtract_checked(ints, low) if low.is_valid else ints
    except pa.ArrowInvalid:
        raise fail(
            NAME, source, "column 'start_time': the times span more than an int64 can hold"
        ) from None
    floats = pc.fill_null(pc.cast(since, pa.float64(), safe=False), float("nan"))
    return np.asarray(floats.to_numpy(zero_copy_only=False), dtype=np.float64) / per_second


def _start_times(table: _Table, source: str) -> FloatArray:
    """`start_time` in seconds (any origin): numbers, timestamps or dates, or ISO 8601 text."""
    import pyarrow.compute as pc

    arr = _decoded(table.get("start_time"))
    kind = arr.type
    if pa.types.is_timestamp(kind):
        return _relative_seconds(pc.cast(arr, pa.int64()), _PER_SECOND[kind.unit], source)
    if pa.types.is_date32(kind):
        return _relative_seconds(pc.cast(pc.cast(arr, pa.int32()), pa.int64()), 1 / 86400, source)
    if pa.types.is_integer(kind):
        return _relative_seconds(arr, 1.0, source)
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        blank = pc.fill_null(pc.match_substring_regex(arr, _NULL_TEXT), True)
        number = pc.fill_null(pc.match_substring_regex(arr, _NUMBER, ignore_case=True), False)
        if not pc.all(pc.or_(blank, number)).as_py():
            return _iso_times(arr, blank, number, source)
    return _as_float(table, "start_time", source)


def _iso_times(arr: pa.Array, blank: pa.Array, number: pa.Array, source: str) -> FloatArray:
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
        raise fail(
            NAME,
            source,
            f"row {i + 1}, column 'start_time': {value[:40]!r} is neither seconds nor an ISO "
            "8601 time (such as 2024-05-01T12:00:00.250Z); write one of them in every row",
        )
    mix = (
        f"seconds (row {_first_true(numeric) + 1}) with ISO 8601 times"
        if numeric.any()
        else "ISO 8601 times with and without a zone offset"
    )
    raise fail(NAME, source, f"column 'start_time' mixes {mix}; write the same kind in every row")


def _iso(value: str) -> bool:
    import pyarrow.compute as pc

    for zone in (None, "UTC"):
        try:
            pc.cast(pa.array([value]), pa.timestamp("ns", tz=zone))
        except pa.ArrowInvalid:
            continue
        return True
    return False


def _check_itl(itl: Itl, ok: np.ndarray[Any, np.dtype[np.bool_]], column: str, source: str) -> None:
    """Every gap >= 0, and finite in a request that succeeded; else the row it is on."""
    values = itl.values
    with np.errstate(invalid="ignore"):
        bad = ~np.isfinite(values)
        if not ok.all():
            bad &= np.repeat(ok, np.diff(itl.offsets))
        bad |= values < 0
    if bad.any():
        k = _first_true(bad)
        row = int(np.searchsorted(itl.offsets, k, side="right")) - 1
        raise fail(
            NAME,
            source,
            f"row {row + 1}, column {column!r}: inter-token gap {values[k]:g} (gap "
            f"{k - int(itl.offsets[row])}); a gap is a finite number >= 0, or mark the "
            "request failed with a non-empty `error` column",
        )


def _find(table: _Table, base: str) -> str | None:
    found = [base + s for s in _SUFFIXES if base + s in table.columns]
    return found[0] if found else None


def _check_latency(
    values: FloatArray, ok: np.ndarray[Any, np.dtype[np.bool_]], column: str, source: str
) -> None:
    bad = np.isnan(values) & ok
    if bad.any():
        i = _first_true(bad)
        raise fail(
            NAME,
            source,
            f"row {i + 1}, column {column!r}: empty or NaN in a request that succeeded; fill it "
            "in, or mark the request failed with a non-empty `error` column",
        )
    with np.errstate(invalid="ignore"):
        neg = values < 0
    if neg.any():
        i = _first_true(neg)
        raise fail(
            NAME,
            source,
            f"row {i + 1}, column {column!r}: negative latency ({values[i]:g}); a duration "
            "cannot be negative, check how the column is computed",
        )
    inf = np.isinf(values)
    if inf.any():
        i = _first_true(inf)
        raise fail(NAME, source, f"row {i + 1}, column {column!r}: infinite latency")


def _slice_columns(table: _Table, source: str, options: ReadOptions) -> list[tuple[str, str, str]]:
    """(slice, column, unit) for every slice wanted."""
    out: list[tuple[str, str, str]] = []
    names = options.slices or tuple(s for s in KNOWN_SLICES if _find(table, s) is not None)
    listed = ", ".join(table.columns) or "(none)"
    for name in names:
        if name in options.columns:
            column, unit = options.columns[name]
            if column not in table.columns:
                raise fail(
                    NAME,
                    source,
                    f"no column {column!r} (mapped for slice {name!r}); columns are: {listed}; "
                    "fix the slice's `column:` in the budget",
                )
            out.append((name, column, unit or unit_of(column)))
            continue
        candidates = [name + s for s in _SUFFIXES]
        present = [c for c in candidates if c in table.columns]
        if not present:
            raise fail(
                NAME,
                source,
                f"no column for slice {name!r} (looked for {', '.join(candidates)}); "
                f"columns are: {listed}; map it with `{name}: {{budget: ..., column: NAME}}`",
            )
        if len(present) > 1:
            raise fail(
                NAME,
                source,
                f"slice {name!r} has several columns ({', '.join(present)}); keep one, or "
                f"choose it with `{name}: {{budget: ..., column: NAME}}`",
            )
        out.append((name, present[0], unit_of(present[0])))
    return out


def read(data: bytes, source: str, options: ReadOptions) -> list[Run]:
    """Read one native table; one Run (the file is one scenario)."""
    return _runs(_load(data, source), source, options)


def read_arrow(table: pa.Table, source: str, options: ReadOptions) -> list[Run]:
    """The same from a table already in memory (the Python API: DataFrames, dicts of arrays)."""
    runs = _runs(_ArrowTable("arrow", table, source), source, options)
    return [replace(r, meta={**r.meta, "schema": "in-memory table"}) for r in runs]


def _runs(table: _Table, source: str, options: ReadOptions) -> list[Run]:
    if table.n == 0:
        raise fail(NAME, source, "the table has a header but no rows; write one row per request")
    n = table.n
    ok = np.ones(n, dtype=bool)
    has_error = "error" in table.columns
    if has_error:
        ok = ~_failed(table, "error", source)

    slices: dict[str, FloatArray] = {}
    for name, column, unit in _slice_columns(table, source, options):
        values = _as_float(table, column, source) * UNITS[unit]
        _check_latency(values, ok, column, source)
        slices[name] = values

    measured: dict[str, FloatArray] = {}
    for metric in ("ttft", "total"):
        found = _find(table, metric)
        if found is None:
            continue
        values = _as_float(table, found, source) * UNITS[unit_of(found)]
        _check_latency(values, ok, found, source)
        measured[metric] = values
    if not slices and not measured:
        raise fail(
            NAME,
            source,
            f"no latency columns (columns are: {', '.join(table.columns)}); name them after "
            f"the slices ({', '.join(KNOWN_SLICES)}) with a unit suffix such as _ms",
        )

    meta: dict[str, str | float] = {"format": NAME, "layout": table.layout}
    itl = None
    itl_column = _find(table, "itl")
    if itl_column is not None:
        itl, scalar = _itl(table, itl_column, unit_of(itl_column), source)
        if scalar:
            meta["itl"] = "one value per request (a per-request mean), not per-token gaps"
        _check_itl(itl, ok, itl_column, source)

    def numeric(column: str) -> FloatArray | None:
        return _as_float(table, column, source) if column in table.columns else None

    request_id = _request_ids(table, source) if "request_id" in table.columns else None
    start_time = _start_times(table, source) if "start_time" in table.columns else None
    return [
        Run(
            source=source,
            n=n,
            slices=slices,
            ttft=measured.get("ttft"),
            total=measured.get("total"),
            ok=ok if has_error else None,
            request_id=request_id,
            input_tokens=numeric("input_tokens"),
            output_tokens=numeric("output_tokens"),
            itl=itl,
            start_time=start_time,
            meta=meta,
        )
    ]
