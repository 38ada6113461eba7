"""The agent section (issue 28): steps per task, the step round trip and its parts, per-tool
rows, each at the budget's percentile and tested base vs head as the other rows are
(`stats.compare_percentile`, Holm over the section's rows); and the task's change split into
more steps and slower steps (`StepSplit`: the parts add up to the change)."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from budgetdiff import stats
from budgetdiff.measure.results import AgentRow, AgentSection, Change, Comparison, StepSplit
from budgetdiff.numbers import percentile, signed_ms, steps
from budgetdiff.table import PARTS, FloatArray, IntArray, Tasks

if TYPE_CHECKING:
    from budgetdiff.budget.model import Budget
    from budgetdiff.table import Run

STEP_FLOOR = 0.5  # a change of the steps' percentile under half a step never counts
MAX_TOOLS = 12  # per-tool rows: the tools of the most steps (a file may name thousands)


def attach(c: Comparison, base: Run | None, head: Run, budget: Budget) -> Comparison:
    """The comparison with its agent section, when head holds agent tasks; the section's
    sentence becomes the headline when the slices have none."""
    if head.agent is None:
        return c
    b = base.agent.of_tasks(base.succeeded) if base is not None and base.agent else None
    section = compare(b, head.agent.of_tasks(head.succeeded), budget)
    outside = (_outside(base), _outside(head))
    section = replace(section, calls_outside=outside)
    return replace(c, agent=section, headline=c.headline or section.sentence)


def _outside(run: Run | None) -> int:
    """The calls of a traces file that fell in no task (the reader counts them)."""
    n = run.meta.get("calls_outside_steps", 0) if run is not None else 0
    return int(n) if isinstance(n, int | float) else 0


class _Series(NamedTuple):
    name: str
    unit: str
    target: float | None
    base: FloatArray | None
    head: FloatArray


def compare(base: Tasks | None, head: Tasks, budget: Budget) -> AgentSection:
    """The section from the succeeded tasks of each side (`base` None: head alone)."""
    p = budget.percentile
    series = _series(base, head, budget)
    rows = _rows(series, budget)
    split = _split(base, head, p) if base is not None and len(base.total_ms) else None
    section = AgentSection(
        percentile=p,
        tasks=(len(base.total_ms) if base is not None else None, len(head.total_ms)),
        answers=(_mean(base.answers) if base is not None else None, _mean(head.answers)),
        steps=rows[0],
        step=rows[1],
        parts=tuple(rows[2:5]),
        tools=tuple(rows[5:]),
        split=split,
        sentence=None,
        tools_left_out=max(len({t for t in head.tool if t}) - MAX_TOOLS, 0),
        planned_ms=(
            budget.agent.steps * budget.agent.step
            if budget.agent is not None and budget.agent.steps and budget.agent.step
            else None
        ),
    )
    return replace(section, sentence=_sentence(section))


def _series(base: Tasks | None, head: Tasks, budget: Budget) -> list[_Series]:
    """The rows' values: steps per task, the round trip, its parts, and each tool's steps
    when the steps name more than one tool."""
    a = budget.agent
    targets = {"steps": a.steps if a else None, "step": a.step if a else None}
    targets.update(a.parts() if a else {})
    out = [
        _Series("steps", "steps", targets["steps"], _counts(base), head.steps.astype(np.float64)),
        _Series("step", "ms", targets["step"], _opt(base, "step"), head.step_ms),
    ]
    out += [
        _Series(part, "ms", targets.get(part), _opt(base, part), head.part(part)) for part in PARTS
    ]
    names = tools_shown(head)
    if len(names) > 1:
        for name in names:
            out.append(
                _Series(f"tool {name}", "ms", None, _of_tool(base, name), _tool_ms(head, name))
            )
    return out


def tools_shown(head: Tasks) -> list[str]:
    """The tools given a row of their own: those of the most steps, by name."""
    used: dict[str, int] = {}
    for t in head.tool:
        if t:
            used[t] = used.get(t, 0) + 1
    return sorted(sorted(used, key=lambda t: (-used[t], t))[:MAX_TOOLS])


def _counts(tasks: Tasks | None) -> FloatArray | None:
    return None if tasks is None else tasks.steps.astype(np.float64)


def _opt(tasks: Tasks | None, part: str) -> FloatArray | None:
    if tasks is None:
        return None
    return tasks.step_ms if part == "step" else tasks.part(part)


def _of_tool(tasks: Tasks | None, name: str) -> FloatArray | None:
    return None if tasks is None else _tool_ms(tasks, name)


def _tool_ms(tasks: Tasks, name: str) -> FloatArray:
    """The tool time of the steps that called tool `name` (alone)."""
    out: FloatArray = tasks.tool_ms[np.array([t == name for t in tasks.tool], dtype=bool)]
    return out


def _rows(series: list[_Series], budget: Budget) -> list[AgentRow]:
    """Each series at the percentile, tested base vs head, decided together (Holm)."""
    p, regression = budget.percentile, budget.regression
    tested = [s for s in series if s.base is not None and len(s.base) and len(s.head)]
    changes = {
        s.name: stats.compare_percentile(
            s.base,
            s.head,
            p,
            regression.confidence,
            family_size=len(tested),
            min_change=regression.min_change,
            min_ms=_floor(s, budget),
            values="tasks" if s.unit == "steps" else "steps",  # steps per task: one per task
        )
        for s in tested
        if s.base is not None
    }
    decided = stats.decide(
        list(changes.values()),
        min_change=regression.min_change,
        min_ms=[_floor(s, budget) for s in tested],
        confidence=regression.confidence,
    )
    verdicts = dict(zip(changes, decided, strict=True))
    return [
        _row(s, changes.get(s.name), verdicts.get(s.name), p, regression.confidence) for s in series
    ]


def _floor(s: _Series, budget: Budget) -> float:
    return STEP_FLOOR if s.unit == "steps" else budget.regression.min_ms


def _row(
    s: _Series, change: stats.Change | None, verdict: str | None, p: float, confidence: float
) -> AgentRow:
    head = _at(s.head, p)
    base = _at(s.base, p)
    quantiles = {}
    if s.unit == "steps":
        quantiles = {
            "p50": (_at(s.base, 50), _at(s.head, 50)),
            "max": (_max(s.base), _max(s.head)),
        }
    return AgentRow(
        name=s.name,
        unit="steps" if s.unit == "steps" else "ms",
        target=s.target,
        base=change.base if change else base,
        head=change.head if change else head,
        count=(len(s.base) if s.base is not None else None, len(s.head)),
        delta=change.delta if change else None,
        delta_pct=change.delta_pct if change else None,
        ci=change.ci if change else None,
        change=Change(verdict) if verdict else None,
        p_value=change.p_value if change else None,
        notes=(change.note,) if change and change.note else (),
        head_ci=stats.interval(s.head, p, confidence) if len(s.head) else None,
        **quantiles,
    )


def _at(x: FloatArray | None, p: float) -> float | None:
    return stats.percentile(x, p) if x is not None and len(x) else None


def _max(x: FloatArray | None) -> float | None:
    return float(np.max(x)) if x is not None and len(x) else None


def _mean(x: IntArray) -> float:
    return float(np.mean(x)) if len(x) else float("nan")


def _split(base: Tasks, head: Tasks, p: float) -> StepSplit | None:
    """The task percentile's change: more steps, slower steps (by part), and the rest."""
    if not len(head.total_ms) or not len(base.step_ms) or not len(head.step_ms):
        return None
    qb, qh = stats.percentile(base.total_ms, p), stats.percentile(head.total_ms, p)
    sb = stats.percentile(base.steps.astype(np.float64), p)
    sh = stats.percentile(head.steps.astype(np.float64), p)
    rb, rh = float(np.mean(base.step_ms)), float(np.mean(head.step_ms))
    more = (sh - sb) * (rb + rh) / 2
    per_part = {
        part: (float(np.mean(head.part(part))) - float(np.mean(base.part(part)))) * (sb + sh) / 2
        for part in PARTS
    }
    slower = sum(per_part.values())
    return StepSplit(
        base_ms=qb,
        head_ms=qh,
        change_ms=qh - qb,
        more_steps_ms=more,
        slower_steps_ms=slower,
        parts_ms=per_part,
        rest_ms=(qh - qb) - more - slower,
        steps=(sb, sh),
        step_ms=(rb, rh),
    )


