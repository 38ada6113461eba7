"""Peak memory of reading large trace files (issue 35, item 9): an OTLP/JSON export of vLLM-style
request spans, and an agent trace (invoke_agent > chat / execute_tool), each read by
`budgetdiff check` in a fresh interpreter, under `/usr/bin/time -v` (its maximum resident set
size), against the file's size. The goal: at most 3x the file's size.

The files are generated (fixed seed) in $TMPDIR (or /tmp), never in the repository, and removed
afterwards unless --keep.
Run: `nice -n 10 .venv/bin/python bench/bench_traces.py [--spans 1000000] [--keep]`
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.support.big_traces import write_agent, write_otlp

BUDGET = """version: 1
percentile: 95
slo: {ttft: 1200, total: 6000}
slices: {queue: 250, prefill: 800, decode: 4200}
"""
AGENT_BUDGET = """version: 1
percentile: 95
slo: {total: 60000}
agent: {steps: 5, step: 5000}
"""
# Each reader run is bounded: a regression to the old 3 GB still ends.
TIMEOUT_S = 600


def peak_rss(args: list[str]) -> tuple[float, float, int, str]:
    """(peak RSS in bytes, seconds, exit code, last stderr line) of `python -m budgetdiff ARGS`."""
    began = time.perf_counter()
    done = subprocess.run(
        ["/usr/bin/time", "-v", sys.executable, "-m", "budgetdiff", *args],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )
    took = time.perf_counter() - began
    match = re.search(r"Maximum resident set size \(kbytes\): (\d+)", done.stderr)
    if match is None:
        raise SystemExit(f"no peak RSS in /usr/bin/time's output: {done.stderr[-500:]}")
    said = [x for x in done.stderr.splitlines() if x.startswith("budgetdiff")]
    return int(match.group(1)) * 1024.0, took, done.returncode, (said or [""])[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spans", type=int, default=1_000_000)
    parser.add_argument("--keep", action="store_true", help="keep the generated files")
    parser.add_argument("--only", choices=("otlp", "agent"), default=None)
    a = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="budgetdiff-bench-traces-", dir=os.environ.get("TMPDIR")))
    cases = [
        ("otlp", write_otlp, BUDGET, ["--format", "otlp"]),
        ("agent", write_agent, AGENT_BUDGET, ["--format", "agent-traces"]),
    ]
    print(f"{'file':<8} {'spans':>9} {'size MB':>8} {'peak MB':>8} {'x size':>7} {'s':>6} exit")
    try:
        for name, write, budget, fmt in cases:
            if a.only and name != a.only:
                continue
            data = folder / f"{name}.json"
            write(data, a.spans)
            budget_path = folder / f"{name}.yml"
            budget_path.write_text(budget)
            args = ["check", "--head", str(data), *fmt, "--budget", str(budget_path)]
            rss, took, code, said = peak_rss(args)
            size = data.stat().st_size
            print(
                f"{name:<8} {a.spans:>9,} {size / 1e6:>8.0f} {rss / 1e6:>8.0f} "
                f"{rss / size:>7.2f} {took:>6.1f} {code}"
            )
            if code not in (0, 1):
                print(f"  {said}")
            if not a.keep:
                data.unlink()
    finally:
        if not a.keep:
            for p in folder.iterdir():
                p.unlink()
            folder.rmdir()
        else:
            print(f"files kept in {folder}")


if __name__ == "__main__":
    main()
