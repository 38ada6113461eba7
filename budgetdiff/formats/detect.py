"""Reading one results file: `--format NAME` or detection from the content, then the reader,
then the checks every reader's runs get (bounds, a stamp naming the reader and its schema).

The one place a reader's exceptions are sorted: its own `ReadError` passes through (exit 2);
what a parser raises on malformed input it did not foresee is mapped to a `ReadError` naming the
file and the format; anything else is a bug in the reader, a `ReaderBug` (exit 3).
"""

from __future__ import annotations

import csv
import gc
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import TYPE_CHECKING

from budgetdiff.errors import InputError, ReaderBug, ReadError
from budgetdiff.formats.registry import READERS, Reader, names, reader
from budgetdiff.table import check_bounds

if TYPE_CHECKING:
    import pyarrow as pa

    from budgetdiff.formats.options import ReadOptions
    from budgetdiff.table import Run

__all__ = [
    "FORMATS",
    "SCHEMAS",
    "companion",
    "detect",
    "names",
    "read",
    "read_arrow",
    "reader",
    "with_companion",
]

FORMATS = tuple(r.name for r in READERS)
SCHEMAS = {r.name: r.schema for r in READERS}
SNIFF_BYTES = 64 * 1024
UTF8_BOM = b"\xef\xbb\xbf"


def detect(data: bytes, source: str, options: ReadOptions) -> Reader:
    """The reader whose sniffer recognises the file, else the native one for a table that
    holds the budget's own columns."""
    # Old-Mac line ends (CR alone) must not hide a format that its reader reads from the
    # sniffer, which looks at lines (the byte-order mark is gone already, see `read`).
    head = data[:SNIFF_BYTES]
    if b"\r" in head and b"\n" not in head:
        head = head.replace(b"\r", b"\n")
    looks_json = head.lstrip()[:1] in (b"{", b"[")
    for candidate in READERS:
        if candidate.may_claim(head, looks_json) and candidate.sniff(head, source):
            return candidate
    from budgetdiff.formats.native import (
        sniff as native_sniff,  # as the readers: imported when first needed
    )

    # the budget maps its own column names, or the columns are its own slices: a native table;
    # a table of statistics no tool claimed: the native reader says it is a summary
    if (
        options.columns
        or native_sniff.has_slices(head, options.slices)
        or native_sniff.summary_header(head)
    ):
        return reader("native")
    raise ReadError(
        f"{source}: not a format budgetdiff recognises (tried {', '.join(FORMATS)}); pass "
        "--format NAME, or write a CSV/JSON table with one row per request",
        file=source,
    )


def read(data: bytes, source: str, fmt: str, options: ReadOptions) -> list[Run]:
    """The runs of one file (`fmt` a format name, an alias or "auto"), checked and stamped."""
    data = data.removeprefix(UTF8_BOM)  # Windows tools write one; no format has a use for it
    chosen = detect(data, source, options) if fmt == "auto" else reader(fmt)
    with _sorted_errors(chosen.name, source), _collector_paused():
        runs = chosen.read(data, source, options)
    return _checked(runs, chosen, source)


def parquet_reader(head: bytes, source: str, fmt: str, options: ReadOptions) -> bool:
    """A file whose first bytes (`head`, up to SNIFF_BYTES) are a Parquet table's that the
    native reader would read (`read` would choose it): `read_parquet` reads it from its path."""
    if not head.startswith(b"PAR1"):
        return False
    chosen = detect(head, source, options) if fmt == "auto" else reader(fmt)
    return chosen.name == "native"


def read_parquet(path: str, source: str, options: ReadOptions) -> list[Run]:
    """`read` of a native Parquet table (`parquet_reader`), pyarrow reading the file itself."""
    from budgetdiff.formats.native import build as native

    chosen = reader("native")
    with _sorted_errors(chosen.name, source), _collector_paused():
        runs = native.read_parquet(path, source, options)
    return _checked(runs, chosen, source)


