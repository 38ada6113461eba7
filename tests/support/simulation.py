"""Simulated benchmark runs for the statistics suite (tests/unit/test_stats_simulation.py) and
for the tables in docs/statistics.md (tools/stats_tables.py prints them from the same code).

A report has 7 rows tested together (Holm), as the demo budget gives: the slices network, queue,
prefill, decode, app, plus ttft = network + queue + prefill and total = their sum, per request.
Runs are drawn many at a time (one array of shape (runs, n) per slice), in arrival order.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.signal import lfilter
from scipy.stats import binomtest

from budgetdiff.cli import main
from budgetdiff.stats import Change, attainment, compare_percentile, decide, family_test

Rng = np.random.Generator
Rows = dict[str, np.ndarray]
Shift = Callable[[Rows], Rows]

MEDIANS_MS = {"network": 10.0, "queue": 20.0, "prefill": 80.0, "decode": 400.0, "app": 15.0}
TTFT_SLICES = ("network", "queue", "prefill")
P = 95.0
CONFIDENCE = 0.95
SIGMA = 0.4  # lognormal sigma of each slice
REGIME_LENGTH = 50  # requests that share one load factor
REGIME_SIGMA = 0.3  # the load factor is lognormal(0, REGIME_SIGMA)
# A narrow slow mode (issue 29): decode is lognormal(NARROW_MS, NARROW_SIGMA), and
# NARROW_SLOW_SHARE of requests take a path NARROW_SLOWER times slower: p95 sits at its edge.
NARROW_MS = 680.0
NARROW_SIGMA = 0.03
NARROW_SLOW_SHARE = 0.05
NARROW_SLOWER = 1.9
# Issue 34's: batch-coupled noise, and a warm-up in both sides.
BATCH_LENGTH = 20  # consecutive requests that share one lognormal factor ...
BATCH_SIGMA = 0.2  # ... of this sigma
WARMUP_SHARE = 0.05  # the first this share of a run's requests ...
WARMUP_SLOWER = 2.0  # ... this many times slower


@dataclass(frozen=True)
class Scenario:
    name: str  # as the tables print it
    kind: str  # independent | ar1 | regimes | pareto | bimodal | narrow_slow | batch | warmup
    phi: float = 0.0  # AR(1) coefficient in arrival order, on the log scale
    shape: float = 3.0  # Pareto's


# The A/A scenarios of issue 12 (and the docs' table), in the order they are printed.
CORRELATED = (
    Scenario("independent, lognormal σ 0.4", "independent"),
    Scenario("AR(1) φ 0.3 in arrival order", "ar1", 0.3),
    Scenario("AR(1) φ 0.5 in arrival order", "ar1", 0.5),
    Scenario("AR(1) φ 0.7 in arrival order", "ar1", 0.7),
    Scenario("AR(1) φ 0.9 in arrival order", "ar1", 0.9),
    Scenario(
        f"load regimes: {REGIME_LENGTH} requests share a factor lognormal(0, {REGIME_SIGMA})",
        "regimes",
    ),
)
SHAPES = (
    Scenario("Pareto tail, shape 3", "pareto"),
    Scenario("bimodal: 7% in a 3x slower mode", "bimodal"),
)
# Issue 29's: a p95 at the edge of a narrow slow mode, and Pareto 2.5 at unequal sizes.
NARROW_SLOW = Scenario(
    f"narrow slow mode: decode {NARROW_MS:g} ms σ {NARROW_SIGMA}, "
    f"{100 * NARROW_SLOW_SHARE:g}% of it {NARROW_SLOWER}x slower",
    "narrow_slow",
)
PARETO_25 = Scenario("Pareto tail, shape 2.5", "pareto", shape=2.5)
BATCH = Scenario(
    f"batch-coupled: {BATCH_LENGTH} consecutive requests share a factor "
    f"lognormal(0, {BATCH_SIGMA})",
    "batch",
)
WARMUP = Scenario(
    f"warm-up in both sides: the first {100 * WARMUP_SHARE:g}% {WARMUP_SLOWER:g}x slower",
    "warmup",
)


def _ar1(rng: Rng, runs: int, n: int, phi: float) -> np.ndarray:
    """Stationary Gaussian AR(1) with unit variance along the last axis."""
    e = rng.standard_normal((runs, n)) * math.sqrt(1.0 - phi * phi)
    e[:, 0] /= math.sqrt(1.0 - phi * phi)
    return np.asarray(lfilter([1.0], [1.0, -phi], e, axis=1))


def slices(rng: Rng, sc: Scenario, runs: int, n: int) -> Rows:
    """Per-request slice values (ms) of `runs` runs of `n` requests, shape (runs, n) each."""
    load = np.ones((runs, n))
    if sc.kind == "regimes":  # one factor for every slice of the requests of a regime
        factor = np.exp(REGIME_SIGMA * rng.standard_normal((runs, -(-n // REGIME_LENGTH))))
        load = np.repeat(factor, REGIME_LENGTH, axis=1)[:, :n]
    elif sc.kind == "batch":
        factor = np.exp(BATCH_SIGMA * rng.standard_normal((runs, -(-n // BATCH_LENGTH))))
        load = np.repeat(factor, BATCH_LENGTH, axis=1)[:, :n]
    elif sc.kind == "warmup":
        load[:, : math.ceil(WARMUP_SHARE * n)] = WARMUP_SLOWER
    out: Rows = {}
    for name, med in MEDIANS_MS.items():
        if sc.kind == "narrow_slow" and name == "decode":
            slow = rng.random((runs, n)) < NARROW_SLOW_SHARE
            x = NARROW_MS * np.exp(NARROW_SIGMA * rng.standard_normal((runs, n)))
            x *= np.where(slow, NARROW_SLOWER, 1.0)
        elif sc.kind in ("independent", "regimes", "narrow_slow", "batch", "warmup"):
            x = med * load * np.exp(SIGMA * rng.standard_normal((runs, n)))
        elif sc.kind == "ar1":
            x = med * np.exp(SIGMA * _ar1(rng, runs, n, sc.phi))
        elif sc.kind == "pareto":  # Pareto tail, starting at the median scale
            x = med * (1.0 + rng.pareto(sc.shape, (runs, n)))
        elif sc.kind == "bimodal":  # 7% of requests in a slow mode 3x away: p95 inside the gap
            slow = rng.random((runs, n)) < 0.07
            x = med * np.exp(0.25 * rng.standard_normal((runs, n))) * np.where(slow, 3.0, 1.0)
        else:
            raise AssertionError(sc.kind)
        out[name] = x
    return out


def rows(s: Rows) -> Rows:
    """The 7 rows of a report: ttft and total first, then the slices."""
    ttft = sum(s[k] for k in TTFT_SLICES)
    total = sum(s.values())
    assert isinstance(ttft, np.ndarray) and isinstance(total, np.ndarray)
    return {"ttft": ttft, "total": total, **s}


def report(
    base: Rows,
    head: Rows,
    i: int,
    *,
    min_change: float = 0.0,
    min_ms: float = 0.0,
    runs: np.ndarray | None = None,
) -> tuple[dict[str, str], list[Change]]:
    """Verdict per row of the i-th report, and its changes (the stats layer, as compare does:
    one family of 7 rows, all of them rows the gate acts on, tested as compare tests them:
    `stats.family_test`).
    `runs`: the run of each request, the same on both sides (several runs a side)."""
    changes = [
        compare_percentile(
            base[k][i],
            head[k][i],
            P,
            CONFIDENCE,
            family_size=len(base),
            min_change=min_change,
            min_ms=min_ms,
            base_runs=runs,
            head_runs=runs,
        )
        for k in base
    ]
    test = family_test(
        changes,
        [base[k][i] for k in base],
        [head[k][i] for k in base],
        P,
        requests=(len(base["total"][i]), len(head["total"][i])),
        several_runs=runs is not None,
        level=1.0 - CONFIDENCE,
    )
    verdicts = decide(
        changes,
        min_change=min_change,
        min_ms=min_ms,
        confidence=CONFIDENCE,
        adjusted=test.adjusted,
    )
    return dict(zip(base, verdicts, strict=True)), changes


@dataclass(frozen=True)
class AA:
    """What A/A reports said, over `reports` simulated base/head pairs."""

    reports: int
    any_flag: int  # reports with any row flagged, either way
    regression: int  # reports with a row flagged as a regression
    noted: int  # reports that say "autocorrelated in arrival order"
    improvement: int = 0  # reports with a row flagged as an improvement
    through_zero: int = 0  # flagged rows whose own interval holds 0 (issue 29: must be none)


def flagged_through_zero(verdicts: dict[str, str], changes: list[Change]) -> int:
    """Rows flagged either way whose interval contains 0."""
    return sum(
        v in ("regression", "improvement") and (c.ci is None or c.ci[0] <= 0.0 <= c.ci[1])
        for v, c in zip(verdicts.values(), changes, strict=True)
    )


def run_aa(
    sc: Scenario,
    n: int,
    reports: int,
    seed: int,
    batch: int = 100,
    *,
    n_head: int | None = None,
    min_change: float = 0.0,
    min_ms: float = 0.0,
) -> AA:
    """A/A reports (base and head from the same process), by default with the strictest rules
    (no size floors) and `n` requests a side; `n_head` gives head another size."""
    rng = np.random.default_rng(seed)
    any_flag = regression = improvement = noted = through_zero = 0
    for start in range(0, reports, batch):
        k = min(batch, reports - start)
        base = rows(slices(rng, sc, k, n))
        head = rows(slices(rng, sc, k, n if n_head is None else n_head))
        for i in range(k):
            verdicts, changes = report(base, head, i, min_change=min_change, min_ms=min_ms)
            any_flag += any(v in ("regression", "improvement") for v in verdicts.values())
            regression += "regression" in verdicts.values()
            improvement += "improvement" in verdicts.values()
            noted += any(c.note and "autocorrelated" in c.note for c in changes)
            through_zero += flagged_through_zero(verdicts, changes)
    return AA(reports, any_flag, regression, noted, improvement, through_zero)


def drifting_side(rng: Rng, k: int, runs: int, n: int, drift: float) -> Rows:
    """`k` sides of `runs` runs of `n` independent requests each, one after the other; each
    run's decode scaled by its own lognormal(0, drift) factor (run-to-run drift, issue 29)."""
    s = slices(rng, CORRELATED[0], k * runs, n)
    s["decode"] = s["decode"] * np.exp(drift * rng.standard_normal((k * runs, 1)))
    return rows({name: x.reshape(k, runs * n) for name, x in s.items()})


