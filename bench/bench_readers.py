"""Every reader against its floor, at 10,000 and 100,000 requests (1,000,000 where cheap).

Files are the real samples (`../shared/samples/generated/*/base|head`) scaled up: their
per-request records repeated to n (ids made unique), base from the base run, head from the head
run, so base and head differ as the real runs do. Text the readers skip is kept; genai-perf's
requests and inference-perf's records are cut to 16 streamed chunks / no prompt and response
text, or 100,000 requests would not fit in 2 GB. The native tables carry the vLLM sample's
values (ttft, decode, total and the inter-token gaps: a list per row, or a text cell in CSV).

For each format and size, each in a fresh interpreter, back to back:
- budgetdiff: `budgetdiff compare --base B --head H --format F --output json` (the whole job);
- floor: read the same two files (whole, as budgetdiff reads them: it also takes files from git)
  with orjson (JSON) or pyarrow (tables) and compute the
  percentiles (p50/p90/p95/p99) of the same columns with numpy: TTFT, decode, total and the
  pooled inter-token gaps where the format has them. Where the columns cannot be had without it
  the floor does the same work (genai-perf: the SSE chunks parsed to drop empty ones; SGLang:
  its `Infinity` replaced before orjson).
Also the fixed cost: a 100-row native CSV compare against `python -c "import numpy, pyarrow"`.

Reports the best wall time of `--repeat` runs, the ratio, peak RSS of each, and the growth
exponent from the smallest to the largest size of the time beyond the fixed cost (the 100-row
compare for budgetdiff, the imports for the floor), for both. Run:
`python bench/bench_readers.py [--sizes 10000,100000] [--formats aiperf,vllm]`; files go to
`$TMPDIR/budgetdiff-bench` (never to the repository).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
SAMPLES = HERE.parents[1] / "shared" / "samples" / "generated"
WORK = Path(tempfile.gettempdir()) / "budgetdiff-bench"
CHUNKS = 16  # streamed chunks kept per genai-perf request
WARM_UP = 100  # requests per side of the run that pays the fixed cost before the one timed
PYTHON = sys.executable  # --python: another environment's (a non-editable install)
# An installed package has its bytecode compiled; PYTHONDONTWRITEBYTECODE (set in some dev
# shells) would make every run compile budgetdiff again. The runs start in WORK: `python -c`
# imports from its working directory first, and the repository's budgetdiff would shadow the
# one installed in another environment (--python, --baseline).
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}

CLIENT_BUDGET = """version: 1
percentile: 95
slo: {{ttft: 1200, total: 6000{itl}}}
slices: {{first_token: 1000, decode: 5000}}
first_token_after: first_token
"""
OTLP_BUDGET = """version: 1
percentile: 95
slo: {ttft: 1200, total: 6000}
slices: {queue: 200, prefill: 800, decode: 5000}
first_token_after: prefill
"""

# ------------------------------------------------------------------ generators


def _orjson() -> Any:
    import orjson

    return orjson


def _sample(tool: str, side: str, name: str) -> bytes:
    return (SAMPLES / tool / side / name).read_bytes()


def _cycle(items: list[Any], n: int) -> list[Any]:
    return [items[i % len(items)] for i in range(n)]


def make_aiperf(side: str, n: int, path: Path) -> None:
    orjson = _orjson()
    lines = _sample("aiperf", side, "profile_export.jsonl").splitlines()
    records = [orjson.loads(line) for line in lines if line.strip()]
    with path.open("wb") as out:
        for i in range(n):
            record = records[i % len(records)]
            record["metadata"]["x_request_id"] = f"{side}-{i}"
            out.write(orjson.dumps(record) + b"\n")


def _scaled_results(doc: dict[str, Any], n: int) -> dict[str, Any]:
    """vLLM / SGLang: every per-request list repeated to n."""
    count = len(doc["ttfts"])
    for name, value in doc.items():
        if isinstance(value, list) and len(value) == count:
            doc[name] = _cycle(value, n)
    doc["completed"] = n
    return doc


def make_vllm(side: str, n: int, path: Path) -> None:
    orjson = _orjson()
    doc = _scaled_results(orjson.loads(_sample("vllm", side, "vllm_bench_serve.json")), n)
    path.write_bytes(orjson.dumps(doc))


def make_sglang(side: str, n: int, path: Path) -> None:
    text = _sample("sglang", side, "sglang_bench_serving.jsonl").replace(b"Infinity", b'"INF"')
    orjson = _orjson()
    doc = _scaled_results(orjson.loads(text), n)
    path.write_bytes(orjson.dumps(doc).replace(b'"INF"', b"Infinity") + b"\n")


def make_genai_perf(side: str, n: int, path: Path) -> None:
    orjson = _orjson()
    doc = orjson.loads(_sample("genai-perf", side, "profile_export.json"))
    requests = doc["experiments"][0]["requests"]
    for request in requests:
        request["response_timestamps"] = request["response_timestamps"][: CHUNKS + 1]
        request["response_outputs"] = request["response_outputs"][: CHUNKS + 1]
    doc["experiments"][0]["requests"] = _cycle(requests, n)
    path.write_bytes(orjson.dumps(doc))


def make_guidellm(side: str, n: int, path: Path) -> None:
    orjson = _orjson()
    doc = orjson.loads(_sample("guidellm", side, "benchmarks.json"))
    requests = doc["benchmarks"][0]["requests"]
    rows = []
    for i, row in enumerate(_cycle(requests["successful"], n)):
        rows.append({**row, "request_id": f"{side}-{i}"})
    requests["successful"] = rows
    path.write_bytes(orjson.dumps(doc))


def make_inference_perf(side: str, n: int, path: Path) -> None:
    orjson = _orjson()
    records = orjson.loads(_sample("inference-perf", side, "per_request_lifecycle_metrics.json"))
    for record in records:
        record["request"] = record["response"] = ""
    path.write_bytes(orjson.dumps(_cycle(records, n)))


def make_otlp(side: str, n: int, path: Path) -> None:
    orjson = _orjson()
    doc = orjson.loads(_sample("otlp-json", f"vllm-{side}", "vllm_style_server_spans.otlp.json"))
    scope = doc["resourceSpans"][0]["scopeSpans"][0]
    spans = []
    for i, span in enumerate(_cycle(scope["spans"], n)):
        spans.append({**span, "spanId": f"{i:016x}", "traceId": f"{i:032x}"})
    scope["spans"] = spans
    path.write_bytes(orjson.dumps(doc))


def make_llmperf(side: str, n: int, path: Path) -> None:
    orjson = _orjson()
    rows = orjson.loads(
        (SAMPLES.parent / "fetched/llmperf/anyscale_70b_individual_responses.json").read_bytes()
    )
    rng = np.random.default_rng(1 if side == "base" else 2)
    slow = 1.0 if side == "base" else 1.1
    out = []
    for row in _cycle(rows, n):  # one sample: head's decode 10% slower
        jitter = float(rng.uniform(0.95, 1.05))
        ttft = row["ttft_s"] * jitter
        total = ttft + (row["end_to_end_latency_s"] - row["ttft_s"]) * jitter * slow
        out.append({**row, "ttft_s": ttft, "end_to_end_latency_s": total})
    path.write_bytes(orjson.dumps(out))


def _native_columns(side: str, n: int) -> dict[str, Any]:
    orjson = _orjson()
    doc = _scaled_results(orjson.loads(_sample("vllm", side, "vllm_bench_serve.json")), n)
    ttft = np.array(doc["ttfts"]) * 1000.0
    total = np.array(doc["latencies"]) * 1000.0
    return {
        "request_id": [f"{side}-{i}" for i in range(n)],
        "first_token_ms": ttft.round(3),
        "decode_ms": (total - ttft).round(3),
        "total_ms": total.round(3),
        "itl_ms": [[round(g * 1000.0, 3) for g in gaps] for gaps in doc["itls"]],
    }


def make_csv_itl(side: str, n: int, path: Path) -> None:
    import pyarrow as pa
    import pyarrow.csv as pacsv

    cols = _native_columns(side, n)
    cols["itl_ms"] = ["[" + ", ".join(map(str, gaps)) + "]" for gaps in cols["itl_ms"]]
    pacsv.write_csv(pa.table(cols), path)


def make_parquet_itl(side: str, n: int, path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    cols = _native_columns(side, n)
    cols["itl_ms"] = pa.array(cols["itl_ms"], type=pa.list_(pa.float64()))
    pq.write_table(pa.table(cols), path)


def make_jsonl_itl(side: str, n: int, path: Path) -> None:
    orjson = _orjson()
    cols = _native_columns(side, n)
    names = list(cols)
    with path.open("wb") as out:
        for i in range(n):
            row = {k: cols[k][i] for k in names}
            out.write(orjson.dumps(row, option=orjson.OPT_SERIALIZE_NUMPY) + b"\n")


# ------------------------------------------------------------------ floors

FLOOR_HEAD = """
import itertools, numpy as np
def pct(ttft, total, gaps=None):
    ttft, total = np.asarray(ttft, dtype=float), np.asarray(total, dtype=float)
    for x in (ttft, total - ttft, total) + (() if gaps is None else (gaps,)):
        np.percentile(x, [50, 90, 95, 99])
