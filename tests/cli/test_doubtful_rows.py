"""A number computed from a column the reader doubts (a unit, rows no request can have) shows
no pass mark in any rendering: not `ok`, not ✅, no headroom, no budget use, but the doubt.

The truths are computed here with numpy from the files: that the doubted reading would pass
where the column's likely unit breaches (so a pass mark would be a silent wrong answer), and
what the rows the doubt does not reach show, untouched.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from budgetdiff.cli import main
from tests.support.paths import SAMPLES

TABLES = SAMPLES / "user_tables"
SECONDS_IN_MS = TABLES / "seconds_in_ms_columns.csv"  # ttft_ms and total_ms hold seconds
GENERATION = TABLES / "mapped_column_without_unit.csv"  # slice `generation`: seconds, unit-less
BELOW_TTFT = TABLES / "total_below_ttft.csv"  # some totals below their TTFT
WIDE = {"COLUMNS": "250"}


def _budget(name: str) -> dict[str, Any]:
    import yaml

    loaded: dict[str, Any] = yaml.safe_load((TABLES / name).read_text())
    return loaded


def _check(
    table: Path, budget: str, output: str, capsys: pytest.CaptureFixture[str]
) -> tuple[int, str]:
    argv = ["check", "--head", str(table), "--budget", str(TABLES / budget), "--output", output]
    code = main(argv, WIDE)
    return code, capsys.readouterr().out


def _line(text: str, label: str) -> str:
    """The table line of the row `label` (terminal: the label, then padding; markdown: a cell)."""
    return next(
        line for line in text.splitlines() if line.startswith((f"{label}  ", f"| {label} |"))
    )


def test_seconds_in_ms_columns_would_pass_as_read_and_breach_in_seconds() -> None:
    """The premise of the tests below, from the file alone: read as ms, p95 end to end is far
    inside its target; in the seconds its values are, it is far over it."""
    frame = pd.read_csv(SECONDS_IN_MS)
    target = _budget("budget.yml")["slo"]["total"]
    p95 = float(np.percentile(frame["total_ms"].to_numpy(dtype=float), 95))
    assert p95 < target < 1000 * p95


def test_json_rows_in_doubt_say_so_and_carry_no_status_headroom_or_budget_use(
    capsys: pytest.CaptureFixture[str],
) -> None:
    frame = pd.read_csv(SECONDS_IN_MS)
    code, out = _check(SECONDS_IN_MS, "budget.yml", "json", capsys)
    report = json.loads(out)
    assert code == 1
    rows = {r["metric"]: r for r in report["slo"]}
    for metric, column in (("ttft", "ttft_ms"), ("total", "total_ms")):
        row = rows[metric]
        assert row["status"] == "doubtful"
        assert row["headroom_pct"] is None
        assert column in row["doubt"]
        # the number stays as read, marked: the p95 of the column as it is
        want = float(np.percentile(frame[column].to_numpy(dtype=float), 95))
        assert row["head_ms"] == pytest.approx(want, abs=2e-3)
    # TPOT is (end to end - TTFT) / (tokens - 1): both in doubt, so is it
    assert "total_ms" in rows["tpot"]["doubt"] and "ttft_ms" in rows["tpot"]["doubt"]
    # attainment would say every request met both targets: it is left out, and said why
    assert report["attainment"] is None
    assert any("attainment is left out" in n for n in report["notes"])
    assert "in doubt" in report["summary"]["text"] and "headroom" not in report["summary"]["text"]


def test_the_terminal_shows_the_doubt_in_place_of_ok_and_headroom(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out = _check(SECONDS_IN_MS, "budget.yml", "table", capsys)
    assert code == 1
    for label, column in (("TTFT", "ttft_ms"), ("end to end", "total_ms")):
        line = _line(out, label)
        assert "doubtful" in line and column in line
        assert " ok " not in line and "%" not in line
    assert "met every target" not in out


def test_the_comment_shows_a_question_mark_not_a_tick(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out = _check(SECONDS_IN_MS, "budget.yml", "markdown", capsys)
    assert code == 1
    assert "✅" not in out
    for label, column in (("TTFT", "ttft&#95;ms"), ("end to end", "total&#95;ms")):
        line = _line(out, label)
        assert "❓ doubtful" in line and column in line


def test_a_slice_in_doubt_shows_no_budget_use_and_a_sound_row_keeps_its_mark(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`generation` holds seconds with no unit in its name: its budget use (and every slice's
    part, which is scaled to the total made of it) is in doubt; TTFT, its own column, is not."""
    frame = pd.read_csv(GENERATION)
    budget = _budget("generation.budget.yml")
    generation = frame["generation"].to_numpy(dtype=float)
    # read as ms it is far inside its budget; in seconds far over it
    assert float(np.percentile(generation, 95)) < budget["slices"]["generation"]["budget"]
    assert 1000 * float(np.percentile(generation, 50)) > budget["slices"]["generation"]["budget"]
    code, out = _check(GENERATION, "generation.budget.yml", "json", capsys)
    report = json.loads(out)
    assert code == 1
    slices = {r["name"]: r for r in report["slices"]}
    for row in slices.values():
        assert row["over_budget"] is None and row["budget_use_pct"] is None
        assert "generation" in row["doubt"]
    assert report["rebudget"] is None and report["fix_first"] == []
    rows = {r["metric"]: r for r in report["slo"]}
    assert rows["total"]["status"] == "doubtful"  # the slices' sum: no total column
    ttft = float(np.percentile(frame["ttft_ms"].to_numpy(dtype=float), 95))
    target = budget["slo"]["ttft"]
    assert rows["ttft"]["doubt"] is None
    assert rows["ttft"]["status"] == "ok"
    assert rows["ttft"]["headroom_pct"] == pytest.approx(100 * (target - ttft) / target, abs=2e-3)
    code, text = _check(GENERATION, "generation.budget.yml", "table", capsys)
    assert "doubtful" in _line(text, "generation") and "OVER" not in _line(text, "generation")
    assert " ok " in _line(text, "TTFT")
    code, comment = _check(GENERATION, "generation.budget.yml", "markdown", capsys)
    assert "```mermaid" not in comment  # no chart of the parts in doubt against the SLO
    assert "❓ doubtful" in _line(comment, "generation")
    assert "✅" in _line(comment, "TTFT")