def run_drift_aa(reports: int, seed: int, *, runs: int, n: int, drift: float, as_runs: bool) -> AA:
    """A/A reports of sides of several drifting runs, no size floors; `as_runs`: the stats
    layer is told which run each request came from."""
    rng = np.random.default_rng(seed)
    labels = np.repeat(np.arange(runs), n) if as_runs else None
    any_flag = regression = improvement = through_zero = 0
    for start in range(0, reports, 20):
        k = min(20, reports - start)
        base, head = (drifting_side(rng, k, runs, n, drift) for _ in "bh")
        for i in range(k):
            verdicts, changes = report(base, head, i, runs=labels)
            any_flag += any(v in ("regression", "improvement") for v in verdicts.values())
            regression += "regression" in verdicts.values()
            improvement += "improvement" in verdicts.values()
            through_zero += flagged_through_zero(verdicts, changes)
    return AA(reports, any_flag, regression, 0, improvement, through_zero)


def scale(name: str, factor: float) -> Shift:
    def shift(s: Rows) -> Rows:
        return {**s, name: s[name] * factor}

    return shift


def scale_top_tenth(name: str, factor: float) -> Shift:
    """Only requests above the slice's own p90 get slower: the median does not move."""

    def shift(s: Rows) -> Rows:
        x = s[name]
        return {**s, name: np.where(x > np.percentile(x, 90, axis=1, keepdims=True), x * factor, x)}

    return shift


