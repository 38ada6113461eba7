"""Write the hand-made tables of tests/data/user_tables/meaning (fixed seeds: the output never
changes). Run: python tools/make_meaning_tables.py

Each case is a folder: `head.csv`, `base.csv` for a compare, and `budget.yml`. They are the
shapes people write themselves (issue 23): slices without a total, a budget that names some of
the slices, timestamps beside the slices, a TTFT column standing for the slices before the
first token, overlapping and missing slices, too few requests, request ids that coincide,
a head that re-ran part of the base, different workloads. The test
(`tests/formats/test_meaning_corpus.py`) computes the truth from each file with numpy on its own.
"""

from __future__ import annotations

import csv
import math
import shutil
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np

OUT = Path(__file__).resolve().parents[1] / "tests" / "data" / "user_tables" / "meaning"
Columns = dict[str, object]


def budget(
    *,
    p: float = 95,
    ttft: float | None = 1200,
    total: float = 6500,
    slices: Mapping[str, float] | None = None,
    first_token_after: str | None = None,
) -> str:
    slo = ", ".join(f"{k}: {v:g}" for k, v in (("ttft", ttft), ("total", total)) if v is not None)
    text = f"version: 1\npercentile: {p:g}\nslo: {{{slo}}}\n"
    if slices:
        text += "slices: {" + ", ".join(f"{k}: {v:g}" for k, v in slices.items()) + "}\n"
    if first_token_after:
        text += f"first_token_after: {first_token_after}\n"
    return text + "fail_on: [breach, regression]\n"


def requests(
    seed: int, n: int, *, prompt: float = 900, answer: float = 250, again: int | None = None
) -> Columns:
    """A chat service's requests: token counts and five slices (ms), none of them a total;
    `again`: the same prompts and answers measured again (other latencies, from that seed)."""
    rng = np.random.default_rng(seed)
    inp = np.clip(rng.lognormal(np.log(prompt), 0.5, n), 20, 16000).round()
    out = np.clip(rng.lognormal(np.log(answer), 0.35, n), 2, 2048).round()
    if again is not None:
        rng = np.random.default_rng(again)
    return {
        "request_id": np.array([f"r{i}" for i in range(n)]),
        "input_tokens": inp.astype(int),
        "output_tokens": out.astype(int),
        "network_ms": rng.lognormal(np.log(45), 0.35, n),
        "queue_ms": rng.exponential(40, n) + rng.binomial(1, 0.05, n) * rng.exponential(150, n),
        "prefill_ms": 0.3 * inp * rng.lognormal(0, 0.15, n) + 40,
        "decode_ms": (out - 1) * rng.lognormal(np.log(18), 0.12, n),
        "app_ms": rng.lognormal(np.log(60), 0.3, n),
    }


def pick(cols: Columns, *names: str) -> Columns:
    return {k: cols[k] for k in names}


def rows(cols: Columns, index: np.ndarray) -> Columns:
    return {k: np.asarray(v)[index] for k, v in cols.items()}


def scaled(cols: Columns, **factors: float) -> Columns:
    return {k: np.asarray(v) * factors[k] if k in factors else v for k, v in cols.items()}


def ttft_of(cols: Columns) -> np.ndarray:
    return sum(np.asarray(cols[k]) for k in ("network_ms", "queue_ms", "prefill_ms"))


