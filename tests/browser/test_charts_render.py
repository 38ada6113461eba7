"""Every chart budgetdiff can put in a comment, drawn by the real Mermaid (the version the browser
setup pins) in headless Chromium: a syntax error in any of them fails here, not on GitHub."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.support.browser import dump_dom, mermaid_js
from tests.support.comment_page import charts, check_page, results
from tests.support.comment_states import STATES
from tests.support.helpers import run, write_table
from tests.support.paths import GOLDEN

# Names a budget may give its slices: markup, Mermaid's own syntax, keywords, other scripts
HOSTILE = [
    "a|b:c;d#e",
    "click x href javascript:alert(1)",
    "section evil",
    "%%{init: {'theme':'dark'}}%%",
    "```end",  # a newline is refused in a name (tests/cli/test_budget_attacks.py)
    "<img src=x onerror=alert(1)>",
    "décodé 解码",
    "x" * 300,
]


def _hostile_markdown(tmp: Path, capsys: pytest.CaptureFixture[str]) -> str:
    rng = np.random.default_rng(7)
    columns = {f"c{i}": rng.lognormal(4, 0.3, 300).round(2) for i in range(len(HOSTILE))}
    base = write_table(tmp / "base.csv", columns)
    head = write_table(
        tmp / "head.csv", {k: v * (1.3 if k == "c0" else 1.0) for k, v in columns.items()}
    )
    budget = {
        "version": 1,
        "slo": {"total": 900},
        "slices": {name[:100]: {"budget": 80, "column": f"c{i}"} for i, name in enumerate(HOSTILE)},
    }
    (tmp / "budget.yml").write_text(json.dumps(budget))
    out = tmp / "r.md"
    argv = [
        "compare",
        "--base",
        str(base),
        "--head",
        str(head),
        "--budget",
        str(tmp / "budget.yml"),
    ]
    code, _, err = run([*argv, "--markdown", str(out)], capsys)
    assert code in (0, 1), err
    return out.read_text()


def test_every_chart_renders_in_chromium_with_the_real_mermaid(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    js = mermaid_js()
    # every comment (history.md is one section of a comment, without a chart of its own)
    documents = {
        p.name: p.read_text() for p in sorted(GOLDEN.glob("*.md")) if p.name != "history.md"
    }
    assert {f"comment-{name}.md" for name in STATES} <= set(documents)
    documents["hostile names"] = _hostile_markdown(tmp_path, capsys)
    sources = [(name, chart) for name, text in documents.items() for chart in charts(text)]
    # every state has its chart (the cut one keeps the worst scenario's)
    assert {name for name, _ in sources} == set(documents)
    page = tmp_path / "check.html"
    page.write_text(check_page([chart for _, chart in sources], js), encoding="utf-8")
    found = results(dump_dom(page, budget_ms=30_000))
    failed = [
        (name, r["error"]) for (name, _), r in zip(sources, found, strict=True) if not r["ok"]
    ]
    assert failed == []


def test_the_check_fails_on_a_chart_with_a_syntax_error(tmp_path: Path) -> None:
    good = "gantt\n    dateFormat x\n    section a\n    b :0, 10"
    bad = "gantt\n    dateFormat x\n    section a\n    b :0, 10\n    c: d: e :: ;"
    page = tmp_path / "check.html"
    page.write_text(check_page([good, bad, "xychart-beta\n  bar [1, oops]"], mermaid_js()))
    found = results(dump_dom(page))
    assert [r["ok"] for r in found] == [True, False, False]
