"""`budgetdiff compare` on large native Parquet tables against the read floor and DuckDB.

Tables of the usual shape (request_id, network/queue/prefill/decode/app in ms, ttft_ms, e2e_ms,
output_tokens), the same requests on both sides (same ids and output token counts, so they pair),
head's latencies drawn anew with its decode 5% slower. Written in chunks of 1,000,000 rows, so
making a table of 30,000,000 rows holds one chunk at a time. For each size, each in a fresh
interpreter, back to back:
- budgetdiff: `budgetdiff compare --base B --head H --budget X --output json` (the whole job);
- floor: pyarrow reads both files (every column, as budgetdiff does) and numpy takes p50, p90,
  p95 and p99 of the seven latency columns of each side;
- DuckDB: exact `quantile_cont` of the same columns at the same percentiles on the same files.
Each run's peak memory is its own max RSS (os.wait4's rusage of that child); a watchdog kills a
run whose RSS passes `--max-gb` (default 8: the machine is shared) or that outlasts
`--timeout`, and the table says so. The load average is written beside every figure.

Run: `nice -n 10 .venv/bin/python bench/bench_scale.py [--sizes 1e6,1e7] [--repeat 2]`; files go
to `$TMPDIR/budgetdiff-scale` (never to the repository); `--table` prints the last run again.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

WORK = Path(tempfile.gettempdir()) / "budgetdiff-scale"
RESULTS = WORK / "results.jsonl"
CHUNK = 1_000_000
SLICES = ("network", "queue", "prefill", "decode", "app")
LATENCIES = (*(f"{s}_ms" for s in SLICES), "ttft_ms", "e2e_ms")
PERCENTILES = (50, 90, 95, 99)
BUDGET = """version: 1
percentile: 95
slo: {ttft: 1200, total: 12000}
slices: {network: 150, queue: 250, prefill: 800, decode: 10000, app: 300}
first_token_after: prefill
"""
FLOOR = """
import sys
import numpy as np, pyarrow.parquet
tables = [pyarrow.parquet.read_table(p) for p in sys.argv[1:3]]
for t in tables:
    for name in LATENCIES:
        np.percentile(t.column(name).to_numpy(), PERCENTILES)
"""
DUCKDB = """
import sys
import duckdb
con = duckdb.connect()
for p in sys.argv[1:3]:
    q = ", ".join(f"quantile_cont({c}, {[x / 100 for x in PERCENTILES]})" for c in LATENCIES)
    con.execute(f"SELECT {q} FROM read_parquet(?)", [p]).fetchall()
"""


def make_table(path: Path, n: int, head: bool) -> Path:
    """One side's table, written chunk by chunk (the same rows every time: fixed seeds)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    if path.exists():
        return path
    tmp = path.with_suffix(".tmp")
    writer = None
    for start in range(0, n, CHUNK):
        stop = min(n, start + CHUNK)
        chunk = _chunk(start, stop, head, pa, pc)
        writer = writer or pq.ParquetWriter(tmp, chunk.schema)
        writer.write_table(chunk)
    assert writer is not None
    writer.close()
    tmp.rename(path)
    return path


def _chunk(start: int, stop: int, head: bool, pa: Any, pc: Any) -> Any:
    k = stop - start
    same = np.random.default_rng([7, start])  # what the request asked: the same on both sides
    rng = np.random.default_rng([8 if head else 9, start])  # how fast it went: drawn anew
    ids = pc.binary_join_element_wise(
        "req-", pc.cast(pa.array(np.arange(start, stop)), "string"), ""
    )
    tokens = same.integers(16, 1024, k)
    cols = {
        "network_ms": rng.lognormal(np.log(45), 0.35, k),
        "queue_ms": rng.exponential(35, k),
        "prefill_ms": rng.lognormal(np.log(300), 0.4, k),
        "decode_ms": tokens * rng.lognormal(np.log(8), 0.25, k) * (1.05 if head else 1.0),
        "app_ms": rng.lognormal(np.log(60), 0.3, k),
    }
    cols = {name: v.round(3) for name, v in cols.items()}
    ttft = cols["network_ms"] + cols["queue_ms"] + cols["prefill_ms"]
    e2e = ttft + cols["decode_ms"] + cols["app_ms"]
    return pa.table(
        {
            "request_id": ids,
            **cols,
            "ttft_ms": ttft.round(3),
            "e2e_ms": e2e.round(3),
            "output_tokens": tokens,
        }
    )


