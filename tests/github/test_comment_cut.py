"""The comment cut to GitHub's limit: whole lines, no half entity, and it says it was cut."""

from __future__ import annotations

import re

from budgetdiff.api import compare
from budgetdiff.render.markdown import render_markdown
from tests.support.paths import DEMO


def test_the_last_resort_cut_keeps_whole_lines() -> None:
    report = compare(DEMO / "base.csv", DEMO / "head.csv", budget=DEMO / "budget.yml")
    assert len(render_markdown(report)) > 2000
    for limit in (400, 600, 1000):
        cut = render_markdown(report, limit)
        assert len(cut) <= limit and "Cut to fit" in cut
        assert all(e.endswith(";") for e in re.findall(r"&#\d*;?", cut))  # no entity half-cut
