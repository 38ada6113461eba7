"""A seeded mutation fuzzer over the tests' own files of every format and over the budget.

Each mutant goes through `budgetdiff compare` in-process. Whatever the mutation, the answer is
a plausible report (exit 0 or 1) or one line naming the file (exit 2); never a traceback, never
exit 3 (a bug), never a line starting `::` (a workflow command to the runner).
The seeds and counts are fixed: the same mutants on every run (about 25 s in all).
"""

from __future__ import annotations

import io
import json
import math
import random
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest

from tests.support.helpers import run
from tests.support.paths import DEMO, SAMPLES

pytestmark = pytest.mark.slow  # hundreds of mutants through the CLI: `-m "not slow"` skips them

DATA = SAMPLES / "fuzz"  # small cut-downs, see tests/data/SOURCES.md
BUDGET = "version: 1\npercentile: 95\nslo: {ttft: 1200, total: 6000}\nfail_on: [breach]\n"
# The demo's budget with every kind of key, for the budget mutants.
BUDGET_FULL = """\
version: 1
percentile: 95
slo: {ttft: 1200, total: 6000, itl: 60}
slices:
  network: 150
  queue: 250
  prefill: {budget: 800, column: prefill_ms, unit: ms}
  decode: 4200
  app: 300
first_token_after: prefill
headroom: 10%
regression: {min_change: 5%, min_ms: 5, confidence: 0.95}
fail_on: [breach, regression]
"""
FILES = {
    "vllm": "vllm/fuzz_vllm_bench_serve.json",
    "sglang": "sglang/fuzz_sglang_bench_serving.jsonl",
    "aiperf": "aiperf/fuzz_profile_export.jsonl",
    "aiperf-aggregate": "aiperf/fuzz_profile_export_aiperf.json",
    "genai-perf": "genai-perf/fuzz_profile_export.json",
    "genai-perf-aggregate": "genai-perf/fuzz_profile_export_genai_perf.json",
    "llmperf": "llmperf/fuzz_anyscale_70b_individual_responses.json",
    "guidellm": "guidellm/fuzz_benchmarks.json",
    "inference-perf": "inference-perf/fuzz_per_request_lifecycle_metrics.json",
    "inference-perf-aggregate": "inference-perf/fuzz_summary_lifecycle_metrics.json",
    "otlp": "otlp/fuzz_server_spans.otlp.json",
    "otel-console": "otel-console/fuzz_console_spans.txt",
    "prometheus": "prometheus/fuzz_metrics_after.prom",
}
MUTANTS_PER_FILE = 90
BUDGET_MUTANTS = 150

