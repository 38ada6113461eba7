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
MAX_BRACKET = 8_000_000  # values a scan keeps around the percentiles (64 MB); past it, queries
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
        try:
            import duckdb  # the engine only when asked
        except ImportError:
            raise UsageError(
                "--engine duckdb: needs the duckdb package (not installed); "
                "pip install 'budgetdiff[sql]'"
            ) from None
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

    def one(self, sql: str, label: str) -> tuple[Any, ...]:
        """The one row `sql` gives (a query of counts)."""
        return self._run(sql, label)

    def execute(self, sql: str, label: str) -> None:
        """A statement that returns no rows (a temporary table the engine keeps, and spills)."""
        import duckdb

        self.queries.append(sql)
        try:
            start = time.perf_counter()
            self.con.execute(sql)
            self.seconds.append(time.perf_counter() - start)
        except duckdb.Error as e:
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise InputError(f"{label}: the engine refused the query: {first}") from None

    def fetch(self, sql: str, label: str) -> dict[str, np.ndarray[Any, np.dtype[np.float64]]]:
        """The rows of `sql` (a few: a band of requests) as float64 columns, in order."""
        import duckdb

        self.queries.append(sql)
        try:
            start = time.perf_counter()
            got = self.con.execute(sql).fetchnumpy()
            self.seconds.append(time.perf_counter() - start)
        except duckdb.Error as e:
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise InputError(f"{label}: the engine refused the query: {first}") from None
        return {k: np.asarray(v, dtype=np.float64) for k, v in got.items()}

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

    def rows(self, rel: str, label: str) -> int:
        """The relation's rows (Parquet: from the files' footers)."""
        return int(self._run(f"SELECT count(*) FROM {rel}", label)[0])

    def check_missing(self, rel: str, column: str, label: str) -> None:
        """Exit 2 when the column has a missing value (a scan checks its own as it goes)."""
        c = ident(column)
        sql = f"SELECT count(*) FILTER (WHERE {c} IS NULL OR isnan({c}::DOUBLE)) FROM {rel}"
        missing_check(int(self._run(sql, label)[0]), label, column)

    def order_statistics(
        self, rel: str, column: str, n: int, ranks: Sequence[int], label: str, verify: bool = True
    ) -> dict[int, float]:
        """The values at 0-based `ranks` of the column sorted ascending, each checked (here, or
        by the caller's `scan` when `verify` is False): the values below it are at most its
        rank, those at or below it more."""
        ranks = sorted(set(ranks))
        qs = ", ".join(repr((r + 0.5) / n) for r in ranks)
        c = ident(column)
        sql = f"SELECT quantile_disc({c}::DOUBLE, [{qs}]) FROM {rel}"
        values = [float(v) for v in self._run(sql, label)[0]]
        if not verify:
            return dict(zip(ranks, values, strict=True))
        checks = ", ".join(
            f"count(*) FILTER (WHERE {c} < {v!r}), count(*) FILTER (WHERE {c} <= {v!r})"
            for v in values
        )
        got = self._run(f"SELECT {checks} FROM {rel}", label)
        at = dict(zip(ranks, values, strict=True))
        check_ranks(at, {v: (int(got[2 * i]), int(got[2 * i + 1])) for i, v in enumerate(values)})
        return at

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

    def scan(self, rel: str, column: str, n: int, plan: Plan, label: str) -> Scan:
        """One pass over the column in file order (record batches, each reduced with numpy
        and dropped): what `Plan` asks."""
        start = time.perf_counter()
        acc = _Accumulator(plan, n)
        for rb in self._stream(f"SELECT {ident(column)}::DOUBLE FROM {rel}", label):
            acc.add(rb.column(0).to_numpy(zero_copy_only=False))
        self.seconds.append(time.perf_counter() - start)
        if acc.seen != n:
            raise InputError(f"{label}: {column}: {acc.seen} rows streamed, {n} counted")
        return acc.result(label, column)


def missing_check(missing: int, label: str, column: str) -> None:
    if missing:
        raise UsageError(
            f"--engine duckdb: {label}: column {column} has {missing} missing values (NULL or "
            "NaN); the engine path needs every request's value: drop those rows"
        )


def check_ranks(at: dict[int, float], counts: dict[float, tuple[int, int]]) -> None:
    """Each order statistic is the value at its rank: at most `rank` values below it, more
    at or below it (`counts`: below and at-or-below, per value); else an error, not a number."""
    for r, v in at.items():
        below, upto = counts[v]
        if not below <= r < upto:
            raise InputError(
                f"the engine's value at rank {r + 1} ({v!r}) has {below} values below it "
                f"and {upto} at or below: not that rank"
            )


