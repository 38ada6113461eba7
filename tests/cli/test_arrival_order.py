"""Arrival order (issue 39 item 4): the autocorrelation correction reads the requests in the
order they were sent. Where the table has `start_time` the rows are put in that order first,
so a table written by completion or shuffled gives the intervals of the one in time order;
where it has none, the row order is taken as arrival order and the report says so."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.support.helpers import run
from tests.support.history import BUDGET, MEDIANS

NOTE = "no start times"


def _write(path: Path, rng: np.random.Generator, order: np.ndarray, starts: bool) -> Path:
    """1,000 requests sent 0.1 s apart, 20 in a row sharing a slowdown (lognormal, sigma
    0.2, as a load spike would), rows written in `order`, with or without `start_time`."""
    n = 1000
    slow = np.repeat(np.exp(0.2 * rng.standard_normal(n // 20)), 20)
    cols: dict[str, np.ndarray] = {
        f"{k}_ms": v * slow * np.exp(0.3 * rng.standard_normal(n)) for k, v in MEDIANS.items()
    }
    if starts:
        cols["start_time"] = 0.1 * np.arange(n)
    lines = [",".join(cols)]
    lines += [",".join(f"{cols[c][i]:.4f}" for c in cols) for i in order]
    path.write_text("\n".join(lines) + "\n")
    return path


def _report(tmp_path: Path, capsys: pytest.CaptureFixture[str], shuffle: bool, starts: bool):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(39)  # the same requests in every layout
    order = np.random.default_rng(4).permutation(1000) if shuffle else np.arange(1000)
    tag = f"{int(shuffle)}{int(starts)}"
    base = _write(tmp_path / f"base{tag}.csv", rng, order, starts)
    head = _write(tmp_path / f"head{tag}.csv", rng, order, starts)
    argv = ["compare", "--budget", BUDGET, "--base", str(base), "--head", str(head)]
    code, out, err = run([*argv, "--output", "json"], capsys)
    assert code in (0, 1), err
    return json.loads(out)


def _intervals(report: dict) -> dict[str, list[float]]:  # type: ignore[type-arg]
    rows = [*report["slo"], *report["slices"]]
    return {r.get("name") or r["metric"]: r["ci_ms"] for r in rows}


def test_start_times_put_shuffled_rows_back_in_arrival_order(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    in_order = _report(tmp_path, capsys, shuffle=False, starts=True)
    shuffled = _report(tmp_path, capsys, shuffle=True, starts=True)
    rows_in_order = _report(tmp_path, capsys, shuffle=False, starts=False)
    assert _intervals(shuffled) == _intervals(in_order) == _intervals(rows_in_order)
    assert not [n for n in in_order["notes"] + shuffled["notes"] if NOTE in n]
    # without the start times, shuffled rows hide the correlation: narrower intervals, and
    # the report says what it assumed
    blind = _report(tmp_path, capsys, shuffle=True, starts=False)
    width = {k: v[1] - v[0] for k, v in _intervals(blind).items()}
    seen = {k: v[1] - v[0] for k, v in _intervals(in_order).items()}
    assert sum(width[k] < seen[k] for k in seen) >= len(seen) - 1
    said = [n for n in blind["notes"] if NOTE in n]
    assert len(said) == 1 and "independent requests" in said[0]
    assert [n for n in rows_in_order["notes"] if NOTE in n] == said