def flat(lists):
    return np.fromiter(itertools.chain.from_iterable(lists), dtype=float)
for path in sys.argv[1:3]:
"""
FLOOR = {
    "aiperf": """
    import orjson
    ttft, total, gaps = [], [], []
    for line in open(path, "rb").read().splitlines():
        m = orjson.loads(line)["metrics"]
        ttft.append(m["time_to_first_token"]["value"])
        total.append(m["request_latency"]["value"])
        gaps.append(m["inter_chunk_latency"]["value"])
    pct(ttft, total, flat(gaps))
""",
    "vllm": """
    import orjson
    d = orjson.loads(open(path, "rb").read())
    pct(np.array(d["ttfts"]) * 1e3, np.array(d["latencies"]) * 1e3, flat(d["itls"]) * 1e3)
""",
    "sglang": """
    import orjson
    d = orjson.loads(open(path, "rb").read().replace(b"Infinity", b"null"))
    lengths = np.fromiter(map(len, d["itls"]), dtype=np.int64)
    gaps = flat(d["itls"]) * 1e3
    sums = np.add.reduceat(gaps, np.concatenate([[0], np.cumsum(lengths)[:-1]]))
    ttft = np.array(d["ttfts"]) * 1e3
    pct(ttft, ttft + sums, gaps)
