"""The gate's power on the p95 of decode against an oracle, on the same simulated data (issue 34).

Each simulated report is one base/head pair of per-request tables (the native columns:
network, queue, prefill, decode, app in ms, and the output tokens), decided by the real
pipeline (`budgetdiff.api.compare`, the budget below: SLO targets on TTFT and the end to end,
a budget on every slice, so 7 rows are gated and TPOT, with no target, is information).
Decode is `output_tokens x per-token delay`, as a server makes it: tokens uniform in
[112, 144], the per-token delay lognormal(5.5 ms, 0.1) per request (base p95 about 820 ms).

Cases, at 300 and 1,000 requests a side: A/A; (a) head's decode uniformly +10% and +20%;
(b) 8% of head's requests at twice the per-token delay. The gate "catches" a case when the
report fails naming decode (the decode row is a regression the gate acts on).

The oracle: a permutation test of the same statistic, p95(head decode) - p95(base decode),
one-sided (head slower), `PERMUTATIONS` random splits of the pooled requests, rejecting at the
level the gate's own A/A runs measured (its share of A/A reports that fail, at that size), so
both are held to the same false-alarm rate on the same data. It knows which row moved, so it
pays no multiplicity: the bound a gate over 7 rows can approach, not exceed.

Run: `nice -n 10 .venv/bin/python -m bench.power_oracle [--reports 300] [--seed 34]`
(about 2-4 minutes on 2 cores at the defaults); prints the markdown table in
docs/statistics.md.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from budgetdiff import api

Rng = np.random.Generator
Table = dict[str, np.ndarray]

MEDIANS_MS = {"network": 10.0, "queue": 20.0, "prefill": 80.0, "app": 15.0}
SIGMA = 0.4  # the other slices: lognormal, as tests/support/simulation.py draws them
TOKENS = (112, 144)  # output tokens per request, uniform
PER_TOKEN_MS = 5.5  # median per-token delay of decode
PER_TOKEN_SIGMA = 0.1
TAIL_SHARE = 0.08  # case (b): this share of head's requests ...
TAIL_FACTOR = 2.0  # ... at this many times the per-token delay
PERMUTATIONS = 1000
BUDGET = {
    "version": 1,
    "percentile": 95,
    "slo": {"ttft": 1000, "total": 5000},
    "slices": {"network": 200, "queue": 300, "prefill": 600, "decode": 3000, "app": 200},
    "first_token_after": "prefill",
}


def table(rng: Rng, n: int, decode_factor: Callable[[Rng, int], np.ndarray]) -> Table:
    """One run of `n` requests as native columns; `decode_factor` scales each request's
    per-token delay (ones for base)."""
    out = {f"{k}_ms": med * np.exp(SIGMA * rng.standard_normal(n)) for k, med in MEDIANS_MS.items()}
    tokens = rng.integers(TOKENS[0], TOKENS[1] + 1, n)
    per_token = PER_TOKEN_MS * np.exp(PER_TOKEN_SIGMA * rng.standard_normal(n))
    out["decode_ms"] = tokens * per_token * decode_factor(rng, n)
    out["output_tokens"] = tokens.astype(np.float64)
    return out


def same(rng: Rng, n: int) -> np.ndarray:
    return np.ones(n)


def uniform(factor: float) -> Callable[[Rng, int], np.ndarray]:
    def shift(rng: Rng, n: int) -> np.ndarray:
        return np.full(n, factor)

    return shift


def tail(rng: Rng, n: int) -> np.ndarray:
    return np.where(rng.random(n) < TAIL_SHARE, TAIL_FACTOR, 1.0)


CASES: dict[str, Callable[[Rng, int], np.ndarray]] = {
    "A/A": same,
    "(a) uniform +10%": uniform(1.10),
    "(a) uniform +20%": uniform(1.20),
    f"(b) {100 * TAIL_SHARE:g}% of requests {TAIL_FACTOR:g}x slower": tail,
}


def gate_catches(base: Table, head: Table) -> bool:
    """The real pipeline: the report fails, and decode is a regression the gate acts on."""
    report = api.compare(base, head, BUDGET)
    c = report.main.comparison
    decode = next(r for r in c.slices if r.name == "decode")
    return report.verdict == "fail" and decode.change == "regression"


def oracle_p(rng: Rng, base: np.ndarray, head: np.ndarray) -> float:
    """One-sided permutation p-value of p95(head) - p95(base) (vectorised splits)."""
    pool = np.concatenate([base, head])
    observed = np.percentile(head, 95) - np.percentile(base, 95)
    keys = rng.random((PERMUTATIONS, pool.size))
    shuffled = pool[np.argsort(keys, axis=1)]
    nh = head.size
    d = np.percentile(shuffled[:, :nh], 95, axis=1) - np.percentile(shuffled[:, nh:], 95, axis=1)
    return float((1 + np.count_nonzero(d >= observed)) / (PERMUTATIONS + 1))


@dataclass(frozen=True)
class Result:
    case: str
    n: int
    gate: float  # share of reports the gate caught (fails naming decode)
    oracle_p: tuple[float, ...]  # the oracle's p-value per report


def run_case(case: str, n: int, reports: int, seed: int) -> Result:
    rng = np.random.default_rng([seed, n, list(CASES).index(case)])
    caught, ps = 0, []
    for _ in range(reports):
        base, head = table(rng, n, same), table(rng, n, CASES[case])
        caught += gate_catches(base, head)
        ps.append(oracle_p(rng, base["decode_ms"], head["decode_ms"]))
    return Result(case, n, caught / reports, tuple(ps))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reports", type=int, default=300, help="simulated reports per case")
    parser.add_argument("--seed", type=int, default=34)
    parser.add_argument("--sizes", default="300,1000")
    args = parser.parse_args(argv)
    reports = max(10, min(args.reports, 5000))  # bounded
    started = time.monotonic()
    print(
        "| case | requests a side | gate: fails naming decode | oracle at the gate's A/A "
        "rate | gate / oracle |"
    )
    print("|---|---:|---:|---:|---:|")
    for n in (int(s) for s in args.sizes.split(",")):
        null = run_case("A/A", n, reports, args.seed)
        level = max(null.gate, 1.0 / reports)  # the oracle's level: the gate's A/A rate
        oracle_aa = float(np.mean(np.array(null.oracle_p) <= level))
        print(f"| A/A | {n:,} | {100 * null.gate:.1f}% | {100 * oracle_aa:.1f}% | |")
        for case in list(CASES)[1:]:
            r = run_case(case, n, reports, args.seed)
            oracle = float(np.mean(np.array(r.oracle_p) <= level))
            ratio = f"{r.gate / oracle:.2f}" if oracle else "-"
            print(f"| {case} | {n:,} | {100 * r.gate:.1f}% | {100 * oracle:.1f}% | {ratio} |")
    print(f"\n{reports} reports per case, seed {args.seed}, {time.monotonic() - started:.0f} s")


if __name__ == "__main__":
    main()
