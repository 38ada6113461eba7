"""Golden files for the PR comment in every state: pass, warn, fail, no base, several scenarios,
cut to GitHub's limit, accepted by label, resolved. Regenerate with `make golden`; review the
diff. `test_charts_render.py` draws each one's chart with the real Mermaid."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from budgetdiff.github.comment import COMMENT_MAX_CHARS
from tests.support.comment_states import STATES
from tests.support.paths import GOLDEN


@pytest.mark.parametrize("name", list(STATES))
def test_comment_state_matches_golden(
    name: str, tmp_path: Path, golden: Callable[[Path, str], None]
) -> None:
    golden(GOLDEN / f"comment-{name}.md", STATES[name](tmp_path))


def test_each_state_says_its_answer_in_the_heading(tmp_path: Path) -> None:
    heading = {
        name: (GOLDEN / f"comment-{name}.md").read_text().split("\n", 1)[0] for name in STATES
    }
    assert (
        heading["pass"].startswith("### ✅ End to end p95") and "no regression" in heading["pass"]
    )
    assert heading["warn"].startswith("### ⚠️ ") and heading["warn"].endswith("decode over budget")
    assert heading["fail"].startswith("### ❌ End to end p95 +")
    assert "headroom left: decode regressed (+" in heading["fail"]  # with its part of the change
    assert heading["no-base"].startswith("### ❌ End to end p95 6,182 ms, over its target")
    assert "no base results" in heading["no-base"]
    assert heading["accepted"].startswith("### ⚠️ Accepted by &#64;&#8203;octocat: End to end")
    assert heading["resolved"].startswith("### ✅ Resolved: End to end p95")
    for name, line in heading.items():  # no internal ids where a person reads
        assert not any(word in line for word in ("max_stall", "tpot", "low_headroom", "_")), name


def test_several_scenarios_open_with_a_summary_table(tmp_path: Path) -> None:
    text = (GOLDEN / "comment-scenarios.md").read_text()
    table = [line for line in text.splitlines() if line.startswith("| concurrency=")]
    assert [row.split(" | ")[1] for row in table] == ["✅ pass", "⚠️ warn", "❌ fail"]
    assert (
        "| concurrency=32 | ❌ fail | end to end p95 |" in text
        and text.count("<details><summary>✅") >= 1
    )
    assert text.index("| scenario |") < text.index("<details>")


def test_the_cut_comment_fits_and_says_so() -> None:
    text = (GOLDEN / "comment-truncated.md").read_text()
    assert len(text) <= COMMENT_MAX_CHARS and "Cut to fit GitHub's size limit" in text


def test_accepted_comment_says_who_and_points_to_rebudget() -> None:
    text = (GOLDEN / "comment-accepted.md").read_text()
    assert "&#64;&#8203;octocat accepted the regression of decode" in text
    assert "budgetdiff rebudget --head FILE --write" in text
    assert "❌" not in text.split("\n", 1)[0]
