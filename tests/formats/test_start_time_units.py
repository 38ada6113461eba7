"""A `start_time` of plain numbers with no end time and no unit in its name: seconds, or
milliseconds since the run began (0, 12.5, 40, ...)? Read right where the requests tell
(a closed loop's starts follow its ends; a server idle 99.8% of the run as seconds), named as
doubtful where they cannot (the goodput, which divides by the run's span, is left out).

The truth is computed here with numpy from the simulated requests: the goodput is the requests
that met both targets over the span from the first start to the last end, in seconds.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from budgetdiff.cli import main

TTFT_SLO, TOTAL_SLO = 1000.0, 6500.0
BUDGET = f"version: 1\npercentile: 95\nslo:\n  ttft: {TTFT_SLO:g}\n  total: {TOTAL_SLO:g}\n"


def _closed_loop(rng: np.random.Generator, n: int, workers: int) -> tuple[np.ndarray, ...]:
    """`workers` clients, each sending its next request 0.3 ms after the last one ended."""
    ttft = rng.gamma(4.0, 60.0, n)
    total = ttft + rng.gamma(6.0, 500.0, n)
    start = np.zeros(n)
    free = np.zeros(workers)
    for i in range(n):
        w = int(np.argmin(free))
        start[i] = free[w]
        free[w] = start[i] + total[i] + 0.3
    return start, ttft, total


def _open_loop(
    rng: np.random.Generator, n: int, every_ms: float, decode: float
) -> tuple[np.ndarray, ...]:
    """Poisson arrivals every `every_ms` on average, whatever is in flight."""
    ttft = rng.gamma(4.0, 60.0, n)
    total = ttft + rng.gamma(6.0, decode / 6.0, n)
    start = np.cumsum(rng.exponential(every_ms, n)) - every_ms
    return np.maximum(start, 0.0), ttft, total


def _check(
    tmp_path: Path, start: np.ndarray, ttft: np.ndarray, total: np.ndarray
) -> tuple[int, dict[str, Any]]:
    table = tmp_path / "head.csv"
    pd.DataFrame(
        {
            "request_id": [f"r{i}" for i in range(len(start))],
            "start_time": start.round(3),
            "ttft_ms": ttft.round(3),
            "total_ms": total.round(3),
        }
    ).to_csv(table, index=False)
    budget = tmp_path / "budget.yml"
    budget.write_text(BUDGET)
    out = tmp_path / "report.json"
    argv = ["check", "--head", str(table), "--budget", str(budget), "--json", str(out)]
    code = main([*argv, "--output", "json"], {})
    return code, json.loads(out.read_text())


def _goodput(start_s: np.ndarray, ttft: np.ndarray, total: np.ndarray) -> float:
    """Good requests per second from the first start to the last end (numpy, not budgetdiff),
    from the values as the file holds them (`start_s`: already so)."""
    good = int(((ttft.round(3) <= TTFT_SLO) & (total.round(3) <= TOTAL_SLO)).sum())
    span = float(np.max(start_s + total.round(3) / 1000) - np.min(start_s))
    return good / span


def _start_findings(report: dict[str, Any]) -> list[dict[str, Any]]:
    return [f for f in report["findings"] if f["kind"] == "units" and f["subject"] == "start_time"]


def test_a_closed_loop_in_milliseconds_since_the_start_is_read_as_milliseconds(
    tmp_path: Path,
) -> None:
    start, ttft, total = _closed_loop(np.random.default_rng(1), 400, workers=8)
    assert start[0] == 0 and 0 < start[8] < 10_000  # 0, then a few thousand: ms, not s
    code, report = _check(tmp_path, start, ttft, total)
    [finding] = _start_findings(report)
    assert finding["fails"] and "read as milliseconds" in finding["message"]
    assert "start_time_ms" in finding["message"]
    assert code == 1
    want = _goodput(start.round(3) / 1000, ttft, total)
    got = report["attainment"]["head"]["goodput_rps"]
    assert got == pytest.approx(want, rel=1e-3)  # read as seconds it was 1,000 times less


def test_rare_requests_in_milliseconds_are_read_as_milliseconds(tmp_path: Path) -> None:
    """One request every 2 s on average, half a second each: as seconds, the server would be
    idle all but 0.03% of a 9-day run."""
    start, ttft, total = _open_loop(np.random.default_rng(2), 400, every_ms=2000.0, decode=200.0)
    code, report = _check(tmp_path, start, ttft, total)
    [finding] = _start_findings(report)
    assert finding["fails"] and "read as milliseconds" in finding["message"]
    assert code == 1  # as epoch milliseconds in a start_time fail: the name says otherwise
    want = _goodput(start.round(3) / 1000, ttft, total)
    assert report["attainment"]["head"]["goodput_rps"] == pytest.approx(want, rel=1e-3)


def test_busy_open_loop_milliseconds_cannot_be_told_and_say_so(tmp_path: Path) -> None:
    """Arrivals every 15 ms of 5-second requests: ~300 in flight as ms, or ~0.3 as seconds
    (one request every 15 s). Either could be: the goodput is left out, and the finding says
    why and how to name the unit; the percentiles, which the start times do not touch, stay."""
    start, ttft, total = _open_loop(np.random.default_rng(3), 400, every_ms=15.0, decode=5000.0)
    _, report = _check(tmp_path, start, ttft, total)
    [finding] = _start_findings(report)
    assert not finding["fails"]
    assert "start_time_s or start_time_ms" in finding["message"]
    assert report["attainment"]["head"]["goodput_rps"] is None
    assert any("goodput is left out" in n for n in report["notes"])
    rows = {r["metric"]: r["head_ms"] for r in report["slo"]}
    assert rows["total"] == pytest.approx(float(np.percentile(total.round(3), 95)), abs=2e-3)


@pytest.mark.parametrize("loop", ["closed", "open"])
def test_seconds_stay_seconds_without_a_finding(tmp_path: Path, loop: str) -> None:
    rng = np.random.default_rng(4)
    if loop == "closed":
        start, ttft, total = _closed_loop(rng, 400, workers=8)
    else:
        start, ttft, total = _open_loop(rng, 400, every_ms=500.0, decode=5000.0)
    start_s = start / 1000  # the same requests, their start times written in seconds
    _, report = _check(tmp_path, start_s, ttft, total)
    assert not _start_findings(report)
    want = _goodput(start_s.round(3), ttft, total)
    assert report["attainment"]["head"]["goodput_rps"] == pytest.approx(want, rel=1e-3)