""",
    "genai-perf": """
    import orjson
    d = orjson.loads(open(path, "rb").read())
    ttft, total, gaps = [], [], []
    for r in d["experiments"][0]["requests"]:
        keep = [
            j for j, o in enumerate(r["response_outputs"])
            if any(orjson.loads(p)["choices"][0]["delta"].get("content")
                   for p in (e.strip().removeprefix("data:").strip()
                             for e in o["response"].split("\\n\\n"))
                   if p and p != "[DONE]")
        ]
        t = np.array(r["response_timestamps"], dtype=np.int64)[keep] - r["timestamp"]
        ttft.append(t[0] / 1e6); total.append(t[-1] / 1e6); gaps.append(np.diff(t) / 1e6)
    pct(ttft, total, np.concatenate(gaps))
""",
    "guidellm": """
    import orjson
    d = orjson.loads(open(path, "rb").read())
    rows = d["benchmarks"][0]["requests"]["successful"]
    pct([r["time_to_first_token_ms"] for r in rows], [r["request_latency"] * 1e3 for r in rows])
""",
    "inference-perf": """
    import orjson
    ttft, total, gaps = [], [], []
    for r in orjson.loads(open(path, "rb").read()):
        t = np.array(r["info"]["response_metrics"]["output_token_times"])
        start = r["start_time"]
        ttft.append((t[0] - start) * 1e3); total.append((r["end_time"] - start) * 1e3)
        gaps.append(np.diff(t) * 1e3)
    pct(ttft, total, np.concatenate(gaps))
""",
    "otlp": """
    import orjson
    d = orjson.loads(open(path, "rb").read())
    ttft, total = [], []
    for s in d["resourceSpans"][0]["scopeSpans"][0]["spans"]:
        a = {x["key"]: x["value"] for x in s["attributes"]}
        ttft.append(a["gen_ai.latency.time_to_first_token"]["doubleValue"] * 1e3)
        total.append(a["gen_ai.latency.e2e"]["doubleValue"] * 1e3)
    pct(ttft, total)
