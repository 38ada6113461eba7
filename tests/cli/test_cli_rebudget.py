"""`rebudget`, `whatif` and the `unattributed` slice through the CLI."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from budgetdiff.budget.file import load_budget
from tests.support.helpers import BUDGET, run, slices, write_table

COMMENTED = """\
# our chat SLO
version: 1
percentile: 95
slo: {ttft: 1200, total: 6000}
slices:
  queue: 250     # scheduler
  prefill: 800   # prompt processing
  decode: 4200   # generation
first_token_after: prefill
"""


def test_rebudget_write_keeps_comments_and_fits(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    head = write_table(tmp_path / "head.csv", slices(1))
    budget = tmp_path / "budget.yml"
    budget.write_text(COMMENTED)
    code, out, err = run(
        ["rebudget", "--head", str(head), "--budget", str(budget), "--write"], capsys
    )
    assert code == 0, err
    text = budget.read_text()
    assert "# our chat SLO" in text and "# generation" in text
    assert [ln.split(":")[0] for ln in text.splitlines()] == [
        ln.split(":")[0] for ln in COMMENTED.splitlines()
    ]
    new = load_budget(budget)
    assert sum(s.budget for s in new.slices.values()) <= 6000 * 0.9
    assert "wrote" in out
    # the same data against the written budget: every slice within it, none at 100%
    code, out, _ = run(
        ["check", "--head", str(head), "--budget", str(budget), "--output", "json"], capsys
    )
    report = json.loads(out)
    assert not [f for f in report["findings"] if f["kind"] in ("over_budget", "breach")]
    for row in report["slices"]:
        assert row["part_ms"] < new.slices[row["name"]].budget
        assert row["budget_use_pct"] < 100


def test_rebudget_refuses_slices_the_data_lacks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    head = write_table(tmp_path / "head.csv", slices(1))
    budget = tmp_path / "budget.yml"
    budget.write_text(BUDGET.replace("decode: 4200", "decode: 4200, app: 300"))
    code, _, err = run(["rebudget", "--head", str(head), "--budget", str(budget)], capsys)
    assert code == 2 and "'app'" in err and "decode" in err and "Traceback" not in err


def test_rebudget_says_when_it_cannot_fit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    head = write_table(tmp_path / "head.csv", slices(1))
    budget = tmp_path / "budget.yml"
    budget.write_text(BUDGET.replace("total: 6000", "total: 2000"))
    before = budget.read_text()
    code, out, _ = run(
        ["rebudget", "--head", str(head), "--budget", str(budget), "--write"], capsys
    )
    assert code == 1 and "does not fit: the p95 end to end" in out
    assert "over its SLO by" in out and "work on decode first" in out
    assert "what to fix first" in out
    assert budget.read_text() == before


def test_unattributed_time_is_a_slice(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cols = slices(1)
    parts = cols["queue_ms"] + cols["prefill_ms"] + cols["decode_ms"]
    cols["total_ms"] = (parts + 400).round(3)  # a hop the budget does not name
    head = write_table(tmp_path / "head.csv", cols)
    budget = tmp_path / "budget.yml"
    budget.write_text(BUDGET)
    code, out, _ = run(
        ["check", "--head", str(head), "--budget", str(budget), "--output", "json"], capsys
    )
    report = json.loads(out)
    names = [s["name"] for s in report["slices"]]
    assert names[-1] == "unattributed"
    assert report["slices"][-1]["head_ms"] == pytest.approx(400, abs=1)
    assert any("a slice is missing" in n for n in report["notes"])
    # once the budget names it (rebudget --write adds it), it is computed, not read
    budget.write_text(BUDGET.replace("decode: 4200", "decode: 4200, unattributed: 500"))
    code, out, err = run(["check", "--head", str(head), "--budget", str(budget)], capsys)
    assert code == 0, err
    assert "unattributed" in out


def test_whatif_estimate_over_the_slo_names_the_longest_answer_that_fits(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    budget = tmp_path / "budget.yml"
    budget.write_text(BUDGET)
    code, out, _ = run(
        ["whatif", "--budget", str(budget), "--ttft", "900", "--tpot", "40", "--tokens", "200"],
        capsys,
    )
    assert code == 1  # does not fit
    # 900 + 199 x 40 = 8,860 > 6,000: 47.7% over (under twice the target: a percentage)
    over = f"{100 * 2860 / 6000:.1f}% over"
    assert re.search(rf"^  end to end +8,860 ms +6,000 ms +5,400 ms +{over}$", out, re.M), out
    assert "113 tokens" in out  # 900 + 112 x 40 <= 6000 x 0.9
