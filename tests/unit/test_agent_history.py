"""The agent rows in a history (issue 28's gap): steps per task, the step round trip, its parts
and each tool get a trend and can drift, as the SLO metrics and slices do. The runs are agent
traces drawn by `tools/make_agent_data.py`; each trend's values are numpy's percentiles of the
tasks drawn for those runs."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from budgetdiff.cli import main
from budgetdiff.numbers import ms
from tests.support.paths import SAMPLES
from tools import make_agent_data as gen

BUDGET = str(SAMPLES / "agent" / "agent.yml")
RUN = gen.Spec(seed=0, tasks=150, steps=[5])


def _write(tmp_path: Path, name: str, spec: gen.Spec) -> tuple[Path, list[Any]]:
    drawn = gen.draw(spec)
    path = tmp_path / name
    gen.write_traces(path, drawn, spec.seed)
    return path, drawn


def _history(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], specs: list[gen.Spec]
) -> tuple[Path, list[list[Any]]]:
    """A history file of one `check --output json` line per run, and each run's drawn tasks."""
    lines, drawn = [], []
    for i, spec in enumerate(specs):
        path, tasks = _write(tmp_path, f"run{i}.json", spec)
        assert main(["check", "--head", str(path), "--budget", BUDGET, "--output", "json"], {}) in (
            0,
            1,
        )
        lines.append(json.dumps(json.loads(capsys.readouterr().out)))
        drawn.append(tasks)
    out = tmp_path / "history.jsonl"
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return out, drawn


def _check(capsys: pytest.CaptureFixture[str], head: Path, runs: Path, *extra: str) -> Any:
    argv = ["check", "--head", str(head), "--budget", BUDGET, "--history", str(runs)]
    code = main([*argv, "--output", "json", *extra], {})
    return code, json.loads(capsys.readouterr().out)


def _p95_of_steps(tasks: list[Any], part: int | None = None) -> float:
    """numpy's p95 of every step's round trip (part None) or of one part (0 model, 1 tool)."""
    values = [s[0] + s[1] + s[2] if part is None else s[part] for t in tasks for s in t[:-1]]
    return float(np.percentile(values, 95))


def test_every_agent_row_has_a_trend_of_numpys_percentiles(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    specs = [replace(RUN, seed=100 + i, steps=[5, 6] if i % 2 else [5]) for i in range(5)]
    runs, drawn = _history(tmp_path, capsys, specs)
    head, tasks = _write(tmp_path, "head.json", replace(RUN, seed=200))
    _, report = _check(capsys, head, runs)
    trends = {t["name"]: t for t in report["history"]["trends"] if t["kind"] == "agent"}
    assert {"steps", "step", "model", "tool", "between", "tool search", "tool fetch"} <= set(trends)
    every = [*drawn, tasks]
    step = trends["step"]
    assert step["unit"] == "ms" and step["values_steps"] is None
    assert step["values_ms"] == pytest.approx([_p95_of_steps(t) for t in every], rel=1e-3)
    assert trends["tool"]["values_ms"] == pytest.approx(
        [_p95_of_steps(t, 1) for t in every], rel=1e-3
    )
    steps = trends["steps"]  # a count of steps, in the `_steps` keys
    assert steps["unit"] == "steps" and steps["values_ms"] is None
    assert steps["values_steps"] == [np.percentile([len(x) - 1 for x in t], 95) for t in every]
    assert steps["reference_ms"] is None and steps["reference_steps"] is not None
    # `budgetdiff history` shows them, the steps in steps
    assert main(["history", str(runs)], {"COLUMNS": "200"}) == 0
    table = capsys.readouterr().out
    row = next(line for line in table.splitlines() if "steps per task" in line)
    assert f"{np.percentile([len(x) - 1 for x in drawn[-1]], 95):g} steps" in row
    row = next(line for line in table.splitlines() if "step round trip" in line)
    assert ms(_p95_of_steps(drawn[-1])) in row


def test_a_tool_slower_by_small_steps_drifts_and_the_budgeted_round_trip_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """15 runs, the tool 3% slower each (every step under the 5% threshold), then a head 3%
    slower again: the step round trip (budgeted, 500 ms) and the tool drift; with `drift` in
    fail_on the round trip's fails, the tool's (no budget of its own) only warns."""
    specs = [replace(RUN, seed=300 + i, tool_ms=120 * 1.03**i) for i in range(15)]
    runs, drawn = _history(tmp_path, capsys, specs)
    head, tasks = _write(tmp_path, "head.json", replace(RUN, seed=400, tool_ms=120 * 1.03**15))
    code, report = _check(capsys, head, runs, "--fail-on", "breach,regression,drift")
    drift = {f["subject"]: f for f in report["findings"] if f["kind"] == "drift"}
    assert drift["agent.step"]["fails"] and not drift["agent.tool"]["fails"] and code == 1
    first, last = _p95_of_steps(drawn[0]), _p95_of_steps(tasks)
    said = drift["agent.step"]["message"]
    assert said.startswith(f"p95 step round trip {100 * (last - first) / first:+.1f}% over 15")
    assert f"({ms(first)} -> {ms(last)})" in said
    assert "agent.model" not in drift and "agent.steps" not in drift
    # the comment's trend table marks the failing drift
    argv = ["check", "--head", str(head), "--budget", BUDGET, "--history", str(runs)]
    main([*argv, "--fail-on", "drift", "--output", "markdown"], {})
    comment = capsys.readouterr().out
    rows = [line for line in comment.splitlines() if line.startswith("| step round trip | ")]
    assert len(rows) == 2 and "❌ drift" in rows[1]  # the agent table's row, the trend's


def test_same_agent_runs_do_not_drift(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    runs, _ = _history(tmp_path, capsys, [replace(RUN, seed=500 + i) for i in range(15)])
    head, _ = _write(tmp_path, "head.json", replace(RUN, seed=600))
    code, report = _check(capsys, head, runs, "--fail-on", "breach,regression,drift")
    assert not [f for f in report["findings"] if f["kind"] == "drift"] and code == 0