""",
    "llmperf": """
    import orjson
    rows = orjson.loads(open(path, "rb").read())
    pct([r["ttft_s"] * 1e3 for r in rows], [r["end_to_end_latency_s"] * 1e3 for r in rows])
""",
    "csv-itl": """
    import pyarrow.csv, pyarrow.compute as pc
    t = pyarrow.csv.read_csv(path)
    cells = pc.split_pattern(pc.utf8_trim(t.column("itl_ms"), "[]"), ", ")
    gaps = pc.cast(pc.list_flatten(cells), "float64").to_numpy()
    pct(t.column("first_token_ms").to_numpy(), t.column("total_ms").to_numpy(), gaps)
""",
    "parquet-itl": """
    import pyarrow.parquet, pyarrow.compute as pc
    t = pyarrow.parquet.read_table(path)
    gaps = pc.list_flatten(t.column("itl_ms")).to_numpy()
    pct(t.column("first_token_ms").to_numpy(), t.column("total_ms").to_numpy(), gaps)
""",
    "jsonl-itl": """
    import pyarrow.json, pyarrow.compute as pc
    t = pyarrow.json.read_json(path)
    gaps = pc.list_flatten(t.column("itl_ms")).to_numpy()
    pct(t.column("first_token_ms").to_numpy(), t.column("total_ms").to_numpy(), gaps)
""",
}

# name -> (generator, file suffix, --format, budget, sizes beyond 100k allowed)
Maker = Callable[[str, int, Path], None]
FORMATS: dict[str, tuple[Maker, str, str, str]] = {
    "aiperf": (make_aiperf, "jsonl", "aiperf", CLIENT_BUDGET.format(itl=", itl: 60")),
    "vllm": (make_vllm, "json", "vllm", CLIENT_BUDGET.format(itl=", itl: 60")),
    "sglang": (make_sglang, "jsonl", "sglang", CLIENT_BUDGET.format(itl=", itl: 60")),
    "genai-perf": (make_genai_perf, "json", "genai-perf", CLIENT_BUDGET.format(itl=", itl: 60")),
    "guidellm": (make_guidellm, "json", "guidellm", CLIENT_BUDGET.format(itl="")),
    "inference-perf": (
        make_inference_perf,
        "json",
        "inference-perf",
        CLIENT_BUDGET.format(itl=", itl: 60"),
    ),
    "otlp": (make_otlp, "json", "otlp", OTLP_BUDGET),
    "llmperf": (make_llmperf, "json", "llmperf", CLIENT_BUDGET.format(itl="")),
    "csv-itl": (make_csv_itl, "csv", "native", CLIENT_BUDGET.format(itl=", itl: 60")),
    "parquet-itl": (make_parquet_itl, "parquet", "native", CLIENT_BUDGET.format(itl=", itl: 60")),
    "jsonl-itl": (make_jsonl_itl, "jsonl", "native", CLIENT_BUDGET.format(itl=", itl: 60")),
}
# the console script's entry, as a user runs it
COMPARE = """
from budgetdiff.cli import entry
sys.stdout = open("/dev/null", "w")
sys.argv = ["budgetdiff", "compare", "--base", sys.argv[1], "--head", sys.argv[2], "--budget",
            sys.argv[3], "--format", sys.argv[4], "--output", (sys.argv[5:] or ["json"])[0]]
try:
    entry()
except SystemExit as e:
    if e.code not in (0, 1):
        raise
"""
HELP = """
from budgetdiff.cli import entry
sys.stdout = open("/dev/null", "w")
sys.argv = ["budgetdiff", "--help"]
try:
    entry()
except SystemExit:
    pass
