"""Requests from a SQL engine (`compare --sql CONNECTION`): the logs where they live.

A connection is DuckDB (`duckdb:FILE`, or `duckdb:` for an engine over files named in the
query), ClickHouse embedded (`chdb:DIR`, the same SQL as a server) or a ClickHouse server
(`clickhouse://USER@HOST:PORT/DATABASE`, through clickhouse-connect; the password from
CLICKHOUSE_PASSWORD or the URL, never printed). The requests are a table or a query
(`--sql-table`, `--sql-query`), one row per request, with the columns the native reader reads
from a file; base and head are the rows each side's filter selects: label matchers
(`--base-match '{version="stable"}'`) and a time window on one column (`--sql-time`, with
`--window` and `--at`/`--base-at`/`--head-at`).

Each side is one query, `SELECT <the mapped columns> FROM (<table or query>) WHERE <filter>`,
built here as text with every value quoted for the engine, so that the query shown in the
report and by `inspect` is the one sent and can be run by hand. The header is asked first
(`LIMIT 0`), mapped as a file's would be, and only the columns that mapping reads are fetched
(a trace table's prompts and answers stay in the engine). The rows come back as one Arrow
table, which the native reader reads as it reads a Parquet file.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal
from urllib.parse import unquote, urlsplit

from budgetdiff import numbers
from budgetdiff.errors import InputError, UsageError
from budgetdiff.formats.native.names import UNUSED
from budgetdiff.formats.options import ReadOptions
from budgetdiff.table import ColumnUse, Run

Engine = Literal["duckdb", "chdb", "clickhouse"]
PASSWORD_ENV = "CLICKHOUSE_PASSWORD"
MAX_ROWS = 50_000_000  # as a Parquet file: more does not fit in memory on a CI runner
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_TABLE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$")
_VALUE = r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\''
_MATCHER = re.compile(rf"\s*([A-Za-z_][A-Za-z0-9_]*)\s*(!=|=)\s*({_VALUE})\s*(,|$)")
_SELECT = re.compile(r"^\s*(select|with|from)\b", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Connection:
    """Where the requests are: the engine, its database (a file, a folder, a server's URL
    without its password), and the password kept apart so that no message can show it."""

    engine: Engine
    target: str  # duckdb/chdb: a path ("" in memory); clickhouse: the URL without password
    password: str | None = field(default=None, repr=False)

    @property
    def shown(self) -> str:
        """The connection as every message and the report print it."""
        return self.target if self.engine == "clickhouse" else f"{self.engine}:{self.target}"

    @classmethod
    def parse(cls, text: str, environ: Mapping[str, str]) -> Connection:
        engine, _, rest = text.partition(":")
        if engine in ("duckdb", "chdb"):
            return cls(engine, rest)  # type: ignore[arg-type]
        if engine in ("clickhouse", "clickhouses"):
            return _server(text, environ)
        raise UsageError(
            f"--sql {_redact(text)}: not a connection; write duckdb:FILE, chdb:DIR or "
            "clickhouse://USER@HOST:PORT/DATABASE (docs/deploy-gate.md)"
        )

    def scrub(self, message: str) -> str:
        """An engine's message without the password, should it quote the connection."""
        return message.replace(self.password, "***") if self.password else message


def _server(text: str, environ: Mapping[str, str]) -> Connection:
    """A ClickHouse server's URL: the password taken out of it (or from the environment)."""
    try:
        url = urlsplit(text)
        port = url.port
    except ValueError:
        raise UsageError(
            f"--sql {_redact(text)}: not a URL; write clickhouse://HOST:8123"
        ) from None
    if not url.hostname:
        raise UsageError(f"--sql {_redact(text)}: no host; write clickhouse://HOST:8123")
    user = unquote(url.username) if url.username else ""
    password = unquote(url.password) if url.password else environ.get(PASSWORD_ENV)
    netloc = f"{user + '@' if user else ''}{url.hostname}{f':{port}' if port else ''}"
    shown = f"{url.scheme}://{netloc}{url.path}"
    return Connection("clickhouse", shown, password or None)


def _redact(text: str) -> str:
    """A connection string as an error may show it: any password in it replaced."""
    return re.sub(r"(//[^:/@]*:)[^@/]*@", r"\1***@", text)[:200]


@dataclass(frozen=True, slots=True)
class Side:
    """One side's rows: label matchers (column, `=` or `!=`, value) and a time window."""

    match: tuple[tuple[str, str, str], ...] = ()
    since: str | None = None  # RFC 3339, UTC: rows at or after
    until: str | None = None  # rows before

    def describe(self) -> str:
        words = [f"{c}{op}{v!r}" for c, op, v in self.match]
        if self.until is not None:
            words.append(f"{self.since} to {self.until}")
        return ", ".join(words) or "every row"


