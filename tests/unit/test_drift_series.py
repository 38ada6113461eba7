"""Issue 39's simulation, small: series of merges through the command line, each `compare
--base <previous run> --head <this run> --history H --fail-on drift,regression` with its
report appended to H (tests/support/drift.py; the full count is bench/drift_simulation.py).
Pure noise raises no drift; a creep of +1% a merge and a step of +15% are found within 10
merges of where they start, and the finding says where and by how much."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support.drift import Runner, creep, delay, noise, series, step

pytestmark = pytest.mark.slow  # about 90 merges through the CLI


def test_series_of_pure_noise_raise_no_drift(tmp_path: Path) -> None:
    """Two series of 25 merges: a false drift in either has odds below 1 in 50 (at most 5% in
    500 runs, over seven rows)."""
    for k in range(2):
        merges = series(noise(25), 3910 + 1000 * k, tmp_path, Runner())
        assert not [i for i, m in enumerate(merges) if m.drift], k


def test_a_creep_of_one_percent_a_merge_is_found_within_ten_merges(tmp_path: Path) -> None:
    kind = creep(8, 17)
    for k in range(2):
        merges = series(kind, 3920 + 1000 * k, tmp_path, Runner())
        assert not any(m.drift for m in merges[:7]), k  # nothing before it
        found = delay(kind, merges)
        assert found is not None and found <= 10, (k, found)


def test_a_step_is_found_with_when_and_how_much(tmp_path: Path) -> None:
    """+15% at merge 8 (its run is line 9 of the history): the drift names that run, or the
    one next to it (where the CUSUM last left 0: a run of noise just before may have lifted
    it), and the interval of its change holds the true +15%."""
    kind = step(8, 12)
    merges = series(kind, 3930, tmp_path, Runner())
    found = delay(kind, merges)
    assert found is not None and found <= 3
    first = merges[6 + found]
    trend = first.decode
    assert trend["drift"] and trend["slower_since"] in ("run 8", "run 9", "run 10")
    low, high = trend["change_ci_pct"]
    assert low < 15 < high and high - low < 15
    said = first.messages["decode"]
    assert re.search(r"95% interval \[[+]\d+\.\d%, [+]\d+\.\d%\]", said), said
    assert f"slower since {trend['slower_since']}" in said
