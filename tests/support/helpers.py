"""Small builders the CLI tests use: native tables and budgets on disk, and a runner."""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from budgetdiff.cli import main

BUDGET = """\
version: 1
percentile: 95
slo: {ttft: 1200, total: 6000}
slices: {queue: 250, prefill: 800, decode: 4200}
first_token_after: prefill
fail_on: [breach, regression]
"""


def write_table(path: Path, columns: Mapping[str, object], n: int | None = None) -> Path:
    """A CSV with the given columns (arrays or lists), header first."""
    names = list(columns)
    cols = [list(np.asarray(columns[c]).tolist()) for c in names]
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(names)
        w.writerows(zip(*cols, strict=True))
    return path


def slices(seed: int, n: int = 2000, decode_tail: float = 1.0) -> dict[str, np.ndarray]:
    """Realistic per-request slices; `decode_tail` slows only the slowest 10% of decodes."""
    rng = np.random.default_rng(seed)
    queue = rng.lognormal(np.log(40), 0.5, n)
    prefill = rng.lognormal(np.log(300), 0.4, n)
    decode = rng.lognormal(np.log(2500), 0.3, n)
    cut = np.quantile(decode, 0.9)
    decode = np.where(
        decode > cut, cut + (decode - cut) * decode_tail + cut * (decode_tail - 1), decode
    )
    return {
        "request_id": np.array([f"r{seed}-{i}" for i in range(n)]),
        "queue_ms": queue.round(3),
        "prefill_ms": prefill.round(3),
        "decode_ms": decode.round(3),
    }


def run(
    argv: list[str], capsys: pytest.CaptureFixture[str], env: Mapping[str, str] | None = None
) -> tuple[int, str, str]:
    code = main(argv, environ=dict(env or {}))
    out, err = capsys.readouterr()
    return code, out, err


def compare_json(
    capsys: pytest.CaptureFixture[str], base: Path, head: Path, budget: Path, *extra: str
) -> tuple[int, dict[str, Any]]:
    """`budgetdiff compare ... --output json`: the exit code and the parsed report."""
    argv = ["compare", "--base", str(base), "--head", str(head), "--budget", str(budget)]
    code, out, err = run([*argv, "--output", "json", *extra], capsys)
    assert code in (0, 1), err
    return code, json.loads(out)


# A budget of the SLO alone: the slices come from the data
NO_SLICES = "version: 1\npercentile: 95\nslo: {ttft: 1200, total: 6000}\n"


def budget_file(tmp_path: Path, text: str = BUDGET, name: str = "budget.yml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


# A wrong budget the documentation shows with the errors it gives: a yaml block, then a text
# block of `budgetdiff: error:` lines (docs/budget.md). The docs test runs it; the schema test,
# which holds every other budget in the docs to be valid, leaves it out.
SHOWN_WITH_ERRORS = re.compile(
    r"```yaml\n((?:(?!```).)*?)```\n\n```text\n(budgetdiff: error: .*?)```", re.S
)


def budgets_shown_with_errors(markdown: str) -> list[tuple[str, list[str]]]:
    """Each wrong budget in `markdown` and the error lines shown under it."""
    return [(yml, said.splitlines()) for yml, said in SHOWN_WITH_ERRORS.findall(markdown)]


VLLM_SAMPLE = "generated/vllm/{}/vllm_bench_serve.json"


def appended(samples: Path, side: str, tmp_path: Path) -> Path:
    """A vLLM results file with two runs appended (concurrency 8 and 16), as --append-result
    writes them; the concurrency-16 run of head is base's run again (no change)."""
    runs = []
    for concurrency in (8, 16):
        source = side if concurrency == 8 else "base"
        doc = json.loads((samples / VLLM_SAMPLE.format(source)).read_text())
        doc["max_concurrency"] = concurrency
        runs.append(json.dumps(doc))
    path = tmp_path / f"{side}.json"
    path.write_text("\n".join(runs) + "\n")
    return path
