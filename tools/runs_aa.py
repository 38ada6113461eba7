"""Issue 29 item 3 through the command line: A/A pairs of three drifting runs a side (each run's
decode scaled by its own lognormal(0, 3%) factor, 1,000 requests a run, no size floors), given
as three files a side, as one file with a `run` column, and as one file that does not say which
run a request is from. Prints how many pairs flag a row.

    .venv/bin/python -m tools.runs_aa [--pairs 60]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from tests.support import simulation as sim


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=60)
    parser.add_argument("--seed", type=int, default=2905)
    args = parser.parse_args()
    for layout in ("files", "column", "untold"):
        with tempfile.TemporaryDirectory() as folder:
            aa = sim.cli_drift_aa(
                Path(folder), args.pairs, args.seed, runs=3, n=1000, drift=0.03, layout=layout
            )
        print(
            f"{layout:>6}: {aa.flagged} of {aa.pairs} A/A pairs flag a row; flagged rows whose "
            f"interval holds 0: {aa.through_zero}; note: {aa.notes[0]}"
        )


if __name__ == "__main__":
    main()
