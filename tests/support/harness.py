"""A client-only harness's own table, as a new user brings it (issue 38): one row per request,
`request_id, status, ttft_ms, e2e_ms, prompt_tokens, output_tokens`, failed rows written the
usual way (`status=error`, no TTFT, `output_tokens=0`). Base and head ran the same prompts:
same ids, same prompt and output token counts; only the latencies (and the failures) differ."""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import numpy as np

COLUMNS = ("request_id", "status", "ttft_ms", "e2e_ms", "prompt_tokens", "output_tokens")
N = 500


@dataclass(frozen=True)
class Side:
    """One side's table as numbers: what the CSV holds, for numpy to compute truths from."""

    path: Path
    failed: np.ndarray  # bool per request
    ttft: np.ndarray  # ms, NaN where failed
    e2e: np.ndarray  # ms (a failed request's time to its error)
    output_tokens: np.ndarray  # 0 where failed (or NaN with `blank_failed`)

    @property
    def ok(self) -> np.ndarray:
        return ~self.failed

    @property
    def decode(self) -> np.ndarray:
        """e2e - ttft of the requests that succeeded."""
        return (self.e2e - self.ttft)[self.ok]


def write_side(
    path: Path,
    seed: int,
    *,
    failed: int = 0,
    decode_scale: float = 1.0,
    blank_failed: bool = False,
    n: int = N,
) -> Side:
    """A table of `n` requests, `failed` of them failed; `decode_scale` slows every token after
    the first. The prompts (ids, token counts) are the same for every seed."""
    rng = np.random.default_rng(seed)
    prompts = np.random.default_rng(8)
    prompt_tokens = prompts.integers(200, 2000, n)
    tokens = prompts.integers(50, 400, n).astype(float)
    ttft = np.round(rng.lognormal(np.log(350), 0.35, n), 2)
    tpot = rng.lognormal(np.log(12), 0.2, n) * decode_scale
    e2e = np.round(ttft + tpot * (tokens - 1), 2)
    bad = np.zeros(n, dtype=bool)
    bad[rng.choice(n, failed, replace=False)] = True
    e2e = np.where(bad, np.round(rng.uniform(5, 60, n), 2), e2e)
    ttft = np.where(bad, np.nan, ttft)
    tokens = np.where(bad, np.nan if blank_failed else 0.0, tokens)
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(COLUMNS)
        for i in range(n):
            w.writerow(
                [
                    f"req-{i:04d}",
                    "error" if bad[i] else "ok",
                    "" if bad[i] else f"{ttft[i]:.2f}",
                    f"{e2e[i]:.2f}",
                    int(prompt_tokens[i]),
                    "" if np.isnan(tokens[i]) else int(tokens[i]),
                ]
            )
    return Side(path, bad, ttft, e2e, tokens)


# The SLO alone: what a client-only harness can be held to
SLO_BUDGET = """\
version: 1
percentile: 95
slo: {ttft: 1200, total: 6000}
fail_on: [breach, regression]
"""

# decode budgeted: derived from e2e - ttft (issue 38, item 4)
DECODE_BUDGET = """\
version: 1
percentile: 95
slo: {ttft: 1200, total: 6000}
slices: {first_token: 1200, decode: 4800}
first_token_after: first_token
fail_on: [breach, regression]
"""


def write_budget(folder: Path, text: str = SLO_BUDGET, name: str = "budget.yml") -> Path:
    path = folder / name
    path.write_text(text)
    return path
