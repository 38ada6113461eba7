"""A native table of agent steps, one row per step (CSV, TSV or JSON Lines):

    task_id, step, model_ms, tool_ms[, tool_name][, between_ms][, task_ms]

A row without `tool_ms` (empty) is a model call that asked for no tool, such as the final
answer: counted apart, not a step. `task_ms`, the task end to end, is the same on each of its
rows; without it a task takes the sum of its rows. Tasks may take any number of steps.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from budgetdiff.errors import ReadError
from budgetdiff.formats import ReadOptions
from budgetdiff.formats.agent.tasks import Task, as_run, build
from budgetdiff.table import Run

NAME = "agent-steps"
REQUIRED = ("task_id", "step", "model_ms", "tool_ms")
OPTIONAL = ("tool_name", "between_ms", "task_ms")
MAX_ROWS = 10_000_000


def _fail(source: str, message: str) -> ReadError:
    return ReadError.at(NAME, source, message)


def sniff(head: bytes, name: str) -> bool:
    """A table whose first line names task_id, step, model_ms and tool_ms."""
    first = head.lstrip().split(b"\n", 1)[0].decode("utf-8", "replace")
    return all(f'{c}"' in first if first.startswith("{") else c in first for c in REQUIRED)


def read(data: bytes, source: str, options: ReadOptions) -> list[Run]:
    """The steps of the file, grouped into tasks (in the order each task first appears), each
    task's steps in the order of their `step` numbers."""
    text = data.decode("utf-8")
    rows = _json_rows(text, source) if text.lstrip().startswith("{") else _csv_rows(text, source)
    return _tasks(rows, source, {})


def read_arrow(table: pa.Table, source: str) -> list[Run]:
    """The same from a table in memory (the Python API: a DataFrame, a pyarrow Table, a dict
    of arrays), its rows said as `row N`; a missing value (None, or NaN as pandas writes an
    empty cell) is an empty cell."""
    if table.num_rows > MAX_ROWS:
        raise _fail(source, f"more than {MAX_ROWS} steps")
    if table.num_rows == 0:
        raise _fail(source, "no rows; write one row per step")
    rows = (
        (f"row {i}", {k: None if _nan(v) else v for k, v in row.items()})
        for i, row in enumerate(table.to_pylist(), start=1)
    )
    return _tasks(rows, source, {"schema": "in-memory table"})


def is_step_table(columns: list[str]) -> bool:
    """A table in memory with a step table's columns (task_id, step, model_ms, tool_ms)."""
    return all(c in columns for c in REQUIRED)


def _nan(value: object) -> bool:
    return isinstance(value, float) and math.isnan(value)


def _tasks(
    rows: Iterator[tuple[str, dict[str, Any]]], source: str, meta: dict[str, str | float]
) -> list[Run]:
    """The steps grouped into tasks (in the order each task first appears), each task's steps
    in the order of their `step` numbers; `where` of each row says it in a message."""
    tasks: dict[str, Task] = {}
    numbered: dict[str, dict[float, tuple[float, float, float, str]]] = {}
    seen: set[tuple[str, float]] = set()
    for where, row in rows:
        raw = row.get("task_id")
        task_id = "" if raw is None else str(raw).strip()  # a number, 0 too, names a task
        if not task_id:
            raise _fail(source, f"{where}: no task_id")
        step = _number(row, "step", where, source)
        if step is None:
            raise _fail(source, f"{where}: column 'step': empty; number each task's steps")
        steps = numbered.setdefault(task_id, {})
        if (task_id, step) in seen:
            raise _fail(source, f"{where}: task {task_id!r} has step {row['step']} twice")
        seen.add((task_id, step))
        found = _add(tasks.setdefault(task_id, Task(task_id)), row, where, source)
        if found is not None:
            steps[step] = found
    if not tasks:
        raise _fail(source, "no rows; write one row per step")
    for task_id, task in tasks.items():
        task.steps = [s for _, s in sorted(numbered[task_id].items())]
    return [as_run(build(list(tasks.values()), NAME, source), source, NAME, meta)]


def _add(
    task: Task, row: dict[str, Any], where: str, source: str
) -> tuple[float, float, float, str] | None:
    """One row into its task: the step it is, or None for a model call without a tool."""
    model = _number(row, "model_ms", where, source)
    if model is None:
        raise _fail(source, f"{where}: column 'model_ms': empty; every step has a model call")
    tool = _number(row, "tool_ms", where, source)
    between = _number(row, "between_ms", where, source) or 0.0
    total = _number(row, "task_ms", where, source)
    if total is not None:
        if task.total_ms is not None and total != task.total_ms:
            raise _fail(
                source,
                f"{where}: task {task.task_id!r} has two task_ms values; give each task one",
            )
        task.total_ms = total
    if tool is None:  # a model call that asked for no tool (the final answer): not a step
        task.answers += 1
        task.answer_ms += model + between
        return None
    return (model, tool, between, str(row.get("tool_name") or "").strip())


def _number(row: dict[str, Any], column: str, where: str, source: str) -> float | None:
    raw = row.get(column)
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return None
    try:
        if isinstance(raw, bool):
            raise ValueError
        value = float(raw)
    except (TypeError, ValueError):
        raise _fail(
            source, f"{where}: column {column!r}: {str(raw)[:40]!r} is not a number"
        ) from None
    if not math.isfinite(value) or value < 0:
        raise _fail(source, f"{where}: column {column!r}: {raw} is not a latency (>= 0)")
    return value


def _csv_rows(text: str, source: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """Each row with its line, one at a time: only the steps are kept."""
    first = text.split("\n", 1)[0]
    reader = csv.DictReader(io.StringIO(text), delimiter="\t" if "\t" in first else ",")
    missing = [c for c in REQUIRED if c not in (reader.fieldnames or [])]
    if missing:
        raise _fail(
            source,
            f"no column {', '.join(missing)}; a step table has columns "
            f"{', '.join(REQUIRED)} (and optionally {', '.join(OPTIONAL)})",
        )
    for i, row in enumerate(reader):
        if i >= MAX_ROWS:
            raise _fail(source, f"more than {MAX_ROWS} steps")
        yield f"line {reader.line_num}", row


def _json_rows(text: str, source: str) -> Iterator[tuple[str, dict[str, Any]]]:
    for number, line in enumerate(text.splitlines(), start=1):
        if number > MAX_ROWS:
            raise _fail(source, f"more than {MAX_ROWS} steps")
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except (json.JSONDecodeError, RecursionError):
            raise _fail(source, f"line {number}: not a JSON object; one step per line") from None
        if not isinstance(row, dict):
            raise _fail(source, f"line {number}: not a JSON object; one step per line")
        yield f"line {number}", row
