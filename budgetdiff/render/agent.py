"""The agent section of every rendering (issue 28): one table (steps per task, the step round
trip, its parts, each tool) and the split of the task's change, from `Comparison.agent`. The
terminal, markdown and JSON renderers each call their function here; none decides anything."""

from __future__ import annotations

import math
from typing import Any

from budgetdiff.measure.results import AgentRow, AgentSection, Comparison, StepSplit
from budgetdiff.numbers import count, interval, ms, num, pct, percentile, signed_ms, steps
from budgetdiff.render import cells
from budgetdiff.render.fit import column, prose, table
from budgetdiff.render.text import md, plain

LABELS = {
    "steps": "steps per task",
    "step": "step round trip",
    "model": "  model",
    "tool": "  tool",
    "between": "  between",
}


def _label(r: AgentRow) -> str:
    return LABELS.get(r.name, f"    {r.name}")


def _value(r: AgentRow, x: float | None) -> str:
    return steps(x) if r.unit == "steps" else num(x)


def _head(r: AgentRow) -> str:
    """The head's value; the steps row adds its p50 and max."""
    if r.unit != "steps":
        return num(r.head)
    return f"{steps(r.head)} (p50 {steps(r.p50[1])}, max {steps(r.max[1])})"


def _change(r: AgentRow, words: dict[str, str]) -> str:
    """`+38.3% [+36.0, +40.6] regression`; the steps row in steps: `+2 regression`."""
    if r.change is None:
        return ""
    if r.unit == "steps" or r.delta_pct is None or not r.base:
        said = ("+" if r.delta and r.delta > 0 else "") + _value(r, r.delta)
    else:
        said = pct(r.delta_pct, signed=True)
        if r.ci is not None:
            lo, hi = (100 * v / r.base for v in r.ci)
            said += " " + interval(lo, hi)
    return f"{said} {words[r.change]}"


def _split_words(s: StepSplit, p: str) -> str:
    parts = ", ".join(f"{k} {signed_ms(v)}" for k, v in s.parts_ms.items())
    return (
        f"task {p} {signed_ms(s.change_ms)} = more steps {signed_ms(s.more_steps_ms)} "
        f"({steps(s.steps[0])} -> {steps(s.steps[1])} steps at {p}) + slower steps "
        f"{signed_ms(s.slower_steps_ms)} ({parts}; mean round trip {ms(s.step_ms[0])} -> "
        f"{ms(s.step_ms[1])}) + the rest {signed_ms(s.rest_ms)} (answers, time outside "
        "the steps)"
    )


def _plan(s: AgentSection, target_ms: float | None) -> str | None:
    if s.planned_ms is None or s.steps.target is None or s.step.target is None:
        return None
    slo = f" against the task's {ms(target_ms)} (slo.total)" if target_ms is not None else ""
    return (
        f"budgeted: {steps(s.steps.target)} steps x {ms(s.step.target)} = {ms(s.planned_ms)}{slo}"
    )


def _tasks_line(s: AgentSection) -> str:
    def side(name: str, n: int | None, answers: float | None) -> str:
        finite = answers is not None and math.isfinite(answers)
        per = f", {num(answers)} answers per task" if finite else ""
        return f"{name} {count(n or 0)} tasks{per}"

    said = [side("base", s.tasks[0], s.answers[0])] if s.tasks[0] is not None else []
    return "agent: " + ", ".join([*said, side("head", s.tasks[1], s.answers[1])])


def _left_out(s: AgentSection) -> str | None:
    n = s.tools_left_out
    return f"{count(n)} more tools, of fewer steps, have no row of their own" if n else None


def _outside(s: AgentSection) -> str | None:
    named = zip(("base", "head"), s.calls_outside, strict=True)
    sides = [f"{count(n)} in {name}" for name, n in named if n]
    if not sides:
        return None
    return (
        f"model and tool calls under no task, left out: {', '.join(sides)} (a task is an "
        "invoke_agent span, else a trace's root: see docs/agents.md)"
    )


def _below(c: Comparison, s: AgentSection, p: str) -> list[str]:
    """The lines under the table: tools without a row, the plan, the split."""
    total = next((r.target_ms for r in c.slo if r.name == "total"), None)
    said = (
        _left_out(s),
        _outside(s),
        _plan(s, total),
        _split_words(s.split, p) if s.split else None,
    )
    return [line for line in said if line]


# ---- terminal ---------------------------------------------------------------------------------


