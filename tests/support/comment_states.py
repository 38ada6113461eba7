"""The PR comment in each state a reviewer can meet, from seeded per-request data evaluated by
budgetdiff itself: the golden files (`test_comment_states.py`) and the Chromium test of every
chart (`test_charts_render.py`) both read them."""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable
from pathlib import Path

import numpy as np

import budgetdiff
from budgetdiff.api import Report
from budgetdiff.cli import main
from budgetdiff.report.model import Scenario
from tests.support.helpers import slices, write_table

BUDGET = {
    "version": 1,
    "percentile": 95,
    "slo": {"ttft": 1200, "total": 6000},
    "slices": {"queue": 250, "prefill": 800, "decode": 4200},
    "first_token_after": "prefill",
    "headroom": "10%",
    "fail_on": ["breach", "regression"],
}


def _data(seed: int, decode_tail: float = 1.0, decode_scale: float = 1.0) -> dict[str, object]:
    d: dict[str, object] = dict(slices(seed, decode_tail=decode_tail))
    d["decode_ms"] = (np.asarray(d["decode_ms"]) * decode_scale).round(3)
    return d


def _named(report: Report, name: str) -> Scenario:
    s = report.scenarios[0]
    return dataclasses.replace(s, comparison=dataclasses.replace(s.comparison, name=name))


def passing() -> Report:
    return budgetdiff.compare(_data(1), _data(2), BUDGET)


def warning() -> Report:
    """Nothing regressed, but decode holds more of the p95 than its budget (not gated)."""
    tight = {**BUDGET, "slices": {"queue": 250, "prefill": 800, "decode": 3000}}
    return budgetdiff.compare(_data(1), _data(2), tight)


def failing() -> Report:
    """decode's slowest requests 30% slower: a regression that leaves 3.9% headroom."""
    return budgetdiff.compare(_data(1), _data(2, decode_tail=1.3), BUDGET)


def several() -> Report:
    """Three load levels of one benchmark: one passes, one is tight, one fails."""
    parts = [
        _named(passing(), "concurrency=8"),
        _named(budgetdiff.compare(_data(3), _data(4, decode_scale=1.04), BUDGET), "concurrency=16"),
        _named(failing(), "concurrency=32"),
    ]
    return Report(id="default", mode="compare", scenarios=tuple(parts))


def many() -> Report:
    """Forty scenarios: more than a comment holds, so the rendering is cut to the limit."""
    one = failing()
    return Report(
        id="default",
        mode="compare",
        scenarios=tuple(_named(one, f"prompt-{i:02d}") for i in range(40)),
    )


def _cli_markdown(tmp: Path, argv: list[str], env: dict[str, str], name: str) -> str:
    out = tmp / f"{name}.md"
    here = Path.cwd()
    os.chdir(tmp)  # file names in the comment are relative: the same every run
    try:
        code = main([*argv, "--markdown", str(out)], environ={"RUNNER_TEMP": str(tmp), **env})
    finally:
        os.chdir(here)
    assert code in (0, 1)
    return out.read_text(encoding="utf-8")


def no_base(tmp: Path) -> str:
    head = write_table(tmp / "head.csv", _data(2, decode_tail=1.4))  # over the SLO
    budget = tmp / "budget.yml"
    budget.write_text(json.dumps(BUDGET))
    argv = ["compare", "--base", "missing.csv", "--head", head.name]
    argv += ["--budget", budget.name, "--allow-missing-base"]
    return _cli_markdown(tmp, argv, {}, "no-base")


def accepted(tmp: Path) -> str:
    """The failing pair on a pull request whose author's reviewer added the accept label."""
    base = write_table(tmp / "base.csv", _data(1))
    head = write_table(tmp / "head.csv", _data(2, decode_tail=1.3))
    budget = tmp / "budget.yml"
    budget.write_text(json.dumps(BUDGET))
    event = tmp / "event.json"
    event.write_text(json.dumps(labeled_event("budgetdiff:accept", "octocat")))
    env = {"GITHUB_EVENT_NAME": "pull_request", "GITHUB_EVENT_PATH": str(event)}
    argv = ["compare", "--base", str(base), "--head", str(head), "--budget", str(budget)]
    return _cli_markdown(tmp, [*argv, "--github", "--comment", "false"], env, "accepted")


def labeled_event(label: str, sender: str) -> dict[str, object]:
    """A `pull_request` event, action `labeled`, as GitHub sends it (the fields read)."""
    return {
        "action": "labeled",
        "number": 2,
        "label": {"name": label},
        "sender": {"login": sender},
        "pull_request": {
            "number": 2,
            "labels": [{"name": "enhancement"}, {"name": label}],
            "base": {"ref": "main", "sha": "a" * 40},
            "head": {"ref": "feature", "sha": "b" * 40},
        },
    }


STATES: dict[str, Callable[[Path], str]] = {
    "pass": lambda tmp: passing().to_markdown(),
    "warn": lambda tmp: warning().to_markdown(),
    "fail": lambda tmp: failing().to_markdown(),
    "no-base": no_base,
    "scenarios": lambda tmp: several().to_markdown(),
    "truncated": lambda tmp: many().to_markdown(),
    "accepted": accepted,
    "resolved": lambda tmp: _resolved(passing()),
}


def _resolved(report: Report) -> str:
    from budgetdiff.render.markdown import render_markdown

    return render_markdown(report, resolved=True)
