"""Agent loops end to end (issue 28): `budgetdiff compare/check` on step tables and GenAI
traces (tests/data/agent, made by tools/make_agent_data.py). Truths by numpy on the same
files: steps per task, the task's p95, the step round trip's p95."""

from __future__ import annotations

import csv
import json
import re
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from budgetdiff.cli import main
from tests.support.paths import GOLDEN, ROOT, SAMPLES

DATA = SAMPLES / "agent"
BUDGET = DATA / "agent.yml"
GOLDEN = GOLDEN / "agent"


def budgetdiff(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any]]:
    code = main([*argv, "--budget", str(BUDGET), "--output", "json"], {})
    out, err = capsys.readouterr()
    assert code in (0, 1), err
    return code, json.loads(out)


def compare(capsys: pytest.CaptureFixture[str], base: str, head: str) -> tuple[int, dict]:
    return budgetdiff(capsys, "compare", "--base", str(DATA / base), "--head", str(DATA / head))


class Truth:
    """A step table read by csv and numpy alone."""

    def __init__(self, name: str) -> None:
        with (DATA / name).open() as f:
            rows = list(csv.DictReader(f))
        ids = list(dict.fromkeys(r["task_id"] for r in rows))
        at = {t: i for i, t in enumerate(ids)}
        self.total = np.zeros(len(ids))
        self.steps = np.zeros(len(ids))
        step_ms, tool_ms = [], []
        for r in rows:
            ms = float(r["model_ms"]) + float(r["tool_ms"] or 0) + float(r["between_ms"])
            self.total[at[r["task_id"]]] += ms
            if r["tool_ms"]:
                self.steps[at[r["task_id"]]] += 1
                step_ms.append(ms)
                tool_ms.append(float(r["tool_ms"]))
        self.step_ms, self.tool_ms = np.array(step_ms), np.array(tool_ms)


def rows(report: dict) -> dict[str, dict]:
    return {r["name"]: r for r in report["agent"]["rows"]}


def kinds(report: dict) -> list[tuple[str, str, bool]]:
    return [(f["kind"], f["subject"], f["fails"]) for f in report["findings"]]


