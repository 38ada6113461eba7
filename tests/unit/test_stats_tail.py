"""Issue 34: the tail regression the gate exists for, through the command line and the Python
API. 8% of head's requests decode at twice the per-token delay (300 requests a side, the
simulation of bench/power_oracle.py); the gate's family is the rows it can fail on, and the
report says which family each row was tested in."""

from __future__ import annotations

import contextlib
import io
import json
import math
from pathlib import Path
from statistics import NormalDist

import numpy as np
import pytest
import yaml

from bench import power_oracle as oracle
from budgetdiff import api
from budgetdiff.cli import main
from budgetdiff.stats import compare_percentile
from tests.support import paths
from tests.support import simulation as sim


def _write(path: Path, t: dict[str, np.ndarray]) -> Path:
    names = list(t)
    rows = np.column_stack([t[k] for k in names])
    lines = [",".join(names), *(",".join(f"{v:.3f}" for v in row) for row in rows)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _compare(
    tmp_path: Path, base: dict[str, np.ndarray], head: dict[str, np.ndarray]
) -> tuple[int, dict]:  # type: ignore[type-arg]
    budget = tmp_path / "budget.yml"
    budget.write_text(yaml.safe_dump(oracle.BUDGET), encoding="utf-8")
    argv = ["compare", "--budget", str(budget), "--output", "json"]
    argv += ["--base", str(_write(tmp_path / "base.csv", base))]
    argv += ["--head", str(_write(tmp_path / "head.csv", head))]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(argv, environ={})
    return code, json.loads(out.getvalue())


def test_compare_exits_1_naming_decode_when_8pct_of_requests_decode_twice_as_slowly(
    tmp_path: Path,
) -> None:
    """Ten simulated pairs (fixed seeds), 300 requests a side: the gate fails on decode in at
    least 8 (power at least 80%, bench/power_oracle.py measures it over hundreds)."""
    caught = 0
    for seed in range(10):
        rng = np.random.default_rng([34, seed])
        base, head = oracle.table(rng, 300, oracle.same), oracle.table(rng, 300, oracle.tail)
        code, report = _compare(tmp_path, base, head)
        assert code in (0, 1)
        named = [f for f in report["findings"] if f["kind"] == "regression" and f["fails"]]
        caught += code == 1 and any(f["subject"] == "decode" for f in named)
        decode = next(r for r in report["slices"] if r["name"] == "decode")
        assert decode["family"] == "gate"
        # truth from numpy on the same values: the row's percentiles are np.percentile's
        assert decode["head_ms"] == pytest.approx(np.percentile(head["decode_ms"], 95), abs=0.01)
        assert decode["base_ms"] == pytest.approx(np.percentile(base["decode_ms"], 95), abs=0.01)
    assert caught >= 8


def test_rows_without_a_target_are_tested_among_themselves() -> None:
    """TPOT has no target in this budget: it is information, in its own family, and the note
    says which rows were tested together."""
    rng = np.random.default_rng(341)
    base, head = oracle.table(rng, 300, oracle.same), oracle.table(rng, 300, oracle.same)
    c = api.compare(base, head, oracle.BUDGET).main.comparison
    families = {r.name: r.family for r in (*c.slo, *c.slices)}
    assert families.pop("tpot") == "information"
    assert set(families.values()) == {"gate"}
    assert any(
        n.startswith("the 7 rows the gate can fail on are tested as one family") for n in c.notes
    )


def test_the_interval_is_clipped_to_what_the_two_samples_make_possible() -> None:
    """Head uniformly 25% slower with every head value above base's p95 (decode on a steady
    server): the change cannot be below head's floor less base's ceiling, order statistics
    computed here with numpy at the ranks k -/+ z sqrt(n q (1 - q)), z for 1 - alpha / 20."""
    rng = np.random.default_rng(342)
    n = 265
    base = 700.0 * np.exp(0.02 * rng.standard_normal(n))
    head = 1.25 * 700.0 * np.exp(0.02 * rng.standard_normal(n))
    c = compare_percentile(base, head, 95, 0.95)
    h = NormalDist().inv_cdf(1 - 0.05 / 40) * math.sqrt(n * 0.95 * 0.05)
    low, high = math.floor(n * 0.95 - h), math.ceil(n * 0.95 + h)
    floor_head = np.sort(head)[low - 1]
    ceiling_base = np.sort(base)[high - 1]
    assert c.ci is not None
    assert c.ci[0] >= floor_head - ceiling_base - 1e-9
    assert c.ci[0] > 0.0


def test_a_percentile_at_the_edge_of_a_mode_says_so() -> None:
    """Issue 29's narrow slow mode (decode 680 ms, sigma 0.03, 5% of it 1.9x slower): the p95
    sits at the edge of the slow mode, and the note says so in most runs; a smooth lognormal
    rarely."""
    rng = np.random.default_rng(343)
    edge = smooth = 0
    for _ in range(20):
        a, b = sim.slices(rng, sim.NARROW_SLOW, 2, 1000)["decode"]
        c = compare_percentile(a, b, 95, 0.95)
        edge += c.note is not None and "edge of a mode" in c.note
        x, y = rng.lognormal(0, 0.4, (2, 1000))
        d = compare_percentile(x, y, 95, 0.95)
        smooth += d.note is not None and "edge of a mode" in d.note
    assert edge >= 10
    assert smooth <= 2


def test_the_mde_stays_near_the_interval_it_is_read_from() -> None:
    """8% of head's requests at twice the per-token delay, 300 a side, a family of 7: the
    minimum detectable effect is read from the interval's own error (it was "80% chance to
    catch >= 609%" beside an interval 40% wide)."""
    rng = np.random.default_rng(344)
    ratios = []
    for _ in range(20):
        base = oracle.table(rng, 300, oracle.same)["decode_ms"]
        head = oracle.table(rng, 300, oracle.tail)["decode_ms"]
        c = compare_percentile(base, head, 95, 0.95, family_size=7)
        assert c.ci is not None and c.mde_pct is not None
        # the interval's lower half is its error toward 0, the one a regression is read from
        lower = 100 * (c.delta - c.ci[0]) / c.base
        ratios.append(c.mde_pct / lower)
    # (t at alpha / 14 + t at 80%) / t at 97.5% is about 1.8, head's error may scale by at most 2
    assert max(ratios) < 4.0


def test_no_interval_says_a_latency_fell_by_more_than_all_of_it() -> None:
    """Three runs a side that drift (each run's own lognormal factor, sigma 1): the order
    statistics' clip is skipped there, and quantised values take the exceedance path; in
    neither may the change's lower end be below -base (numpy's p95 of base), and it is at
    -base in most of these reports (the floor is what holds them)."""
    rng = np.random.default_rng(345)
    runs = np.repeat(np.arange(3), 80)
    floored = 0
    for i in range(40):
        b, h = (np.repeat(np.exp(rng.standard_normal(3)), 80) * 100.0 for _ in range(2))
        b, h = b * rng.lognormal(0, 0.3, 240), h * rng.lognormal(0, 0.3, 240)
        if i % 2:  # whole milliseconds: values repeat around the p95
            b, h = np.round(b), np.round(h)
        c = compare_percentile(b, h, 95, 0.95, base_runs=runs, head_runs=runs)
        assert c.ci is not None
        least = -float(np.percentile(b, 95))
        assert c.ci[0] >= least - 1e-9
        assert c.ci[1] >= c.ci[0]
        floored += math.isclose(c.ci[0], least)
    assert floored >= 20


def test_genai_bench_ttft_interval_is_not_below_minus_100_percent(tmp_path: Path) -> None:
    """genai-bench's own base and head files (tests/data/genai-bench): TTFT's interval was
    [-118%, +151%]. Every row's ms interval starts at or above -base_ms."""
    data = paths.SAMPLES / "genai-bench"
    budget = tmp_path / "budget.yml"
    budget.write_text("regression:\n  metrics: [ttft]\n", encoding="utf-8")
    argv = ["compare", "--budget", str(budget), "--output", "json"]
    argv += ["--base", str(next((data / "base").glob("D100*.json")))]
    argv += ["--head", str(next((data / "head").glob("D100*.json")))]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main(argv, environ={})
    rows = [r for r in json.loads(out.getvalue())["slo"] if r["ci_ms"] is not None]
    assert any(r["metric"] == "ttft" for r in rows)
    for r in rows:
        assert r["ci_ms"][0] >= -r["base_ms"] - 1e-3, r["metric"]
