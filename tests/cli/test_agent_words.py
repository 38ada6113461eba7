"""An agent comparison counts tasks, not requests (issue 28's gap): the counts, attainment,
pairing notes and findings of every rendering name tasks, with the numbers a reading of the
same files by the json module gives; a request benchmark still says requests."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from budgetdiff.cli import main
from budgetdiff.numbers import count, pct
from tests.support.paths import DEMO, SAMPLES

DATA = SAMPLES / "agent"
BUDGET = DATA / "agent.yml"
REQUEST = re.compile(r"\brequests?\b", re.I)


def _run(capsys: pytest.CaptureFixture[str], *argv: str, output: str) -> tuple[int, str]:
    code = main([*argv, "--output", output], {})
    out, err = capsys.readouterr()
    assert code in (0, 1), err
    return code, out


def _words(report: dict[str, Any]) -> list[str]:
    """Every sentence of a JSON report (its values that are prose, not its keys)."""
    said = [report["headline"] or "", *report["notes"]]
    said += [f["message"] for f in report["findings"]] + [f["subject"] for f in report["findings"]]
    said += [str(v) for v in report["summary"].values() if isinstance(v, str)]
    return said


def _traces(
    tmp_path: Path, name: str, failed_every: int | None = None, keep: int | None = None
) -> tuple[Path, int, int]:
    """A copy of a traces file, its first `keep` tasks, every `failed_every`-th task's
    invoke_agent span marked STATUS_CODE_ERROR; and how many tasks failed, counted here."""
    doc = json.loads((DATA / name).read_text(encoding="utf-8"))
    spans = doc["resourceSpans"][0]["scopeSpans"][0]["spans"]
    roots = [s["traceId"] for s in spans if s["name"].startswith("invoke_agent")]
    kept = set(roots[:keep] if keep else roots)
    spans[:] = [s for s in spans if s["traceId"] in kept]
    failed = 0
    for i, s in enumerate(s for s in spans if s["name"].startswith("invoke_agent")):
        if failed_every and i % failed_every == 0:
            s["status"] = {"code": 2, "message": "tool timed out"}
            failed += 1
    path = tmp_path / name
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path, len(kept), failed


@pytest.mark.parametrize("output", ["table", "markdown"])
def test_every_agent_rendering_counts_tasks(
    output: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["compare", "--base", str(DATA / "steps-base.csv")]
    argv += ["--head", str(DATA / "steps-more.csv"), "--budget", str(BUDGET)]
    _, out = _run(capsys, *argv, output=output)
    with (DATA / "steps-more.csv").open() as f:
        tasks = len({line.split(",", 1)[0] for line in list(f)[1:]})
    assert tasks == 400
    assert not REQUEST.findall(out), [line for line in out.splitlines() if REQUEST.search(line)]
    sep = " (0 failed), " if output == "table" else " · "
    assert f"base {count(tasks)} tasks{sep}head {count(tasks)} tasks" in out
    assert f"paired by task id: {count(tasks)} tasks succeeded in both" in out


def test_the_json_reports_words_say_tasks_and_its_keys_stay(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["compare", "--base", str(DATA / "traces-base.json")]
    argv += ["--head", str(DATA / "traces-slow-search.json"), "--budget", str(BUDGET)]
    _, out = _run(capsys, *argv, output="json")
    report = json.loads(out)
    assert not [w for w in _words(report) if REQUEST.search(w)]
    assert report["requests"] == {"base": 150, "head": 150}  # the contract's key, of tasks


def test_failed_tasks_are_said_as_tasks_with_their_counts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """15 of 150 tasks failed at head (every 10th): the failure-rate finding, its kind's words
    in the heading, and the counts line say tasks, with the counts made here."""
    head, n, failed = _traces(tmp_path, "traces-slow-search.json", failed_every=10)
    assert (n, failed) == (150, 15)
    argv = ["compare", "--base", str(DATA / "traces-base.json"), "--head", str(head)]
    argv += ["--budget", str(BUDGET)]
    _, out = _run(capsys, *argv, output="json")
    report = json.loads(out)
    finding = next(f for f in report["findings"] if f["kind"] == "failure_rate")
    assert finding["subject"] == "tasks"
    said = f"{count(failed)} of {count(n)} tasks failed at head ({pct(100 * failed / n)})"
    assert finding["message"].startswith(said)
    assert not [w for w in _words(report) if REQUEST.search(w)]
    _, md = _run(capsys, *argv, output="markdown")
    assert "**more tasks failed**" in md and f"head {count(n)} tasks ({failed} failed)" in md
    assert not REQUEST.findall(md)


def test_too_few_tasks_say_tasks_and_how_many_are_needed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """40 tasks cannot give p95 a two-sided 95% interval: it needs 0.95^n < 0.025, 72 tasks."""
    head, n, _ = _traces(tmp_path, "traces-base.json", keep=40)
    base, _, _ = _traces(tmp_path, "traces-slow-search.json", keep=40)
    need = next(k for k in range(1, 1000) if 0.95**k < 0.025)
    argv = ["compare", "--base", str(base), "--head", str(head), "--budget", str(BUDGET)]
    _, out = _run(capsys, *argv, output="table")
    out = " ".join(out.split())  # the lines as one, wherever the terminal folded them
    assert f"too few tasks for an interval at p95: needs at least {need} per side" in out
    assert f"(needs {need} tasks)" in out
    assert ": too few tasks to tell\n" in _run(capsys, *argv, output="markdown")[1]  # heading
    assert not REQUEST.findall(out)
    _, out = _run(capsys, "check", "--head", str(head), "--budget", str(BUDGET), output="table")
    out = " ".join(out.split())
    assert f"too few tasks for an interval at p95: needs at least {need} (head has {n})" in out


def test_a_request_benchmark_still_counts_requests(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["compare", "--base", str(DEMO / "base.csv"), "--head", str(DEMO / "head.csv")]
    _, out = _run(capsys, *argv, "--budget", str(DEMO / "budget.yml"), output="table")
    assert "base 2,000 requests" in out and "tasks" not in out
