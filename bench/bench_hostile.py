"""Time the inputs of issue 17 that were slow, against a floor measured in the same run.

- a budget of 10,000 slices, each mapped with `column:`, over a table of 10,000 columns x 20
  requests: `python -m budgetdiff check` in a fresh interpreter, against a floor that loads the
  same YAML with PyYAML (libyaml when present) and reads the table with pyarrow and takes the
  p95 of every column with numpy;
- a budget of 10,000 unknown keys (the exit-2 message of one line): `budgetdiff check`,
  against the floor of loading that YAML.
Run: `.venv/bin/python bench/bench_hostile.py` (writes bench/out/, prints the figures).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_compare import OUT, best

COLUMNS = 10_000
ROWS = 20
CHECK = """
from budgetdiff.cli import main
main(["check", "--head", sys.argv[1], "--budget", sys.argv[2]])
"""
FLOOR = """
import numpy as np, pyarrow.csv, yaml
yaml.load(open(sys.argv[2]).read(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
if sys.argv[1] != "-":
    t = pyarrow.csv.read_csv(sys.argv[1])
    for name in t.column_names:
        np.percentile(t.column(name).to_numpy(), 95)
"""


def main() -> None:
    OUT.mkdir(exist_ok=True)
    rng = np.random.default_rng(17)
    wide = OUT / "wide.csv"
    with wide.open("w") as f:
        f.write(",".join(f"c{i}" for i in range(COLUMNS)) + "\n")
        for _ in range(ROWS):
            f.write(",".join(f"{x:.3f}" for x in rng.uniform(0.1, 0.5, COLUMNS)) + "\n")
    mapped = OUT / "wide.yml"
    mapped.write_text(
        "version: 1\npercentile: 95\nslo: {total: 60000}\nslices:\n"
        + "".join(f"  s{i}: {{budget: 100, column: c{i}}}\n" for i in range(COLUMNS))
    )
    unknown = OUT / "unknown.yml"
    unknown.write_text("".join(f"key{i}: 1\n" for i in range(COLUMNS)))

    rows = [
        ("10,000 slices mapped with column:", CHECK, FLOOR, str(wide), str(mapped)),
        ("10,000 unknown budget keys (exit 2)", CHECK, FLOOR, str(wide), str(unknown)),
    ]
    print(f"{'case':<40} {'budgetdiff':>10} {'floor':>8} {'ratio':>6} {'peak':>8}")
    for name, code, floor, *args in rows:
        ours, rss = best(code, *args)
        base, _ = best(floor, *(args if "slices" in name else ["-", args[1]]))
        print(f"{name:<40} {ours:>9.2f}s {base:>7.2f}s {ours / base:>5.1f}x {rss:>6.0f}MB")


if __name__ == "__main__":
    main()
