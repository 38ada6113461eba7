"""Simulations of budgetdiff.stats: A/A false-positive rate and power, in a realistic report.

A report is a family of 6 rows tested together (Holm): slices queue, prefill, decode, app, plus
ttft = queue + prefill and total = the sum of the slices, per request. Fixed seeds; the allowance
for simulation error is two standard errors of a proportion over the simulated pairs.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest
from scipy.signal import lfilter

from budgetdiff.stats import Change, compare_percentile, decide

Rng = np.random.Generator
Rows = dict[str, np.ndarray]
Shift = Callable[[Rows], Rows]

MEDIANS_MS = {"queue": 20.0, "prefill": 80.0, "decode": 400.0, "app": 15.0}
P = 95.0
CONFIDENCE = 0.95
PAIRS = 1000  # simulated base/head pairs per scenario


def _ar1(rng: Rng, n: int, phi: float) -> np.ndarray:
    """Stationary Gaussian AR(1) with unit variance."""
    e = rng.standard_normal(n) * math.sqrt(1.0 - phi * phi)
    e[0] /= math.sqrt(1.0 - phi * phi)
    return np.asarray(lfilter([1.0], [1.0, -phi], e))


def slices(rng: Rng, kind: str, n: int) -> Rows:
    """Per-request slice values (ms), in arrival order."""
    out: Rows = {}
    for name, med in MEDIANS_MS.items():
        if kind == "lognormal":
            x = med * np.exp(0.4 * rng.standard_normal(n))
        elif kind == "pareto":  # Pareto tail with shape 3, starting at the median scale
            x = med * (1.0 + rng.pareto(3.0, n))
        elif kind == "bimodal":  # 7% of requests in a slow mode 3x away: p95 inside the gap
            slow = rng.random(n) < 0.07
            x = med * np.exp(0.25 * rng.standard_normal(n)) * np.where(slow, 3.0, 1.0)
        elif kind == "ar1":  # AR(1), phi 0.7 on the log scale, in arrival order
            x = med * np.exp(0.4 * _ar1(rng, n, 0.7))
        elif kind == "regimes":  # load regimes of 20 requests, 40% slower half of the time
            level = np.repeat(rng.choice([1.0, 1.4], -(-n // 20)), 20)[:n]
            x = med * level * np.exp(0.4 * rng.standard_normal(n))
        else:
            raise AssertionError(kind)
        out[name] = x
    return out


def rows(s: Rows) -> Rows:
    r = dict(s)
    r["ttft"] = s["queue"] + s["prefill"]
    r["total"] = s["queue"] + s["prefill"] + s["decode"] + s["app"]
    return r


def one_report(
    rng: Rng,
    kind: str,
    n: int,
    shift: Shift | None = None,
    *,
    min_change: float = 0.0,
    head_kind: str | None = None,
) -> dict[str, str]:
    base = rows(slices(rng, kind, n))
    head_slices = slices(rng, head_kind or kind, n)
    head = rows(shift(head_slices) if shift else head_slices)
    changes: list[Change] = [
        compare_percentile(base[k], head[k], P, CONFIDENCE, family_size=len(base)) for k in base
    ]
    verdicts = decide(changes, min_change=min_change, min_ms=0.0, confidence=CONFIDENCE)
    return dict(zip(base, verdicts, strict=True))


def allowance(rate: float, pairs: int = PAIRS) -> float:
    return 2.0 * math.sqrt(rate * (1.0 - rate) / pairs)


@pytest.mark.parametrize(
    ("kind", "n"),
    [
        ("lognormal", 1000),
        ("pareto", 1000),
        ("bimodal", 1000),
        ("ar1", 1000),
        ("regimes", 4000),
        ("lognormal", 200),
        ("pareto", 200),
        ("bimodal", 200),
        ("pareto", 4000),
    ],
)
def test_aa_reports_flag_a_regression_at_most_alpha(kind: str, n: int) -> None:
    # The strictest setting: no min_change / min_ms to hide behind, only the statistics.
    rng = np.random.default_rng(20240501)
    flagged = sum("regression" in one_report(rng, kind, n).values() for _ in range(PAIRS))
    alpha = 1.0 - CONFIDENCE
    assert flagged / PAIRS <= alpha + allowance(alpha)


def _scale(name: str, factor: float) -> Shift:
    def shift(s: Rows) -> Rows:
        return {**s, name: s[name] * factor}

    return shift


def _scale_top_tenth(name: str, factor: float) -> Shift:
    """Only requests above the slice's own p90 get slower: the median does not move."""

    def shift(s: Rows) -> Rows:
        x = s[name]
        return {**s, name: np.where(x > np.percentile(x, 90), x * factor, x)}

    return shift


@pytest.mark.parametrize(
    ("kind", "n", "name", "shift"),
    [
        ("lognormal", 1000, "queue", _scale("queue", 1.15)),
        ("lognormal", 1000, "decode", _scale("decode", 1.15)),
        ("pareto", 4000, "app", _scale("app", 1.15)),
        ("lognormal", 1000, "prefill", _scale_top_tenth("prefill", 1.15)),
    ],
    ids=["lognormal-queue", "lognormal-decode", "pareto-app", "lognormal-prefill-top10"],
)
def test_power_15pct_p95_shift_in_a_family_of_six(
    kind: str, n: int, name: str, shift: Shift
) -> None:
    rng = np.random.default_rng(7)
    hits = 0
    for _ in range(PAIRS):
        verdicts = one_report(rng, kind, n, shift, min_change=0.05)
        hits += verdicts[name] == "regression"
        # A slice that did not change and does not feed the changed one is never blamed often.
    target = 0.80
    assert hits / PAIRS >= target - allowance(target)


