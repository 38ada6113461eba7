"""Column access over whatever a native table was: Arrow columns (CSV, TSV, Parquet, JSON
Lines, an in-memory table) or JSON row objects (a JSON array, or JSON Lines Arrow cannot type).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from budgetdiff.errors import ReadError

NAME = "native"


class Table:
    """Column access over whatever the file was: Arrow columns, or JSON row objects."""

    def __init__(self, layout: str, columns: list[str]) -> None:
        self.layout = layout
        self.columns = columns
        self.n = 0

    def get(self, column: str) -> pa.Array | pa.ChunkedArray:
        raise NotImplementedError

    def subset(self, keep: np.ndarray[Any, np.dtype[np.bool_]]) -> Table:
        """The rows where `keep` is true (a class of traffic, the table without summary rows);
        the columns stay those of the whole table."""
        raise NotImplementedError


def _twice(column: str, source: str) -> ReadError:
    return ReadError.at(
        NAME,
        source,
        f"column {column!r} appears twice in the header; rename or drop one of them",
    )


class ArrowTable(Table):
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

    def subset(self, keep: np.ndarray[Any, np.dtype[np.bool_]]) -> Table:
        out = ArrowTable.__new__(ArrowTable)
        Table.__init__(out, self.layout, self.columns)
        out.table = self.table.filter(pa.array(keep))
        out.n = out.table.num_rows
        return out


class RowsTable(Table):
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

    def subset(self, keep: np.ndarray[Any, np.dtype[np.bool_]]) -> Table:
        out = RowsTable.__new__(RowsTable)
        Table.__init__(out, self.layout, self.columns)
        out.rows = [row for row, k in zip(self.rows, keep, strict=True) if k]
        out.n = len(out.rows)
        out.source = self.source
        return out

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
                raise ReadError.at(
                    NAME,
                    source,
                    f"row {i + 1}, {where}: {_kind(value)} where row {first + 1} holds a list; "
                    "write the same kind of value in every row",
                )
            lists.append([_list_item(x, i, j, where, source) for j, x in enumerate(value)])
        return pa.array(lists, type=pa.list_(pa.float64()))
    for i, value in enumerate(values):
        if isinstance(value, dict | list):
            raise ReadError.at(
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
    raise ReadError.at(
        NAME,
        source,
        f"row {row + 1}, {where}: item {item} ({_kind(value)}) is not a number a float can "
        "hold; write the gaps as a list of numbers",
    )


def utf8(value: bytes | None) -> bool:
    try:
        (value or b"").decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True
