"""Simulated runs for the history tests (issue 14): native per-request tables of the demo's
slices, lognormal with a fixed seed, and a JSON Lines history built from `check` on them. Also
what tools/trend_page.py draws."""

from __future__ import annotations

import json
from importlib.resources import files
from pathlib import Path

import numpy as np
import pytest

from budgetdiff.cli import main

BUDGET = str(files("budgetdiff") / "demo" / "budget.yml")
MEDIANS = {"network": 40.0, "queue": 30.0, "prefill": 300.0, "decode": 2000.0, "app": 50.0}


def write_run(path: Path, seed: int, decode: float = 1.0, n: int = 2000) -> Path:
    """A native per-request table: lognormal slices, decode scaled by `decode`."""
    rng = np.random.default_rng(seed)
    cols = {k: v * np.exp(0.3 * rng.standard_normal(n)) for k, v in MEDIANS.items()}
    cols["decode"] = cols["decode"] * decode
    lines = ["request_id," + ",".join(f"{k}_ms" for k in cols)]
    lines += [f"r{i}," + ",".join(f"{cols[k][i]:.3f}" for k in cols) for i in range(n)]
    path.write_text("\n".join(lines) + "\n")
    return path


def check_line(head: Path, capsys: pytest.CaptureFixture[str]) -> str:
    """What `budgetdiff check --head FILE --output json` prints, on one line."""
    assert main(["check", "--head", str(head), "--budget", BUDGET, "--output", "json"], {}) == 0
    return json.dumps(json.loads(capsys.readouterr().out), separators=(",", ":"))


def build_history(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], factors: list[float], seed: int = 0
) -> Path:
    runs = tmp_path / "history.jsonl"
    lines = [
        check_line(write_run(tmp_path / f"main{i}.csv", seed + i, f), capsys)
        for i, f in enumerate(factors)
    ]
    runs.write_text("\n".join(lines) + "\n")
    return runs
