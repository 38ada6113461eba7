"""History (issue 14): trends, change points and drift over JSON Lines of earlier reports."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import budgetdiff
import budgetdiff.api
from budgetdiff.cli import main
from budgetdiff.measure import history
from budgetdiff.report.model import Scenario
from budgetdiff.stats import changepoint
from tests.support.history import BUDGET, build_history, check_line, write_run


def compare_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], *extra: str
) -> tuple[int, dict]:  # type: ignore[type-arg]
    code = main(["compare", "--budget", BUDGET, "--output", "json", *extra], {})
    return code, json.loads(capsys.readouterr().out)


def test_fifteen_small_steps_are_a_drift_the_pr_alone_does_not_show(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    factors = [1.02**i for i in range(15)]
    runs = build_history(tmp_path, capsys, factors)
    base = tmp_path / "main14.csv"
    head = write_run(tmp_path / "pr.csv", 99, 1.02**15)
    code, report = compare_json(
        tmp_path,
        capsys,
        *("--base", str(base), "--head", str(head), "--history", str(runs)),
        *("--fail-on", "breach,regression,drift"),
    )
    decode = next(r for r in report["slices"] if r["name"] == "decode")
    assert decode["change"] == "none"  # the PR's own comparison: `~`
    drift = [f for f in report["findings"] if f["kind"] == "drift" and f["subject"] == "decode"]
    assert len(drift) == 1 and drift[0]["fails"] and code == 1
    trend = next(t for t in report["history"]["trends"] if t["name"] == "decode")
    # 1.02 ** 15 - 1 = +34.6%: the cumulative change, from the first run since the budget
    assert trend["cumulative_pct"] == pytest.approx(34.6, abs=4)
    assert f"{trend['cumulative_pct']:+.1f}%" in drift[0]["message"]
    assert "over 15 run(s)" in drift[0]["message"]
    assert trend["steps_below"] and "each step below the 5% threshold" in drift[0]["message"]
    assert trend["change_points"] and trend["slower_since"].startswith("run ")
    # the comment carries the trend table with a sparkline that rises
    assert main(
        ["compare", "--budget", BUDGET, "--base", str(base), "--head", str(head),
         "--history", str(runs), "--output", "markdown"], {}
    ) == 0  # fmt: skip
    comment = capsys.readouterr().out
    table_row = next(x for x in comment.splitlines() if x.startswith("| decode | 4,200 |"))
    assert "no clear change" in table_row.split("|")[5]  # the PR's own change cell: `~`
    row = next(line for line in comment.splitlines() if line.startswith("| decode | ▁"))
    assert row.split("|")[2].strip().endswith("█") and "drift" in row


def test_pure_noise_rarely_drifts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """15 main runs and a head from one distribution: a drift in < 5% of the histories. The
    runs come from a pool of 64 independent noise runs, checked once each through the CLI;
    each history is 16 of them in a fresh random order (exchangeable: any order is noise)."""
    pool = [check_line(write_run(tmp_path / "r.csv", 1000 + i, n=600), capsys) for i in range(64)]
    heads: dict[int, Scenario] = {}
    budget = budgetdiff.api.load_budget(BUDGET)
    rng = np.random.default_rng(7)
    histories, drifted = 200, 0
    for _k in range(histories):
        pick = rng.choice(len(pool), 16, replace=False)
        loaded = history.parse("\n".join(pool[i] for i in pick[:15]).encode(), "h.jsonl")
        if pick[15] not in heads:
            head = write_run(tmp_path / "head.csv", 1000 + int(pick[15]), n=600)
            heads[pick[15]] = budgetdiff.check(head, budget).main
        scenario = heads[pick[15]]
        h = history.analyse(loaded, scenario.comparison, budget)
        drifted += any(t.drift for t in h.trends)
    assert drifted / histories <= 0.05, drifted


def test_change_points_find_a_step_and_not_noise() -> None:
    rng = np.random.default_rng(3)
    step = np.r_[rng.normal(100, 1, 12), rng.normal(108, 1, 12)]
    assert changepoint.change_points(step) == [12]
    false = sum(bool(changepoint.change_points(rng.normal(100, 1, 20))) for _ in range(60))
    assert false <= 6  # alpha 0.05 per test: about 3 of 60
    assert changepoint.change_points(np.full(10, 5.0)) == []
    assert changepoint.change_points(np.arange(4.0)) == []  # too short to split


def test_hostile_lines_are_skipped_with_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = check_line(write_run(tmp_path / "a.csv", 1), capsys)
    doc = json.loads(good)
    doc["slices"][0]["name"] = "<img src=x onerror=alert(1)>" * 10  # a name no row has
    doc["slices"][1]["name"] = ["queue"]
    evil_name = json.dumps(doc)
    doc = json.loads(good)
    doc["slo"][0]["head_ms"] = 1e308
    absurd = json.dumps(doc)
    doc = json.loads(good)
    doc["commit"] = "$(rm -rf /)"
    bad_commit = json.dumps(doc)
    lines = [good, "not json {", evil_name, absurd, bad_commit, "[" * 100_000, '{"schema": 1}']
    runs = tmp_path / "history.jsonl"
    runs.write_text("\n".join(lines) + "\n")
    head = write_run(tmp_path / "b.csv", 2)
    code = main(
        ["check", "--head", str(head), "--budget", BUDGET, "--history", str(runs),
         "--output", "markdown"], {}
    )  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 0
    warnings = [line for line in err.splitlines() if line.startswith("budgetdiff: warning:")]
    named = [w.split(": line ")[1].split(":")[0] for w in warnings[:5]]
    assert named == ["2", "3", "4", "5", "6"] and "1 more line(s) skipped" in warnings[5]
    assert "<img" not in out + err and "$(rm" not in out + err and "Trend at p95" in out
    assert "over 1 |" in out  # only the one good run counted


def test_a_budget_change_restarts_the_drift(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = build_history(tmp_path, capsys, [1.0, 1.3, 1.3])
    budget = tmp_path / "budget.yml"
    budget.write_text(Path(BUDGET).read_text().replace("decode: 4200", "decode: 4400"))
    head = write_run(tmp_path / "head.csv", 5, 1.3)
    code = main(
        ["check", "--head", str(head), "--budget", str(budget), "--history", str(runs),
         "--output", "json"], {}
    )  # fmt: skip
    report = json.loads(capsys.readouterr().out)
    assert code == 0 and report["history"]["budget_changed"] and report["history"]["window"] == 0
    assert not [f for f in report["findings"] if f["kind"] == "drift"]


def test_missing_history_file_is_one_line_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    head = write_run(tmp_path / "b.csv", 2, n=100)
    code = main(["check", "--head", str(head), "--budget", BUDGET, "--history", "nope.jsonl"], {})
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "nope.jsonl" in err


def test_a_sparkline_spans_the_bars_low_to_high_and_a_flat_one_sits_in_the_middle() -> None:
    assert history.sparkline([1, 2, 3, 4, 5, 6, 7, 8]) == "▁▂▃▄▅▆▇█"
    assert history.sparkline([3, 3]) == "▄▄"


def test_history_command_prints_trends_and_writes_the_page(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = build_history(tmp_path, capsys, [1.0, 1.0, 1.0, 1.0, 1.3])
    page = tmp_path / "t.html"
    assert main(["history", str(runs), "--html", str(page)], {}) == 0
    out = capsys.readouterr().out
    # at 80 columns the table folds: decode's numbers, then its drift, each under its name
    decode = [line for line in out.splitlines() if line.split()[:1] == ["decode"]]
    cumulative = float(decode[0].split()[2].rstrip("%"))
    assert 25 < cumulative < 36 and "drift" in " ".join(decode) and page.is_file()
    assert '"title": "decode at p95 (drift)"' in page.read_text()
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    assert main(["history", str(empty)], {}) == 2
    assert "no budgetdiff report" in capsys.readouterr().err


def test_a_run_read_in_doubt_is_no_point_of_a_trend(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A run whose table held seconds in `_ms` columns reads as doubtful (the `units` finding
    fails its check): its rows are kept out of every trend, so 1,000x smaller values neither
    draw the line nor make a drift."""
    lines = [check_line(write_run(tmp_path / f"main{i}.csv", i), capsys) for i in range(8)]
    seconds = write_run(tmp_path / "seconds.csv", 50)
    table = np.genfromtxt(seconds, delimiter=",", names=True, dtype=None, encoding="utf-8")
    columns = [n for n in table.dtype.names if n.endswith("_ms")]
    rows = [f"{t['request_id']}," + ",".join(f"{t[c] / 1000:.6f}" for c in columns) for t in table]
    header = "request_id," + ",".join(columns) + ",output_tokens"  # 300 tokens in 2 "ms"
    seconds.write_text(header + "\n" + ",300\n".join(rows) + ",300\n")
    assert main(["check", "--head", str(seconds), "--budget", BUDGET, "--output", "json"], {}) == 1
    doubtful = json.loads(capsys.readouterr().out)
    assert any(f["kind"] == "units" and f["fails"] for f in doubtful["findings"])
    assert all(r["doubt"] for r in doubtful["slices"])
    lines.insert(4, json.dumps(doubtful, separators=(",", ":")))
    runs = tmp_path / "history.jsonl"
    runs.write_text("\n".join(lines) + "\n")
    head = write_run(tmp_path / "pr.csv", 99)
    code, report = compare_json(
        tmp_path, capsys, "--base", str(tmp_path / "main7.csv"), "--head", str(head),
        "--history", str(runs), "--fail-on", "breach,regression,drift",
    )  # fmt: skip
    assert code == 0 and not [f for f in report["findings"] if f["kind"] == "drift"]
    decode = next(t for t in report["history"]["trends"] if t["name"] == "decode")
    # the eight good runs and the head: numpy's p95 of each, the doubtful run left out
    truth = [
        float(np.percentile(np.genfromtxt(p, delimiter=",", names=True)["decode_ms"], 95))
        for p in [*(tmp_path / f"main{i}.csv" for i in range(8)), head]
    ]
    assert decode["values_ms"] == pytest.approx(truth, rel=1e-6)
