"""Golden files for what a person reads: the demo as markdown and as a terminal table.

Regenerate after an intended change with `make golden` (pytest --update-golden) and review the diff.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.helpers import run
from tests.support.history import BUDGET, build_history, write_run
from tests.support.paths import GOLDEN


@pytest.mark.parametrize("output,name", [("markdown", "demo.md"), ("table", "demo.txt")])
def test_demo_output_matches_golden(
    output: str,
    name: str,
    golden: Callable[[Path, str], None],
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = run(["demo", "--output", output], capsys)
    assert code == 0, err
    golden(GOLDEN / name, out)


def test_history_section_matches_golden(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    golden: Callable[[Path, str], None],
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The comment's trend table and drift findings (issue 14), from fixed-seed runs."""
    monkeypatch.chdir(tmp_path)
    build_history(Path("."), capsys, [1.02**i for i in range(15)])
    write_run(Path("pr.csv"), 99, 1.02**15)
    argv = ["compare", "--base", "main14.csv", "--head", "pr.csv", "--budget", BUDGET]
    code, out, err = run([*argv, "--history", "history.jsonl", "--output", "markdown"], capsys)
    assert code == 0, err
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("**Trend at"))
    section = lines[start : next(i for i, x in enumerate(lines) if x.startswith("- ")) - 1]
    drift = [line for line in lines if line.startswith("- ⚠️ **drift**")]
    golden(GOLDEN / "history.md", "\n".join([*section, "", *drift]) + "\n")