def write(path: Path, cols: Columns) -> None:
    names = list(cols)
    arrays = [np.asarray(cols[c]) for c in names]
    with path.open("w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(names)
        for i in range(len(arrays[0])):
            w.writerow([_cell(a[i]) for a in arrays])


def _cell(value: object) -> object:
    if isinstance(value, float | np.floating):
        return f"{float(value):.3f}"
    return value.item() if isinstance(value, np.generic) else value


# ---- the cases: name -> (head, base or None, budget) ----------------------------------------


def _ttft_decode(seed: int, answer: float) -> Columns:
    r = requests(seed, 1000, answer=answer)
    return {"request_id": r["request_id"], "ttft_ms": ttft_of(r), "decode_ms": r["decode_ms"]}


def _five(seed: int) -> Columns:
    return pick(
        requests(seed, 1000),
        "request_id",
        "network_ms",
        "queue_ms",
        "prefill_ms",
        "decode_ms",
        "app_ms",
    )


def _timestamps(seed: int, iso: bool) -> Columns:
    r = requests(seed, 1500)
    rng = np.random.default_rng(seed + 100)
    start = np.cumsum(rng.exponential(0.2, 1500))
    busy = r["queue_ms"] + r["prefill_ms"] + r["decode_ms"]  # type: ignore[operator]
    end = start + (busy + r["network_ms"] + r["app_ms"]) / 1000.0  # type: ignore[operator]
    out = pick(r, "request_id", "queue_ms", "prefill_ms", "decode_ms")
    if iso:
        t0 = datetime(2026, 5, 1, 12, 0, 0, tzinfo=timezone.utc)
        stamp = [
            (t0 + timedelta(seconds=float(s))).isoformat(timespec="microseconds") for s in start
        ]
        done = [(t0 + timedelta(seconds=float(e))).isoformat(timespec="microseconds") for e in end]
        return {"request_id": out["request_id"], "start_time": stamp, "end_time": done} | out
    return {"request_id": out["request_id"], "start_time": start, "end_time": end} | out


def _missing(seed: int, extra: float) -> Columns:
    r = requests(seed, 1000)
    rng = np.random.default_rng(seed + 7)
    sliced = pick(r, "request_id", "queue_ms", "prefill_ms", "decode_ms")
    whole = sum(np.asarray(sliced[k]) for k in ("queue_ms", "prefill_ms", "decode_ms"))
    gap = rng.lognormal(np.log(extra), 0.6, 1000) if extra else rng.uniform(0, 0.4, 1000)
    return sliced | {"total_ms": whole + gap}


def _overlap(seed: int) -> Columns:
    r = requests(seed, 1000)
    sliced = pick(r, "request_id", "queue_ms", "prefill_ms", "decode_ms")
    whole = sum(np.asarray(sliced[k]) for k in ("queue_ms", "prefill_ms", "decode_ms"))
    return sliced | {"total_ms": whole - 0.5 * np.asarray(r["queue_ms"])}  # queue inside prefill


def _first_token_overlap(seed: int) -> Columns:
    r = requests(seed, 1000)
    return {
        "request_id": r["request_id"],
        "first_token_ms": ttft_of(r),  # spans queue and prefill: the slices overlap
        "queue_ms": r["queue_ms"],
        "prefill_ms": r["prefill_ms"],
        "decode_ms": r["decode_ms"],
    }


def _queue_ttft_decode(seed: int) -> Columns:
    r = requests(seed, 1000)
    return {
        "request_id": r["request_id"],
        "queue_ms": r["queue_ms"],
        "ttft_ms": ttft_of(r),  # no slice ends at the first token: the TTFT stands for them
        "decode_ms": r["decode_ms"],
    }


def _small(seed: int, n: int) -> Columns:
    return pick(requests(seed, n), "request_id", "queue_ms", "prefill_ms", "decode_ms")


def _failures(seed: int) -> Columns:
    cols = _ttft_decode(seed, 300)
    rng = np.random.default_rng(seed + 3)
    failed = rng.random(1000) < 0.03
    return cols | {"error": np.where(failed, "timeout", "")}


def _tokens(seed: int, n: int, **kw: Any) -> Columns:
    return pick(
        requests(seed, n, **kw),
        "request_id",
        "input_tokens",
        "output_tokens",
        "queue_ms",
        "prefill_ms",
        "decode_ms",
    )


def _replayed(seed: int, decode: float, n: int = 1000) -> tuple[Columns, Columns]:
    """The same prompts twice (same ids and token counts), each slice measured again."""
    base = _tokens(seed, n)
    head = _tokens(seed, n, again=seed + 1)
    return scaled(head, decode_ms=decode), base


def _subset(seed: int, head_smaller: bool) -> tuple[Columns, Columns]:
    whole, base = _replayed(seed, 1.2)
    short = np.sort(np.argsort(np.asarray(base["input_tokens"]), kind="stable")[:250])
    slower = scaled(whole, prefill_ms=1.2, queue_ms=1.2)
    if head_smaller:
        return rows(slower, short), base
    return slower, rows(base, short)


def _partial(seed: int) -> tuple[Columns, Columns]:
    head, base = _replayed(seed, 1.0)
    out = np.asarray(head["output_tokens"]).copy()
    out[::33] += 7  # 3% of the answers differ (cut short, sampled longer)
    return head | {"output_tokens": out}, base


def _hashes(seed: int, same: bool) -> tuple[Columns, Columns]:
    """A fixed-length benchmark: every prompt 512 tokens, every answer 128, so token counts
    prove nothing; the prompt hash tells whether the prompts are the same."""
    base, head = _tokens(seed, 1000), _tokens(seed + 1, 1000)
    for cols, hashes in ((base, seed), (head, seed if same else seed + 1)):
        cols["input_tokens"] = np.full(1000, 512)
        cols["output_tokens"] = np.full(1000, 128)
        rng = np.random.default_rng(hashes)
        cols["prompt_hash"] = np.array([f"{x:016x}" for x in rng.integers(0, 2**62, 1000)])
    return head, base


def _no_tokens(seed: int) -> tuple[Columns, Columns]:
    head, base = _replayed(seed, 1.15)
    drop = ("input_tokens", "output_tokens")
    return {k: v for k, v in head.items() if k not in drop}, {
        k: v for k, v in base.items() if k not in drop
    }


def at(x: object, p: float = 95) -> float:
    return float(np.percentile(np.asarray(x, dtype=float), p))


def between(low: float, high: float) -> float:
    """A target halfway between what a wrong reading gives and the truth: the verdict tells
    them apart."""
    return round((low + high) / 2)


def room(cols: Columns, total: float, *names: str, p: float = 95) -> dict[str, float]:
    """Slice budgets splitting 95% of the total target in proportion to each slice's
    percentile: they add up to less than the SLO."""
    own = {n: at(cols[n], p) for n in names}
    scale = 0.95 * total / sum(own.values())
    return {n.removesuffix("_ms"): math.floor(v * scale) for n, v in own.items()}


def s(cols: Columns, *names: str) -> np.ndarray:
    return sum(np.asarray(cols[n], dtype=float) for n in names)  # type: ignore[return-value]


def ttft_decode_breach() -> tuple[Columns, None, str]:
    h = _ttft_decode(1, 300)
    total = between(at(h["decode_ms"]), at(s(h, "ttft_ms", "decode_ms")))
    return h, None, budget(total=total, ttft=3000, slices=room(h, total, "decode_ms"))


def ttft_decode_within() -> tuple[Columns, None, str]:
    h = _ttft_decode(2, 250)
    total = round(1.15 * at(s(h, "ttft_ms", "decode_ms")))
    return h, None, budget(total=total, ttft=3000, slices=room(h, total, "decode_ms"))


def five_two_budgeted() -> tuple[Columns, None, str]:
    h = _five(3)
    total = between(at(s(h, "prefill_ms", "decode_ms")), at(s(h, *list(h)[1:])))
    ttft = between(at(h["prefill_ms"]), at(s(h, "network_ms", "queue_ms", "prefill_ms")))
    sl = room(h, total, "prefill_ms", "decode_ms")
    return h, None, budget(total=total, ttft=ttft, slices=sl, first_token_after="prefill")


def five_none_budgeted() -> tuple[Columns, None, str]:
    h = _five(4)
    return h, None, budget(total=round(1.1 * at(s(h, *list(h)[1:]))), ttft=3000)


def timestamps(seed: int, iso: bool) -> tuple[Columns, None, str]:
    h = _timestamps(seed, iso)
    sliced = s(h, "queue_ms", "prefill_ms", "decode_ms")
    r = requests(seed, 1500)
    span = sliced + s(r, "network_ms", "app_ms")
    total = between(at(sliced), at(span))
    sl = room(h, total, "queue_ms", "prefill_ms", "decode_ms")
    return h, None, budget(total=total, ttft=3000, slices=sl)


def queue_ttft_decode() -> tuple[Columns, None, str]:
    h = _queue_ttft_decode(7)
    total = between(at(s(h, "queue_ms", "decode_ms")), at(s(h, "ttft_ms", "decode_ms")))
    return h, None, budget(total=total, ttft=3000, slices=room(h, total, "queue_ms", "decode_ms"))


def first_token_overlap() -> tuple[Columns, None, str]:
    h = _first_token_overlap(8)
    truth = at(s(h, "first_token_ms", "decode_ms"))
    double = at(s(h, *list(h)[1:]))  # first_token counted with the slices it spans
    return h, None, budget(total=between(truth, double), ttft=3000)


def failures() -> tuple[Columns, None, str]:
    h = _failures(9)
    ok = np.asarray(h["error"]) == ""
    both = s(h, "ttft_ms", "decode_ms")[ok]
    total = between(at(np.asarray(h["decode_ms"])[ok]), at(both))
    return h, None, budget(total=total, ttft=3000, slices=room(h, total, "decode_ms"))


def missing(seed: int, extra: float, budgeted: bool) -> tuple[Columns, None, str]:
    h = _missing(seed, extra)
    total = round(1.1 * at(h["total_ms"]))
    sl = room(h, 0.8 * total, "queue_ms", "prefill_ms", "decode_ms")
    if budgeted:
        sl["unattributed"] = round(0.5 * extra)  # below its part of the p95: over budget
    return h, None, budget(total=total, ttft=3000, slices=sl)


def overlapping() -> tuple[Columns, None, str]:
    h = _overlap(13)
    total = between(at(h["total_ms"]), at(s(h, "queue_ms", "prefill_ms", "decode_ms")))
    return h, None, budget(total=total, ttft=3000, slices=room(h, total, "queue_ms", "prefill_ms"))


def small(seed: int, n: int, p: float) -> tuple[Columns, None, str]:
    h = _small(seed, n)
    total = round(1.2 * at(s(h, "queue_ms", "prefill_ms", "decode_ms"), p))
    return h, None, budget(p=p, total=total, ttft=4000)


def compared(head: Columns, base: Columns) -> tuple[Columns, Columns, str]:
    """A budget 30% above base's p95 end to end, the slices with room."""
    names = [n for n in base if n.endswith("_ms")]
    total = round(1.3 * at(s(base, *names)))
    sliced = [n for n in names if n not in ("ttft_ms", "total_ms")]
    return head, base, budget(total=total, ttft=4000, slices=room(base, total, *sliced))


Case = Callable[[], tuple[Columns, Columns | None, str]]
CASES: dict[str, Case] = {
    # the total and TTFT from everything the table has
    "ttft_decode_no_total_breach": ttft_decode_breach,
    "ttft_decode_no_total_within": ttft_decode_within,
    "five_slices_two_budgeted": five_two_budgeted,
    "five_slices_none_budgeted": five_none_budgeted,
    "timestamps_seconds": lambda: timestamps(5, iso=False),
    "timestamps_iso": lambda: timestamps(6, iso=True),
    "queue_ttft_decode": queue_ttft_decode,
    "first_token_overlaps_slices": first_token_overlap,
    "ttft_decode_with_failures": failures,
    # missing and overlapping slices
    "missing_slice_material": lambda: missing(10, 600, budgeted=False),
    "missing_slice_rounding": lambda: missing(11, 0, budgeted=False),
    "missing_slice_budgeted": lambda: missing(12, 600, budgeted=True),
    "overlapping_slices": overlapping,
    # too few requests
    "small_n_p99_50": lambda: small(14, 50, 99),
    "small_n_p95_19": lambda: small(15, 19, 95),
    "small_n_p999_1000": lambda: small(16, 1000, 99.9),
    "enough_n_p95_80": lambda: small(17, 80, 95),
    "small_n_compare_40": lambda: compared(*_replayed(18, 1.0, n=40)),
    # pairing
    "coincidental_ids": lambda: compared(_tokens(19, 1000), _tokens(20, 1000)),
    "replayed_decode_slower": lambda: compared(*_replayed(21, 1.15)),
    "head_reran_shortest_subset": lambda: compared(*_subset(22, head_smaller=True)),
    "base_is_subset_of_head": lambda: compared(*_subset(23, head_smaller=False)),
    "answers_differ_on_3pct": lambda: compared(*_partial(24)),
    "fixed_lengths_other_prompts": lambda: compared(*_hashes(25, same=False)),
    "fixed_lengths_same_prompts": lambda: compared(*_hashes(26, same=True)),
    "ids_without_tokens": lambda: compared(*_no_tokens(27)),
    # different workloads
    "prompts_80pct_longer": lambda: compared(_tokens(28, 1500, prompt=1620), _tokens(29, 1500)),
    "answers_50pct_longer": lambda: compared(_tokens(30, 1500, answer=375), _tokens(31, 1500)),
    "same_workload_fresh_ids": lambda: compared(
        {**_tokens(32, 1500), "request_id": np.array([f"h{i}" for i in range(1500)])},
        _tokens(33, 1500),
    ),
    "ttft_decode_compare_regressed": lambda: compared(
        scaled(_ttft_decode(34, 300), decode_ms=1.2), _ttft_decode(34, 300)
    ),
}


def main() -> None:
    if OUT.exists():
        shutil.rmtree(OUT)
    for name, make in CASES.items():
        head, base, text = make()
        folder = OUT / name
        folder.mkdir(parents=True)
        write(folder / "head.csv", head)
        if base is not None:
            write(folder / "base.csv", base)
        (folder / "budget.yml").write_text(text)
    print(f"{len(CASES)} cases in {OUT}")


if __name__ == "__main__":
    main()
