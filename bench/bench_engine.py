"""`budgetdiff compare --engine duckdb` on native Parquet tables of 1e8 rows a side (issue 36
item 2), beside DuckDB's own exact quantiles of the same columns on the same files.

The tables are bench_scale.py's (same shape, seeds and chunked writer: request_id,
network/queue/prefill/decode/app in ms, ttft_ms, e2e_ms, output_tokens; head's decode 5%
slower), made once under `$TMPDIR/budgetdiff-engine`. For each size, each in a fresh
interpreter, back to back:
- engine: `budgetdiff compare --engine duckdb --base B --head H --budget X --output json`
  (every row of the budget: the 5 slices, ttft and total: 7 columns a side);
- duckdb: DuckDB's exact `quantile_cont` at p50/p90/p95/p99 of the same 7 columns of each side,
  one query per column (all 14 at once would hold every column in DuckDB's memory), with the
  engine path's memory limit.
Each child's peak memory is its own max RSS; a watchdog kills a run past `--max-gb` (default 8:
the machine is shared) or `--timeout`. The load average is beside every figure, and beside the
engine's, what its report computed (the pairs by id, how the change was split, `not_computed`).

Run: `nice -n 10 .venv/bin/python bench/bench_engine.py [--sizes 1e8] [--delete]`; `--delete`
removes the tables afterwards (1e8 rows a side are 7.6 GB); `--table` prints the last run again.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
import bench_scale as scale  # the sibling bench: its tables and its timed runs

WORK = Path(tempfile.gettempdir()) / "budgetdiff-engine"
RESULTS = WORK / "results.jsonl"
DUCKDB = """
import sys
import duckdb
con = duckdb.connect()
con.execute(f"SET memory_limit = '{MEMORY}'")
for p in sys.argv[1:3]:
    for c in LATENCIES:
        q = [x / 100 for x in PERCENTILES]
        con.execute(f"SELECT quantile_cont({c}, {q}) FROM read_parquet(?)", [p]).fetchall()
"""


def measure(n: int, args: argparse.Namespace) -> list[dict[str, Any]]:
    from budgetdiff.sources.engine import MEMORY_LIMIT

    WORK.mkdir(parents=True, exist_ok=True)
    scale.WORK.mkdir(parents=True, exist_ok=True)  # its run() keeps each child's stderr there
    base = scale.make_table(WORK / f"base-{n}.parquet", n, head=False)
    head = scale.make_table(WORK / f"head-{n}.parquet", n, head=True)
    budget = WORK / "budget.yml"
    budget.write_text(scale.BUDGET)
    py = args.python
    consts = f"LATENCIES = {scale.LATENCIES!r}\nPERCENTILES = {scale.PERCENTILES!r}\n"
    consts += f"MEMORY = {MEMORY_LIMIT!r}\n"
    engine = [py, "-m", "budgetdiff", "compare", "--engine", "duckdb", "--base", str(base)]
    engine += ["--head", str(head), "--budget", str(budget), "--output", "json"]
    commands = {"engine": engine, "duckdb": [py, "-c", consts + DUCKDB, str(base), str(head)]}
    rows = []
    for what in commands:
        out = WORK / f"report-{n}.json" if what == "engine" else None
        row = {"rows": n, "what": what}
        row.update(scale.run(commands[what], args.max_gb, args.timeout, out))
        if out is not None and out.exists() and out.stat().st_size:
            row.update(_computed(out))
        row["load_after"] = round(__import__("os").getloadavg()[0], 2)
        print(json.dumps(row), flush=True)
        rows.append(row)
    if args.delete:
        base.unlink()
        head.unlink()
    return rows


def _computed(report: Path) -> dict[str, Any]:
    """What the engine's report computed: how many pairs, how the change was split, and what
    it lists as not computed."""
    try:
        got = json.loads(report.read_text())
    except ValueError:
        return {}
    return {
        "pairs": got.get("pairs"),
        "attribution": got.get("attribution"),
        "not_computed": [x["what"] for x in got.get("not_computed", [])],
    }


def table(rows: list[dict[str, Any]]) -> str:
    """The measured table as docs/performance.md shows it."""
    lines = [
        "| rows a side | engine path | DuckDB exact | engine / DuckDB (CPU) | engine peak memory "
        "| DuckDB's | load average |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for n in sorted({r["rows"] for r in rows}):
        got = {r["what"]: r for r in rows if r["rows"] == n}
        e, d = got.get("engine"), got.get("duckdb")
        if e is None or d is None:
            continue
        ratio = f"{e['s'] / d['s']:.2f}x ({e['cpu_s'] / d['cpu_s']:.2f}x)"
        loads = [r[k] for r in (e, d) for k in ("load", "load_after")]
        lines.append(
            f"| {n:,} | {_time(e)} | {_time(d)} | {ratio} | {e['rss_mb'] / 1024:.2f} GB "
            f"| {d['rss_mb'] / 1024:.2f} GB | {min(loads):.1f}-{max(loads):.1f} |"
        )
    return "\n".join(lines)


def _time(r: dict[str, Any]) -> str:
    if "killed" in r or "error" in r:
        return str(r.get("killed") or r.get("error"))
    return f"{r['s']:.1f} s ({r['cpu_s']:.1f} s CPU)"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1e8", help="rows a side, comma-separated")
    ap.add_argument("--max-gb", type=float, default=8.0)
    ap.add_argument("--timeout", type=float, default=3600.0)
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--delete", action="store_true", help="remove the tables afterwards")
    ap.add_argument("--table", action="store_true", help="print the last run's table")
    args = ap.parse_args()
    if args.table:
        rows = [json.loads(line) for line in RESULTS.read_text().splitlines() if line]
        print(table(rows))
        return
    rows = []
    for size in args.sizes.split(","):
        rows += measure(int(float(size)), args)
    with RESULTS.open("a") as f:
        f.writelines(json.dumps(r) + "\n" for r in rows)
    print(table(rows))


if __name__ == "__main__":
    main()
