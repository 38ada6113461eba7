"""Issue 38: what a new user trips on, each through the CLI on a harness's own table of the
issue's shape (`request_id, status, ttft_ms, e2e_ms, prompt_tokens, output_tokens`, 500
requests a side; tests/support/harness.py). Every number is checked against numpy on the
same values."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import budgetdiff
from budgetdiff.cli import main
from tests.support.harness import DECODE_BUDGET, N, write_budget, write_side
from tests.support.helpers import run

P95 = 95


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any]]:
    code, out, err = run([*argv, "--output", "json"], capsys)
    assert code in (0, 1), err
    return code, json.loads(out)


def _row(report: dict[str, Any], key: str, name: str) -> dict[str, Any]:
    field = "metric" if key == "slo" else "name"
    return next(r for r in report[key] if r[field] == name)


# ---- 1. failures are counted from every row, whatever the pairing ---------------------------


@pytest.mark.parametrize("pairing", [[], ["--pair"], ["--no-pair"]], ids=["auto", "pair", "no"])
@pytest.mark.parametrize("blank", [False, True], ids=["zero-tokens", "blank-tokens"])
def test_failed_rows_with_zero_output_tokens_are_counted_and_fail_the_rate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], blank: bool, pairing: list[str]
) -> None:
    base = write_side(tmp_path / "base.csv", 1, failed=3, blank_failed=blank)
    head = write_side(tmp_path / "head.csv", 2, failed=21, blank_failed=blank)
    budget = write_budget(tmp_path)
    code, report = _json(
        capsys, "compare", "--base", str(base.path), "--head", str(head.path),
        "--budget", str(budget), *pairing,
    )  # fmt: skip
    assert report["requests"] == {"base": N, "head": N}
    assert report["failed"] == {"base": int(base.failed.sum()), "head": int(head.failed.sum())}
    assert report["failed"] == {"base": 3, "head": 21}
    rate = [f for f in report["findings"] if f["kind"] == "failure_rate"]
    assert rate and rate[0]["fails"], report["findings"]
    assert "21 of 500 requests failed at head (4.2%), 3 of 500 at base (0.6%)" in rate[0]["message"]
    assert code == 1 and report["verdict"] == "fail"
    # the percentiles are of the requests that succeeded, every one of them
    total = _row(report, "slo", "total")
    assert total["head_ms"] == pytest.approx(np.percentile(head.e2e[head.ok], P95), rel=0.01)


def test_failures_of_a_head_that_reran_part_of_the_base_are_all_counted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Pairing compares the requests both ran; the failure count is of every row."""
    base = write_side(tmp_path / "base.csv", 1, failed=3)
    head = write_side(tmp_path / "head.csv", 2, failed=21)
    lines = head.path.read_text().splitlines()
    kept = [lines[0], *lines[1:451]]  # head ran the first 450 requests only
    head.path.write_text("\n".join(kept) + "\n")
    failed = int(head.failed[:450].sum())
    _, report = _json(
        capsys, "compare", "--base", str(base.path), "--head", str(head.path),
        "--budget", str(write_budget(tmp_path)),
    )  # fmt: skip
    assert report["requests"] == {"base": N, "head": 450}
    assert report["failed"] == {"base": 3, "head": failed}


# ---- 4. a client-only harness can budget decode ---------------------------------------------