def _checked(runs: list[Run], chosen: Reader, source: str) -> list[Run]:
    if not runs:
        raise ReadError(f"{source}: {chosen.name}: the file holds no runs", file=source)
    for run in runs:  # one place for every reader: no computation sees an absurd value
        check_bounds(run)
    return [_stamped(r, chosen.name) for r in runs]


def companion(runs: list[Run]) -> str | None:
    """The name of the file that, in the same folder as the one these runs were read from,
    holds the tool's own percentiles of the same requests (evalscope's
    `benchmark_percentile.json` beside its `benchmark_data.db`), or None."""
    names = {r.meta.get("companion") for r in runs}
    found = names.pop() if len(names) == 1 else None
    return found if isinstance(found, str) else None


def with_companion(runs: list[Run], data: bytes | InputError, source: str) -> list[Run]:
    """The runs with the tool's own percentiles from their companion file (`data`, or why it
    could not be read), checked to be of the same requests, or a note saying why not."""
    from budgetdiff.formats import evalscope  # the one tool that writes a companion
    from budgetdiff.formats.options import ReadOptions

    try:
        if isinstance(data, InputError):
            raise data
        tables = read(data, source, evalscope.NAME, ReadOptions())
    except InputError as e:
        said = f"{source} cannot be read ({e}): evalscope's own percentiles are not shown"
        return [replace(r, meta=evalscope.with_note(r.meta, said)) for r in runs]
    return [evalscope.with_own(r, tables[0], source) for r in runs]


def read_arrow(table: pa.Table, source: str, options: ReadOptions) -> list[Run]:
    """A table already in memory (the Python API): a step table of agent tasks when it has
    the step table's columns (as a file is found by them), else the native reader's table of
    requests; its exceptions sorted as `read` sorts a file's."""
    from budgetdiff.formats.agent import steps as agent_steps
    from budgetdiff.formats.native import build as native

    if agent_steps.is_step_table(table.column_names):
        with _sorted_errors(agent_steps.NAME, source):
            return agent_steps.read_arrow(table, source)
    with _sorted_errors(native.NAME, source):
        return native.read_arrow(table, source, options)


@contextmanager
def _sorted_errors(fmt: str, source: str) -> Iterator[None]:
    """A reader's own ReadError as it is; a parser's error on malformed input as a ReadError
    naming the file and the format; anything else as the reader's bug (`ReaderBug`)."""
    try:
        yield
    except (ReadError, MemoryError):  # the file's fault as the reader says; the machine's
        raise
    except Exception as e:
        if not _malformed(e):
            raise ReaderBug(source, fmt, e) from e
        what = str(e).splitlines()[0][:200] if str(e) else type(e).__name__
        raise ReadError(
            f"{fmt}: {source}: cannot be read ({what}); is it a complete {fmt} file? "
            "(--format picks another reader)",
            file=source,
        ) from None


def _malformed(error: Exception) -> bool:
    """What a parser raises on malformed input it did not foresee: the readers raise precise
    ReadErrors for what they check, and this is the last resort, so that a hostile file is an
    exit 2 with its file and format named. Only these parsers' errors: a KeyError, TypeError or
    IndexError of a reader's own is a bug, not the user's file."""
    if isinstance(error, UnicodeDecodeError | json.JSONDecodeError | csv.Error | RecursionError):
        return True
    pyarrow = sys.modules.get("pyarrow")  # imported by whichever reader used it
    return pyarrow is not None and isinstance(error, pyarrow.ArrowException)


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cycle collector off while a reader runs. A decoded JSON file is millions of
    dicts and lists, and none refers back to another: each collection walks them all for
    nothing, more often the larger the file (half the time of an OTLP read of 100,000 spans).
    Reference counting still frees everything a reader drops."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _stamped(run: Run, name: str) -> Run:
    """The run, saying which reader read it and which schema of the tool's file that was."""
    schema = run.meta.get("schema", run.meta.get("layout", SCHEMAS[name]))
    return replace(run, meta={**run.meta, "format": name, "schema": schema})
