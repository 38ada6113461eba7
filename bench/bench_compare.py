"""Time `budgetdiff compare` against a floor measured in the same run.

For 1,000, 100,000 and 1,000,000 requests per side, in Parquet and CSV:
- budgetdiff: `python -m budgetdiff compare` in a fresh interpreter (start-up included), the
  whole job: read, derive, percentiles, intervals, attribution, report;
- floor: a fresh interpreter that reads the same files with pyarrow and computes the same
  percentiles (p50/p90/p95/p99 of every slice and of the total) with numpy alone.
Also the in-process cost of the intervals (stats.compare_percentile) against np.percentile, and
reading a vLLM result with 10,000 requests of 500 inter-token gaps each.
Peak memory is the child's max RSS. Run: `make bench` (writes bench/out/, prints a table).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
OUT = HERE / "out"
SIZES = (1_000, 100_000, 1_000_000)
SLICES = ("network", "queue", "prefill", "decode", "app")
BUDGET = """version: 1
percentile: 95
slo: {ttft: 1200, total: 6000}
slices: {network: 150, queue: 250, prefill: 800, decode: 4200, app: 300}
first_token_after: prefill
"""
FLOOR = """
import numpy as np, pyarrow.csv, pyarrow.parquet
for path in sys.argv[1:3]:
    if path.endswith(".parquet"):
        t = pyarrow.parquet.read_table(path)
    else:
        t = pyarrow.csv.read_csv(path)
    total = 0
    for name in {slices!r}:
        x = t.column(name + "_ms").to_numpy()
        total = total + x
        np.percentile(x, [50, 90, 95, 99])
    np.percentile(total, [50, 90, 95, 99])
