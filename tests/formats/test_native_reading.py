"""How a user's own table is read, through the commands: `inspect` shows the reading, the JSON
report's `inputs` carries it, a class column splits the table, failures are said in `check`
and `compare` alike. Truths computed with numpy from the tables written here."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from budgetdiff import numbers
from budgetdiff.cli import main

BUDGET = "version: 1\npercentile: 95\nslo: {ttft: 1000, total: 6500}\n"


def _files(tmp_path: Path, table: str, budget: str = BUDGET) -> tuple[Path, Path]:
    t = tmp_path / "results.csv"
    t.write_text(table)
    b = tmp_path / "budget.yml"
    b.write_text(budget)
    return t, b


def _json_check(
    head: Path, budget: Path, capsys: pytest.CaptureFixture[str]
) -> tuple[int, dict[str, Any]]:
    """`budgetdiff check --output json` of the table: exit code and report."""
    code = main(["check", "--head", str(head), "--budget", str(budget), "--output", "json"], {})
    return code, json.loads(capsys.readouterr().out)


def _table(seed: int, n: int = 200, *, header: str, row: str) -> tuple[str, dict[str, np.ndarray]]:
    rng = np.random.default_rng(seed)
    v = {
        "ttft": np.round(rng.lognormal(np.log(300), 0.4, n), 3),
        "decode": np.round(rng.lognormal(np.log(3000), 0.3, n), 3),
        "out": rng.integers(100, 400, n),
        "cls": np.where(rng.random(n) < 0.5, "chat", "api"),
        "status": np.where(rng.random(n) < 0.1, 503, 200),
    }
    v["total"] = np.round(v["ttft"] + v["decode"], 3)
    lines = [header]
    for i in range(n):
        lines.append(row.format(**{k: a[i] for k, a in v.items()}, i=i))
    return "\n".join(lines) + "\n", v


def test_inspect_prints_every_column_its_unit_and_the_first_rows(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, v = _table(1, header="", row="")
    header = "Request ID,TTFT (ms),Total Latency [s],completion_tokens,status,gpu_time_ms,model"
    rows = [
        f"r{i},{v['ttft'][i]},{v['total'][i] / 1000},{v['out'][i]},{v['status'][i]},1.5,m"
        for i in range(len(v["ttft"]))
    ]
    t, _ = _files(tmp_path, "\n".join([header, *rows]) + "\n")
    code = main(["inspect", str(t)], {})
    out = capsys.readouterr().out
    assert code == 0
    lines = {line.split()[0]: line for line in out.splitlines() if line.strip()}
    assert "ttft" in lines["TTFT"] and "header bracket" in lines["TTFT"]
    assert "total" in lines["Total"] and " s " in lines["Total"]
    assert "output_tokens" in lines["completion_tokens"]
    assert "failure" in lines["status"] and "status" in lines["status"]
    assert "looks like a latency" in lines["gpu_time_ms"]
    assert "not used" in lines["model"]
    failed = int((v["status"] != 200).sum())
    assert f"rows: {len(v['ttft'])} · failed: {failed}" in out
    assert "first rows as read (ms):" in out
    first = next(line for line in out.splitlines() if line.split()[:1] == ["1"])
    assert first.split()[1:3] == [f"{v['ttft'][0]:,.0f}", f"{v['total'][0]:,.0f}"]


def test_inspect_says_a_units_doubt_and_a_refused_unit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text, v = _table(2, header="ttft_ms,total_ms,output_tokens", row="{ttft},{total},{out}")
    seconds = "ttft_ms,total_ms,output_tokens\n" + "".join(
        f"{a / 1000},{b / 1000},{c}\n"
        for a, b, c in zip(v["ttft"], v["total"], v["out"], strict=True)
    )
    t, b = _files(tmp_path, seconds)
    assert main(["inspect", str(t)], {}) == 0
    out = capsys.readouterr().out
    assert "units (fails the check)" in out and "looks like seconds" in out
    budget = BUDGET + "slices:\n  first: {budget: 900, column: ttft_ms, unit: s}\n"
    t, b = _files(tmp_path, text, budget)
    assert main(["inspect", str(t), "--budget", str(b)], {}) == 2
    err = capsys.readouterr().err
    assert "`unit: s`" in err and "contradicts the suffix" in err and err.count("\n") == 1


def test_the_json_report_carries_the_reading(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text, _ = _table(3, header="id,e2e_ms,ttft,queued_ms", row="r{i},{total},{ttft},1")
    t, b = _files(tmp_path, text)
    main(["check", "--head", str(t), "--budget", str(b), "--output", "json"], {})
    columns = json.loads(capsys.readouterr().out)["inputs"]["head"]["columns"]
    assert columns == [
        {"column": "id", "role": "id", "target": "request_id", "unit": None, "unit_from": None,
         "note": None},
        {"column": "e2e_ms", "role": "metric", "target": "total", "unit": "ms",
         "unit_from": "suffix", "note": None},
        {"column": "ttft", "role": "metric", "target": "ttft", "unit": "ms",
         "unit_from": "guessed", "note": None},
        {"column": "queued_ms", "role": "slice", "target": "queue", "unit": "ms",
         "unit_from": "suffix", "note": None},
    ]  # fmt: skip


def test_a_class_column_is_one_scenario_per_class_in_compare(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    header, row = "traffic_class,ttft_ms,total_ms", "{cls},{ttft},{total}"
    base, vb = _table(4, header=header, row=row)
    head, vh = _table(5, header=header, row=row)
    (tmp_path / "base.csv").write_text(base)
    t, b = _files(tmp_path, head)
    argv = ["compare", "--base", str(tmp_path / "base.csv"), "--head", str(t)]
    main([*argv, "--budget", str(b), "--output", "json"], {})
    report = json.loads(capsys.readouterr().out)
    by_name = {s["name"]: s for s in report["scenarios"]}
    assert set(by_name) == {"chat", "api"}
    for name, s in by_name.items():
        rows = {r["metric"]: r for r in s["slo"]}
        for side, v in (("base_ms", vb), ("head_ms", vh)):
            want = float(np.percentile(v["total"][v["cls"] == name], 95))
            assert rows["total"][side] == pytest.approx(want, abs=1e-3)
        assert s["requests"] == {
            "base": int((vb["cls"] == name).sum()),
            "head": int((vh["cls"] == name).sum()),
        }


def test_class_names_from_the_file_are_cut_and_too_many_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    long = "x" * 500
    text = "class,ttft_ms,total_ms\n" + "".join(f"{long},100,2000\nb,100,2000\n" for _ in range(5))
    t, b = _files(tmp_path, text)
    main(["check", "--head", str(t), "--budget", str(b), "--output", "json"], {})
    names = [s["name"] for s in json.loads(capsys.readouterr().out)["scenarios"]]
    assert names[1] == "b" and len(names[0]) <= 60 and names[0].startswith("xxx")
    many = "workload,ttft_ms,total_ms\n" + "".join(f"w{i},100,2000\n" for i in range(150))
    t, b = _files(tmp_path, many)
    assert main(["check", "--head", str(t), "--budget", str(b)], {}) == 2
    assert "150 different values" in capsys.readouterr().err


def test_status_failures_are_said_in_check_and_compare_alike(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Fast 503s are failures, not fast requests: out of the percentiles, counted in both."""
    header, row = "ttft_ms,total_ms,status_code", "{ttft},{total},{status}"
    text, v = _table(6, header=header, row=row)
    t, b = _files(tmp_path, text)
    main(["check", "--head", str(t), "--budget", str(b), "--output", "json"], {})
    checked = json.loads(capsys.readouterr().out)
    failed = int((v["status"] != 200).sum())
    assert checked["failed"]["head"] == failed
    ok = v["status"] == 200
    total = {r["metric"]: r["head_ms"] for r in checked["slo"]}["total"]
    assert total == pytest.approx(float(np.percentile(v["total"][ok], 95)), abs=1e-3)
    assert [f["kind"] for f in checked["findings"] if f["subject"] == "requests"] == ["failures"]
    (tmp_path / "base.csv").write_text(text)
    main(["compare", "--base", str(tmp_path / "base.csv"), "--head", str(t), "--budget", str(b),
          "--output", "json"], {})  # fmt: skip
    compared = json.loads(capsys.readouterr().out)
    assert compared["failed"] == {"base": failed, "head": failed}
    assert "failures" in [f["kind"] for f in compared["findings"]]


