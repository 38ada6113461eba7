"""The history's HTML trend page (issue 14) drawn in headless Chromium: every chart renders,
with no script error and nothing fetched from the network."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from budgetdiff.cli import main
from tests.support.browser import chromium, dump_dom
from tests.support.history import BUDGET, build_history, write_run


def test_trend_page_draws_every_chart_in_chromium(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    chromium()
    runs = build_history(tmp_path, capsys, [1.03**i for i in range(12)])
    page = tmp_path / "trend.html"
    code = main(
        ["compare", "--budget", BUDGET, "--base", str(tmp_path / "main11.csv"),
         "--head", str(write_run(tmp_path / "pr.csv", 50, 1.45)), "--history", str(runs),
         "--html", str(page), "--output", "json"], {}
    )  # fmt: skip
    report = json.loads(capsys.readouterr().out)
    assert code == 0
    text = page.read_text()
    assert "<script src" not in text and "http" not in text.split("<script>")[0]  # no network
    dom = dump_dom(page)
    body = dom[dom.index("<body") : dom.index(">", dom.index("<body"))]
    assert "data-errors" not in body  # no script error, no chart that threw
    rows = len(report["slo"]) + len(report["slices"])  # a trend and a CDF for each
    assert f'data-charts="{2 * rows}"' in body
    assert dom.count('class="uplot') == 2 * rows
    assert dom.count("<canvas") == 2 * rows
    assert "decode at p95 (drift)" in dom and "decode: base vs head" in dom