"""

# ------------------------------------------------------------------ timing


def timed(
    code: str, *args: str, python: str = "", env: dict[str, str] | None = None
) -> tuple[float, float, float]:
    """Wall seconds of a fresh interpreter running `code` (start-up included), its CPU seconds
    (user + system: what the process did, less moved by the load of other jobs than the wall
    time) and its max RSS."""
    # VmHWM, not ru_maxrss: a child's ru_maxrss starts from its parent's (the generator's) RSS
    script = (
        "import sys\n"
        + code
        + "\nhwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM')][0]"
        + "\nprint(int(hwm.split()[1]) / 1024, file=sys.stderr)\n"
    )
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        [python or PYTHON, "-c", script, *args],
        capture_output=True,
        text=True,
        env=ENV if env is None else env,
        cwd=WORK,
    )
    seconds = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    if done.returncode != 0:
        raise SystemExit(f"failed: {done.stderr[-2000:]}")
    return seconds, cpu, float(done.stderr.strip().splitlines()[-1])


# The work beyond the fixed cost, measured in one process rather than as the difference of
# two: the same command on the format's 100-request files first (imports, the budget's models,
# the reader's first call), then the CPU time of the command on the large files alone.
WORK_ONLY = """
import resource, sys, time
code, argv = {code!r}, sys.argv[:]
sys.argv = [argv[0], *argv[3:5], *argv[5:]]
exec(code)
before = resource.getrusage(resource.RUSAGE_SELF)
sys.argv = [argv[0], *argv[1:3], *argv[5:]]
exec(code)
after = resource.getrusage(resource.RUSAGE_SELF)
print(after.ru_utime - before.ru_utime, after.ru_stime - before.ru_stime, file=sys.stderr)
"""


def work_cpu(
    code: str, large: list[str], small: list[str], rest: tuple[str, ...]
) -> tuple[float, float]:
    """User and system CPU seconds of `code` on the large files beyond a run on the small ones
    (see WORK_ONLY). System time is mostly the page faults of fresh memory, whose cost moves
    with the memory load of other jobs."""
    script = WORK_ONLY.format(code=code)
    done = subprocess.run(
        [PYTHON, "-c", script, *large, *small, *rest],
        capture_output=True,
        text=True,
        env=ENV,
        cwd=WORK,
    )
    if done.returncode != 0:
        raise SystemExit(f"failed: {done.stderr[-2000:]}")
    user, system = done.stderr.strip().splitlines()[-1].split()
    return float(user), float(system)


def pair(
    a: tuple[str, ...], b: tuple[str, ...], repeat: int
) -> tuple[tuple[float, float, float], ...]:
    """Best wall time, best CPU time and peak RSS of two commands, run alternately (the same
    load for both)."""
    runs_a, runs_b = [], []
    for _ in range(repeat):
        runs_a.append(timed(*a))
        runs_b.append(timed(*b))
    return tuple(
        (min(r[0] for r in runs), min(r[1] for r in runs), max(r[2] for r in runs))
        for runs in (runs_a, runs_b)
    )


def fixed_cost(repeat: int) -> dict[str, Any]:
    """A 100-row compare (native CSV) against importing numpy and pyarrow."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    paths = []
    for side, slow in (("base", 1.0), ("head", 1.1)):
        rng = np.random.default_rng(len(side))
        table = pa.table(
            {
                "first_token_ms": rng.lognormal(np.log(300), 0.4, 100).round(3),
                "decode_ms": (rng.lognormal(np.log(2500), 0.3, 100) * slow).round(3),
            }
        )
        path = WORK / f"fixed-{side}.csv"
        pacsv.write_csv(table, path)
        paths.append(str(path))
    budget = WORK / "fixed.yml"
    budget.write_text(CLIENT_BUDGET.format(itl=""))
    (t, tc, _), (f, fc, _) = pair(
        (COMPARE, *paths, str(budget), "native"), ("import numpy, pyarrow",), repeat
    )
    return {
        "fixed": {
            "compare_100_s": round(t, 3),
            "import_s": round(f, 3),
            "ratio": round(t / f, 2),
            "compare_100_cpu_s": round(tc, 3),
            "import_cpu_s": round(fc, 3),
            "cpu_ratio": round(tc / fc, 2),
            "repeat": repeat,
        }
    }


STARTUP_BOUND = 3.0  # a 100-row compare's wall time over `import numpy, pyarrow`