def matchers(flag: str, text: str | None) -> tuple[tuple[str, str, str], ...]:
    """`{version="canary", region="eu"}` -> (column, op, value) triples; a usage error names
    the flag and shows the form."""
    if text is None:
        return ()
    inside = text.strip()
    if inside.startswith("{") and inside.endswith("}"):
        inside = inside[1:-1]
    out, at = [], 0
    while at < len(inside.rstrip()):
        m = _MATCHER.match(inside, at)
        if m is None:
            raise UsageError(
                f"{flag} {text[:120]!r}: write label matchers such as "
                "'{version=\"canary\"}' (= or != and a quoted value, comma-separated)"
            )
        out.append((m.group(1), m.group(2), _unquote(m.group(3))))
        at = m.end()
    return tuple(out)


def sides(
    *,
    base_match: str | None,
    head_match: str | None,
    window: str | None,
    at: str | None,
    base_at: str | None,
    head_at: str | None,
    compare: bool,
    now: float | None = None,
) -> tuple[Side | None, Side]:
    """Each side's rows from the same flags as `--prometheus`: its matchers, and when a time is
    given, the window ending then (RFC 3339 or Unix seconds; the window 30m unless given)."""
    from datetime import datetime, timezone

    from budgetdiff.sources.prometheus import DEFAULT_WINDOW, _duration, _seconds, _time

    if at is not None and (base_at is not None or head_at is not None):
        raise UsageError("--at ends both windows: give it or --base-at/--head-at, not both")
    clock = time.time() if now is None else now
    timed = any(t is not None for t in (window, at, base_at, head_at))
    span = _seconds(_duration(window or DEFAULT_WINDOW))

    def side(flag: str, match: str | None, end_flag: str, end: str | None) -> Side:
        if not timed:
            return Side(matchers(flag, match))
        until = _time(end_flag, at if at is not None else end, clock)
        iso = [
            datetime.fromtimestamp(t, timezone.utc).isoformat().replace("+00:00", "Z")
            for t in (until - span, until)
        ]
        return Side(matchers(flag, match), iso[0], iso[1])

    head = side("--head-match", head_match or base_match, "--head-at", head_at)
    base = side("--base-match", base_match or head_match, "--base-at", base_at)
    return (base if compare else None), head


def _unquote(quoted: str) -> str:
    return re.sub(r"\\(.)", r"\1", quoted[1:-1])


@dataclass(frozen=True, slots=True)
class SqlQuery:
    """What to ask which engine: the requests (a table or a query), the time column a window
    filters on, and each side's filter (no base: a check of head alone)."""

    connection: Connection
    source: str  # a table name, or a query (SELECT / WITH / FROM ...)
    head: Side
    base: Side | None = None
    time_column: str | None = None

    @classmethod
    def parse(
        cls,
        connection: Connection,
        *,
        table: str | None,
        query: str | None,
        time_column: str | None,
        base: Side | None,
        head: Side,
    ) -> SqlQuery:
        if (table is None) == (query is None):
            raise UsageError("--sql needs one of --sql-table NAME or --sql-query 'SELECT ...'")
        if table is not None and not _TABLE.match(table):
            raise UsageError(
                f"--sql-table {table[:80]!r}: a table name is letters, digits and _ (db.table "
                "too); for anything else write --sql-query 'SELECT ...'"
            )
        if query is not None and not _SELECT.match(query):
            raise UsageError("--sql-query: write a query (SELECT ..., WITH ... or FROM ...)")
        windowed = any(s is not None and s.until is not None for s in (base, head))
        if windowed and time_column is None:
            raise UsageError("--window and --at filter on a time column: name it with --sql-time")
        if time_column is not None and not _NAME.match(time_column):
            raise UsageError(f"--sql-time {time_column[:80]!r}: a column name is letters, _")
        if base is not None and base == head:
            raise UsageError(
                "base and head select the same rows: give --base-match and --head-match "
                "(stable vs canary) or --base-at and --head-at (before vs after)"
            )
        return cls(connection, table or f"({query})", head, base, time_column)

    def header_sql(self) -> str:
        return f"SELECT * FROM {self.source} AS requests LIMIT 0"

    def side_sql(self, side: Side, columns: list[str]) -> str:
        """The query of one side: the columns read, its rows, at most MAX_ROWS + 1 of them."""
        q = self.connection.engine != "duckdb"  # ClickHouse quotes with backslashes too
        listed = ", ".join(_identifier(c, clickhouse=q) for c in columns)
        where = [
            f"{_identifier(c, clickhouse=q)} {op} {_literal(v, clickhouse=q)}"
            for c, op, v in side.match
        ]
        if side.until is not None and self.time_column is not None:
            column = _identifier(self.time_column, clickhouse=q)
            where += [f"{column} >= {_time(side.since, q)}", f"{column} < {_time(side.until, q)}"]
        filtered = f" WHERE {' AND '.join(where)}" if where else ""
        return f"SELECT {listed} FROM {self.source} AS requests{filtered} LIMIT {MAX_ROWS + 1}"


def _identifier(name: str, *, clickhouse: bool) -> str:
    if clickhouse:
        return "`" + name.replace("\\", "\\\\").replace("`", "\\`") + "`"
    return '"' + name.replace('"', '""') + '"'


