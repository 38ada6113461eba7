"""The agent section's result types (issue 28): what `agent` computes from the tasks of both
sides and every renderer reads. Only types live here, as in `results`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from budgetdiff.measure.results import Change

# How an agent row is named among the SLO metrics and slices; a tool's row is `tool NAME`
LABELS = {
    "steps": "steps per task",
    "step": "step round trip",
    "model": "step model",
    "tool": "step tool",
    "between": "step between",
}


@dataclass(frozen=True)
class AgentRow:
    """Steps per task, the step round trip, one of its parts, or one tool's calls, at the
    budget's percentile (`unit`: steps, or ms)."""

    name: str  # steps, step, model, tool, between, or `tool NAME`
    unit: Literal["steps", "ms"]
    target: float | None  # agent.steps, agent.step, agent.model, ...
    base: float | None
    head: float | None
    count: tuple[int | None, int]  # values (tasks or steps) behind base and head
    delta: float | None = None
    delta_pct: float | None = None
    ci: tuple[float, float] | None = None
    change: Change | None = None  # None: no base
    p_value: float | None = None
    notes: tuple[str, ...] = ()
    # the steps row: p50 and max per side (base, head), beside the percentile
    p50: tuple[float | None, float | None] = (None, None)
    max: tuple[float | None, float | None] = (None, None)
    # the head's own interval for its percentile (what a history of runs compares with)
    head_ci: tuple[float, float] | None = None

    @property
    def label(self) -> str:
        """The row's name beside the SLO metrics and slices (a history's trends)."""
        return LABELS.get(self.name, self.name)

    @property
    def over_budget(self) -> bool:
        return self.target is not None and self.head is not None and self.head > self.target

    @property
    def tool(self) -> str | None:
        """The tool a per-tool row is about."""
        return self.name.removeprefix("tool ") if self.name.startswith("tool ") else None


@dataclass(frozen=True)
class StepSplit:
    """The change of the task's percentile, base to head, split in two factors: the task's
    percentile taken as S x r + rest (S the percentile of steps per task, r the mean step round
    trip), the change of S x r split between them by Shapley (each factor's change times the
    other's mean of base and head). The parts add up to the change:
    change_ms = more_steps_ms + slower_steps_ms + rest_ms, slower_steps_ms = sum(parts_ms)."""

    base_ms: float
    head_ms: float
    change_ms: float
    more_steps_ms: float
    slower_steps_ms: float
    parts_ms: dict[str, float]  # slower_steps_ms by part: model, tool, between
    rest_ms: float  # answers, time outside the steps, and the tail's own shape
    steps: tuple[float, float]  # S of base and head
    step_ms: tuple[float, float]  # r of base and head


@dataclass(frozen=True)
class AgentSection:
    """The agent section of one comparison: tasks, their steps, the round trip and its parts,
    per-tool rows when several tools are used, and the split of the task's change."""

    percentile: float
    tasks: tuple[int | None, int]  # succeeded tasks of base and head
    answers: tuple[float | None, float]  # mean model calls without a tool per task
    steps: AgentRow
    step: AgentRow
    parts: tuple[AgentRow, ...]  # model, tool, between
    tools: tuple[AgentRow, ...]  # one per tool, when several are used
    split: StepSplit | None  # with a base
    sentence: str | None  # `task p95 +640 ms: 7 steps instead of 5 (+560 ms)`
    planned_ms: float | None  # agent.steps x agent.step, when both are set
    tools_left_out: int = 0  # tools without a row (only the most used get one)
    calls_outside: tuple[int, int] = (0, 0)  # traces' model/tool calls in no task (base, head)

    @property
    def rows(self) -> tuple[AgentRow, ...]:
        return (self.steps, self.step, *self.parts, *self.tools)