def startup(repeat: int, baseline: str | None = None) -> None:
    """The fixed cost in detail, every command in turn (the same load for each), best of
    `repeat`: the 100-row compare with JSON output, with the default table, and with the default
    `--format auto`; `budgetdiff --help`; the bare imports, and the imports of the libraries a
    compare cannot do without (PyYAML for the budget)."""
    fixed_cost(1)  # writes the files; compiles what the first run imports
    paths = [str(WORK / f"fixed-{side}.csv") for side in ("base", "head")]
    compare = (COMPARE, *paths, str(WORK / "fixed.yml"), "native")
    commands = {
        "100-row compare, --output json": (*compare, "json"),
        "100-row compare, table output": (*compare, "table"),
        "100-row compare, --format auto (the default), table output": (
            *compare[:-1],
            "auto",
            "table",
        ),
        "budgetdiff --help": (HELP,),
        "import numpy, pyarrow": ("import numpy, pyarrow",),
        "import numpy, pyarrow, yaml": ("import numpy, pyarrow, yaml",),
    }
    others = {f"100-row compare, --output json, {baseline}": baseline} if baseline else {}
    # pyarrow's to_numpy imports pandas whenever it is installed (0.4 s): the dev environment
    # has it (Report.to_frame's extra), the Action's lock and `pip install budgetdiff` do not
    blocker = WORK / "no-pandas" / "pandas"
    blocker.mkdir(parents=True, exist_ok=True)
    (blocker / "__init__.py").write_text("raise ImportError('hidden: no pandas extra')\n")
    hidden = {**ENV, "PYTHONPATH": str(blocker.parent)}
    no_pandas = "100-row compare, --output json, without pandas installed"
    names = [*commands, no_pandas, *others]
    runs: dict[str, list[tuple[float, float, float]]] = {n: [] for n in names}
    for _ in range(repeat):
        for name, command in commands.items():
            runs[name].append(timed(*command))
        runs[no_pandas].append(timed(*compare, "json", env=hidden))
        for name, python in others.items():  # another environment: the code before a change
            runs[name].append(timed(*compare, "json", python=python))
    floor = min(r[0] for r in runs["import numpy, pyarrow"])
    floor_cpu = min(r[1] for r in runs["import numpy, pyarrow"])
    print(f"\nbest of {repeat}, {PYTHON}:")
    print("| command | wall | ratio | CPU | ratio |\n|---|---:|---:|---:|---:|")
    for name, times in runs.items():
        wall, cpu = min(r[0] for r in times), min(r[1] for r in times)
        print(
            f"| {name} | {wall:.3f} s | {wall / floor:.2f}x | {cpu:.3f} s | "
            f"{cpu / floor_cpu:.2f}x |"
        )
    # the guard (issue 25): a 100-row compare within 3x of importing numpy and pyarrow
    for name in ("100-row compare, --output json", no_pandas):
        ratio = min(r[0] for r in runs[name]) / floor
        verdict = "within" if ratio <= STARTUP_BOUND else "OVER"
        print(f"start-up guard, {name}: {ratio:.2f}x, {verdict} the {STARTUP_BOUND:g}x bound")


# The start-up in instructions: the same commands, each counted once by valgrind's callgrind.
# An instruction count does not move with the load of other jobs the way a wall time does (a
# 2-core machine shared with other work reads its floor anywhere from 0.10 s to 0.25 s), so the
# split of the fixed cost between the libraries, budgetdiff's imports and the run is exact here.
INSTRUCTION_STEPS = {
    "import numpy, pyarrow": "import numpy, pyarrow",
    "+ scipy.special": "import numpy, pyarrow, scipy.special",
    "+ pydantic, yaml, tabulate (every library a compare imports)": (
        "import numpy, pyarrow, scipy.special, pydantic, yaml, tabulate"
    ),
    "+ budgetdiff's modules a compare imports": (
        "import budgetdiff.evaluate.orchestrator, budgetdiff.commands.compare"
    ),
}


