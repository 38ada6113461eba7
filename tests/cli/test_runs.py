"""Several runs a side (issue 29 item 3): repeated --base/--head files of one tool and shape, or
a `run` column, are runs of one side; the interval then includes the variance between runs."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from budgetdiff.stats import compare_percentile
from tests.support import simulation as sim
from tests.support.helpers import run

ONE_RUN = "one run a side: the intervals leave out the drift between runs"
THREE_RUNS = "runs: 3 base, 3 head: the intervals include the variance between runs"


def _decode(paths: list[Path]) -> np.ndarray:
    """The decode column of the files, one after another (read with numpy, not budgetdiff)."""
    return np.concatenate([np.genfromtxt(p, delimiter=",", names=True)["decode_ms"] for p in paths])


def test_three_files_a_side_are_three_runs_and_their_drift_is_in_the_interval(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rng = np.random.default_rng(2910)
    base, head = (
        sim.write_drifting_side(rng, tmp_path, s, runs=3, n=1000, drift=0.03, layout="files")
        for s in ("base", "head")
    )
    budget = tmp_path / "budget.yml"
    budget.write_text(sim.drift_budget())
    argv = ["compare", "--budget", str(budget), "--output", "json"]
    argv += [a for p in base for a in ("--base", str(p))]
    argv += [a for p in head for a in ("--head", str(p))]
    code, out, err = run(argv, capsys)
    assert code in (0, 1), err
    report = json.loads(out)
    assert report["requests"] == {"base": 3000, "head": 3000}
    assert report["notes"][-1] == THREE_RUNS
    # the decode row is the statistics' for three runs of 1,000 a side, in file order
    labels = np.repeat(np.arange(3), 1000)
    told = compare_percentile(
        _decode(base), _decode(head), 95.0, 0.95, base_runs=labels, head_runs=labels
    )
    alone = compare_percentile(_decode(base), _decode(head), 95.0, 0.95)
    (decode,) = [r for r in report["slices"] if r["name"] == "decode"]
    assert decode["ci_ms"] == pytest.approx(told.ci, abs=0.01)
    assert decode["ci_ms"][1] - decode["ci_ms"][0] > alone.ci[1] - alone.ci[0]  # type: ignore[index]


@pytest.mark.parametrize("layout", ["files", "column"])
def test_aa_of_three_drifting_runs_a_side_seldom_flags(tmp_path: Path, layout: str) -> None:
    """Each run's decode scaled by its own lognormal(0, 3%) factor, no size floors: told as
    runs, at most 4 of 60 A/A pairs flag a row (`python -m tools.runs_aa` counts the 60; here
    a few, to stay fast). Not told, 11% of such reports flag one (docs/statistics.md)."""
    aa = sim.cli_drift_aa(tmp_path, 6, 2911, runs=3, n=1000, drift=0.03, layout=layout)
    assert aa.flagged <= 1, aa
    assert aa.through_zero == 0, aa
    assert set(aa.notes) == {THREE_RUNS}


def test_one_run_a_side_says_the_drift_is_not_in_the_interval(tmp_path: Path) -> None:
    aa = sim.cli_drift_aa(tmp_path, 1, 2912, runs=1, n=1000, drift=0.03, layout="files")
    assert aa.notes[0].startswith(ONE_RUN)
    # a run column of one value is one run too
    aa = sim.cli_drift_aa(tmp_path, 1, 2912, runs=1, n=1000, drift=0.03, layout="column")
    assert aa.notes[0].startswith(ONE_RUN)


def test_files_of_different_shapes_are_still_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    one = tmp_path / "a.csv"
    one.write_text("queue_ms,decode_ms\n" + "10,100\n" * 50)
    other = tmp_path / "b.csv"
    other.write_text("queue_ms,prefill_ms,decode_ms\n" + "10,20,100\n" * 50)
    budget = tmp_path / "budget.yml"
    budget.write_text("version: 1\npercentile: 95\nslo: {total: 1000}\n")
    argv = ["compare", "--base", str(one), "--head", str(one), "--head", str(other)]
    code, _, err = run([*argv, "--budget", str(budget)], capsys)
    assert code == 2
    assert "cannot combine these files into one side" in err
    assert "Traceback" not in err


def test_a_short_run_is_said_not_to_count(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Runs too short for an interval of their own add nothing: the note says so."""
    rng = np.random.default_rng(2913)
    paths = sim.write_drifting_side(rng, tmp_path, "s", runs=4, n=30, drift=0.03, layout="column")
    budget = tmp_path / "budget.yml"
    budget.write_text(sim.drift_budget())
    argv = ["compare", "--base", str(paths[0]), "--head", str(paths[0]), "--budget", str(budget)]
    code, out, err = run([*argv, "--output", "json"], capsys)
    assert code in (0, 1), err
    note = json.loads(out)["notes"][-1]
    assert note.startswith("runs: 4 base, 4 head; a run of base and head has fewer than")
    assert "the drift between runs is not in the intervals" in note