"""


def make_tables(n: int, seed: int, slow: float) -> dict[str, Path]:
    import pyarrow as pa
    import pyarrow.csv
    import pyarrow.parquet

    rng = np.random.default_rng(seed)
    cols = {
        # fresh ids per run, as most tools write them (paired runs cost more: Shapley)
        "request_id": pa.array([f"r{seed}-{i}" for i in range(n)]),
        "network_ms": rng.lognormal(np.log(45), 0.35, n).round(3),
        "queue_ms": rng.exponential(35, n).round(3),
        "prefill_ms": rng.lognormal(np.log(300), 0.4, n).round(3),
        "decode_ms": (rng.lognormal(np.log(2500), 0.3, n) * slow).round(3),
        "app_ms": rng.lognormal(np.log(60), 0.3, n).round(3),
    }
    table = pa.table(cols)
    paths = {"csv": OUT / f"{seed}-{n}.csv", "parquet": OUT / f"{seed}-{n}.parquet"}
    if not paths["csv"].exists():
        pyarrow.csv.write_csv(table, paths["csv"])
        pyarrow.parquet.write_table(table, paths["parquet"])
    return paths


def timed(code: str, *args: str) -> tuple[float, float]:
    """Wall seconds of a fresh interpreter running `code` (start-up included), and its max RSS."""
    script = (
        "import json, resource, sys, time\nt0 = time.perf_counter()\n"
        + code
        + (
            "\nrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024"
            '\nprint(json.dumps({"rss_mb": rss}), file=sys.stderr)\n'
        )
    )
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode not in (0, 1):
        raise SystemExit(f"failed: {done.stderr[-2000:]}")
    rss = json.loads(done.stderr.strip().splitlines()[-1])["rss_mb"]
    return seconds, rss


def best(code: str, *args: str, repeat: int = 3) -> tuple[float, float]:
    runs = [timed(code, *args) for _ in range(repeat)]
    return min(r[0] for r in runs), max(r[1] for r in runs)


def main() -> None:
    OUT.mkdir(exist_ok=True)
    budget = OUT / "budget.yml"
    budget.write_text(BUDGET)
    compare = (
        "from budgetdiff.cli import main\n"
        "code = main(['compare', '--base', sys.argv[1], '--head', sys.argv[2], '--budget', "
        f"{str(budget)!r}, '--output', 'json'])\n"
        "sys.stdout.flush()\n"
    )
    floor = FLOOR.format(slices=SLICES)
    rows = []
    for n in SIZES:
        base, head = make_tables(n, 1, 1.0), make_tables(n, 2, 1.1)
        for kind in ("parquet", "csv"):
            args = (str(base[kind]), str(head[kind]))
            repeat = 3 if n < 1_000_000 else 2
            t, rss = best(compare + "\nsys.stdout = open('/dev/null', 'w')", *args, repeat=repeat)
            f, frss = best(floor, *args, repeat=repeat)
            rows.append(
                {
                    "requests_per_side": n,
                    "format": kind,
                    "budgetdiff_s": round(t, 3),
                    "floor_s": round(f, 3),
                    "ratio": round(t / f, 2),
                    "budgetdiff_rss_mb": round(rss),
                    "floor_rss_mb": round(frss),
                }
            )
            print(json.dumps(rows[-1]), flush=True)
    rows.append(interval_cost())
    print(json.dumps(rows[-1]), flush=True)
    rows.append(model_cost())
    print(json.dumps(rows[-1]), flush=True)
    rows.append(vllm_read())
    print(json.dumps(rows[-1]), flush=True)
    (OUT / "results.json").write_text(json.dumps(rows, indent=2))
    print_table(rows)


def interval_cost(n: int = 1_000_000) -> dict[str, object]:
    """In process: the interval of the change at p95 vs the percentiles alone."""
    from budgetdiff import stats

    rng = np.random.default_rng(5)
    a, b = rng.lognormal(0, 0.4, n), rng.lognormal(0.05, 0.4, n)

    def clock(f: object, repeat: int = 5) -> float:
        out = []
        for _ in range(repeat):
            t = time.perf_counter()
            f()  # type: ignore[operator]
            out.append(time.perf_counter() - t)
        return min(out)

    pct = clock(lambda: (np.percentile(a, 95), np.percentile(b, 95)))
    ci = clock(lambda: stats.compare_percentile(a, b, 95, 0.95, family_size=8))
    return {
        "interval_at_1M": {
            "percentiles_s": round(pct, 4),
            "with_interval_s": round(ci, 4),
            "ratio": round(ci / pct, 2),
        }
    }


def model_cost(n: int = 1_000_000) -> dict[str, object]:
    """In process, 5 slices: the parts of the p95 (Euler allocation at the quantile) and what to
    fix first (each slice 10% faster, recomputed), against np.percentile of the total."""
    from budgetdiff.budget.file import parse_budget
    from budgetdiff.measure import attribution, whatif
    from budgetdiff.measure.prepare import prepare, slice_sum
    from budgetdiff.measure.rows import slice_parts
    from budgetdiff.table import Run

    rng = np.random.default_rng(6)
    slices = {s: rng.lognormal(np.log(100), 0.5, n) for s in SLICES}
    budget = parse_budget(BUDGET, "budget.yml")
    prep = prepare(Run(source="bench", n=n, slices=slices), budget)
    parts = slice_parts(prep)
    total = slice_sum(parts)

    def clock(f: object, repeat: int = 3) -> float:
        out = []
        for _ in range(repeat):
            t = time.perf_counter()
            f()  # type: ignore[operator]
            out.append(time.perf_counter() - t)
        return min(out)

    pct = clock(lambda: np.percentile(total, 95))
    euler = clock(lambda: attribution.quantile_contributions(parts, total, 95))
    fix = clock(lambda: whatif.fix_first(prep, budget, parts))
    return {
        "model_at_1M": {
            "percentile_s": round(pct, 4),
            "parts_s": round(euler, 4),
            "fix_first_s": round(fix, 4),
        }
    }


def vllm_read(n: int = 10_000, gaps: int = 500) -> dict[str, object]:
    """Reading a vLLM `--save-result --save-detailed` file of 10,000 requests x 500 ITLs."""
    rng = np.random.default_rng(6)
    sample = HERE.parents[1] / "shared/samples/generated/vllm/base/vllm_bench_serve.json"
    doc = json.loads(sample.read_text())  # the real file's layout, scaled up
    itls = rng.lognormal(np.log(0.012), 0.2, (n, gaps))
    ttfts = rng.lognormal(np.log(0.1), 0.3, n)
    doc.update(
        {
            "num_prompts": n,
            "completed": n,
            "failed": 0,
            "input_lens": [200] * n,
            "output_lens": [gaps + 1] * n,
            "ttfts": ttfts.tolist(),
            "itls": itls.tolist(),
            "latencies": (ttfts + itls.sum(axis=1)).tolist(),
            "start_times": np.cumsum(rng.exponential(0.05, n)).tolist(),
            "generated_texts": [""] * n,
            "errors": [""] * n,
        }
    )
    for key in ("queue_times",):
        doc.pop(key, None)
    path = OUT / "vllm-10k-500.json"
    if not path.exists():
        path.write_text(json.dumps(doc))
    code = (
        "from budgetdiff.formats import ReadOptions, detect\n"
        "data = open(sys.argv[1], 'rb').read()\n"
        "runs = detect.read(data, sys.argv[1], 'auto', ReadOptions())\n"
        "assert runs[0].n == 10000 and len(runs[0].itl.values) == 5_000_000\n"
    )
    t, rss = best(code, str(path), repeat=3)
    return {
        "vllm_10k_requests_500_itls": {
            "read_s": round(t, 3),
            "rss_mb": round(rss),
            "file_mb": round(path.stat().st_size / 2**20),
        }
    }


def print_table(rows: list[dict[str, object]]) -> None:
    print("\n| requests per side | format | budgetdiff | floor | ratio | peak RSS |")
    print("|---:|---|---:|---:|---:|---:|")
    for r in rows:
        if "format" in r:
            print(
                f"| {r['requests_per_side']:,} | {r['format']} | {r['budgetdiff_s']} s | "
                f"{r['floor_s']} s | {r['ratio']}x | {r['budgetdiff_rss_mb']} MB |"
            )


if __name__ == "__main__":
    main()