def test_decode_is_derived_from_e2e_minus_ttft_and_tpot_is_its_share_per_token(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    head = write_side(tmp_path / "head.csv", 2, failed=5)
    budget = write_budget(tmp_path, DECODE_BUDGET)
    _, report = _json(capsys, "check", "--head", str(head.path), "--budget", str(budget))
    decode = _row(report, "slices", "decode")
    assert decode["head_ms"] == pytest.approx(np.percentile(head.decode, P95), rel=0.01)
    first = _row(report, "slices", "first_token")
    assert first["head_ms"] == pytest.approx(np.percentile(head.ttft[head.ok], P95), rel=0.01)
    tokens = head.output_tokens[head.ok]
    tpot = head.decode[tokens > 1] / (tokens[tokens > 1] - 1)
    row = _row(report, "slo", "tpot")
    assert row["head_ms"] == pytest.approx(np.percentile(tpot, P95), rel=0.01)
    assert any("decode = end to end - TTFT" in n for n in report["notes"]), report["notes"]


def test_inspect_says_what_the_ttft_and_e2e_columns_determine(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    head = write_side(tmp_path / "head.csv", 2, failed=5)
    code, out, err = run(["inspect", str(head.path)], capsys)
    assert code == 0, err
    assert "derived: first_token = TTFT, decode = end to end - TTFT" in out
    assert "TPOT = decode / (output tokens - 1)" in out


def test_init_given_a_file_writes_a_budget_that_fits_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    head = write_side(tmp_path / "head.csv", 2, failed=5)
    folder = tmp_path / "repo"
    code, _, err = run(["init", str(folder), "--head", str(head.path)], capsys)
    assert code == 0, err
    budget = folder / "budget.yml"
    text = budget.read_text()
    assert "first_token:" in text and "decode:" in text and "network:" not in text
    code, report = _json(capsys, "check", "--head", str(head.path), "--budget", str(budget))
    assert code == 0, report["findings"]
    assert report["verdict"] in ("pass", "warn")
    assert not [f for f in report["findings"] if f["kind"] in ("breach", "over_budget")]
    ok = head.ok
    assert report["slo"][0]["target_ms"] >= np.percentile(head.ttft[ok], P95)
    assert _row(report, "slo", "total")["target_ms"] >= np.percentile(head.e2e[ok], P95)


# ---- 5. one number per cause ----------------------------------------------------------------


def test_the_demo_gives_decode_one_number_in_heading_attribution_and_finding(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = run(["demo", "--output", "markdown"], capsys)
    assert code == 0  # the demo itself exits 0 whatever its verdict
    _, report = _json(capsys, "demo")
    decode = _row(report, "slices", "decode")
    said = f"{decode['tail_change_ms']:+,.0f} ms"
    heading = out.splitlines()[0]
    assert f"decode regressed ({said} of the end to end's change)" in heading
    attribution = re.search(r"\*\*p95 end to end .*\*\*", out)
    assert attribution is not None and f"decode {said}" in attribution.group(0)
    [finding] = [f for f in report["findings"] if f["kind"] == "regression"]
    assert finding["message"].startswith(f"p95 decode regressed {said} of the p95 end to end")
    own = f"{decode['delta_ms']:+,.0f} ms"
    assert f"its own p95 {own}" in finding["message"]  # named as its own, not a second cause
    assert "Parts of the p95 end to end, one per slice (not the slices' own p95)" in out


# ---- 6. notes that do not contradict each other ---------------------------------------------


def test_requests_that_disagree_are_counted_once_and_no_note_says_all_agree(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = write_side(tmp_path / "base.csv", 1)
    head = write_side(tmp_path / "head.csv", 2)
    lines = head.path.read_text().splitlines()
    for i in range(1, 9):  # 8 answers cut short at head: their output token counts differ
        cells = lines[i].split(",")
        cells[5] = str(int(cells[5]) - 7)
        lines[i] = ",".join(cells)
    head.path.write_text("\n".join(lines) + "\n")
    _, report = _json(
        capsys, "compare", "--base", str(base.path), "--head", str(head.path),
        "--budget", str(write_budget(tmp_path)),
    )  # fmt: skip
    notes = report["notes"]
    assert not [n for n in notes if "paired by id agree on" in n], notes
    agreed = "492 of the 500 requests in both agree on their prompt token counts and output token"
    assert any(n.startswith(agreed) for n in notes), notes
    assert any("; 8 disagree on their output token counts and are left out" in n for n in notes)
    assert not [n for n in notes if "both ran" in n or "ran in both" in n], notes
    assert not [n for n in notes if "disagree on their prompt" in n], notes  # they agree


# ---- 7. exit codes and words ----------------------------------------------------------------


def test_rebudget_that_does_not_fit_exits_1_like_whatif(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    head = write_side(tmp_path / "head.csv", 2, failed=5, decode_scale=1.6)
    assert np.percentile(head.e2e[head.ok], P95) > 6000  # the SLO cannot hold it
    budget = write_budget(tmp_path, DECODE_BUDGET)
    code, out, err = run(["rebudget", "--head", str(head.path), "--budget", str(budget)], capsys)
    assert "does not fit" in out, out + err
    assert code == 1
    code, _, _ = run(
        ["whatif", "--head", str(head.path), "--budget", str(budget), "--scale", "decode=1"],
        capsys,
    )
    assert code == 1


def test_rebudget_says_the_share_rule_in_its_proposal_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    head = write_side(tmp_path / "head.csv", 2)
    budget = write_budget(tmp_path, DECODE_BUDGET)
    code, out, err = run(["rebudget", "--head", str(head.path), "--budget", str(budget)], capsys)
    assert code == 0, err
    line = next(ln for ln in out.splitlines() if ln.startswith("target "))
    assert "in proportion to their parts of the p95 end to end" in " ".join(out.split())
    assert "not their own p95" in " ".join(out.split()), line


def test_check_does_not_name_failures_as_the_cause_of_an_over_budget_slice(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    head = write_side(tmp_path / "head.csv", 2, failed=5)
    tight = DECODE_BUDGET.replace("decode: 4800", "decode: 2000")
    budget = write_budget(tmp_path, tight)
    _, out, err = run(["check", "--head", str(head.path), "--budget", str(budget)], capsys)
    heading = " ".join(out.split("\n\n")[1].split())
    assert "decode over budget (also: some requests failed)" in heading, out + err
    assert "over budget, some requests failed" not in heading


# ---- 8. smaller things ----------------------------------------------------------------------


def test_the_units_finding_of_an_slo_column_does_not_advise_a_budget_unit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    head = write_side(tmp_path / "head.csv", 2)
    text = head.path.read_text().replace("e2e_ms", "e2e")
    lines = text.splitlines()
    out_lines = [lines[0]]
    for line in lines[1:]:  # e2e in seconds in a column without a unit suffix
        cells = line.split(",")
        cells[3] = f"{float(cells[3]) / 1000:.5f}"
        out_lines.append(",".join(cells))
    head.path.write_text("\n".join(out_lines) + "\n")
    _, report = _json(
        capsys, "check", "--head", str(head.path), "--budget", str(write_budget(tmp_path))
    )
    units = {f["subject"]: f["message"] for f in report["findings"] if f["kind"] == "units"}
    assert "e2e" in units, report["findings"]
    for message in units.values():  # ttft_ms and e2e are SLO columns: no `unit:` can say it
        assert "`unit:`" not in message, message
    assert "rename it e2e_s or e2e_ms" in units["e2e"]  # the fix an SLO column has


def test_the_summary_prints_short(tmp_path: Path) -> None:
    base = write_side(tmp_path / "base.csv", 1, failed=3)
    head = write_side(tmp_path / "head.csv", 2, failed=21)
    report = budgetdiff.compare(str(base.path), str(head.path), str(write_budget(tmp_path)))
    summary = report.main.summary
    for text in (str(summary), repr(summary)):
        assert len(text) < 300 and "\n" not in text, text
        assert "verdict=fail" in text and "at_risk=total" in text


def test_the_trend_page_title_says_what_it_draws(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = write_side(tmp_path / "base.csv", 1)
    head = write_side(tmp_path / "head.csv", 2)
    page = tmp_path / "page.html"
    argv = ["compare", "--base", str(base.path), "--head", str(head.path)]
    argv += ["--budget", str(write_budget(tmp_path)), "--html", str(page)]
    assert main(argv, environ={}) in (0, 1)
    capsys.readouterr()
    title = re.search(r"<title>(.*)</title>", page.read_text())
    assert title is not None
    assert title.group(1) == "budgetdiff: this run&#x27;s base vs head distributions"
    assert "legend: {live: false}" in page.read_text()  # no `--` placeholder values