def _sentence(s: AgentSection) -> str | None:
    """`task p95 +640 ms: 7 steps instead of 5 (+560 ms), slower tool (+80 ms)`, when the
    steps or a part of the step regressed."""
    if s.split is None:
        return None
    said = []
    if s.steps.change == Change.REGRESSION:
        b, h = s.split.steps
        said.append(f"{steps(h)} steps instead of {steps(b)} ({signed_ms(s.split.more_steps_ms)})")
    parts = [r.name for r in s.parts if r.change == Change.REGRESSION]
    tools = [r.tool or "" for r in s.tools if r.change == Change.REGRESSION]
    if tools and "tool" not in parts:
        parts.append("tool")
    if parts or s.step.change == Change.REGRESSION:
        names = ", ".join(f"{n} {', '.join(tools)}" if n == "tool" and tools else n for n in parts)
        said.append(f"slower {names or 'steps'} ({signed_ms(s.split.slower_steps_ms)})")
    if not said:
        return None
    return f"task {percentile(s.percentile)} {signed_ms(s.split.change_ms)}: " + ", ".join(said)


class StepMoves(NamedTuple):
    """The tasks' percentile as measured, with one step more and with one step fewer."""

    tasks: int
    measured_ms: float
    one_more_ms: float
    one_fewer_ms: float


def step_moves(tasks: Tasks, p: float) -> StepMoves:
    """Each task with one more step (its own mean round trip; the pooled mean for a task of
    no step) and with one fewer (its mean round trip off; a task of no step as it is)."""
    counts = tasks.steps
    if not len(tasks.total_ms):
        raise ValueError("no tasks")
    pooled = float(np.mean(tasks.step_ms)) if len(tasks.step_ms) else 0.0
    owner = np.repeat(np.arange(len(counts)), counts)
    sums = np.bincount(owner, weights=tasks.step_ms, minlength=len(counts))
    has = counts > 0
    mean = np.full(len(counts), pooled)
    mean[has] = sums[has] / counts[has]
    fewer = np.where(counts > 0, tasks.total_ms - mean, tasks.total_ms)
    return StepMoves(
        tasks=len(tasks.total_ms),
        measured_ms=stats.percentile(tasks.total_ms, p),
        one_more_ms=stats.percentile(tasks.total_ms + mean, p),
        one_fewer_ms=stats.percentile(fewer, p),
    )