def test_rows_no_request_can_have_put_ttft_and_total_in_doubt(
    capsys: pytest.CaptureFixture[str],
) -> None:
    frame = pd.read_csv(BELOW_TTFT)
    below = int((frame["total_ms"] < frame["ttft_ms"]).sum())
    assert below > 0
    code, out = _check(BELOW_TTFT, "budget.yml", "json", capsys)
    report = json.loads(out)
    assert code == 1
    finding = next(f for f in report["findings"] if f["kind"] == "impossible")
    assert f"{below} request(s)" in finding["message"]
    rows = {r["metric"]: r for r in report["slo"]}
    assert rows["ttft"]["status"] == rows["total"]["status"] == "doubtful"


def _table(path: Path, ttft_ms: np.ndarray, total_ms: np.ndarray) -> Path:
    frame = pd.DataFrame(
        {
            "request_id": [f"r{i}" for i in range(len(ttft_ms))],
            "ttft_ms": ttft_ms,
            "total_ms": total_ms,
        }
    )
    frame.to_csv(path, index=False)
    return path


def test_a_compare_whose_head_wrote_seconds_marks_the_row_and_not_the_sound_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Base wrote ms; head's harness switched TTFT to seconds (its total stayed in ms)."""
    rng = np.random.default_rng(23)
    ttft = rng.gamma(4.0, 60.0, 400)
    total = ttft + rng.gamma(6.0, 500.0, 400)
    base = _table(tmp_path / "base.csv", ttft, total)
    head = _table(tmp_path / "head.csv", ttft / 1000, total)
    budget = tmp_path / "budget.yml"
    budget.write_text("version: 1\npercentile: 95\nslo:\n  ttft: 1000\n  total: 6500\n")
    argv = ["compare", "--base", str(base), "--head", str(head), "--budget", str(budget)]
    code = main([*argv, "--output", "json"], WIDE)
    report = json.loads(capsys.readouterr().out)
    assert code == 1
    rows = {r["metric"]: r for r in report["slo"]}
    assert rows["ttft"]["status"] == "doubtful" and "head" in rows["ttft"]["doubt"]
    p95 = float(np.percentile(total, 95))
    want = "ok" if p95 <= 6500 * 0.9 else "low_headroom" if p95 <= 6500 else "breach"
    assert rows["total"]["doubt"] is None and rows["total"]["status"] == want
    assert rows["total"]["head_ms"] == pytest.approx(p95, abs=2e-3)


# ---- rebudget and whatif show what the reading found, and fail where check fails ------------

SLICES_BUDGET = (
    "version: 1\npercentile: 95\nslo:\n  ttft: 1000\n  total: 6500\n"
    "slices:\n  queue: 200\n  prefill: 700\n  decode: 5000\n"
)


