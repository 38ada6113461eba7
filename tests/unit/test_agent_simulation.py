"""The agent section's tests by simulation (issue 28), fixed seeds: on A/A pairs (same
distribution, other seed) no row regresses more often than the 5% the confidence allows; more
steps is caught as more steps and not as slower steps; a 40% slower tool is caught as the tool.
Tasks are drawn with numpy and compared in-process (`agent.compare`), as the CLI does."""

from __future__ import annotations

import numpy as np
import pytest

from budgetdiff.budget.file import parse_budget
from budgetdiff.formats.agent.tasks import Task, build
from budgetdiff.measure.agent import compare
from budgetdiff.measure.results import Change

pytestmark = pytest.mark.slow  # hundreds of simulated pairs: `-m "not slow"` skips them

BUDGET = parse_budget("slo: {total: 2500}\nagent: {steps: 5, step: 500}\n", "agent.yml")
PAIRS = 200


def tasks(rng: np.random.Generator, steps: list[int], tool_ms: float = 120.0, n: int = 400):
    out = []
    for i in range(n):
        task = Task(f"t{i}")
        for _ in range(int(rng.choice(steps))):
            task.steps.append(
                (
                    200 * rng.lognormal(0, 0.2),
                    tool_ms * rng.lognormal(0, 0.25),
                    80 * rng.lognormal(0, 0.1),
                    "search",
                )
            )
        task.answers, task.answer_ms = 1, 150 * rng.lognormal(0, 0.2)
        out.append(task)
    return build(out, "sim", "sim")


def regressed(section) -> set[str]:
    return {r.name for r in section.rows if r.change == Change.REGRESSION}


def test_a_a_flags_no_row_more_often_than_the_confidence_allows() -> None:
    flagged = 0
    for seed in range(PAIRS):
        rng = np.random.default_rng(seed)
        section = compare(tasks(rng, [4, 5, 6]), tasks(rng, [4, 5, 6]), BUDGET)
        flagged += bool(regressed(section))
        split = section.split
        assert split is not None
        parts = split.more_steps_ms + split.slower_steps_ms + split.rest_ms
        assert abs(parts - split.change_ms) < 1e-6
    assert flagged / PAIRS <= 0.05


def test_more_steps_are_more_steps_and_a_slower_tool_is_the_tool() -> None:
    more, slower = 0, 0
    for seed in range(50):
        rng = np.random.default_rng(1000 + seed)
        base = tasks(rng, [5])
        steps = regressed(compare(base, tasks(rng, [6, 7, 8]), BUDGET))
        more += steps == {"steps"}
        tool = regressed(compare(base, tasks(rng, [5], tool_ms=168.0), BUDGET))
        slower += "tool" in tool and "steps" not in tool
    assert more >= 47 and slower >= 47
