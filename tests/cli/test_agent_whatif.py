"""`budgetdiff whatif --steps N --step-ms MS` (issue 28 item 4): an agent task's estimate
against the task's SLO, and measured tasks with one step more or fewer (truths by numpy)."""

from __future__ import annotations

import csv
import re
import shlex

import numpy as np
import pytest

from budgetdiff.cli import main
from budgetdiff.numbers import ms
from tests.support.paths import DEMO, ROOT, SAMPLES

DATA = SAMPLES / "agent"
BUDGET = str(DATA / "agent.yml")


def test_six_steps_of_450_ms_do_not_fit_2500(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["whatif", "--budget", BUDGET, "--steps", "6", "--step-ms", "450"], {})
    out = capsys.readouterr().out
    assert code == 1
    assert "6 steps x 450 ms per step = 2,700 ms" in out and "8.0% over" in out
    assert out.rstrip().endswith("does not fit")


def test_five_steps_of_400_ms_fit(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["whatif", "--budget", BUDGET, "--steps", "5", "--step-ms", "400"], {}) == 0
    assert capsys.readouterr().out.rstrip().endswith("fits")


def test_measured_tasks_with_a_step_more_and_fewer(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["whatif", "--budget", BUDGET, "--steps", "5", "--step-ms", "400"]
    assert main([*argv, "--head", str(DATA / "steps-base.csv")], {}) == 0
    out = capsys.readouterr().out
    with (DATA / "steps-base.csv").open() as f:
        rows = list(csv.DictReader(f))
    tasks: dict[str, list[float]] = {}
    answers: dict[str, float] = {}
    for r in rows:
        ms_ = float(r["model_ms"]) + float(r["tool_ms"] or 0) + float(r["between_ms"])
        if r["tool_ms"]:
            tasks.setdefault(r["task_id"], []).append(ms_)
        else:
            answers[r["task_id"]] = answers.get(r["task_id"], 0.0) + ms_
    total = np.array([sum(s) + answers.get(t, 0) for t, s in tasks.items()])
    mean = np.array([np.mean(s) for s in tasks.values()])
    for label, values in (
        ("as measured", total),
        ("one step more", total + mean),
        ("one step fewer", total - mean),
    ):
        line = next(line for line in out.splitlines() if line.strip().startswith(label))
        assert ms(float(np.percentile(values, 95))) in line, (label, line)


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--steps", "5.5", "--step-ms", "400"], "--steps 5.5: must be a whole number"),
        (["--steps", "5"], "give both --steps N and --step-ms MS"),
        (["--steps", "5", "--step-ms", "0"], "--step-ms 0: must be above 0 ms"),
        (["--steps", "5", "--step-ms", "4", "--tokens", "9"], "give them alone"),
    ],
)
def test_a_wrong_agent_whatif_is_exit_2(
    argv: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["whatif", "--budget", BUDGET, *argv], {}) == 2
    assert said in capsys.readouterr().err


def test_measured_data_without_agent_tasks_is_said(capsys: pytest.CaptureFixture[str]) -> None:
    demo = DEMO / "head.csv"
    argv = ["whatif", "--budget", BUDGET, "--steps", "5", "--step-ms", "400", "--head", str(demo)]
    assert main(argv, {}) == 2
    assert "holds no agent tasks" in capsys.readouterr().err


def test_the_agents_page_shows_what_whatif_prints(capsys: pytest.CaptureFixture[str]) -> None:
    root = ROOT
    page = (root / "docs" / "agents.md").read_text(encoding="utf-8")
    command = re.search(r"```sh\n(budgetdiff whatif .*?)\n```\n\n```text\n(.*?)```", page, re.S)
    assert command is not None
    argv = [a.replace("tests/", f"{root}/tests/") for a in shlex.split(command.group(1))[1:]]
    assert main(argv, {"COLUMNS": "80"}) == 1
    assert capsys.readouterr().out == command.group(2)