def _literal(value: str, *, clickhouse: bool) -> str:
    if clickhouse:
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    return "'" + value.replace("'", "''") + "'"


def _time(when: str | None, clickhouse: bool) -> str:
    text = _literal(when or "", clickhouse=clickhouse)
    return f"parseDateTime64BestEffort({text}, 6, 'UTC')" if clickhouse else f"TIMESTAMPTZ {text}"


# ---- the edge: the engine ------------------------------------------------------------------


def fetch(connection: Connection, sql: str) -> Any:
    """The rows of `sql` as one Arrow table; an engine's error is one line (exit 2)."""
    run = {"duckdb": _duckdb, "chdb": _chdb, "clickhouse": _clickhouse}[connection.engine]
    try:
        with _quiet(connection.engine):
            return run(connection, sql)
    except ImportError as exc:
        package = {"duckdb": "duckdb", "chdb": "chdb"}.get(connection.engine, "clickhouse-connect")
        raise InputError(
            f"--sql {connection.shown}: needs the {package} package ({exc.name} is not "
            "installed); pip install 'budgetdiff[sql]'"
        ) from None
    except InputError:
        raise
    except Exception as exc:  # every engine has its own errors: each is the engine's answer
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise InputError(
            f"--sql {connection.shown}: the query failed or the engine could not be reached: "
            f"{connection.scrub(first)[:300]} (the query: {connection.scrub(sql)[:300]})"
        ) from None


def _duckdb(connection: Connection, sql: str) -> Any:
    import duckdb

    with duckdb.connect(connection.target or ":memory:", read_only=bool(connection.target)) as con:
        result: Any = con.sql(sql)
        # duckdb 1.x: arrow(); 2.x: to_arrow_table()
        return (getattr(result, "to_arrow_table", None) or result.arrow)()


def _chdb(connection: Connection, sql: str) -> Any:
    from chdb import session

    opened: Any = session.Session  # untyped
    with opened(connection.target) if connection.target else opened() as s:
        return s.query(sql, "ArrowTable")


def _clickhouse(connection: Connection, sql: str) -> Any:
    import clickhouse_connect

    url = urlsplit(connection.target)
    client = clickhouse_connect.get_client(
        host=url.hostname,
        port=url.port or (8443 if url.scheme == "clickhouses" else 8123),
        username=unquote(url.username or "default"),
        password=connection.password or "",
        database=url.path.strip("/") or "default",
        secure=url.scheme == "clickhouses",
    )
    try:
        return client.query_arrow(sql)
    finally:
        client.close()


def _quiet(engine: Engine) -> Any:
    """clickhouse-connect logs a failed request before it raises: the raised error is the one
    line said, not the log's too."""
    import contextlib
    import logging

    if engine != "clickhouse":
        return contextlib.nullcontext()
    log = logging.getLogger("clickhouse_connect")

    @contextlib.contextmanager
    def silenced() -> Any:
        level = log.level
        log.setLevel(logging.CRITICAL + 1)
        try:
            yield
        finally:
            log.setLevel(level)

    return silenced()


# ---- a side's runs ---------------------------------------------------------------------------


def read_side(query: SqlQuery, which: Literal["base", "head"], options: ReadOptions) -> list[Run]:
    """One side's runs: the header asked and mapped as a file's, then the rows of the columns
    that mapping reads, read by the native reader; each run names the query it came from."""
    from budgetdiff.formats.native.build import read_arrow
    from budgetdiff.formats.native.mapping import map_columns

    side = query.head if which == "head" else query.base
    assert side is not None
    label = f"{query.connection.shown} ({which}: {side.describe()})"
    header = fetch(query.connection, query.header_sql())
    mapping = map_columns([str(c) for c in header.column_names], options, label)
    wanted = [u.column for u in mapping.uses if u.role != UNUSED or _looks_read_worthy(u)]
    sql = query.side_sql(side, list(dict.fromkeys(wanted)))
    table = fetch(query.connection, sql)
    if table.num_rows > MAX_ROWS:
        raise InputError(
            f"--sql {query.connection.shown}: the {which} selects more than "
            f"{numbers.count(MAX_ROWS)} requests, more than budgetdiff holds in memory; narrow its "
            "filter (--window) or sample the rows in --sql-query"
        )
    if table.num_rows == 0:
        raise InputError(
            f"--sql {query.connection.shown}: no rows for the {which} ({side.describe()}); "
            f"check its filter: {query.connection.scrub(sql)[:300]}"
        )
    said = f"{label}: the requests are the rows of {sql}"
    return [
        replace(r, meta={**r.meta, "schema": "SQL", "query": sql, "note": _with(r.meta, said)})
        for r in read_arrow(table, label, options)
    ]


def _with(meta: Mapping[str, object], note: str) -> str:
    """The reader's note with the query's after it (the report says where the rows came from)."""
    before = meta.get("note")
    return f"{before} {note}" if isinstance(before, str) else note


def _looks_read_worthy(use: ColumnUse) -> bool:
    """An unused column the report names as one that looks like a latency or a failure."""
    return bool(use.note and use.note.startswith("looks like"))
