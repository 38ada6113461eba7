"""Issue 36: the columns of native Parquet or CSV files (globs too) read through DuckDB, which
streams and spills, so a table of any size is measured in bounded memory (`--engine duckdb`).

Nothing here holds a column. Per column it asks the engine for what a percentile's interval
reads (docs/performance.md, "The engine path"):
- order statistics at exact ranks: `quantile_disc` at (r + 0.5) / n is the (r + 1)-th smallest
  value, checked afterwards by counting the values below and at it (a wrong rank is an error,
  never a number);
- counts: values in a band, distinct values there, values above a bound;
- the arrival-order statistics of the autocorrelation check (batch means of I(x <= v), the
  runs test around the median): one pass over the column's rows in file order, in record
  batches, each batch reduced to counts with numpy and dropped.
Every query sent is kept (`Engine.queries`) so the report shows it, as `--sql` does.
"""

from __future__ import annotations

import math
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from budgetdiff.errors import InputError, UsageError

ENGINES = ("duckdb",)
MEMORY_LIMIT = "3GB"  # DuckDB's own limit; past it, it spills (the exact quantile aggregate cannot)
BATCH_ROWS = 1 << 20  # rows per record batch of the arrival-order pass
SUFFIXES = {".parquet": "read_parquet", ".csv": "read_csv"}


def literal(text: str) -> str:
    """A SQL string literal (quotes doubled): a path or a name, never spliced raw."""
    return "'" + text.replace("'", "''") + "'"


def ident(name: str) -> str:
    """A SQL identifier, quoted."""
    return '"' + name.replace('"', '""') + '"'


def relation(paths: Sequence[str], label: str) -> str:
    """`read_parquet([...])` or `read_csv([...])` of one side's files or globs; exit 2 when
    they mix kinds or are of neither."""
    kinds = {SUFFIXES.get(Path(p).suffix.lower()) for p in paths}
    if not paths or None in kinds or len(kinds) != 1:
        raise UsageError(
            f"--engine duckdb: {label} {', '.join(paths) or '(none)'}: give native Parquet "
            "(.parquet) or CSV (.csv) files or globs, all of one kind"
        )
    reader = kinds.pop()
    return f"{reader}([{', '.join(literal(p) for p in paths)}])"


@dataclass(frozen=True, slots=True)
class Arrival:
    """What the autocorrelation check reads of a column in arrival order: the count of
    I(x <= value) in each batch of `batch` requests (the first n // batch batches), and the
    runs test's counts of "above the median": how many, how many neighbours both above, and
    whether the first and last are."""

    batch_counts: np.ndarray[Any, np.dtype[np.int64]]
    batch: int
    above: int
    both: int
    first: bool
    last: bool


