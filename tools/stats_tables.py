"""Print the simulation tables of docs/statistics.md, from the simulation suite's own code.

The scenarios, seeds and sizes are those of tests/unit/test_stats_simulation.py (generators in
tests/support/simulation.py), so the figures are the ones the tests assert on. Takes a few minutes.
Run from the repository root: `.venv/bin/python -m tools.stats_tables [--reports N]`
(scipy, a dev dependency, gives the exact intervals).
"""

from __future__ import annotations

import argparse

from tests.support import simulation as sim

A_A = [(sc, 1000, 1201) for sc in sim.CORRELATED] + [
    (sim.CORRELATED[0], 200, 1202),
    (sim.SHAPES[0], 200, 1202),
    (sim.SHAPES[0], 1000, 1202),
    (sim.SHAPES[0], 4000, 1202),
    (sim.SHAPES[1], 200, 1202),
    (sim.SHAPES[1], 1000, 1202),
]
POWER = [
    ("lognormal slice (decode), 1,000 a side", sim.CORRELATED[0], 1000, "decode", 1.15, False),
    ("lognormal slice inside TTFT (queue), 1,000", sim.CORRELATED[0], 1000, "queue", 1.15, False),
    ("only the slowest 10% of prefill, 1,000", sim.CORRELATED[0], 1000, "prefill", 1.15, True),
    ("Pareto slice (app), 4,000 a side", sim.SHAPES[0], 4000, "app", 1.15, False),
]


def _pct(k: int, n: int) -> str:
    return f"{100 * k / n:.1f}%"


def aa_table(reports: int) -> list[str]:
    out = [
        "| A/A scenario | requests a side | any flag [exact 95%] | regressions only | "
        "says 'autocorrelated' |",
        "|---|---:|---|---:|---:|",
    ]
    for sc, n, seed in A_A:
        aa = sim.run_aa(sc, n, reports, seed)
        low, high = sim.exact_interval(aa.any_flag, aa.reports)
        out.append(
            f"| {sc.name} | {n:,} | {_pct(aa.any_flag, reports)} "
            f"[{100 * low:.1f}, {100 * high:.1f}] | {_pct(aa.regression, reports)} | "
            f"{_pct(aa.noted, reports)} |"
        )
    return out


def power_table(reports: int) -> list[str]:
    out = ["| 15% shift of the p95 of | flagged as regression |", "|---|---:|"]
    for label, sc, n, name, factor, top in POWER:
        shift = sim.scale_top_tenth(name, factor) if top else sim.scale(name, factor)
        out.append(f"| {label} | {100 * sim.run_power(sc, n, shift, name, reports, 7):.1f}% |")
    return out


def coverage_table(reports: int) -> list[str]:
    out = ["| scenario | attainment interval holds the true attainment |", "|---|---:|"]
    for sc in sim.CORRELATED:
        out.append(f"| {sc.name} | {100 * sim.attainment_coverage(sc, 1000, reports, 1205):.1f}% |")
    return out


# Issue 29's noise: (label, scenario, base size, head size, default rules?, seed)
NOISE = [
    ("narrow slow mode, default rules (5%, 5 ms)", sim.NARROW_SLOW, 1000, 1000, True, 2901),
    ("narrow slow mode, no floors", sim.NARROW_SLOW, 1000, 1000, False, 2902),
    ("Pareto 2.5, base 300 / head 3,000, no floors", sim.PARETO_25, 300, 3000, False, 2903),
    ("Pareto 2.5, base 3,000 / head 300, no floors", sim.PARETO_25, 3000, 300, False, 2903),
]


def noise_table(reports: int) -> list[str]:
    out = [
        "| A/A scenario (issue 29) | any flag | regressions | improvements | "
        "flagged rows whose interval holds 0 |",
        "|---|---:|---:|---:|---:|",
    ]
    results = [
        (label, sim.run_aa(sc, nb, reports, seed, n_head=nh, **floors))
        for label, sc, nb, nh, rules, seed in NOISE
        for floors in [{"min_change": 0.05, "min_ms": 5.0} if rules else {}]
    ]
    for as_runs in (False, True):
        told = "told" if as_runs else "not told"
        label = f"3 runs of 1,000 a side, decode drifts 3% run to run, no floors, {told} the runs"
        aa = sim.run_drift_aa(reports, 2905, runs=3, n=1000, drift=0.03, as_runs=as_runs)
        results.append((label, aa))
    for label, aa in results:
        out.append(
            f"| {label} | {_pct(aa.any_flag, reports)} | {_pct(aa.regression, reports)} | "
            f"{_pct(aa.improvement, reports)} | {aa.through_zero} |"
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reports", type=int, default=1000, help="simulated reports per row")
    parser.add_argument("--noise", action="store_true", help="only issue 29's table")
    args = parser.parse_args()
    reports = args.reports
    if args.noise:
        print("\n".join(noise_table(reports)), flush=True)
        return
    for table in (aa_table, power_table, coverage_table, noise_table):
        print("\n".join(table(reports)), end="\n\n", flush=True)


if __name__ == "__main__":
    main()