def text_section(c: Comparison, width: int | None) -> list[str]:
    """The terminal's agent table and lines (nothing without agent tasks)."""
    s = c.agent
    if s is None:
        return []
    p = percentile(s.percentile)
    rows = s.rows
    compare = s.tasks[0] is not None
    columns = [column("budget", [_value(r, r.target) for r in rows], right=True)]
    if compare:
        columns.append(column("base", [_value(r, r.base) for r in rows], right=True))
    columns.append(column("head", [_head(r) for r in rows], right=True))
    if compare:
        words = dict(cells.CHANGE_WORDS)
        columns.append(column("change", [_change(r, words) for r in rows], group=1))
    out = ["", *prose(_tasks_line(s), width)]
    out += ["", *table(column(f"agent {p}", [plain(_label(r)) for r in rows]), columns, width)]
    for line in _below(c, s, p):
        out += prose(plain(line, 400), width)
    return out


# ---- markdown ---------------------------------------------------------------------------------

_MD_WORDS = {**cells.CHANGE_WORDS, "none": "no clear change"}


def markdown_section(c: Comparison) -> list[str]:
    """The comment's agent table and lines (nothing without agent tasks)."""
    s = c.agent
    if s is None:
        return []
    p = percentile(s.percentile)
    compare = s.tasks[0] is not None
    head = [f"agent {p}", "budget", *(["base"] if compare else []), "head"]
    head += ["change"] if compare else []
    lines = ["", md(_tasks_line(s), 300), "", "| " + " | ".join(head) + " |"]
    lines.append("| --- |" + " ---: |" * (len(head) - 2) + (" --- |" if compare else " ---: |"))
    for r in s.rows:
        row = [md(_label(r).strip(), 120), _value(r, r.target)]
        row += [_value(r, r.base)] if compare else []
        row += [md(_head(r))] + ([md(_change(r, _MD_WORDS))] if compare else [])
        lines.append("| " + " | ".join(row) + " |")
    for line in _below(c, s, p):
        lines += ["", f"<sub>{md(line, 400)}</sub>"]
    return lines


# ---- JSON -------------------------------------------------------------------------------------


def json_section(c: Comparison) -> dict[str, Any] | None:
    """`scenarios[].agent` (and the top level's): None without agent tasks."""
    s = c.agent
    if s is None:
        return None
    split = s.split
    return {
        "percentile": s.percentile,
        "tasks": {"base": s.tasks[0], "head": s.tasks[1]},
        "answers_per_task": {"base": _f(s.answers[0]), "head": _f(s.answers[1])},
        "planned_ms": _f(s.planned_ms),
        "tools_left_out": s.tools_left_out,
        "calls_outside": {"base": s.calls_outside[0], "head": s.calls_outside[1]},
        "sentence": s.sentence,
        "rows": [_row(r) for r in s.rows],
        "split": {
            "base_ms": _f(split.base_ms),
            "head_ms": _f(split.head_ms),
            "change_ms": _f(split.change_ms),
            "more_steps_ms": _f(split.more_steps_ms),
            "slower_steps_ms": _f(split.slower_steps_ms),
            "parts_ms": {k: _f(v) for k, v in split.parts_ms.items()},
            "rest_ms": _f(split.rest_ms),
            "steps": {"base": _f(split.steps[0]), "head": _f(split.steps[1])},
            "step_mean_ms": {"base": _f(split.step_ms[0]), "head": _f(split.step_ms[1])},
        }
        if split
        else None,
    }


def _row(r: AgentRow) -> dict[str, Any]:
    return {
        "name": r.name,
        "tool": r.tool,
        "unit": r.unit,
        "target": _f(r.target),
        "base": _f(r.base),
        "head": _f(r.head),
        "count": {"base": r.count[0], "head": r.count[1]},
        "delta": _f(r.delta),
        "delta_pct": _f(r.delta_pct),
        "ci": [_f(r.ci[0]), _f(r.ci[1])] if r.ci else None,
        "head_ci": [_f(r.head_ci[0]), _f(r.head_ci[1])] if r.head_ci else None,
        "change": r.change,
        "p_value": _f(r.p_value, 6),
        "over_budget": r.over_budget,
        "p50": {"base": _f(r.p50[0]), "head": _f(r.p50[1])} if r.unit == "steps" else None,
        "max": {"base": _f(r.max[0]), "head": _f(r.max[1])} if r.unit == "steps" else None,
        "notes": list(r.notes),
    }


def _f(x: float | None, digits: int = 3) -> float | None:
    if x is None or not math.isfinite(x):
        return None
    return round(float(x), digits)
