"""The bytes of a native table -> a `Table`: Parquet, CSV/TSV, a JSON array or JSON Lines.

Each loader names the line or row a malformed file breaks on. A Parquet file is refused by its
metadata before it is decompressed; JSON Lines nested past any table is refused before pyarrow's
parser (which recurses) sees it.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pyarrow as pa

from budgetdiff import numbers
from budgetdiff.errors import ReadError
from budgetdiff.formats.native.sniff import delimiter
from budgetdiff.formats.native.tables import NAME, ArrowTable, RowsTable, Table, utf8

_DECIMAL_COMMA = re.compile(rb"(^|;)\s*-?\d+,\d+\s*(;|\r?$)", re.MULTILINE)
# A Parquet file is compressed: a few KB can hold millions of rows. Refuse before decompressing.
MAX_PARQUET_ROWS = 50_000_000
MAX_PARQUET_BYTES = 8 << 30  # uncompressed, summed over the row groups


def _first_byte(data: bytes) -> bytes:
    """The first non-blank byte, without copying a large file."""
    for i in range(0, len(data), 4096):
        chunk = data[i : i + 4096].lstrip()
        if chunk:
            return chunk[:1]
    return b""


def load(data: bytes, source: str) -> Table:
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    if not data or data.isspace():
        raise ReadError.at(
            NAME, source, "the file is empty; write one row per request with a header"
        )
    if data.startswith(b"PAR1"):
        return load_parquet(data, source)
    first = _first_byte(data)
    if first == b"[":
        return _load_json_array(data, source)
    if first == b"{":
        return _load_json_lines(data, source)
    return _load_csv(data, source)


def load_parquet(data: bytes | str, source: str) -> Table:
    """A Parquet table from the file's bytes, or from its path (pyarrow reads its column
    chunks: no copy of the whole file in memory first)."""
    import pyarrow.parquet as pq

    try:
        # ParquetFile, not read_table: read_table imports pyarrow.dataset (0.24 s of start-up)
        parquet = pq.ParquetFile(pa.BufferReader(data) if isinstance(data, bytes) else data)
        meta = parquet.metadata
        rows = meta.num_rows
        size = sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
    except (pa.ArrowException, OSError) as exc:
        raise ReadError.at(
            NAME, source, f"not a readable Parquet file ({exc}); re-export it"
        ) from exc
    if rows > MAX_PARQUET_ROWS:
        raise ReadError.at(
            NAME,
            source,
            f"{numbers.count(rows)} rows, more than budgetdiff reads "
            f"({numbers.count(MAX_PARQUET_ROWS)}); write a random sample of the requests "
            "(a few hundred thousand give the same percentiles)",
        )
    if size > MAX_PARQUET_BYTES:
        raise ReadError.at(
            NAME,
            source,
            f"{numbers.gib(size)} uncompressed, more than budgetdiff reads "
            f"({MAX_PARQUET_BYTES >> 30} GiB); keep only the latency columns, or sample the rows",
        )
    try:
        table = parquet.read(use_threads=True)
    except (pa.ArrowException, OSError) as exc:
        raise ReadError.at(
            NAME, source, f"not a readable Parquet file ({exc}); re-export it"
        ) from exc
    return ArrowTable("parquet", table, source)


def _load_csv(data: bytes, source: str) -> Table:
    import pyarrow.csv as pacsv

    end = data.find(b"\n")
    header_line = (data if end < 0 else data[:end]).decode("utf-8", errors="replace")
    sep = delimiter(header_line)
    layout = "tsv" if sep == "\t" else "csv"
    # a spreadsheet's export where the comma is the decimal mark: `;` between fields, `1,5`
    decimal = "," if sep == ";" and _DECIMAL_COMMA.search(data[end + 1 : end + 4096]) else "."
    try:
        table = pacsv.read_csv(
            pa.BufferReader(data),
            read_options=pacsv.ReadOptions(use_threads=True, block_size=16 << 20),
            parse_options=pacsv.ParseOptions(delimiter=sep),
            convert_options=pacsv.ConvertOptions(strings_can_be_null=True, decimal_point=decimal),
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
            raise ReadError.at(NAME, source, f"no header row could be read: {why}") from exc
        raise ReadError.at(
            NAME,
            source,
            f"not a readable {layout.upper()} table ({msg}); check the delimiter, the quoting "
            "and that every row has the header's number of fields, saved as UTF-8",
        ) from exc
    for name, column in zip(table.column_names, table.columns, strict=True):
        if pa.types.is_binary(column.type) or pa.types.is_large_binary(column.type):
            row = next(
                (i for i, v in enumerate(column.to_pylist()) if not utf8(v)), len(column) - 1
            )
            raise ReadError.at(
                NAME,
                source,
                f"not a readable {layout.upper()} table: row {row + 1}, column {name!r} holds "
                "bytes that are not UTF-8; save the file as UTF-8",
            )
    return ArrowTable(layout, table, source)


def _decode(data: bytes, source: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ReadError.at(
            NAME, source, f"line {line}: bytes that are not UTF-8; save it as UTF-8"
        ) from exc


def _load_json_array(data: bytes, source: str) -> Table:
    rows = _parse(_decode(data, source), source, None)
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise ReadError.at(
            NAME, source, "a JSON table must be an array of objects, one per request"
        )
    return RowsTable("json", rows, source)


def _parse(text: str, source: str, line: int | None) -> Any:
    """One JSON value; `line` numbers a JSON Lines row in the message (None: the whole file)."""
    from budgetdiff.formats._checks import JsonProblem, parse_json  # a CSV read does without

    at = "" if line is None else f"line {line}: "
    try:
        return parse_json(text)
    except JsonProblem as problem:
        if problem.kind == "digits":
            message = f"{at}{_huge(problem.message)}; write plain numbers"
        elif problem.kind == "deep":
            message = f"{at}{_DEEP}"
        else:  # text, so a syntax error
            where = f"line {problem.line if line is None else line}"
            message = f"invalid JSON at {where} ({problem.message}); fix or re-export it"
        raise ReadError.at(NAME, source, message) from None


def _load_json_lines(data: bytes, source: str) -> Table:
    import pyarrow.json as pajson

    # pyarrow's JSON parser recurses: text nested some 10,000 deep crashes the process
    if _nesting(data) <= _FLAT_DEPTH:
        try:
            table = pajson.read_json(pa.BufferReader(data))
            if all(not pa.types.is_struct(t) for t in table.schema.types):
                return ArrowTable("jsonl", table, source)
        except pa.ArrowInvalid:
            pass  # mixed types across rows, NaN literals...: the stdlib path names the row
    text = _decode(data, source)
    rows: list[dict[str, Any]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        row = _parse(line, source, number)
        if not isinstance(row, dict):
            raise ReadError.at(NAME, source, f"line {number}: expected one JSON object per line")
        rows.append(row)
    return RowsTable("jsonl", rows, source)


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


def _huge(detail: str) -> str:
    return f"a number with more digits than JSON numbers here may have ({detail})"