@dataclass(frozen=True, slots=True)
class Plan:
    """What one pass over a column computes: I(x <= value) in batches and the runs test around
    `median` (the autocorrelation check), the counts that check the order statistics `at`,
    and the values in `bracket` (low, high) with the count below it (none past MAX_BRACKET)."""

    value: float
    median: float
    at: dict[int, float]
    bracket: tuple[float, float]


@dataclass(frozen=True, slots=True)
class Scan:
    arrival: Arrival
    bracket: np.ndarray[Any, np.dtype[np.float64]] | None  # sorted; None: more than the cap
    below: int  # values below the bracket
    lowest: float  # the column's smallest value (a latency's change is floored at -base by it)


class _Accumulator:
    """A scan's counts, batch by batch."""

    def __init__(self, plan: Plan, n: int) -> None:
        self.plan, self.n = plan, n
        self.batch = max(1, math.isqrt(n))
        self.counts = np.zeros(n // self.batch, dtype=np.int64)
        self.checks = np.array(sorted(set(plan.at.values())), dtype=np.float64)
        self.below_check = np.zeros(self.checks.size + 1, dtype=np.int64)
        self.upto_check = np.zeros(self.checks.size + 1, dtype=np.int64)
        self.above = self.both = self.seen = self.below = self.kept = self.missing = 0
        self.lowest = math.inf
        self.first = self.last = False
        self.parts: list[np.ndarray[Any, np.dtype[np.float64]]] | None = []

    def add(self, x: np.ndarray[Any, np.dtype[np.float64]]) -> None:
        if not x.size:
            return
        nan = int(np.count_nonzero(np.isnan(x)))  # NULLs arrive as NaN
        self.missing += nan
        if nan < x.size:
            self.lowest = min(self.lowest, float(np.nanmin(x)))
        _add_batches(self.counts, x <= self.plan.value, self.seen, self.batch)
        up = x > self.plan.median
        self.above += int(np.count_nonzero(up))
        self.both += int(np.count_nonzero(up[:-1] & up[1:])) + int(self.last and bool(up[0]))
        self.first = bool(up[0]) if self.seen == 0 else self.first
        self.last = bool(up[-1])
        # x < v_j iff j or fewer checks are <= x (i <= j for i = that count); x == v_j only
        # where i = j + 1: one search, and one comparison for the ties
        m = self.checks.size + 1
        i = np.searchsorted(self.checks, x, "right")
        self.below_check += np.bincount(i, minlength=m)
        tie = x == self.checks[np.maximum(i - 1, 0)]
        self.upto_check += np.bincount(i[tie] - 1, minlength=m)
        low, high = self.plan.bracket
        self.below += int(np.count_nonzero(x < low))
        if self.parts is not None:
            inside = x[(x >= low) & (x <= high)]
            self.kept += inside.size
            self.parts.append(inside)
            if self.kept > MAX_BRACKET:
                self.parts = None
        self.seen += x.size

    def result(self, label: str, column: str) -> Scan:
        missing_check(self.missing, label, column)  # before the ranks: a NaN shifts them
        below = np.cumsum(self.below_check)  # values below each check
        upto = below + self.upto_check  # and at it
        counts = {float(v): (int(below[j]), int(upto[j])) for j, v in enumerate(self.checks)}
        try:
            check_ranks(self.plan.at, counts)
        except InputError as e:
            raise InputError(f"{label}: {column}: {e}") from None
        arrival = Arrival(self.counts, self.batch, self.above, self.both, self.first, self.last)
        kept = None
        if self.parts is not None:
            kept = np.sort(np.concatenate([np.empty(0, dtype=np.float64), *self.parts]))
        return Scan(arrival, kept, self.below, self.lowest)


def _add_batches(counts: np.ndarray[Any, np.dtype[np.int64]], hit: Any, start: int, b: int) -> None:
    """Add this record batch's I(x <= v) to the counts of the batches of b requests it spans
    (`start`: its first row's index; rows past the last whole batch are left out)."""
    end = min(start + hit.size, counts.size * b)
    if end <= start:
        return
    first = start // b
    cuts = np.concatenate(([0], np.arange((first + 1) * b, end, b) - start))
    sums = np.add.reduceat(hit[: end - start].view(np.uint8), cuts, dtype=np.int64)
    counts[first : first + cuts.size] += sums
