"""Issue 38, item 8: the trend page's legends name the series, without uPlot's `--` value
placeholders, and its title says what the page draws, in headless Chromium."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from budgetdiff.cli import main
from tests.support.browser import chromium, dump_dom
from tests.support.history import BUDGET, build_history, write_run


def test_the_trend_legends_have_no_placeholders_and_the_title_says_what_is_drawn(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    chromium()
    runs = build_history(tmp_path, capsys, [1.0, 1.01, 1.02])
    page = tmp_path / "trend.html"
    argv = ["compare", "--budget", BUDGET, "--base", str(tmp_path / "main2.csv")]
    argv += ["--head", str(write_run(tmp_path / "pr.csv", 50)), "--history", str(runs)]
    assert main([*argv, "--html", str(page)], {}) in (0, 1)
    capsys.readouterr()
    dom = dump_dom(page)
    legends = re.findall(r'<table class="u-legend[^"]*">(.*?)</table>', dom, re.S)
    assert legends  # every chart has its legend
    text = " ".join(re.sub(r"<[^>]+>", " ", legend) for legend in legends)
    assert "--" not in text and "value (ms)" in text and "base" in text
    heading = re.search(r"<h1>(.*?)</h1>", dom)
    assert heading is not None
    assert "over the last 4 run(s)" in heading.group(1)
    assert "base vs head distributions" in heading.group(1)