def test_check_against_the_agent_budget_reports_numpys_percentiles(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, report = budgetdiff(capsys, "check", "--head", str(DATA / "steps-base.csv"))
    truth = Truth("steps-base.csv")
    total = next(r for r in report["slo"] if r["metric"] == "total")
    assert total["head_ms"] == pytest.approx(np.percentile(truth.total, 95), rel=0.01)
    agent = rows(report)
    assert agent["steps"]["head"] == pytest.approx(np.percentile(truth.steps, 95))
    assert agent["steps"]["max"]["head"] == truth.steps.max()
    assert agent["step"]["head"] == pytest.approx(np.percentile(truth.step_ms, 95), rel=0.01)
    assert agent["tool"]["head"] == pytest.approx(np.percentile(truth.tool_ms, 95), rel=0.01)
    assert (agent["steps"]["target"], agent["step"]["target"]) == (5, 500)
    assert report["agent"]["tasks"]["head"] == len(truth.total) == 400
    assert code == 0 and not [k for k in kinds(report) if k[2]]


def test_a_a_passes_with_nothing_regressed(capsys: pytest.CaptureFixture[str]) -> None:
    code, report = compare(capsys, "steps-base.csv", "steps-aa.csv")
    assert code == 0
    assert not [k for k in kinds(report) if k[0] in ("regression", "agent_steps")]
    assert not [r["name"] for r in report["agent"]["rows"] if r["change"] == "regression"]


def test_more_steps_at_the_same_speed_names_agent_steps_and_no_step_part(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """5 steps x 400 ms, then 7 x 400: more steps, and the split says so."""
    code, report = compare(capsys, "steps-base.csv", "steps-more.csv")
    assert code == 1
    found = kinds(report)
    assert ("agent_steps", "steps", True) in found
    assert not [k for k in found if k[0] == "regression" and k[1].startswith("agent.")]
    split = report["agent"]["split"]
    base, head = Truth("steps-base.csv"), Truth("steps-more.csv")
    change = np.percentile(head.total, 95) - np.percentile(base.total, 95)
    assert split["change_ms"] == pytest.approx(change, abs=0.01)
    assert split["steps"] == {"base": 5, "head": 7}
    # the parts add up to the change, and more steps is nearly all of it
    parts = split["more_steps_ms"] + split["slower_steps_ms"] + split["rest_ms"]
    assert parts == pytest.approx(change, abs=0.01)
    assert split["more_steps_ms"] == pytest.approx(
        2 * (base.step_ms.mean() + head.step_ms.mean()) / 2, abs=0.01
    )
    assert abs(split["slower_steps_ms"]) < 0.1 * change
    assert "7 steps instead of 5" in report["headline"]


def test_slower_steps_name_the_part_and_not_the_steps(capsys: pytest.CaptureFixture[str]) -> None:
    """5 x 400 ms, then 5 x 560 (the tool 160 ms slower)."""
    code, report = compare(capsys, "steps-base.csv", "steps-slow-tool.csv")
    assert code == 1
    found = kinds(report)
    # both tools got slower: the part and its tools are named
    assert [k for k in found if k[0] == "regression" and k[1].startswith("agent.")] == [
        ("regression", "agent.tool fetch+search", True)
    ]
    assert not [k for k in found if k[0] == "agent_steps" and "instead" in k[1]]
    assert not [f for f in report["findings"] if "more steps" in f["message"]]
    split = report["agent"]["split"]
    assert split["more_steps_ms"] == 0
    assert split["parts_ms"]["tool"] > 0.8 * split["change_ms"]
    assert sum(split["parts_ms"].values()) == pytest.approx(split["slower_steps_ms"], abs=0.01)


def test_traces_with_one_tool_slower_name_that_tool(capsys: pytest.CaptureFixture[str]) -> None:
    code, report = compare(capsys, "traces-base.json", "traces-slow-search.json")
    assert code == 1
    tool = next(f for f in report["findings"] if f["subject"].startswith("agent.tool"))
    assert tool["fails"] and "search" in tool["message"] and "fetch" not in tool["message"]
    agent = rows(report)
    assert agent["tool search"]["change"] == "regression"
    assert agent["tool fetch"]["change"] != "regression"
    assert report["agent"]["tasks"] == {"base": 150, "head": 150}


def test_traces_with_six_to_eight_steps_say_more_steps(capsys: pytest.CaptureFixture[str]) -> None:
    code, report = compare(capsys, "traces-base.json", "traces-more-steps.json")
    assert code == 1
    found = kinds(report)
    assert ("agent_steps", "steps", True) in found
    assert not [k for k in found if k[0] == "regression" and k[1].startswith("agent.")]
    assert rows(report)["steps"]["head"] == 8


@pytest.mark.parametrize("output", ["markdown", "table"])
def test_the_agent_section_reads_the_same_in_every_rendering(
    output: str, capsys: pytest.CaptureFixture[str], golden: Callable[[Path, str], None]
) -> None:
    argv = ["compare", "--base", str(DATA / "traces-base.json")]
    argv += ["--head", str(DATA / "traces-slow-search.json"), "--budget", str(BUDGET)]
    assert main([*argv, "--output", output], {}) == 1
    out = capsys.readouterr().out.replace(str(DATA), "DATA")
    golden(GOLDEN / f"slow-search.{'md' if output == 'markdown' else 'txt'}", out)


def test_the_agents_page_shows_what_the_command_prints(capsys: pytest.CaptureFixture[str]) -> None:
    """docs/agents.md's example runs (from the repository's root, as the page shows it)."""
    page = (ROOT / "docs" / "agents.md").read_text(encoding="utf-8")
    (block,) = re.findall(r"```console\n\$ (.*?)\n(.*?)```", page, re.S)
    root = ROOT
    argv = [a.replace("tests/", f"{root}/tests/") for a in shlex.split(block[0])[1:]]
    code = main([*argv, "--output", "table"], {})
    out = capsys.readouterr().out.replace(f"{root}/", "")
    assert code == 1
    assert out == block[1]


def _step_table(path: Path, tools: list[str], per_tool: int) -> Path:
    lines = ["task_id,step,model_ms,tool_ms,tool_name"]
    for i, tool in enumerate(t for t in tools for _ in range(per_tool)):
        lines.append(f"t{i},1,{100 + i % 7},{50 + i % 5},{tool}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_the_most_used_tools_get_rows_and_the_rest_are_counted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tools = [f"tool{i:02d}" for i in range(20)]
    head = _step_table(tmp_path / "h.csv", tools[:1] * 5 + tools, 10)
    _, report = budgetdiff(capsys, "check", "--head", str(head))
    named = [r["tool"] for r in report["agent"]["rows"] if r["tool"]]
    assert len(named) == 12 and "tool00" in named
    assert report["agent"]["tools_left_out"] == 8


def test_a_hostile_tool_name_is_escaped_in_the_comment(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    head = _step_table(tmp_path / "h.csv", ["<img src=x onerror=alert(1)>", "a|b"], 40)
    code = main(["check", "--head", str(head), "--budget", str(BUDGET), "--output", "markdown"], {})
    out = capsys.readouterr().out
    assert code in (0, 1)
    assert "<img" not in out and "a|b" not in out


def test_agent_tasks_from_two_files_on_one_side_are_refused(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["check", "--head", str(DATA / "steps-base.csv"), "--head", str(DATA / "steps-aa.csv")]
    assert main([*argv, "--budget", str(BUDGET)], {}) == 2
    assert "agent tasks are read from one file per side" in capsys.readouterr().err


def test_check_on_traces_reports_the_generators_percentiles(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The issue's check: 5 steps of model ~200 ms and tool ~120 ms against 5 x 500 ms, exit 0;
    the task's and the round trip's p95 are numpy's of the drawn tasks within 1%."""
    from tools import make_agent_data as gen

    code, report = budgetdiff(capsys, "check", "--head", str(DATA / "traces-base.json"))
    drawn = gen.draw(gen.TRACES["traces-base.json"])
    steps = [s for t in drawn for s in t[:-1]]
    totals = [sum(s[0] + max(s[1], 0) + s[2] for s in t) for t in drawn]
    total = next(r for r in report["slo"] if r["metric"] == "total")
    assert total["head_ms"] == pytest.approx(np.percentile(totals, 95), rel=0.01)
    agent = rows(report)
    round_trip = np.percentile([s[0] + s[1] + s[2] for s in steps], 95)
    assert agent["step"]["head"] == pytest.approx(round_trip, rel=0.01)
    assert agent["steps"]["head"] == 5
    assert code == 0