def test_a_class_named_like_a_statistic_is_a_class_not_a_summary(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = "workload,ttft_ms,total_ms\n" + "".join(
        f"{'all' if i % 2 else 'chat'},{100 + i},{2000 + i}\n" for i in range(100)
    )
    t, b = _files(tmp_path, text)
    main(["check", "--head", str(t), "--budget", str(b), "--output", "json"], {})
    report = json.loads(capsys.readouterr().out)
    assert {s["name"]: s["requests"]["head"] for s in report["scenarios"]} == {
        "chat": 50,
        "all": 50,
    }
    assert not [f for f in report["findings"] if f["kind"] == "impossible"]


def _doubts(header: str, rows: list[str]) -> list[tuple[str, str]]:
    from budgetdiff.formats.native import build as native
    from budgetdiff.formats.options import ReadOptions

    data = ("\n".join([header, *rows]) + "\n").encode()
    (run,) = native.read(data, "t.csv", ReadOptions())
    return [(d.kind, d.subject) for d in run.doubts]


@pytest.mark.parametrize(
    ("header", "row"),
    [
        ("queue_ms,prefill_ms,decode_ms", "{a},{b},{c}"),  # tiny parts beside a long decode
        ("network_ms,total_ms", "{a},{c}"),  # a small slice beside the whole
        ("ttft_ms,total_ms,output_tokens", "{b}00,{c}00,30000"),  # a ten-minute reasoning answer
        ("ttft_s,total_s", "0.{b},{a}.{b}"),  # seconds said in the name
    ],
)
def test_plausible_tables_have_no_units_doubt(header: str, row: str) -> None:
    rng = np.random.default_rng(9)
    rows = [
        row.format(
            a=int(rng.integers(1, 3)), b=int(rng.integers(2, 9)), c=int(rng.integers(4000, 6000))
        )
        for _ in range(50)
    ]
    assert _doubts(header, rows) == []


def test_one_slice_in_another_unit_is_a_units_doubt() -> None:
    rows = [f"{40 + i},{300 + i},{5.2 + i / 100}" for i in range(50)]  # decode in seconds...
    assert _doubts("queue_ms,prefill_ms,decode_ms", rows) == []  # ...too small to tell alone
    rows = [f"{40 + i},{300 + i},{5200000 + i}" for i in range(50)]  # ms in a seconds column
    assert _doubts("queue_ms,prefill_ms,decode_s", rows) == [("units", "decode_s")]


def test_ttft_tpot_and_tokens_give_the_end_to_end(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A harness that logs TTFT, TPOT and the answer's length, and no total: the end to end is
    TTFT + TPOT x (output tokens - 1), said in a note (it was refused: 'no end-to-end time')."""
    rng = np.random.default_rng(5)
    ttft = 300 * np.exp(0.3 * rng.standard_normal(300))
    tpot = 20 * np.exp(0.2 * rng.standard_normal(300))
    tokens = rng.integers(100, 400, 300)
    rows = [
        f"r{i},{a:.4f},{b:.4f},{t}"
        for i, (a, b, t) in enumerate(zip(ttft, tpot, tokens, strict=True))
    ]
    table = "request_id,ttft_ms,tpot_ms,output_tokens\n" + "\n".join(rows) + "\n"
    head, budget = _files(tmp_path, table)
    code, report = _json_check(head, budget, capsys)
    data = np.genfromtxt(head, delimiter=",", names=True, dtype=None, encoding="utf-8")
    truth = np.percentile(data["ttft_ms"] + data["tpot_ms"] * (data["output_tokens"] - 1), 95)
    total = next(r for r in report["slo"] if r["metric"] == "total")
    assert total["head_ms"] == pytest.approx(truth, rel=1e-6)
    assert code == (1 if truth > 6500 else 0)
    assert any("TTFT + TPOT x (output tokens - 1)" in n for n in report["notes"])


@pytest.mark.parametrize(
    ("column", "failed", "succeeded"),
    [
        (
            "finish_reason",
            ["error", "abort", "cancelled", "timeout"],
            ["stop", "length", "tool_calls"],
        ),
        ("outcome", ["timeout", "error", "FAIL"], ["ok", "PASS", "success"]),
        ("request_status", ["rejected", "500"], ["completed", "200"]),
    ],
)
def test_failure_words_in_an_outcome_or_finish_reason_column_fail_the_request(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    column: str,
    failed: list[str],
    succeeded: list[str],
) -> None:
    """Failed requests that answer fast would pull the p95 down: a harness's `finish_reason`
    (OpenAI's stop and length are answers that ended by themselves) or `outcome` column says
    which failed. These were read as nothing: every request counted, the p95 too good."""
    rng = np.random.default_rng(11)
    n = 300
    bad = rng.random(n) < 0.1
    total = np.where(bad, 50.0, 3000 * np.exp(0.3 * rng.standard_normal(n)))
    words = [str(rng.choice(failed if b else succeeded)) for b in bad]
    rows = [f"r{i},{t:.3f},{w}" for i, (t, w) in enumerate(zip(total, words, strict=True))]
    head, budget = _files(tmp_path, f"request_id,e2e_ms,{column}\n" + "\n".join(rows) + "\n")
    _, report = _json_check(head, budget, capsys)
    assert report["failed"]["head"] == int(bad.sum()) > 0
    row = next(r for r in report["slo"] if r["metric"] == "total")
    assert row["head_ms"] == pytest.approx(np.percentile(total[~bad], 95), rel=1e-6)


def test_a_result_column_is_named_not_guessed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`result` may hold PASS/FAIL or the model's answer: not read as a status, but named in a
    note with the way to map it."""
    table = "request_id,e2e_ms,result\nr0,3000,PASS\nr1,50,FAIL\n"
    head, budget = _files(tmp_path, table)
    notes = _json_check(head, budget, capsys)[1]["notes"]
    assert any("not read: result (looks like a failure marker)" in n for n in notes)


@pytest.mark.parametrize(
    ("column", "scale", "doubted"),
    [
        ("duration", 1.0, True),  # seconds, no unit stated: read as ms it passed every SLO
        ("duration_s", 1.0, False),  # the same seconds, said
        ("duration", 1000.0, False),  # milliseconds, no unit stated: an end to end over 100
    ],
)
def test_an_end_to_end_of_no_stated_unit_under_100_is_in_doubt(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], column: str, scale: float, doubted: bool
) -> None:
    """No token counts to vouch for it: an end to end of 3 read as ms (a guess) is as much 3 s,
    the likelier for a chat answer, so the unit is a failing `units` finding, not a guess."""
    rng = np.random.default_rng(4)
    seconds = 3.0 * np.exp(0.3 * rng.standard_normal(200))
    rows = [f"r{i},{v * scale:.4f}" for i, v in enumerate(seconds)]
    head, budget = _files(tmp_path, f"request_id,{column}\n" + "\n".join(rows) + "\n")
    code, report = _json_check(head, budget, capsys)
    units = [f for f in report["findings"] if f["kind"] == "units"]
    total = next(r for r in report["slo"] if r["metric"] == "total")
    if doubted:
        assert code == 1 and units and units[0]["fails"] and total["status"] == "doubtful"
    else:
        assert not units and total["doubt"] is None
        ms = seconds * 1000 if column.endswith("_s") else seconds * scale
        assert total["head_ms"] == pytest.approx(np.percentile(ms, 95), rel=1e-4)


def test_json_lines_with_a_nested_usage_object_read_as_a_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A harness that writes its timings beside the OpenAI response's `usage` object: found as
    a table under --format auto (it was "not a format budgetdiff recognises")."""
    rng = np.random.default_rng(4)
    ttft = 300 * np.exp(0.3 * rng.standard_normal(200))
    total = ttft + 3000 * np.exp(0.3 * rng.standard_normal(200))
    lines = [
        json.dumps({"id": f"r{i}", "ttft_ms": a, "e2e_ms": b, "usage": {"completion_tokens": 99}})
        for i, (a, b) in enumerate(zip(ttft, total, strict=True))
    ]
    head, budget = _files(tmp_path, "\n".join(lines) + "\n")
    head = head.rename(head.with_suffix(".jsonl"))
    code, report = _json_check(head, budget, capsys)
    assert code == 0
    rows = {r["metric"]: r for r in report["slo"]}
    assert rows["total"]["head_ms"] == pytest.approx(np.percentile(total, 95), abs=2e-3)
    assert rows["ttft"]["head_ms"] == pytest.approx(np.percentile(ttft, 95), abs=2e-3)


@pytest.mark.parametrize(
    ("table", "fix"),
    [
        ('request_id,e2e_ms\nr0,"4,171.3"\n', "without thousands separators (4171.3, not 4,171.3)"),
        ("request_id,e2e_ms\nr0,4171.3\nrequest_id,e2e_ms\nr1,3000\n", "the header repeats there"),
        ("request_id,e2e_ms\nr0,fast\n", "write plain numbers"),
    ],
)
def test_a_cell_that_is_no_number_says_the_fix_it_looks_like(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], table: str, fix: str
) -> None:
    """A spreadsheet's grouped thousands, two files joined with `cat`: exit 2, one line, the
    row and column, and the fix for what the cell looks like."""
    head, budget = _files(tmp_path, table)
    assert main(["check", "--head", str(head), "--budget", str(budget)], {}) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "column 'e2e_ms'" in err and fix in err


def test_a_negative_sentinel_is_told_how_to_mark_a_failure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """-1 in every latency of the failed rows: a harness's marker, not a clock gone wrong."""
    table = "request_id,ttft_ms,e2e_ms\nr0,300,3000\nr1,-1,-1\nr2,280,2900\nr3,-1,-1\n"
    head, budget = _files(tmp_path, table)
    assert main(["check", "--head", str(head), "--budget", str(budget)], {}) == 2
    err = capsys.readouterr().err
    assert "row 2, column 'ttft_ms': negative latency (-1)" in err
    assert "if it marks a failed request" in err and "`error` column" in err
    skewed, _ = _files(tmp_path, "request_id,ttft_ms,e2e_ms\nr0,300,3000\nr1,-3.2,2900\n")
    assert main(["check", "--head", str(skewed), "--budget", str(budget)], {}) == 2
    assert "a duration cannot be negative" in capsys.readouterr().err  # a lone value: a clock
    # and done that way, the rows count as failed
    head.write_text(table.replace("-1", ""))
    code, report = _json_check(head, budget, capsys)
    assert code != 2 and report["failed"]["head"] == 2


def test_duration_columns_carry_their_unit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """pandas' Timedelta (`end - start` of two datetimes), in Parquet or through the Python API:
    the unit is the column type's, not the name's or a guess (it was refused: 'holds
    duration[ns], not numbers')."""
    import pandas as pd

    import budgetdiff

    rng = np.random.default_rng(8)
    ttft = 300 * np.exp(0.3 * rng.standard_normal(300))
    total = ttft + 3000 * np.exp(0.3 * rng.standard_normal(300))
    frame = pd.DataFrame(
        {
            "request_id": [f"r{i}" for i in range(300)],
            "ttft": pd.to_timedelta(ttft, unit="ms"),
            "latency_s": pd.to_timedelta(total, unit="ms"),  # a duration: the name's _s yields
        }
    )
    head = tmp_path / "results.parquet"
    frame.to_parquet(head)
    _, budget = _files(tmp_path, "")
    rows = {r["metric"]: r for r in _json_check(head, budget, capsys)[1]["slo"]}
    assert rows["total"]["head_ms"] == pytest.approx(np.percentile(total, 95), abs=2e-3)
    assert rows["ttft"]["head_ms"] == pytest.approx(np.percentile(ttft, 95), abs=2e-3)
    report = budgetdiff.check(frame, budget)
    (row,) = [r for r in report.to_frame().itertuples() if r.kind == "slo" and r.name == "total"]
    assert row.head_ms == pytest.approx(np.percentile(total, 95), rel=1e-6)


def test_camel_case_headers_are_the_same_names(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A JavaScript harness's `requestId, ttftMs, e2eLatencyMs`: the names and units of
    `request_id, ttft_ms, e2e_latency_ms` (they were 'not a format budgetdiff recognises')."""
    rng = np.random.default_rng(6)
    ttft = 300 * np.exp(0.3 * rng.standard_normal(200))
    total = ttft + 3000 * np.exp(0.3 * rng.standard_normal(200))
    rows = [f"r{i},{a:.3f},{b:.3f}" for i, (a, b) in enumerate(zip(ttft, total, strict=True))]
    head, budget = _files(tmp_path, "requestId,ttftMs,e2eLatencyMs\n" + "\n".join(rows) + "\n")
    _, report = _json_check(head, budget, capsys)
    rows_by = {r["metric"]: r for r in report["slo"]}
    assert rows_by["ttft"]["head_ms"] == pytest.approx(np.percentile(ttft, 95), abs=2e-3)
    assert rows_by["total"]["head_ms"] == pytest.approx(np.percentile(total, 95), abs=2e-3)


@pytest.mark.parametrize("gaps", [False, True])
def test_a_decode_in_seconds_is_told_by_its_time_per_token(gaps: bool) -> None:
    """A decode slice in seconds read as ms passes its own range (0 to an hour) but not the
    token counts': its median per token (numpy on the same rows) is under 0.1 ms, and the
    message says it. With a failed request, a gap in the decode and a one-token answer, those
    rows are left out of the median (the path that selects rows), and the figure follows."""
    from budgetdiff.formats.native.checks import unit_doubts
    from budgetdiff.table import ColumnUse

    rng = np.random.default_rng(5)
    n = 2_001
    tokens = rng.integers(200, 800, n).astype(np.float64)
    decode = tokens * rng.uniform(0.008, 0.012, n)  # 8-12 ms a token, in seconds
    ttft = rng.uniform(200.0, 400.0, n)  # ms, rightly
    total = ttft + decode * 1000.0
    ok = np.ones(n, dtype=bool)
    if gaps:
        ok[3], decode[4], tokens[5] = False, np.nan, 1.0
    uses = [
        (ColumnUse("ttft_ms", "metric", "ttft", "ms", "suffix"), ttft),
        (ColumnUse("total_ms", "metric", "total", "ms", "suffix"), total),
        (ColumnUse("decode_ms", "slice", "decode", "ms", "suffix"), decode),
    ]
    doubts = unit_doubts(uses, ok, tokens, "t.csv")
    assert [(d.kind, d.subject) for d in doubts] == [("units", "decode_ms")]
    keep = ok & np.isfinite(decode) & (tokens > 1)
    per = float(np.median(decode[keep] / (tokens[keep] - 1.0)))
    assert per < 0.1
    assert f"({numbers.ms(per)} a token)" in doubts[0].message
    assert "looks like seconds" in doubts[0].message


def test_the_per_token_count_calls_a_median_typical_only_when_numpy_does() -> None:
    """The usual table's per-token check counts the times below 0.1 ms and above 10 s instead
    of taking their median: whenever it says typical, numpy's median of the same times lies in
    the range; it says so for most, and defers at the edge (half the times on each side)."""
    from budgetdiff.formats.native.checks import _typical_per_token

    rng = np.random.default_rng(8)
    said = 0
    for trial in range(400):
        n = int(rng.integers(3, 40)) if trial % 4 else 300_000 + int(rng.integers(0, 3))
        counts = rng.integers(2, 50, n).astype(np.float64)
        low_or_high = 0.1 if trial % 2 else 10_000.0
        per = low_or_high * rng.choice([0.5, 1.0, 2.0], n) * rng.uniform(0.9, 1.1, n)
        first = rng.uniform(0, 100, n) if trial % 3 else None
        values = per * (counts - 1) + (0.0 if first is None else first)
        truth = np.median((values - (0.0 if first is None else first)) / (counts - 1))
        if _typical_per_token(values, first, counts):
            said += 1
            assert 0.1 <= truth <= 10_000.0
    assert said > 100
    n = 10
    values, counts = np.array([0.05] * 5 + [0.2] * 5), np.full(n, 2.0)
    assert not _typical_per_token(values, None, counts)  # the median (0.125) decides


@pytest.mark.parametrize("order", ["ttft_ms,e2e_ms", "e2e_ms,ttft_ms"])
def test_rows_without_a_latency_are_failed_whichever_column_comes_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], order: str
) -> None:
    """A row whose every latency is empty or 0 failed; a 0 in one column alone does not fail
    a row. The count is numpy's on the same values, with a column that has no 0 and no gap
    (no row of it empty: none can be) before or after the one that has zeros."""
    rng = np.random.default_rng(23)
    n = 300
    ttft = np.round(rng.lognormal(np.log(300), 0.4, n), 3)
    e2e = np.round(ttft + rng.lognormal(np.log(3000), 0.3, n), 3)
    ttft[[3, 50, 51]] = 0.0
    cols = {"ttft_ms": ttft, "e2e_ms": e2e}
    for empty_too in (False, True):
        if empty_too:  # rows 3 and 51: nothing measured at all (TTFT 0 there, no gap in it)
            cols = {"ttft_ms": ttft, "e2e_ms": e2e.copy()}
            cols["e2e_ms"][[3, 51]] = [0.0, np.nan]
        names = order.split(",")
        lines = [f"request_id,{order}"]
        for i in range(n):
            cells = ["" if np.isnan(cols[c][i]) else repr(float(cols[c][i])) for c in names]
            lines.append(f"r{i}," + ",".join(cells))
        head, budget = _files(tmp_path, "\n".join(lines) + "\n")
        code, report = _json_check(head, budget, capsys)
        none = np.ones(n, dtype=bool)
        for c in names:
            none &= np.isnan(cols[c]) | (cols[c] == 0)
        assert code != 2 and report["failed"]["head"] == int(none.sum()) == (2 if empty_too else 0)