def _sliced(path: Path, *, ttft_scale: float, seed: int = 5) -> tuple[Path, pd.DataFrame]:
    """Requests with queue, prefill and decode slices, a measured total and a TTFT column
    (`ttft_scale` 0.001: seconds in the ms column)."""
    rng = np.random.default_rng(seed)
    n = 300
    queue, prefill = rng.gamma(2.0, 10.0, n), rng.gamma(4.0, 60.0, n)
    decode = rng.gamma(6.0, 450.0, n)
    frame = pd.DataFrame(
        {
            "request_id": [f"r{i}" for i in range(n)],
            "queue_ms": queue.round(3),
            "prefill_ms": prefill.round(3),
            "decode_ms": decode.round(3),
            "ttft_ms": ((queue + prefill) * ttft_scale).round(6),
            "total_ms": (queue + prefill + decode).round(3),
        }
    )
    frame.to_csv(path, index=False)
    return path, frame


def test_rebudget_of_a_slice_in_doubt_shows_the_finding_and_proposes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    budget = tmp_path / "generation.budget.yml"
    budget.write_bytes((TABLES / "generation.budget.yml").read_bytes())
    before = budget.read_bytes()
    argv = ["rebudget", "--head", str(GENERATION), "--budget", str(budget), "--write"]
    code = main(argv, WIDE)
    out = capsys.readouterr().out
    assert code == 1
    assert "FAIL units" in out and "generation" in out
    assert "no proposal" in out and "proposed" not in out
    assert budget.read_bytes() == before  # nothing written


def test_rebudget_with_ttft_in_doubt_proposes_from_the_sound_slices_but_fails_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    table, frame = _sliced(tmp_path / "head.csv", ttft_scale=0.001)
    budget = tmp_path / "budget.yml"
    budget.write_text(SLICES_BUDGET)
    code = main(["rebudget", "--head", str(table), "--budget", str(budget)], WIDE)
    out = capsys.readouterr().out
    assert code == 1
    assert out.startswith("FAIL units") and "ttft_ms" in out.splitlines()[0]
    total = float(np.percentile(frame["total_ms"].to_numpy(dtype=float), 95))
    assert f"p95 end to end {total:,.0f} ms" in out  # the parts hold the sound, measured total
    code = main(["rebudget", "--head", str(table), "--budget", str(budget), "--write"], WIDE)
    out = capsys.readouterr().out
    assert code == 1 and "not written: the data is in doubt" in out
    assert budget.read_text() == SLICES_BUDGET


def test_rebudget_of_sound_data_is_unchanged_by_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    table, _ = _sliced(tmp_path / "head.csv", ttft_scale=1.0)
    budget = tmp_path / "budget.yml"
    budget.write_text(SLICES_BUDGET)
    code = main(["rebudget", "--head", str(table), "--budget", str(budget)], WIDE)
    out = capsys.readouterr().out
    assert code == 0 and "FAIL" not in out and out.startswith("re-budget at p95")


def test_whatif_on_columns_in_doubt_says_doubtful_not_fits_and_fails(
    capsys: pytest.CaptureFixture[str],
) -> None:
    frame = pd.read_csv(SECONDS_IN_MS)
    # as read, both p95s sit far inside their targets: a plain whatif would say `fits`
    assert float(np.percentile(frame["ttft_ms"].to_numpy(dtype=float), 95)) < 1000
    assert float(np.percentile(frame["total_ms"].to_numpy(dtype=float), 95)) < 6500
    argv = ["whatif", "--head", str(SECONDS_IN_MS), "--budget", str(TABLES / "budget.yml")]
    code = main(argv, WIDE)
    out = capsys.readouterr().out
    assert code == 1
    assert out.count("FAIL units") == 2
    assert "fits" not in out
    assert "doubtful (head: the unit of ttft_ms)" in out
    assert "doubtful (head: the unit of total_ms)" in out
    assert "SLO attainment: doubtful" in out
    assert out.rstrip().endswith("in doubt: the data has findings that fail the check (see above)")


def test_whatif_shows_the_failed_requests_check_shows(
    capsys: pytest.CaptureFixture[str],
) -> None:
    table = TABLES / "status_503_fast.csv"
    frame = pd.read_csv(table)
    failed = int((frame["status"] != 200).sum())
    argv = ["whatif", "--head", str(table), "--budget", str(TABLES / "budget.yml")]
    main(argv, WIDE)
    out = capsys.readouterr().out
    assert out.startswith(f"warn failures: {failed} of {len(frame)} requests failed")
    assert f"what if, on {len(frame) - failed} measured requests" in out