def run(argv: list[str], max_gb: float, timeout: float, out: Path | None) -> dict[str, Any]:
    """Wall seconds, CPU seconds and peak RSS of one child (its stdout to `out`); killed past
    `max_gb` or `timeout`."""
    load = os.getloadavg()[0]
    sink = out.open("wb") if out else subprocess.DEVNULL
    start = time.perf_counter()
    errors = (WORK / "stderr.txt").open("w+b")  # a file, not a pipe: a long stderr cannot block
    child = subprocess.Popen(argv, stdout=sink, stderr=errors)
    killed: list[str] = []
    watch = threading.Thread(target=_watch, args=(child, max_gb, timeout, start, killed))
    watch.start()
    _, status, usage = os.wait4(child.pid, 0)
    seconds = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    watch.join()
    if out:
        sink.close()  # type: ignore[union-attr]
    errors.seek(0)
    err = errors.read().decode(errors="replace")
    errors.close()
    out = {
        "s": round(seconds, 3),
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 3),
        "rss_mb": round(usage.ru_maxrss / 1024),
        "load": round(load, 2),
        "exit": child.returncode,
    }
    if killed:
        out["killed"] = killed[0]
    elif child.returncode not in (0, 1):
        out["error"] = err.strip().splitlines()[-1:] or ["(no message)"]
    return out


def _watch(child: Any, max_gb: float, timeout: float, start: float, killed: list[str]) -> None:
    """Poll the child's RSS every 0.1 s; kill it past the limits (it must not take the machine)."""
    status = Path(f"/proc/{child.pid}/status")
    while child.returncode is None:
        try:
            text = status.read_text()
        except OSError:
            return
        if "VmRSS" not in text:  # a zombie: it has ended, wait4 reaps it
            return
        rss_gb = int(text.split("VmRSS:")[1].split()[0]) / 2**20
        if rss_gb > max_gb:
            killed.append(f"killed at {rss_gb:.1f} GB")
        elif time.perf_counter() - start > timeout:
            killed.append(f"killed after {timeout:.0f} s")
        if killed:
            child.kill()
            return
        time.sleep(0.1)


def measure(n: int, args: argparse.Namespace) -> list[dict[str, Any]]:
    base = make_table(WORK / f"base-{n}.parquet", n, head=False)
    head = make_table(WORK / f"head-{n}.parquet", n, head=True)
    budget = WORK / "budget.yml"
    budget.write_text(BUDGET)
    report = WORK / f"report-{n}.json"
    py = args.python
    consts = f"LATENCIES = {LATENCIES!r}\nPERCENTILES = {PERCENTILES!r}\n"
    compare = [py, "-m", "budgetdiff", "compare", "--base", str(base), "--head", str(head)]
    compare += ["--budget", str(budget), "--output", "json"]
    compare += args.extra
    commands = {
        "budgetdiff": compare,
        "floor": [py, "-c", consts + FLOOR, str(base), str(head)],
        "duckdb": [py, "-c", consts + DUCKDB, str(base), str(head)],
    }
    rows = []
    for what in args.only or commands:
        for i in range(args.repeat):
            out = report if what == "budgetdiff" else None
            row = {"rows": n, "what": what, "try": i + 1}
            row.update(run(commands[what], args.max_gb, args.timeout, out))
            print(json.dumps(row), flush=True)
            rows.append(row)
            if "killed" in row or "error" in row:
                break
    return rows


def _ok(r: dict[str, Any] | None) -> bool:
    return r is not None and "killed" not in r and "error" not in r