def instructions(python: str) -> None:
    """Each step's instruction count over `import numpy, pyarrow`'s, then the 100-row compare's
    and `budgetdiff --help`'s (needs valgrind)."""
    fixed_cost(1)  # writes the files; compiles what the first run imports
    paths = [str(WORK / f"fixed-{side}.csv") for side in ("base", "head")]
    steps = {name: (code,) for name, code in INSTRUCTION_STEPS.items()}
    steps["the 100-row compare, --output json"] = (
        COMPARE,
        *paths,
        str(WORK / "fixed.yml"),
        "native",
        "json",
    )
    steps["budgetdiff --help"] = (HELP,)
    counts = {name: _instructions(python, *command) for name, command in steps.items()}
    floor = counts["import numpy, pyarrow"]
    print(f"\ninstructions (callgrind), {python}:")
    print("| step | instructions | vs the floor |\n|---|---:|---:|")
    for name, n in counts.items():
        print(f"| {name} | {n / 1e6:,.0f} M | {n / floor:.2f}x |")


def _instructions(python: str, code: str, *args: str) -> int:
    done = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", python, "-c",
         "import sys\n" + code, *args],
        capture_output=True, text=True, env=ENV, cwd=WORK,
    )  # fmt: skip
    found = re.search(r"Collected : (\d+)", done.stderr)
    if done.returncode != 0 or found is None:
        raise SystemExit(f"failed: {done.stderr[-2000:]}")
    return int(found.group(1))


def run_format(
    name: str, sizes: list[int], repeat: int, fixed: dict[str, Any]
) -> list[dict[str, Any]]:
    make, suffix, fmt, budget_text = FORMATS[name]
    budget = WORK / f"{name}.yml"
    budget.write_text(budget_text)
    rows: list[dict[str, Any]] = []

    def files(n: int) -> list[str]:
        paths = []
        for side in ("base", "head"):
            path = WORK / f"{name}-{side}-{n}.{suffix}"
            if not path.exists():
                make(side, n, path)
            paths.append(str(path))
        return paths

    small = files(WARM_UP)
    floor = FLOOR_HEAD + FLOOR[name]
    for n in sizes:
        paths = files(n)
        (t, tc, rss), (f, fc, frss) = pair(
            (COMPARE, *paths, str(budget), fmt), (floor, *paths), repeat
        )
        work, floor_work = [], []
        for _ in range(repeat):
            work.append(work_cpu(COMPARE, paths, small, (str(budget), fmt)))
            floor_work.append(work_cpu(floor, paths, small, ()))
        rows.append(
            {
                "format": name,
                "requests_per_side": n,
                "file_mb": round(Path(paths[0]).stat().st_size / 2**20),
                "budgetdiff_s": round(t, 2),
                "floor_s": round(f, 2),
                "ratio": round(t / f, 2),
                "budgetdiff_cpu_s": round(tc, 2),
                "floor_cpu_s": round(fc, 2),
                "budgetdiff_work_cpu_s": round(min(sum(w) for w in work), 3),
                "floor_work_cpu_s": round(min(sum(w) for w in floor_work), 3),
                "budgetdiff_work_user_s": round(min(w[0] for w in work), 3),
                "floor_work_user_s": round(min(w[0] for w in floor_work), 3),
                "budgetdiff_rss_mb": round(rss),
                "floor_rss_mb": round(frss),
                "rss_ratio": round(rss / frss, 2),
            }
        )
        print(json.dumps(rows[-1]), flush=True)
    return with_exponents(rows, fixed)


def with_exponents(rows: list[dict[str, Any]], fixed: dict[str, Any]) -> list[dict[str, Any]]:
    """The growth exponents of one format's rows, from its smallest to its largest size: of the
    wall time and of the CPU time, each beyond the fixed cost (the 100-row compare for
    budgetdiff, the imports for the floor) measured the same way."""
    if len(rows) < 2:
        return rows
    small, large = rows[0], rows[-1]
    size = large["requests_per_side"] / small["requests_per_side"]
    f = fixed["fixed"]
    costs = {
        ("budgetdiff", "s"): f["compare_100_s"],
        ("floor", "s"): f["import_s"],
        ("budgetdiff", "cpu_s"): f.get("compare_100_cpu_s"),
        ("floor", "cpu_s"): f.get("import_cpu_s"),
    }
    for (key, unit), cost in costs.items():
        if cost is None or f"{key}_{unit}" not in small:  # a run saved before CPU times
            continue
        growth = (large[f"{key}_{unit}"] - cost) / max(small[f"{key}_{unit}"] - cost, 1e-3)
        name = f"{key}_exponent" if unit == "s" else f"{key}_cpu_exponent"
        large[name] = round(math.log(max(growth, 1e-9)) / math.log(size), 2)
    for key in ("budgetdiff", "floor"):
        for part, name in (("work_cpu", "work"), ("work_user", "user")):
            if f"{key}_{part}_s" in small:
                growth = large[f"{key}_{part}_s"] / max(small[f"{key}_{part}_s"], 1e-3)
                large[f"{key}_{name}_exponent"] = round(math.log(growth) / math.log(size), 2)
    return rows


