"""What `--history` costs: `budgetdiff compare` on the demo pair without a history (the floor,
measured back to back in the same run) and with a history of 15, 100 and 500 runs (the Action
keeps 500), each in a fresh interpreter, start-up included; and `budgetdiff history` on 500.
The history's runs are the demo head's report with each row's value drawn afresh (+-3%), and,
for the worst case, a level step in the middle (a change point to find, so the permutation test
runs in full). Run: `.venv/bin/python bench/bench_history.py`.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "budgetdiff" / "demo"
REPEAT = 5


def history(path: Path, runs: int, template: dict) -> None:  # type: ignore[type-arg]
    rng = np.random.default_rng(1)
    with path.open("w") as f:
        for i in range(runs):
            doc = json.loads(json.dumps(template))
            step = 1.1 if i >= runs // 2 else 1.0
            for row in (*doc["slo"], *doc["slices"]):
                if row["head_ms"] is not None:
                    factor = step * (1 + 0.03 * rng.standard_normal())
                    row["head_ms"] *= factor
                    if row["head_ci_ms"]:
                        row["head_ci_ms"] = [v * factor for v in row["head_ci_ms"]]
            f.write(json.dumps(doc, separators=(",", ":")) + "\n")


def timed(args: list[str]) -> float:
    times = []
    for _ in range(REPEAT):
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "budgetdiff", *args], capture_output=True, check=False
        )
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    pair = ["--base", str(DEMO / "base.csv"), "--head", str(DEMO / "head.csv")]
    budget = ["--budget", str(DEMO / "budget.yml")]
    done = subprocess.run(
        [sys.executable, "-m", "budgetdiff", "check", "--head", str(DEMO / "head.csv"), *budget,
         "--output", "json"], capture_output=True, text=True, check=False,
    )  # fmt: skip
    template = json.loads(done.stdout)
    with tempfile.TemporaryDirectory() as tmp:
        rows = []
        floor = timed(["compare", *pair, *budget, "--output", "json"])
        rows.append(("compare, no history (floor)", floor))
        for runs in (15, 100, 500):
            path = Path(tmp) / f"h{runs}.jsonl"
            history(path, runs, template)
            t = timed(["compare", *pair, *budget, "--output", "json", "--history", str(path)])
            rows.append((f"compare --history ({runs} runs)", t))
        page = Path(tmp) / "p.html"
        t = timed(["compare", *pair, *budget, "--output", "json", "--history",
                   str(Path(tmp) / "h500.jsonl"), "--html", str(page)])  # fmt: skip
        rows.append(("compare --history (500 runs) --html", t))
        rows.append(("history (500 runs)", timed(["history", str(Path(tmp) / "h500.jsonl")])))
        size = (Path(tmp) / "h500.jsonl").stat().st_size
    print(f"median of {REPEAT} runs, fresh interpreter each; 500-run history: {size:,} bytes")
    for name, t in rows:
        print(f"  {name:<38} {t:6.2f} s  ({t - floor:+.2f} s vs the floor)")


if __name__ == "__main__":
    main()
