"""Issue 39 through the command line: how often the history's `drift` finding fires on pure
noise over the life of a series, and how soon it finds a real creep or step.

A series is a run of merges. Each merge writes a run (a native table of 600 requests, the demo's
five slices iid lognormal, sigma 0.3, `tests/support/history.py`), then runs

    budgetdiff compare --budget DEMO --base <previous run> --head <this run> \
        --history H --fail-on drift,regression --output json

and appends its report to H as one line, as the Action's store does. H starts with the first
run's `check` report. Three kinds of series, each decode's scale per merge:

- `noise`: 100 merges, nothing changes (A/A): the share of series with any `drift` finding;
- `creep`: 19 merges of noise, then decode +1% a merge from merge 20, for 20 merges;
- `step`: 19 merges of noise, then decode +15% from merge 20 on (39 merges):
  the share of series whose first `drift` finding on decode or the end to end (which holds
  decode) comes within 10 merges of where the change starts (`found <= 10`), and the median
  delay. A drift before the change starts is counted as a false one.

By default each merge calls the CLI's entry point, `budgetdiff.cli.main(argv)`, in this process
(the argv the console script would get; minutes instead of hours); `--subprocess` runs
`python -m budgetdiff` in a fresh interpreter each time instead. The default series counts are
small for time (20 series of each kind: about 15 minutes on a loaded 2-core machine);
`--full` runs 200 of each.

    nice -n 10 .venv/bin/python bench/drift_simulation.py [--series 20 | --full] [--kinds noise]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support.drift import KINDS, Kind, Merge, Runner, delay, series

WITHIN = 10  # merges from where a change starts


def interval(k: int, n: int) -> str:
    """k of n with its exact 95% interval (Clopper-Pearson)."""
    ci = stats.binomtest(k, n).proportion_ci(0.95, method="exact")
    return f"{k} of {n} ({100 * k / n:.1f}%, 95% CI {100 * ci.low:.1f}-{100 * ci.high:.1f}%)"


def summarise(kind: Kind, results: list[list[Merge]]) -> str:
    n = len(results)
    if kind.start is None:
        drifted = sum(any(m.drift for m in s) for s in results)
        merges = sum(bool(m.drift) for s in results for m in s)
        regressed = sum(bool(m.regression) for s in results for m in s)
        looks = sum(len(s) for s in results)
        return (
            f"{kind.name}: {interval(drifted, n)} series of {kind.merges} merges raise a drift; "
            f"{merges} of {looks} merges have one; "
            f"{regressed} merges ({100 * regressed / looks:.1f}%) a per-PR regression"
        )
    early = sum(any(m.drift for m in s[: kind.start - 1]) for s in results)
    delays = [delay(kind, s) for s in results]
    found = sum(d is not None and d <= WITHIN for d in delays)
    seen = [d for d in delays if d is not None]
    median = f"{statistics.median(seen):g}" if seen else "-"
    return (
        f"{kind.name}: found within {WITHIN} merges of the start in {interval(found, n)} series; "
        f"median delay {median} merge(s) (1 = the first changed run); "
        f"never found: {delays.count(None)}; a drift before the change: {early}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--series", type=int, default=20, help="series of each kind")
    parser.add_argument("--full", action="store_true", help="200 series of each kind")
    parser.add_argument("--kinds", default="noise,creep,step")
    parser.add_argument("--seed", type=int, default=3900)
    parser.add_argument("--subprocess", action="store_true", help="a fresh interpreter a merge")
    args = parser.parse_args()
    count = 200 if args.full else args.series
    run = Runner(args.subprocess)
    for name in args.kinds.split(","):
        kind = KINDS[name]
        started = time.perf_counter()
        results = []
        for k in range(count):
            with tempfile.TemporaryDirectory() as folder:
                results.append(series(kind, args.seed + 100_000 * k, Path(folder), run))
            drifts = [i + 1 for i, m in enumerate(results[-1]) if m.drift]
            found = "" if kind.start is None else f"; found after {delay(kind, results[-1])}"
            line = f"  {name} series {k + 1}: drift at merge(s) {drifts[:8]}{found}"
            print(line, file=sys.stderr, flush=True)
        took = time.perf_counter() - started
        print(summarise(kind, results), f"[{took:.0f} s]", flush=True)


if __name__ == "__main__":
    main()