def _exponents(row: dict[str, Any], kind: str = "") -> str:
    if f"budgetdiff{kind}_exponent" not in row:
        return ""
    return f"{row[f'budgetdiff{kind}_exponent']} ({row[f'floor{kind}_exponent']})"


def print_table(fixed: dict[str, Any], rows: list[dict[str, Any]]) -> None:
    print(
        "\n| format | requests per side | file | budgetdiff | floor | ratio | peak RSS "
        "(ratio) | growth exponent (floor's) | CPU beyond start-up | CPU growth exponent "
        "(floor's) | user CPU exponent (floor's) |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        work = r.get("budgetdiff_work_cpu_s")
        cpu = f"{work} s / {r['floor_work_cpu_s']} s" if work is not None else ""
        print(
            f"| {r['format']} | {r['requests_per_side']:,} | {r['file_mb']} MB | "
            f"{r['budgetdiff_s']} s | {r['floor_s']} s | {r['ratio']}x | "
            f"{r['budgetdiff_rss_mb']} MB ({r['rss_ratio']}x) | {_exponents(r)} | {cpu} | "
            f"{_exponents(r, '_work')} | {_exponents(r, '_user')} |"
        )
    print_fixed(fixed)


def print_fixed(fixed: dict[str, Any]) -> None:
    f = fixed["fixed"]
    print(
        f"\n100-row compare {f['compare_100_s']} s, `import numpy, pyarrow` {f['import_s']} s: "
        f"{f['ratio']}x"
        + (
            f" (CPU {f['compare_100_cpu_s']} s vs {f['import_cpu_s']} s: {f['cpu_ratio']}x"
            f", best of {f['repeat']})"
            if "cpu_ratio" in f
            else ""
        )
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--formats", default=",".join(FORMATS))
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--table", action="store_true", help="print the last run's table again")
    parser.add_argument(
        "--startup",
        action="store_true",
        help="only the fixed cost: the 100-row compare against the imports, best of --repeat "
        "(needs no samples)",
    )
    parser.add_argument(
        "--instructions",
        action="store_true",
        help="only the fixed cost, in instructions (valgrind's callgrind): the libraries, "
        "budgetdiff's imports and the 100-row compare, each over `import numpy, pyarrow`",
    )
    parser.add_argument(
        "--python",
        default=sys.executable,
        help="the interpreter of the runs (another environment's: a non-editable install)",
    )
    parser.add_argument(
        "--baseline",
        metavar="PYTHON",
        help="with --startup: also the compare in this interpreter's environment (another "
        "version of budgetdiff installed there), in the same rounds",
    )
    args = parser.parse_args(argv)
    global PYTHON
    PYTHON = args.python
    if args.table:
        saved = json.loads((WORK / "results.json").read_text())
        rows = []
        for name in dict.fromkeys(r["format"] for r in saved["rows"]):
            rows += with_exponents([r for r in saved["rows"] if r["format"] == name], saved)
        print_table(saved, rows)
        return
    WORK.mkdir(exist_ok=True)
    if args.startup:
        startup(args.repeat, args.baseline)
        return
    if args.instructions:
        instructions(args.python)
        return
    if not SAMPLES.is_dir():
        raise SystemExit(f"needs the real samples in {SAMPLES}")
    fixed = fixed_cost(max(args.repeat, 5))
    print(json.dumps(fixed), flush=True)
    sizes = [int(s) for s in args.sizes.split(",")]
    rows = []
    for name in args.formats.split(","):
        rows += run_format(name, sizes, args.repeat, fixed)
    (WORK / "results.json").write_text(json.dumps({**fixed, "rows": rows}, indent=2))
    print_table(fixed, rows)


if __name__ == "__main__":
    main()