def test_a_base_in_doubt_marks_the_row_and_leaves_the_heads_attainment(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The base wrote TTFT in seconds, the head in ms: the TTFT row (its change) is in doubt,
    the base's attainment goes, the head's stays as numpy counts it."""
    rng = np.random.default_rng(29)
    ttft = rng.gamma(4.0, 60.0, 400)
    total = ttft + rng.gamma(6.0, 500.0, 400)
    base = _table(tmp_path / "base.csv", ttft / 1000, total)
    head = _table(tmp_path / "head.csv", ttft, total)
    budget = tmp_path / "budget.yml"
    budget.write_text("version: 1\npercentile: 95\nslo:\n  ttft: 1000\n  total: 6500\n")
    argv = ["compare", "--base", str(base), "--head", str(head), "--budget", str(budget)]
    main([*argv, "--output", "json"], WIDE)
    report = json.loads(capsys.readouterr().out)
    rows = {r["metric"]: r for r in report["slo"]}
    assert rows["ttft"]["doubt"].startswith("base: the unit of ttft_ms")
    assert rows["total"]["doubt"] is None
    assert report["attainment"]["base"] is None
    good = int(((ttft <= 1000) & (total <= 6500)).sum())  # the file holds them unrounded
    assert report["attainment"]["head"]["good"] == good


SECONDS_BUDGET = (
    "version: 1\npercentile: 95\nslo: {ttft: 1200, total: 6000}\n"
    "slices: {network: 150, queue: 250, prefill: 800, decode: 4200, app: 300}\n"
    "first_token_after: prefill\n"
)


def _check_seconds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], *, tokens: bool
) -> tuple[int, dict[str, Any], pd.DataFrame]:
    """A table whose every `_ms` column holds seconds (a fast network, a 2 s decode), with or
    without token counts, checked against the demo's slices: exit code, JSON report, table."""
    rng = np.random.default_rng(7)
    medians = {"network": 0.04, "queue": 0.03, "prefill": 0.3, "decode": 2.0, "app": 0.05}
    columns = {f"{k}_ms": v * np.exp(0.3 * rng.standard_normal(400)) for k, v in medians.items()}
    frame = pd.DataFrame({"request_id": [f"r{i}" for i in range(400)], **columns})
    if tokens:
        frame["output_tokens"] = 300
    path = tmp_path / "seconds.csv"
    frame.to_csv(path, index=False)
    budget = tmp_path / "budget.yml"
    budget.write_text(SECONDS_BUDGET)
    code = main(["check", "--head", str(path), "--budget", str(budget), "--output", "json"], WIDE)
    return code, json.loads(capsys.readouterr().out), frame


def test_a_table_written_all_in_seconds_puts_every_row_in_doubt(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every `_ms` column holds seconds. Only decode can be caught on its own (2 "ms" for 300
    tokens); network, queue, prefill and app in seconds look like a fast server. Read the same
    way as decode, and not clearly larger than it, they share its doubt: TTFT (their sum) and
    the total show no pass, where before TTFT read 0.57 ms with "ok"."""
    code, report, frame = _check_seconds(tmp_path, capsys, tokens=True)
    assert code == 1
    units = [f["message"] for f in report["findings"] if f["kind"] == "units"]
    # decode caught by the tokens, the time to first token by its sum; the rest named with them
    assert len(units) == 2 and all("may be wrong with it" in m for m in units)
    (decode,) = [m for m in units if m.split(": ")[1] == "decode_ms"]
    for name in ("network_ms", "queue_ms", "prefill_ms", "app_ms"):
        assert name in decode
    assert all(r["doubt"] and r["headroom_pct"] is None for r in report["slo"] if r["head_ms"])
    assert all(r["doubt"] and r["budget_use_pct"] is None for r in report["slices"])
    ttft = next(r for r in report["slo"] if r["metric"] == "ttft")
    truth = np.percentile(frame[["network_ms", "queue_ms", "prefill_ms"]].sum(axis=1), 95)
    assert ttft["head_ms"] == pytest.approx(truth, rel=1e-3) and ttft["status"] == "doubtful"


def test_a_time_to_first_token_made_of_slices_under_a_millisecond_is_in_doubt(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The same seconds with no token counts: no column gives itself away (each slice could be
    a fast one), but their sum as the time to first token, under a millisecond, is no LLM
    request's. It passed every SLO before ("TTFT 0.57, ok 100%")."""
    code, report, frame = _check_seconds(tmp_path, capsys, tokens=False)
    early = frame[["network_ms", "queue_ms", "prefill_ms"]].sum(axis=1)
    assert np.median(early) < 1.0  # the truth: under a millisecond
    assert code == 1 and report["verdict"] == "fail"
    (units,) = [f for f in report["findings"] if f["kind"] == "units"]
    assert "network_ms + queue_ms + prefill_ms" in units["message"]
    assert f"median {np.median(early):.2f}" in units["message"]
    assert all(r["status"] == "doubtful" for r in report["slo"])
