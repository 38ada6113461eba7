"""The agent rows of `Report.to_frame()` (issue 28's gap): steps per task in the `_steps`
columns, the step round trip, its parts and each tool in the `_ms` ones, each equal to numpy's
percentile of the tasks `tools/make_agent_data.py` drew for the same traces."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

import budgetdiff
from budgetdiff.render.frame import FRAME_COLUMNS
from tests.support.paths import DEMO, SAMPLES
from tools import make_agent_data as gen

DATA = SAMPLES / "agent"
BUDGET = DATA / "agent.yml"
Step = tuple[float, float, float, str]  # model, tool, between ms, tool name (as drawn)
PARTS: dict[str, Callable[[Step], float]] = {
    "step": lambda s: s[0] + s[1] + s[2],
    "model": lambda s: s[0],
    "tool": lambda s: s[1],
    "between": lambda s: s[2],
}
STEPS_COLUMNS = [c for c in FRAME_COLUMNS if c.endswith("_steps")]
MS_COLUMNS = [c for c in FRAME_COLUMNS if c.endswith("_ms")]


def _drawn(name: str) -> list[list[Step]]:
    return gen.draw(gen.TRACES[name])


def _steps(drawn: list[list[Step]]) -> np.ndarray:
    return np.array([len(t) - 1 for t in drawn], dtype=float)  # the last is the answer


def _of(drawn: list[list[Step]], f: Callable[[Step], float], tool: str | None = None) -> np.ndarray:
    return np.array([f(s) for t in drawn for s in t[:-1] if tool in (None, s[3])])


def test_agent_rows_are_numpys_percentiles_of_the_drawn_tasks() -> None:
    """6 to 8 steps instead of 5: the steps row's values are counts, the others ms."""
    frame = budgetdiff.compare(
        DATA / "traces-base.json", DATA / "traces-more-steps.json", BUDGET
    ).to_frame()
    assert list(frame.columns) == list(FRAME_COLUMNS)
    agent = frame[frame.kind == "agent"].set_index("name")
    base, head = _drawn("traces-base.json"), _drawn("traces-more-steps.json")
    steps = agent.loc["steps"]
    sb, sh = _steps(base), _steps(head)
    assert steps.head_steps == np.percentile(sh, 95) and steps.base_steps == np.percentile(sb, 95)
    assert steps.delta_steps == np.percentile(sh, 95) - np.percentile(sb, 95)
    assert (steps.base_p50_steps, steps.head_p50_steps) == (np.median(sb), np.median(sh))
    assert (steps.base_max_steps, steps.head_max_steps) == (sb.max(), sh.max())
    assert steps.ci_low_steps <= steps.delta_steps <= steps.ci_high_steps
    assert steps.target_steps == 5 and steps.change == "regression" and steps.over_budget
    assert steps[MS_COLUMNS].isna().all()  # a count of steps is no duration
    for name, f in PARTS.items():
        row = agent.loc[name]
        assert row.base_ms == pytest.approx(np.percentile(_of(base, f), 95), rel=1e-3)
        assert row.head_ms == pytest.approx(np.percentile(_of(head, f), 95), rel=1e-3)
        assert row.delta_ms == pytest.approx(row.head_ms - row.base_ms, abs=1e-6)
        assert row[STEPS_COLUMNS].isna().all()
    assert agent.loc["step"].target_ms == 500
    for tool in gen.TOOLS:
        row = agent.loc[f"tool {tool}"]
        assert row.tool == tool
        assert row.head_ms == pytest.approx(
            np.percentile(_of(head, PARTS["tool"], tool), 95), rel=1e-3
        )
    assert set(frame[frame.kind != "agent"].tool.isna()) == {True}


def test_a_slower_tool_is_its_rows_regression_in_the_frame() -> None:
    frame = budgetdiff.compare(
        DATA / "traces-base.json", DATA / "traces-slow-search.json", BUDGET
    ).to_frame()
    agent = frame[frame.kind == "agent"].set_index("name")
    base, head = _drawn("traces-base.json"), _drawn("traces-slow-search.json")
    search = agent.loc["tool search"]
    before = np.percentile(_of(base, PARTS["tool"], "search"), 95)
    after = np.percentile(_of(head, PARTS["tool"], "search"), 95)
    assert search.delta_pct == pytest.approx(100 * (after - before) / before, rel=1e-2)
    assert search.change == "regression" and agent.loc["tool fetch"].change != "regression"
    assert search.ci_low_ms <= search.delta_ms <= search.ci_high_ms


def test_a_check_frame_has_the_agent_rows_without_base_values() -> None:
    frame = budgetdiff.check(DATA / "traces-base.json", BUDGET).to_frame()
    agent = frame[frame.kind == "agent"].set_index("name")
    assert list(agent.index[:5]) == ["steps", "step", "model", "tool", "between"]
    assert agent.loc["steps"].head_steps == np.percentile(_steps(_drawn("traces-base.json")), 95)
    assert agent[["base_ms", "base_steps", "change"]].isna().all().all()


def test_a_request_benchmark_has_no_agent_rows() -> None:
    frame = budgetdiff.check(DEMO / "head.csv", DEMO / "budget.yml").to_frame()
    assert "agent" not in set(frame.kind) and frame[STEPS_COLUMNS].isna().all().all()