def run_power(
    sc: Scenario, n: int, shift: Shift, name: str, reports: int, seed: int, batch: int = 100
) -> float:
    """Share of reports that flag `name` as a regression (budget rules: min_change 5%, 5 ms)."""
    rng = np.random.default_rng(seed)
    hits = 0
    for start in range(0, reports, batch):
        k = min(batch, reports - start)
        base, head = rows(slices(rng, sc, k, n)), rows(shift(slices(rng, sc, k, n)))
        verdicts = (report(base, head, i, min_change=0.05)[0] for i in range(k))
        hits += sum(v[name] == "regression" for v in verdicts)
    return hits / reports


def exact_interval(k: int, n: int) -> tuple[float, float]:
    """Clopper-Pearson 95% interval of a share k / n."""
    ci = binomtest(k, n).proportion_ci(0.95)
    return float(ci.low), float(ci.high)


# SLO targets of the attainment simulations (ms): about 94% of independent requests meet both.
TTFT_TARGET_MS = 190.0
TOTAL_TARGET_MS = 900.0


def good(r: Rows) -> np.ndarray:
    """Requests that met both targets, shape (runs, n)."""
    return np.asarray((r["ttft"] <= TTFT_TARGET_MS) & (r["total"] <= TOTAL_TARGET_MS))


