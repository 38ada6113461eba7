"""`budgetdiff init`: the files it writes run as they are, and it never overwrites one unasked."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from tests.support.helpers import run
from tests.support.paths import ROOT

WRITTEN = (
    "budget.yml",
    ".github/workflows/latency.yml",
    "budgetdiff-example/base.csv",
    "budgetdiff-example/head.csv",
)


def p95_of_column(path: Path, column: str) -> float:
    """numpy's p95 of a column over the rows without an error: the truth, from the file."""
    with path.open(newline="") as fh:
        rows = [r for r in csv.DictReader(fh) if not r["error"]]
    return float(np.percentile([float(r[column]) for r in rows], 95))


def test_init_then_compare_runs_on_the_files_it_wrote(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(["init", str(tmp_path / "repo")], capsys)
    assert code == 0
    repo = tmp_path / "repo"
    assert sorted(str(p.relative_to(repo)) for p in repo.rglob("*") if p.is_file()) == sorted(
        WRITTEN
    )
    assert all(f"wrote {repo / name}" in out for name in WRITTEN)
    monkeypatch.chdir(repo)
    pair = ["--base", "budgetdiff-example/base.csv", "--head", "budgetdiff-example/head.csv"]
    code, out, err = run(["compare", *pair, "--budget", "budget.yml", "--output", "json"], capsys)
    assert err == ""
    report = json.loads(out)
    # the budget is the template's, read by another YAML loader: 6 s end to end, TTFT 1.2 s
    budget = yaml.safe_load((repo / "budget.yml").read_text())
    assert budget["slo"] == {"ttft": 1200, "total": 6000}
    assert sum(budget["slices"].values()) <= budget["slo"]["total"]  # not `overallocated`
    assert {s["name"]: s["budget_ms"] for s in report["slices"]} == budget["slices"]
    # the example pair is the demo's: decode regressed, which the template's fail_on fails
    decode = next(s for s in report["slices"] if s["name"] == "decode")
    assert decode["head_ms"] == pytest.approx(p95_of_column(repo / WRITTEN[3], "decode_ms"), 1e-4)
    assert decode["base_ms"] == pytest.approx(p95_of_column(repo / WRITTEN[2], "decode_ms"), 1e-4)
    assert decode["change"] == "regression"
    assert (report["verdict"], code) == ("fail", 1)


def test_the_written_workflow_is_the_minimal_example_with_the_accept_labels_trigger(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run(["init", str(tmp_path)], capsys)
    written = (tmp_path / ".github/workflows/latency.yml").read_text()
    assert written == (ROOT / "examples/workflows/minimal.yml").read_text()
    on = yaml.safe_load(written)[True]  # YAML 1.1 reads `on` as True
    assert "labeled" in on["pull_request"]["types"]


def test_a_second_init_exits_2_naming_the_files_and_touches_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(["init", str(tmp_path)], capsys)[0] == 0
    (tmp_path / "budget.yml").write_text("version: 1  # mine\n")
    before = {name: (tmp_path / name).read_bytes() for name in WRITTEN}
    stamps = {name: (tmp_path / name).stat().st_mtime_ns for name in WRITTEN}
    code, out, err = run(["init", str(tmp_path)], capsys)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and str(tmp_path / "budget.yml") in err and "--force" in err
    assert {name: (tmp_path / name).read_bytes() for name in WRITTEN} == before
    assert {name: (tmp_path / name).stat().st_mtime_ns for name in WRITTEN} == stamps


def test_one_file_in_the_way_stops_init_before_it_writes_any(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "budgetdiff-example").mkdir()
    (tmp_path / "budgetdiff-example" / "head.csv").write_text("mine\n")
    code, _, err = run(["init", str(tmp_path)], capsys)
    assert code == 2 and "head.csv" in err and "budget.yml" not in err
    assert [p.name for p in tmp_path.rglob("*") if p.is_file()] == ["head.csv"]


def test_force_overwrites(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "budget.yml").write_text("version: 1  # mine\n")
    assert run(["init", str(tmp_path), "--force"], capsys)[0] == 0
    template = ROOT / "budgetdiff" / "templates" / "budget.yml"
    assert (tmp_path / "budget.yml").read_bytes() == template.read_bytes()


def test_a_file_given_as_the_folder_is_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "x").write_text("")
    code, _, err = run(["init", str(tmp_path / "x")], capsys)
    assert code == 2 and "is a file" in err


def test_the_demo_points_at_init_not_at_files_inside_the_package(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = run(["demo"], capsys)
    assert code == 0 and "budgetdiff init" in out.splitlines()[-2] + out.splitlines()[-1]
    assert "--base base.csv" not in out
