"""Agent tasks, as the agent readers hand them over: each task a loop of steps, a step one tool
round trip (the model call that asked for a tool, and the tool call), per-step parts in ms.

Tasks with different step counts are normal: the steps of every task are pooled, task i owning
`[offsets[i], offsets[i+1])`. Model calls that asked for no tool (the final answer) are not
steps; they are counted apart (`answers`). `as_run` makes the per-request `Run` every other
stage reads, one row per task (its end to end in `total`), with the tasks beside it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from budgetdiff.errors import ReadError
from budgetdiff.numbers import given
from budgetdiff.table import MAX_MS, Ids, Run, Tasks


@dataclass
class Task:
    """One task while a reader collects it."""

    task_id: str
    total_ms: float | None = None  # None: the sum of its steps and answers
    steps: list[tuple[float, float, float, str]] = field(default_factory=list)
    answers: int = 0
    answer_ms: float = 0.0
    failed: bool = False


def build(tasks: list[Task], fmt: str, source: str) -> Tasks:
    """The collected tasks as `Tasks`, every value checked: finite, at least 0, under a day."""
    if not tasks:
        raise ReadError.at(fmt, source, "no agent tasks in the file")
    steps = [s for t in tasks for s in t.steps]
    parts = np.array([s[:3] for s in steps], dtype=np.float64).reshape(-1, 3)
    totals = np.array(
        [
            t.total_ms if t.total_ms is not None else sum(sum(s[:3]) for s in t.steps) + t.answer_ms
            for t in tasks
        ],
        dtype=np.float64,
    )
    for what, values in (("a step's part", parts.ravel()), ("a task's end to end", totals)):
        bad = ~np.isfinite(values) | (values < 0) | (values > MAX_MS)
        if bad.any():
            raise ReadError.at(
                fmt,
                source,
                f"{what} is {given(float(values[bad][0]))} ms: not a latency (finite, 0 to a "
                "day); check the unit (ms) or the file",
            )
    return Tasks(
        task_id=tuple(t.task_id for t in tasks),
        total_ms=totals,
        offsets=np.concatenate([[0], np.cumsum([len(t.steps) for t in tasks])]).astype(np.int64),
        model_ms=parts[:, 0].copy(),
        tool_ms=parts[:, 1].copy(),
        between_ms=parts[:, 2].copy(),
        tool=tuple(s[3] for s in steps),
        answers=np.array([t.answers for t in tasks], dtype=np.int64),
        ok=np.array([not t.failed for t in tasks], dtype=bool),
    )


def as_run(tasks: Tasks, source: str, fmt: str, meta: dict[str, str | float]) -> Run:
    """One row per task: the task's end to end is the run's `total`; the tasks ride along."""
    return Run(
        source=source,
        n=len(tasks.task_id),
        total=tasks.total_ms,
        ok=None if tasks.ok.all() else tasks.ok,
        request_id=Ids(np.array(tasks.task_id, dtype=object)),
        meta={"format": fmt, "side": "client", "unit": "task", **meta},
        agent=tasks,
    )


def ms_between(start_ns: int, end_ns: int) -> float:
    return (end_ns - start_ns) / 1e6 if end_ns >= start_ns else math.nan