def test_top_tenth_shift_leaves_median_alone_but_moves_p95() -> None:
    rng = np.random.default_rng(3)
    s = slices(rng, "lognormal", 100_000)
    shifted = _scale_top_tenth("prefill", 1.15)(s)["prefill"]
    assert np.median(shifted) == np.median(s["prefill"])
    assert np.percentile(shifted, 95) / np.percentile(s["prefill"], 95) == pytest.approx(1.15)


def test_unchanged_slices_are_rarely_blamed_under_a_shift() -> None:
    rng = np.random.default_rng(11)
    blamed = 0
    for _ in range(PAIRS):
        verdicts = one_report(rng, "lognormal", 1000, _scale("queue", 1.15), min_change=0.05)
        blamed += any(verdicts[k] == "regression" for k in ("decode", "app", "prefill"))
    alpha = 1.0 - CONFIDENCE
    assert blamed / PAIRS <= alpha + allowance(alpha)


def test_paired_interval_is_narrower_on_correlated_pairs() -> None:
    rng = np.random.default_rng(5)
    n = 2000
    prompt_cost = np.exp(0.4 * rng.standard_normal(n))  # the same prompts on both sides
    base = 100.0 * prompt_cost * np.exp(0.1 * rng.standard_normal(n))
    head = 100.0 * prompt_cost * np.exp(0.1 * rng.standard_normal(n))
    order = rng.permutation(n)  # head ran the prompts in another order
    head = head[order]
    ib = np.arange(n)
    ih = np.argsort(order)  # head[ih[k]] is prompt k
    unpaired = compare_percentile(base, head, P, CONFIDENCE)
    paired = compare_percentile(base, head, P, CONFIDENCE, pairs=(ib, ih))
    assert paired.paired and not unpaired.paired
    assert unpaired.ci is not None and paired.ci is not None
    width_u = unpaired.ci[1] - unpaired.ci[0]
    width_p = paired.ci[1] - paired.ci[0]
    assert width_p < 0.7 * width_u
    assert paired.delta == unpaired.delta


def test_paired_aa_is_calibrated() -> None:
    rng = np.random.default_rng(9)
    n, flagged = 1000, 0
    for _ in range(PAIRS):
        cost = np.exp(0.4 * rng.standard_normal(n))
        base = 100.0 * cost * np.exp(0.15 * rng.standard_normal(n))
        head = 100.0 * cost * np.exp(0.15 * rng.standard_normal(n))
        idx = np.arange(n)
        c = compare_percentile(base, head, P, CONFIDENCE, pairs=(idx, idx))
        assert c.p_value is not None
        flagged += c.p_value < 1.0 - CONFIDENCE
    alpha = 1.0 - CONFIDENCE
    assert flagged / PAIRS <= alpha + allowance(alpha)


def test_autocorrelation_is_reported_as_effective_n() -> None:
    rng = np.random.default_rng(1)
    s = slices(rng, "ar1", 1000)["decode"]
    c = compare_percentile(s, slices(rng, "ar1", 1000)["decode"], P, CONFIDENCE)
    assert c.note is not None and "autocorrelated in arrival order: effective n" in c.note
    iid = slices(rng, "lognormal", 1000)["decode"]
    assert compare_percentile(iid, iid[::-1].copy(), P, CONFIDENCE).note is None


@pytest.mark.parametrize(("median", "step"), [(40.0, 10.0), (60.0, 10.0), (5.0, 1.0)])
def test_aa_quantised_values_are_not_flagged(median: float, step: float) -> None:
    """Latencies on a coarse clock (whole ms, 10 ms ticks) repeat around the percentile; the
    percentile then jumps a whole step between runs of the same system. Two-sided, no floors."""
    rng = np.random.default_rng(7)
    alpha = 1.0 - CONFIDENCE
    pairs = 400
    flagged = 0
    for _ in range(pairs):
        a, b = (np.round(rng.lognormal(np.log(median), 0.4, 1000) / step) * step for _ in "ab")
        c = compare_percentile(a, b, P, CONFIDENCE)
        flagged += decide([c], min_change=0.0, min_ms=0.0, confidence=CONFIDENCE)[0] != "none"
    assert flagged / pairs <= alpha + allowance(alpha, pairs)


def test_quantised_15pct_shift_is_still_found() -> None:
    rng = np.random.default_rng(8)
    hits = 0
    for _ in range(200):
        a = np.round(rng.lognormal(np.log(50), 0.4, 1000) / 10) * 10
        b = np.round(1.15 * rng.lognormal(np.log(50), 0.4, 1000) / 10) * 10
        c = compare_percentile(a, b, P, CONFIDENCE)
        hits += decide([c], min_change=0.05, min_ms=5.0, confidence=CONFIDENCE)[0] == "regression"
    assert hits / 200 >= 0.8