def best(rows: list[dict[str, Any]], n: int, what: str) -> dict[str, Any] | None:
    """The best of a size's tries (wall and CPU each at its least, RSS at its most), or the
    try that failed."""
    mine = [r for r in rows if r["rows"] == n and r["what"] == what]
    good = [r for r in mine if _ok(r)]
    if not good:
        return mine[-1] if mine else None
    return {
        "s": min(r["s"] for r in good),
        "cpu_s": min(r["cpu_s"] for r in good),
        "rss_mb": max(r["rss_mb"] for r in good),
        "loads": [r["load"] for r in good],
    }


def cell(r: dict[str, Any] | None) -> str:
    if r is None:
        return "-"
    if not _ok(r):
        return str(r.get("killed") or f"failed: {r['error'][0][:60]}")
    return f"{r['s']:.2f} s ({r['cpu_s']:.2f} s CPU)"


def ratio(x: dict[str, Any] | None, y: dict[str, Any] | None, key: str) -> str:
    if not (_ok(x) and _ok(y)) or x is None or y is None:
        return "-"
    return f"{x[key] / y[key]:.2f}x"


def gb(r: dict[str, Any] | None) -> str:
    return f"{r['rss_mb'] / 1024:.2f} GB" if r is not None and _ok(r) else "-"


def print_table(rows: list[dict[str, Any]]) -> None:
    sizes = sorted({r["rows"] for r in rows})
    print(
        "\n| rows a side | budgetdiff | floor | DuckDB exact | vs floor (CPU) | vs DuckDB (CPU) "
        "| budgetdiff peak memory | floor's | DuckDB's | load average |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for n in sizes:
        b, f, d = (best(rows, n, w) for w in ("budgetdiff", "floor", "duckdb"))
        loads = [v for r in (b, f, d) if r is not None for v in r.get("loads", [r.get("load")])]
        load = f"{min(loads):.1f}-{max(loads):.1f}" if loads else "-"
        print(
            f"| {n:,} | {cell(b)} | {cell(f)} | {cell(d)} "
            f"| {ratio(b, f, 's')} ({ratio(b, f, 'cpu_s')}) "
            f"| {ratio(b, d, 's')} ({ratio(b, d, 'cpu_s')}) "
            f"| {gb(b)} | {gb(f)} | {gb(d)} | {load} |"
        )
    growth = []
    for what in ("budgetdiff", "floor", "duckdb"):
        pts = [(n, r) for n in sizes if _ok(r := best(rows, n, what))]
        if len(pts) >= 2:
            (n1, r1), (n2, r2) = pts[0], pts[-1]
            wall = math.log(r2["s"] / r1["s"]) / math.log(n2 / n1)
            cpu = math.log(r2["cpu_s"] / r1["cpu_s"]) / math.log(n2 / n1)
            growth.append(f"{what} {wall:.2f} (CPU {cpu:.2f})")
    if growth:
        print(f"\nGrowth exponent, {sizes[0]:,} to {sizes[-1]:,} rows: {', '.join(growth)}")


COMPILE = (
    "import compileall, os, budgetdiff;"
    " compileall.compile_dir(os.path.dirname(budgetdiff.__file__), quiet=1)"
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1e6,1e7", help="rows a side, comma-separated")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--only", type=lambda s: s.split(","), help="budgetdiff,floor,duckdb")
    parser.add_argument("--max-gb", type=float, default=8.0)
    parser.add_argument("--timeout", type=float, default=900.0)
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--table", action="store_true", help="print the last run's table")
    parser.add_argument("extra", nargs="*", help="after --: more arguments for compare")
    args = parser.parse_args()
    WORK.mkdir(exist_ok=True)
    if args.table:
        print_table([json.loads(line) for line in RESULTS.read_text().splitlines()])
        return
    # budgetdiff's bytecode written first, as an install writes it: with PYTHONDONTWRITEBYTECODE
    # set (this machine sets it) every run would compile its modules again (0.2 s of CPU)
    subprocess.run([args.python, "-c", COMPILE], check=True)
    rows = []
    for n in (int(float(s)) for s in args.sizes.split(",")):
        rows += measure(n, args)
    with RESULTS.open("w") as f:
        f.writelines(json.dumps(r) + "\n" for r in rows)
    print_table(rows)


if __name__ == "__main__":
    main()