@dataclass
class Engine:
    """One DuckDB connection, with its memory limit and spill directory, and every query it
    was sent (in order)."""

    memory_limit: str = MEMORY_LIMIT
    queries: list[str] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)  # each query's wall time (the bench's)
    con: Any = None

    def __post_init__(self) -> None:
        import duckdb  # the engine only when asked

        spill = Path(tempfile.gettempdir()) / "budgetdiff-engine-spill"
        self.con = duckdb.connect()
        self.con.execute(f"SET memory_limit = {literal(self.memory_limit)}")
        self.con.execute(f"SET temp_directory = {literal(str(spill))}")
        self.con.execute("SET preserve_insertion_order = true")  # arrival order is file order

    def _run(self, sql: str, label: str) -> tuple[Any, ...]:
        """The one row `sql` gives, fetched to the end."""
        import duckdb

        self.queries.append(sql)
        try:
            start = time.perf_counter()
            rows = self.con.execute(sql).fetchall()
            self.seconds.append(time.perf_counter() - start)
        except duckdb.Error as e:
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise InputError(f"{label}: the engine refused the query: {first}") from None
        return tuple(rows[0])

    def _stream(self, sql: str, label: str) -> Any:
        """The rows of `sql` as Arrow record batches of BATCH_ROWS, in order."""
        import duckdb

        self.queries.append(sql)  # its time is the whole pass's (`arrival`)
        try:
            rel = self.con.sql(sql)
            # DuckDB 1.x names it fetch_arrow_reader, 2.x to_arrow_reader
            read = getattr(rel, "to_arrow_reader", None) or rel.fetch_arrow_reader
            return read(BATCH_ROWS)
        except duckdb.Error as e:
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise InputError(f"{label}: the engine refused the query: {first}") from None

    def columns(self, rel: str, label: str) -> list[str]:
        """The column names of the relation (none of its rows read)."""
        import duckdb

        sql = f"DESCRIBE SELECT * FROM {rel}"
        self.queries.append(sql)
        try:
            rows = self.con.execute(sql).fetchall()
        except duckdb.Error as e:
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise InputError(f"{label}: the engine refused the query: {first}") from None
        self.seconds.append(0.0)
        return [str(r[0]) for r in rows]

    def counts(self, rel: str, columns: Sequence[str], label: str) -> tuple[int, list[int]]:
        """Rows, and each column's values that are missing (NULL or NaN)."""
        missing = ", ".join(
            f"count(*) FILTER (WHERE {ident(c)} IS NULL OR isnan({ident(c)}::DOUBLE))"
            for c in columns
        )
        row = self._run(f"SELECT count(*), {missing} FROM {rel}", label)
        return int(row[0]), [int(v) for v in row[1:]]

    def order_statistics(
        self, rel: str, column: str, n: int, ranks: Sequence[int], label: str
    ) -> dict[int, float]:
        """The values at 0-based `ranks` of the column sorted ascending, each checked: the
        values below it are at most its rank, those at or below it more."""
        ranks = sorted(set(ranks))
        qs = ", ".join(repr((r + 0.5) / n) for r in ranks)
        c = ident(column)
        sql = f"SELECT quantile_disc({c}::DOUBLE, [{qs}]) FROM {rel}"
        values = [float(v) for v in self._run(sql, label)[0]]
        checks = ", ".join(
            f"count(*) FILTER (WHERE {c} < {v!r}), count(*) FILTER (WHERE {c} <= {v!r})"
            for v in values
        )
        got = self._run(f"SELECT {checks} FROM {rel}", label)
        for i, (r, v) in enumerate(zip(ranks, values, strict=True)):
            below, upto = int(got[2 * i]), int(got[2 * i + 1])
            if not below <= r < upto:
                raise InputError(
                    f"{label}: {column}: the engine's value at rank {r + 1} ({v!r}) has "
                    f"{below} values below it and {upto} at or below: not that rank"
                )
        return dict(zip(ranks, values, strict=True))

    def band(self, rel: str, column: str, low: float, high: float, label: str) -> int:
        """Distinct values in [low, high] (are values tied there: quantised data?)."""
        c = ident(column)
        sql = f"SELECT count(DISTINCT {c}) FROM {rel} WHERE {c} BETWEEN {low!r} AND {high!r}"
        return int(self._run(sql, label)[0])

    def tick(self, rel: str, column: str, low: float, high: float, label: str) -> float:
        """The smallest gap between distinct values in [low, high]; when that holds one value,
        the gap to the nearest value outside it (0 when there is none): a clock's tick."""
        c = ident(column)
        sql = (
            f"SELECT min(d) FROM (SELECT v - lag(v) OVER (ORDER BY v) AS d FROM "
            f"(SELECT DISTINCT {c} AS v FROM {rel} WHERE {c} BETWEEN {low!r} AND {high!r}))"
        )
        step = self._run(sql, label)[0]
        if step is not None:
            return float(step)
        sql = (
            f"SELECT {low!r} - max({c}) FILTER (WHERE {c} < {low!r}), "
            f"min({c}) FILTER (WHERE {c} > {high!r}) - {high!r} FROM {rel}"
        )
        gaps = [float(g) for g in self._run(sql, label) if g is not None]
        return min(gaps, default=0.0)

    def above(self, rel: str, column: str, bound: float, label: str) -> tuple[int, int]:
        """Values above `bound`, and values equal to it."""
        c = ident(column)
        sql = (
            f"SELECT count(*) FILTER (WHERE {c} > {bound!r}), "
            f"count(*) FILTER (WHERE {c} = {bound!r}) FROM {rel}"
        )
        row = self._run(sql, label)
        return int(row[0]), int(row[1])

    def arrival(
        self, rel: str, column: str, n: int, value: float, median: float, label: str
    ) -> Arrival:
        """One pass over the column in file order (record batches): the batch counts of
        I(x <= value) in batches of isqrt(n), and the runs test's counts around `median`."""
        batch = max(1, math.isqrt(n))
        blocks = n // batch
        counts = np.zeros(blocks, dtype=np.int64)
        above = both = seen = 0
        first = last = False
        start = time.perf_counter()
        for rb in self._stream(f"SELECT {ident(column)}::DOUBLE FROM {rel}", label):
            x = rb.column(0).to_numpy(zero_copy_only=False)
            _add_batches(counts, x <= value, seen, batch)
            up = x > median
            if up.size:
                above += int(np.count_nonzero(up))
                both += int(np.count_nonzero(up[:-1] & up[1:])) + int(last and bool(up[0]))
                first = bool(up[0]) if seen == 0 else first
                last = bool(up[-1])
            seen += x.size
        self.seconds.append(time.perf_counter() - start)
        if seen != n:
            raise InputError(f"{label}: {column}: {seen} rows streamed, {n} counted")
        return Arrival(counts, batch, above, both, first, last)


def _add_batches(counts: np.ndarray[Any, np.dtype[np.int64]], hit: Any, start: int, b: int) -> None:
    """Add this record batch's I(x <= v) to the counts of the batches of b requests it spans
    (`start`: its first row's index; rows past the last whole batch are left out)."""
    end = min(start + hit.size, counts.size * b)
    if end <= start:
        return
    index = np.arange(start, end, dtype=np.int64) // b
    counts += np.bincount(index, weights=hit[: end - start], minlength=counts.size).astype(
        np.int64
    )[: counts.size]