_NUMBER = re.compile(rb"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
_STRING = re.compile(rb'"[^"\\\n]{0,40}"')
ABSURD = [
    b"NaN",
    b"Infinity",
    b"-Infinity",
    b"1e308",
    b"-1e308",
    b"1e200",
    b"-1",
    b"0",
    b"9" * 400,
    b"9223372036854775807",
    b"true",
    b"null",
    b'"12"',
    b"[]",
    b"{}",
]
# Text that a runner would read as workflow commands if it reached the log raw.
INJECT = [
    b"\\n::error title=pwn::owned\\n::add-mask::secret\\r\\n",
    b"\n::warning::raw newline\n",
    b"\x1b[2K\r::notice::x",
    b"\xe2\x80\xa8::debug::u2028",
]


def _native() -> dict[str, bytes]:
    """The demo pair cut to 150 requests, as CSV, JSON Lines and Parquet."""
    lines = (DEMO / "head.csv").read_bytes().splitlines(keepends=True)[:151]
    csv = b"".join(lines)
    table = pacsv.read_csv(io.BytesIO(csv))
    parquet = io.BytesIO()
    pq.write_table(table, parquet)
    jsonl = "".join(json.dumps(row) + "\n" for row in table.to_pylist()).encode()
    return {"fuzz.csv": csv, "fuzz.jsonl": jsonl, "fuzz.parquet": parquet.getvalue()}


def _at(rng: random.Random, data: bytes) -> int:
    return rng.randrange(len(data) + 1)


def _sub(rng: random.Random, pattern: re.Pattern[bytes], data: bytes, new: bytes) -> bytes:
    found = list(pattern.finditer(data[:200_000]))
    if not found:
        return data
    m = rng.choice(found)
    return data[: m.start()] + new + data[m.end() :]


def _lines(rng: random.Random, data: bytes, how: str) -> bytes:
    lines = data.splitlines(keepends=True)
    if len(lines) < 2:
        return data
    i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
    if how == "duplicate":
        lines[i:i] = lines[i : i + rng.randint(1, 5)]
    elif how == "delete":
        del lines[i]
    else:
        lines[i], lines[j] = lines[j], lines[i]
    return b"".join(lines)


def _leaves(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Paths to the numbers in a JSON document, one per key pattern (list indices alike)."""
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in _leaves(v, (*path, k))]
    if isinstance(value, list):
        return [p for i, v in enumerate(value[:2]) for p in _leaves(v, (*path, i))]
    return [path] if isinstance(value, int | float) and not isinstance(value, bool) else []


def _field(rng: random.Random, data: bytes) -> bytes:
    """One field of one JSON document (or JSON Lines line) set to an absurd value: a random
    number in the text is most often one of thousands of token times, this is any field."""
    lines = data.splitlines(keepends=True)
    i = rng.randrange(len(lines)) if lines and lines[0].lstrip().startswith(b"{") else None
    try:
        doc = json.loads(data if i is None or len(lines) < 2 else lines[i])
    except (ValueError, RecursionError):  # not JSON (or no longer)
        return data
    patterns = {
        tuple("#" if isinstance(p, int) else p for p in path): path for path in _leaves(doc)
    }
    if not patterns:
        return data
    *parents, last = rng.choice(sorted(patterns.values(), key=str))
    node = doc
    for part in parents:
        node = node[part]
    node[last] = json.loads(rng.choice(ABSURD))
    text = json.dumps(doc).encode()
    if i is None or len(lines) < 2:
        return text
    lines[i] = text + b"\n"
    return b"".join(lines)


MUTATIONS: list[Callable[[random.Random, bytes], bytes]] = [
    _field,
    _field,
    lambda r, d: d[: _at(r, d)],  # truncated
    lambda r, d: bytes(b ^ (1 << r.randrange(8)) if r.random() < 4 / len(d) else b for b in d),
    lambda r, d: _sub(r, _NUMBER, d, r.choice(ABSURD)),
    lambda r, d: _sub(r, _NUMBER, d, r.choice(ABSURD)),  # numbers are what matter most
    lambda r, d: _sub(r, _STRING, d, b'"' + r.choice(INJECT) + b'"'),
    lambda r, d: (lambda i: d[:i] + r.choice(INJECT) + d[i:])(_at(r, d)),
    lambda r, d: b"\xef\xbb\xbf" + d,
    lambda r, d: d.replace(b"\n", r.choice([b"\r\n", b"\r"])),
    lambda r, d: _lines(r, d, "duplicate"),
    lambda r, d: _lines(r, d, "delete"),
    lambda r, d: _lines(r, d, "swap"),
    lambda r, d: (lambda i: d[:i] + b"[" * 5000 + b"{" * 5000 + d[i:])(_at(r, d)),
    lambda r, d: d + d,  # the file twice: every id repeated
    lambda r, d: b"",
]


def _mutate(seed: int, data: bytes) -> bytes:
    rng = random.Random(seed)
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        data = rng.choice(MUTATIONS)(rng, data)
    return data


def _finite(value: Any) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return all(_finite(v) for v in value.values())
    if isinstance(value, list):
        return all(_finite(v) for v in value)
    return True


def _assert_sane(
    code: int, out: str, err: str, report_path: Path, named: tuple[str, ...], what: str
) -> None:
    lines = (out + "\n" + err).splitlines()
    assert not [x for x in lines if x.lstrip().startswith("::")], (what, out[-2000:], err)
    assert "Traceback" not in err, (what, err)
    assert code in (0, 1, 2), (what, code, err)
    if code == 2:
        assert out == "", (what, out[-2000:])
        # one line, or one per problem of a budget, each naming its file
        said = err.split("\n")
        assert said[-1] == "" and said[:-1], (what, err)
        for line in said[:-1]:
            assert line.startswith("budgetdiff: error: "), (what, err)
            assert any(name in line for name in named), (what, err)
        return
    report = json.loads(report_path.read_text(), parse_constant=lambda c: float(c))
    assert report["verdict"] in ("pass", "warn", "fail"), what
    assert (report["verdict"] == "fail") == (code == 1), what
    assert _finite(report), (what, "a NaN or infinity in the report")
    for side in ("base", "head"):
        count = report["requests"][side]
        assert count is None or (isinstance(count, int) and 0 <= count <= 10**12), what


def _compare(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    base: Path,
    head: Path,
    budget: Path,
    seed: int,
) -> tuple[int, str, str, Path]:
    report = tmp_path / "report.json"
    report.unlink(missing_ok=True)
    output = ["table", "markdown", "json"][seed % 3]
    argv = ["compare", "--base", str(base), "--head", str(head), "--budget", str(budget)]
    code, out, err = run([*argv, "--output", output, "--json", str(report)], capsys)
    return code, out, err, report


@pytest.mark.parametrize("name", [*FILES, *_native()])
def test_fuzz_every_format(tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str) -> None:
    original = _native()[name] if name in _native() else (DATA / FILES[name]).read_bytes()
    suffix = Path(FILES.get(name, name)).name
    base = tmp_path / f"base-{suffix}"
    base.write_bytes(original)
    budget = tmp_path / "budget.yml"
    budget.write_text(BUDGET if name in FILES else BUDGET_FULL)
    fmt = "prometheus" if name == "prometheus" else "auto"
    if fmt == "prometheus":  # a scrape alone is not a run: the mutant is the `after` scrape
        base = tmp_path / "before.prom"
        base.write_bytes((DATA / "prometheus/fuzz_metrics_before.prom").read_bytes())
    seed0 = sum(map(ord, name)) * 1000
    for seed in range(seed0, seed0 + MUTANTS_PER_FILE):
        head = tmp_path / f"head-{seed}-{suffix}"
        head.write_bytes(_mutate(seed, original))
        if fmt == "prometheus":
            argv = ["compare", "--base", str(base), "--head", str(head), "--budget", str(budget)]
            report = tmp_path / "report.json"
            report.unlink(missing_ok=True)
            code, out, err = run([*argv, "--json", str(report)], capsys)
        else:
            code, out, err, report = _compare(capsys, tmp_path, base, head, budget, seed)
        _assert_sane(code, out, err, report, (head.name,), f"{name} seed {seed}")


def _budget_mutant(seed: int) -> bytes:
    rng = random.Random(seed)
    data = BUDGET_FULL.encode()
    for _ in range(rng.choice([1, 1, 2])):
        how = rng.randrange(6)
        if how == 0:
            lines = data.splitlines(keepends=True) or [b"\n"]
            i = rng.randrange(len(lines))
            lines.insert(i, lines[rng.randrange(len(lines))])  # a key given twice
            data = b"".join(lines)
        elif how == 1:
            new = rng.choice([b"1e-300", b"true", b"yes", b"9" * 5000, b".inf", b".nan", b"-1"])
            data = _sub(rng, _NUMBER, data, new)
        elif how == 2:
            data = data + b"".join(b"k%d: 1\n" % i for i in range(rng.choice([3, 10_000])))
        elif how == 3:
            data = data + b"slo: " + b"[" * 10_000 + b"\n"
        elif how == 4:
            data = data + b"slices: {unattributed: 100}\n"
        else:
            data = _mutate(seed, data)
    return data


def test_fuzz_budget(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    native = _native()["fuzz.csv"]
    base, head = tmp_path / "base.csv", tmp_path / "head.csv"
    base.write_bytes(native)
    head.write_bytes(native.replace(b",52.69,", b",152.69,"))
    for seed in range(BUDGET_MUTANTS):
        budget = tmp_path / f"budget-{seed}.yml"
        budget.write_bytes(_budget_mutant(seed))
        code, out, err, report = _compare(capsys, tmp_path, base, head, budget, seed)
        # a budget's `column:` the data lacks is told with the data file's name
        _assert_sane(code, out, err, report, (budget.name, head.name), f"budget seed {seed}")