def true_attainment(sc: Scenario, seed: int, requests: int = 2_000_000) -> float:
    """The scenario's attainment, from many requests (runs of 10,000, so regimes average out)."""
    rng = np.random.default_rng(seed)
    return float(good(rows(slices(rng, sc, requests // 10_000, 10_000))).mean())


def attainment_coverage(sc: Scenario, n: int, runs: int, seed: int) -> float:
    """Share of runs whose attainment interval holds the scenario's true attainment."""
    truth = 100.0 * true_attainment(sc, seed + 1)
    rng = np.random.default_rng(seed)
    g = good(rows(slices(rng, sc, runs, n)))
    held = 0
    for i in range(runs):
        lo, hi = attainment(g[i], CONFIDENCE).ci_pct
        held += lo <= truth <= hi
    return held / runs


def write_drifting_side(
    rng: Rng, folder: Path, name: str, *, runs: int, n: int, drift: float, layout: str
) -> list[Path]:
    """One side of `runs` drifting runs (`drifting_side`) as native CSV tables of the five
    slices. `layout`: "files" (one per run), "column" (one file, a `run` column: `rep-0`,
    `rep-1`, ...) or "untold" (one file, nothing says which run a request is from)."""
    s = drifting_side(rng, 1, runs, n, drift)
    header = [f"{k}_ms" for k in MEDIANS_MS]
    values = np.column_stack([s[k][0] for k in MEDIANS_MS])
    cells = [[f"{v:.3f}" for v in row] for row in values]
    if layout == "column":
        header.append("run")
        cells = [[*row, f"rep-{i // n}"] for i, row in enumerate(cells)]
    if layout != "files":
        chunks = [(folder / f"{name}.csv", cells)]
    else:
        chunks = [(folder / f"{name}{r}.csv", cells[r * n : (r + 1) * n]) for r in range(runs)]
    for path, rows_ in chunks:
        path.write_text("\n".join(",".join(row) for row in [header, *rows_]) + "\n")
    return [path for path, _ in chunks]


def drift_budget() -> str:
    """The simulations' budget (7 rows) with no size floors, for the command line."""
    slices_ = ", ".join(f"{k}: 1000" for k in MEDIANS_MS)
    return (
        "version: 1\npercentile: 95\n"
        f"slo: {{ttft: {TTFT_TARGET_MS}, total: {TOTAL_TARGET_MS}}}\n"
        f"slices: {{{slices_}}}\nfirst_token_after: prefill\n"
        "regression: {min_change: 0%, min_ms: 0}\n"
    )


@dataclass(frozen=True)
class CliAA:
    """A/A pairs through `budgetdiff compare`: how many flagged a row, how many flagged rows'
    intervals hold 0, and each report's last note."""

    pairs: int
    flagged: int
    through_zero: int
    notes: tuple[str, ...]


def cli_drift_aa(
    folder: Path, pairs: int, seed: int, *, runs: int, n: int, drift: float, layout: str
) -> CliAA:
    """A/A pairs of sides of `runs` drifting runs each, given to the command line as files."""
    rng = np.random.default_rng(seed)
    budget = folder / "budget.yml"
    budget.write_text(drift_budget())
    flagged = through_zero = 0
    notes = []
    for _ in range(pairs):
        argv = ["compare", "--budget", str(budget), "--output", "json"]
        for side in ("base", "head"):
            for path in write_drifting_side(
                rng, folder, side, runs=runs, n=n, drift=drift, layout=layout
            ):
                argv += [f"--{side}", str(path)]
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            code = main(argv, environ={})
        assert code in (0, 1), code
        report = json.loads(out.getvalue())
        moved = [
            r
            for r in (*report["slo"], *report["slices"])
            if r["change"] in ("regression", "improvement")
        ]
        flagged += bool(moved)
        through_zero += sum(1 for r in moved if r["ci_ms"][0] <= 0.0 <= r["ci_ms"][1])
        notes.append(report["notes"][-1])
    return CliAA(pairs, flagged, through_zero, tuple(notes))


# Issue 34's comment of many rows: three classes of traffic, each its own scenario with its own
# SLOs (docs/budget.md, "Classes of traffic"), six slices and two SLO metrics each.
CLASS_SCALES = {"chat": 1.0, "api": 2.0, "batch": 4.0}  # each class's slices, times MEDIANS_MS
SIX_SLICES_MS = {**MEDIANS_MS, "tools": 30.0}


def classes_budget() -> str:
    """Six slices and two SLOs a class, targets far above the p95 (the A/A must not breach),
    no size floors: every row is one the gate acts on."""
    slices_ = ", ".join(f"{k}: 100000" for k in SIX_SLICES_MS)
    classes = "".join(
        f"  {c}:\n    slo: {{ttft: {1000 * f:g}, total: {5000 * f:g}}}\n"
        for c, f in CLASS_SCALES.items()
    )
    return (
        "version: 1\npercentile: 95\nslo: {ttft: 1000, total: 5000}\n"
        f"slices: {{{slices_}}}\nfirst_token_after: prefill\n"
        "regression: {min_change: 0%, min_ms: 0}\n"
        f"classes:\n{classes}"
    )


def write_classes_side(rng: Rng, path: Path, n: int) -> None:
    """One side: `n` independent requests per class (lognormal slices, SIGMA), classes one after
    the other, as a native CSV table with a `class` column."""
    header = [f"{k}_ms" for k in SIX_SLICES_MS] + ["class"]
    lines = [",".join(header)]
    med = np.array(list(SIX_SLICES_MS.values()))
    for c, f in CLASS_SCALES.items():
        x = f * med * np.exp(SIGMA * rng.standard_normal((n, med.size)))
        lines += [",".join([*(f"{v:.3f}" for v in row), c]) for row in x]
    path.write_text("\n".join(lines) + "\n")


@dataclass(frozen=True)
class ClassesAA:
    """A/A comments of three classes through `budgetdiff compare`: rows per comment, comments
    with any row flagged either way, with a regression (the gate fails), each class's count
    of flagged comments, and flagged rows whose interval holds 0."""

    pairs: int
    rows: int
    flagged: int
    regression: int
    per_class: tuple[int, ...]
    through_zero: int


def cli_classes_aa(folder: Path, pairs: int, seed: int, *, n: int) -> ClassesAA:
    """A/A pairs of one table a side holding the three classes, `n` requests each, given to
    the command line (in-process `main`, JSON output); a comment counts as flagged when any
    row of any class says regression or improvement."""
    rng = np.random.default_rng(seed)
    budget = folder / "budget.yml"
    budget.write_text(classes_budget())
    flagged = regression = through_zero = rows_ = 0
    per_class = dict.fromkeys(CLASS_SCALES, 0)
    for _ in range(pairs):
        for side in ("base", "head"):
            write_classes_side(rng, folder / f"{side}.csv", n)
        argv = ["compare", "--budget", str(budget), "--output", "json"]
        argv += ["--base", str(folder / "base.csv"), "--head", str(folder / "head.csv")]
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            code = main(argv, environ={})
        assert code in (0, 1), code
        report = json.loads(out.getvalue())
        names = sorted(s["name"] for s in report["scenarios"])
        assert names == sorted(CLASS_SCALES), names
        every = [r for s in report["scenarios"] for r in (*s["slo"], *s["slices"])]
        rows_ = len(every)
        moved = [r for r in every if r["change"] in ("regression", "improvement")]
        flagged += bool(moved)
        regression += any(r["change"] == "regression" for r in moved)
        for s in report["scenarios"]:
            per_class[s["name"]] += any(
                r["change"] in ("regression", "improvement") for r in (*s["slo"], *s["slices"])
            )
        through_zero += sum(1 for r in moved if r["ci_ms"][0] <= 0.0 <= r["ci_ms"][1])
    return ClassesAA(pairs, rows_, flagged, regression, tuple(per_class.values()), through_zero)
