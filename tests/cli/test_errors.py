"""Every expected failure: exit 2, one message naming the file and the key, row or column."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.support.helpers import BUDGET, run, slices, write_table


@pytest.fixture
def good(tmp_path: Path) -> tuple[Path, Path]:
    head = write_table(tmp_path / "head.csv", slices(1, n=200))
    budget = tmp_path / "budget.yml"
    budget.write_text(BUDGET)
    return head, budget


def check_fails(capsys: pytest.CaptureFixture[str], head: Path, budget: Path, *must: str) -> str:
    code, out, err = run(["check", "--head", str(head), "--budget", str(budget)], capsys)
    assert code == 2, (out, err)
    assert "Traceback" not in err and out == ""
    assert err.startswith("budgetdiff: error: ")
    for word in must:
        assert word in err, (word, err)
    return err


BAD_BUDGETS = [
    ("unknown key", BUDGET + "headrom: 10%\n", ("budget.yml", "headrom", "unknown key")),
    (
        "negative budget",
        BUDGET.replace("decode: 4200", "decode: -5"),
        ("budget.yml:4: slices.decode: must be more than 0 ms, not -5",),
    ),
    (
        "percentile 120",
        BUDGET.replace("percentile: 95", "percentile: 120"),
        ("budget.yml:2", "percentile", "must be at most 99.99"),
    ),
    ("not yaml", "slo: [unclosed", ("budget.yml", "not valid YAML")),
]


@pytest.mark.parametrize(
    "text,must", [(t, m) for _, t, m in BAD_BUDGETS], ids=[n for n, _, _ in BAD_BUDGETS]
)
def test_bad_budget(
    text: str, must: tuple[str, ...], good: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    head, budget = good
    budget.write_text(text)
    check_fails(capsys, head, budget, *must)


def test_budget_slice_the_data_lacks_lists_the_columns(
    good: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    head, budget = good
    budget.write_text(BUDGET.replace("decode: 4200", "decode: 4200, app: 100"))
    check_fails(capsys, head, budget, "head.csv", "'app'", "queue", "prefill", "decode")


def test_empty_and_unreadable_files(
    good: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, budget = good
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    check_fails(capsys, empty, budget, "empty.csv", "empty")
    check_fails(capsys, tmp_path / "missing.csv", budget, "missing.csv", "no such file")
    binary = tmp_path / "noise.csv"
    binary.write_bytes(bytes(range(256)) * 10)
    check_fails(capsys, binary, budget, "noise.csv")


def test_header_only_csv(
    good: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, budget = good
    f = tmp_path / "header.csv"
    f.write_text("request_id,queue_ms,prefill_ms,decode_ms\n")
    check_fails(capsys, f, budget, "header.csv")


@pytest.mark.parametrize(
    "value,word", [("fast", "decode"), ("-3", "decode"), ("nan", "decode"), ("", "decode")]
)
def test_bad_latency_values(
    value: str,
    word: str,
    good: tuple[Path, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _, budget = good
    cols = slices(2, n=100)
    decode = cols["decode_ms"].astype(object)
    decode[41] = value
    cols["decode_ms"] = decode
    f = write_table(tmp_path / "bad.csv", cols)
    err = check_fails(capsys, f, budget, "bad.csv", word)
    assert "42" in err or "43" in err  # names the row (data row 42, file line 43)


def test_bad_arguments(good: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    head, budget = good
    code, _, err = run(
        ["check", "--head", str(head), "--budget", str(budget), "--fail-on", "regresion"], capsys
    )
    assert code == 2 and "regresion" in err and "Traceback" not in err
    code, _, err = run(["check", "--head", str(head), "--id", "bad id!"], capsys)
    assert code == 2 and err.count("\n") == 1 and "--id: 'bad id!'" in err


def test_size_limit(good: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    head, budget = good
    code, _, err = run(
        ["check", "--head", str(head), "--budget", str(budget)],
        capsys,
        env={"BUDGETDIFF_MAX_INPUT_BYTES": "100"},
    )
    assert code == 2 and "limit" in err and "head.csv" in err


def test_the_same_table_without_the_bad_cell_is_read_exactly(
    good: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """The counterpart of the bad-value cases: the clean table is read, and each slice's p95
    is numpy's percentile of the column as written."""
    head, budget = good
    code, out, err = run(
        ["check", "--head", str(head), "--budget", str(budget), "--output", "json"], capsys
    )
    assert code in (0, 1) and err == ""
    report = json.loads(out)
    cols = slices(1, n=200)
    got = {r["name"]: r["head_ms"] for r in report["slices"]}
    assert set(got) >= {"queue", "prefill", "decode"}
    for name in ("queue", "prefill", "decode"):
        assert got[name] == pytest.approx(np.percentile(cols[f"{name}_ms"], 95), abs=1e-3)
    assert report["requests"]["head"] == 200
