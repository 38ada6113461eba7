"""Tail attribution: every decomposition adds up exactly, unchanged slices get exactly 0, and a
decode regression is attributed to decode (simulated and in the real vLLM sample pair)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from budgetdiff.formats import ReadOptions, vllm
from budgetdiff.measure.attribution import (
    MAX_SHAPLEY_SLICES,
    headline,
    quantile_change,
    quantile_contributions,
    round_shares,
    shapley,
    shapley_change,
    tail_change,
    tail_contributions,
    tail_shares,
)
from budgetdiff.table import UNATTRIBUTED, FloatArray
from tests.support.paths import SAMPLES


def _slices(rng: np.random.Generator, k: int, n: int) -> dict[str, FloatArray]:
    return {f"s{i}": rng.lognormal(rng.uniform(1, 6), rng.uniform(0.1, 1.0), n) for i in range(k)}


def _total(slices: dict[str, FloatArray]) -> FloatArray:
    out = np.zeros(len(next(iter(slices.values()))))
    for x in slices.values():
        out = out + x
    return out


def _tail_mean(total: FloatArray, p: float) -> float:
    return float(total[total >= np.percentile(total, p)].mean())


def _realistic(rng: np.random.Generator, n: int) -> dict[str, FloatArray]:
    tokens = rng.integers(20, 500, n)
    return {
        "network": rng.lognormal(np.log(40), 0.5, n),
        "queue": rng.lognormal(np.log(60), 0.8, n),
        "prefill": rng.lognormal(np.log(300), 0.4, n),
        "decode": tokens * rng.lognormal(np.log(12), 0.2, n),
        "app": rng.lognormal(np.log(80), 0.3, n),
    }


# --- tail contributions ------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(8))
def test_contributions_add_up_to_the_tail_mean(seed: int) -> None:
    rng = np.random.default_rng(seed)
    slices = _slices(rng, int(rng.integers(1, 8)), int(rng.integers(1, 3000)))
    total = _total(slices)
    for p in (50.0, 90.0, 95.0, 99.0, 99.9):
        c = tail_contributions(slices, total, p)
        assert list(c) == list(slices)  # float noise never invents an unattributed slice
        es = _tail_mean(total, p)
        assert math.fsum(c.values()) == pytest.approx(es, rel=1e-9)
        tail = total >= np.percentile(total, p)
        for name, x in slices.items():
            assert c[name] == pytest.approx(x[tail].mean(), rel=1e-12)


def test_ties_at_the_threshold_are_all_in_the_tail() -> None:
    a = np.array([1.0] * 10 + [4.0] * 10)
    b = np.array([1.0] * 10 + [1.0] * 5 + [2.0] * 5)
    total = a + b  # ten requests at 2 ms, five at 5 ms, five at 6 ms
    c = tail_contributions({"a": a, "b": b}, total, 60)  # threshold 5.0: 10 requests
    assert c == {"a": 4.0, "b": 1.5}
    assert sum(c.values()) == _tail_mean(total, 60) == 5.5


def test_time_the_slices_miss_is_unattributed_never_dropped() -> None:
    rng = np.random.default_rng(3)
    slices = _slices(rng, 3, 500)
    extra = np.where(rng.random(500) < 0.2, 250.0, 0.0)
    total = _total(slices) + extra
    c = tail_contributions(slices, total, 95)
    assert c[UNATTRIBUTED] > 0
    assert math.fsum(c.values()) == pytest.approx(_tail_mean(total, 95), rel=1e-9)
    # a caller-given unattributed slice absorbs the rest too, with no double counting
    c2 = tail_contributions({**slices, UNATTRIBUTED: extra / 2}, total, 95)
    assert c2[UNATTRIBUTED] == pytest.approx(c[UNATTRIBUTED], rel=1e-9)


def test_contributions_reject_bad_arrays() -> None:
    with pytest.raises(ValueError, match="expected 3"):
        tail_contributions({"a": np.ones(2)}, np.ones(3), 95)
    with pytest.raises(ValueError, match="NaN"):
        tail_contributions({"a": np.array([1.0, np.nan])}, np.ones(2), 95)
    with pytest.raises(ValueError, match="no requests"):
        tail_contributions({}, np.array([]), 95)


# --- shares and changes --------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(6))
def test_tail_shares_add_up_to_100(seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    slices = _slices(rng, int(rng.integers(1, 9)), 2000)
    shares = tail_shares(tail_contributions(slices, _total(slices), 95))
    assert math.fsum(shares.values()) == pytest.approx(100.0, abs=1e-9)
    assert all(0 < s < 100 or len(shares) == 1 for s in shares.values())
    rounded = round_shares(shares, 1)
    assert round(sum(rounded.values()), 6) == 100.0
    assert all(abs(rounded[k] - shares[k]) < 0.1 for k in shares)


def test_a_zero_tail_has_no_owner() -> None:
    assert tail_shares({"a": 0.0, "b": 0.0}) == {"a": 0.0, "b": 0.0}
    assert round_shares({"a": 0.0, "b": 0.0}) == {"a": 0.0, "b": 0.0}


@pytest.mark.parametrize("seed", range(6))
def test_tail_change_adds_up_to_the_change_of_the_tail_mean(seed: int) -> None:
    rng = np.random.default_rng(200 + seed)
    base = _slices(rng, 5, int(rng.integers(50, 3000)))
    head = _slices(rng, 5, int(rng.integers(50, 3000)))  # unpaired: other requests, other n
    head["extra"] = rng.lognormal(2, 0.5, len(head["s0"]))  # a slice only head has
    del head["s4"]  # and one only base has
    ch = tail_contributions(head, _total(head), 95)
    cb = tail_contributions(base, _total(base), 95)
    parts = tail_change(cb, ch)
    assert set(parts) == {"s0", "s1", "s2", "s3", "s4", "extra"}
    assert parts["extra"] == ch["extra"] and parts["s4"] == -cb["s4"]
    expected = _tail_mean(_total(head), 95) - _tail_mean(_total(base), 95)
    assert math.fsum(parts.values()) == pytest.approx(expected, rel=1e-9, abs=1e-9)


# --- Shapley ---------------------------------------------------------------------------------


def _brute_shapley(
    base: dict[str, FloatArray], head: dict[str, FloatArray], p: float
) -> dict[str, float]:
    """The textbook definition: average marginal contribution over every order of slices."""
    names = list(head)

    def v(at_head: frozenset[str]) -> float:
        s = np.zeros(len(head[names[0]]))
        for name in names:
            s = s + (head[name] if name in at_head else base[name])
        return float(np.percentile(s, p))

    out = dict.fromkeys(names, 0.0)
    orders = list(itertools.permutations(names))
    for order in orders:
        done: frozenset[str] = frozenset()
        for name in order:
            out[name] += v(done | {name}) - v(done)
            done = done | {name}
    return {k: x / len(orders) for k, x in out.items()}


@pytest.mark.parametrize("seed", range(10))
def test_shapley_adds_up_exactly_and_unchanged_slices_get_zero(seed: int) -> None:
    rng = np.random.default_rng(300 + seed)
    k = 2 + seed % 5  # 2 .. 6 slices
    n = int(rng.integers(2, 4000))
    base = _slices(rng, k, n)
    changed = rng.random(k) < 0.5
    changed[0] = True
    head = {
        name: x * rng.lognormal(0, 0.3, n) if changed[i] else x.copy()
        for i, (name, x) in enumerate(base.items())
    }
    for p in (50.0, 95.0, 99.0):
        phi = shapley_change(base, head, p)
        expected = np.percentile(_total(head), p) - np.percentile(_total(base), p)
        assert math.fsum(phi.values()) == pytest.approx(expected, rel=1e-9, abs=1e-9)
        for i, name in enumerate(base):
            if not changed[i]:
                assert phi[name] == 0.0


@pytest.mark.parametrize(("n", "p"), [(1, 95), (2, 95), (3, 0), (7, 100), (40, 95), (301, 99.9)])
def test_shapley_matches_the_definition(n: int, p: float) -> None:
    # also checks that restricting to the requests that can be at the percentile loses nothing
    rng = np.random.default_rng(n)
    base = _slices(rng, 4, n)
    head = {name: x * rng.lognormal(0, 0.5, n) for name, x in base.items()}
    phi = shapley_change(base, head, p)
    brute = _brute_shapley(base, head, p)
    for name in base:
        assert phi[name] == pytest.approx(brute[name], rel=1e-9, abs=1e-9)


def test_shapley_slices_missing_on_one_side_count_as_zero() -> None:
    rng = np.random.default_rng(5)
    base = _slices(rng, 2, 500)
    head = {"s0": base["s0"] * 1.3, "new": rng.lognormal(3, 0.2, 500)}
    phi = shapley_change(base, head, 95)
    assert set(phi) == {"s0", "s1", "new"}
    assert phi["new"] > 0 and phi["s1"] < 0
    expected = np.percentile(_total(head), 95) - np.percentile(_total(base), 95)
    assert math.fsum(phi.values()) == pytest.approx(expected, rel=1e-9)


def test_shapley_limits() -> None:
    with pytest.raises(ValueError, match="3 values, expected 4"):
        shapley_change({"a": np.ones(3)}, {"a": np.ones(4)}, 95)
    assert shapley_change({}, {}, 95) == {}
    same = {f"s{i}": np.ones(10) for i in range(MAX_SHAPLEY_SLICES + 5)}
    nothing = shapley(same, same, 95)  # fifteen slices, none changed: exact zeros, no sampling
    assert nothing.parts == dict.fromkeys(same, 0.0) and nothing.orders is None


def test_more_than_ten_changed_slices_are_sampled_add_up_and_keep_exact_zeros() -> None:
    rng = np.random.default_rng(11)
    n = 1500
    base = _slices(rng, 14, n)
    head = {k: x * 1.02 if i < 12 else x.copy() for i, (k, x) in enumerate(base.items())}
    head["s3"] = base["s3"] * 1.8  # the one that matters
    split = shapley(base, head, 95)
    assert split.orders == 256 and split.method == "Shapley over 256 sampled slice orders"
    expected = np.percentile(_total(head), 95) - np.percentile(_total(base), 95)
    assert math.fsum(split.parts.values()) == pytest.approx(expected, rel=1e-9)
    assert split.parts["s12"] == 0.0 and split.parts["s13"] == 0.0  # unchanged: exactly 0
    assert max(split.parts, key=lambda s: split.parts[s]) == "s3"
    # the same seed gives the same parts; ten changed slices are still exact
    assert shapley(base, head, 95).parts == split.parts
    ten = {k: head[k] if i < 10 else base[k] for i, k in enumerate(base)}
    assert shapley(base, ten, 95).orders is None


def test_sampled_shapley_is_close_to_exact() -> None:
    rng = np.random.default_rng(12)
    base = _slices(rng, 5, 800)
    head = {k: x * rng.lognormal(0, 0.3, 800) for k, x in base.items()}
    exact = shapley(base, head, 95)
    approx = shapley(base, head, 95, orders=400, exact_up_to=0)  # sample even 5 slices

    assert exact.orders is None and approx.orders == 400
    scale = abs(math.fsum(exact.parts.values())) + max(abs(v) for v in exact.parts.values())
    for name in base:
        assert approx.parts[name] == pytest.approx(exact.parts[name], abs=0.1 * scale)


# --- the quantile allocation -------------------------------------------------------------


@pytest.mark.parametrize("seed", range(8))
def test_quantile_parts_add_up_to_the_percentile(seed: int) -> None:
    rng = np.random.default_rng(500 + seed)
    n = int(rng.integers(1, 3000))
    slices = _slices(rng, int(rng.integers(1, 8)), n)
    total = _total(slices)
    for p in (50.0, 95.0, 99.0, 99.9):
        parts = quantile_contributions(slices, total, p)
        assert math.fsum(parts.values()) == pytest.approx(np.percentile(total, p), rel=1e-9)


def test_quantile_parts_of_a_shift_in_one_slice() -> None:
    rng = np.random.default_rng(42)
    base = _realistic(rng, 20000)
    head = dict(base, decode=base["decode"] + 300.0)  # every request 300 ms later
    cb = quantile_contributions(base, _total(base), 95)
    ch = quantile_contributions(head, _total(head), 95)
    change = quantile_change(cb, ch)
    assert math.fsum(change.values()) == pytest.approx(300.0, rel=1e-9)
    assert change["decode"] == pytest.approx(300.0, rel=0.15)


# --- a decode regression, and the headline -----------------------------------------------


def test_a_decode_regression_is_owned_by_decode() -> None:
    rng = np.random.default_rng(42)
    base = _realistic(rng, 2000)
    head = dict(base, decode=base["decode"] * 1.15)
    change = float(np.percentile(_total(head), 95) - np.percentile(_total(base), 95))

    paired = shapley_change(base, head, 95)
    assert paired["decode"] == pytest.approx(change, rel=1e-9)
    assert all(paired[s] == 0.0 for s in base if s != "decode")
    assert headline(95, change, paired, change="regression") == (
        f"p95 end to end +{change:,.0f} ms (regression): decode +{change:,.0f} ms"
    )

    # unpaired: other requests on the head side
    head2 = _realistic(np.random.default_rng(43), 2000)
    head2["decode"] = head2["decode"] * 1.15
    parts = quantile_change(
        quantile_contributions(base, _total(base), 95),
        quantile_contributions(head2, _total(head2), 95),
    )
    assert max(parts, key=lambda s: parts[s]) == "decode"
    text = headline(95, math.fsum(parts.values()), parts, change="regression")
    assert text.startswith("p95 end to end +") and "(regression): decode +" in text
    shares = tail_shares(quantile_contributions(head2, _total(head2), 95))
    assert max(shares, key=lambda s: shares[s]) == "decode"


def _headline_sum(text: str) -> tuple[int, int]:
    """(the stated change, the sum of the parts named after it), in whole ms."""
    stated, _, rest = text.partition(" (")
    value = int(stated.rsplit(" ", 2)[-2].replace(",", ""))
    listed = rest.partition("): ")[2]
    parts = [int(w.rsplit(" ", 2)[-2].replace(",", "")) for w in listed.split(", ")]
    return value, sum(parts)


def test_headline_wording() -> None:
    assert headline(95, 575.2, {"decode": 560.4, "queue": 14.8}, change="regression") == (
        "p95 end to end +575 ms (regression): decode +560 ms, queue +15 ms"
    )
    assert headline(95, -120.0, {"prefill": -96.0, "decode": -24.0}, change="improvement") == (
        "p95 end to end -120 ms (improvement): prefill -96 ms, decode -24 ms"
    )
    assert headline(95, 12.3, {"decode": 12.3}, change="none", ci_ms=(-40.2, 64.4)) == (
        "p95 end to end: no significant change (+12 ms, could be -40 to +64 ms)"
    )
    assert headline(95, -237.0, {"decode": -237.0}, change="none", ci_ms=(-441.0, -33.0)) == (
        "p95 end to end: no change that counts (-237 ms, could be -441 to -33 ms)"
    )
    assert headline(99, 4.25, {"app": 4.25}, change="regression") == (
        "p99 end to end +4.2 ms (regression): app +4.2 ms"
    )
    assert headline(
        95, 533.0, {"decode": 755.0, "prefill": -222.0, "app": 0.0}, change="regression"
    ) == ("p95 end to end +533 ms (regression): decode +755 ms, prefill -222 ms")
    many = {"a": 300.4, "b": 100.3, "c": 50.3, "d": 20.4, "e": 10.4, "f": -5.3}
    text = headline(95, math.fsum(many.values()), many, change="regression")
    assert text == (
        "p95 end to end +476 ms (regression): a +300 ms, b +100 ms, c +50 ms, 3 others +26 ms"
    )
    assert _headline_sum(text) == (476, 476)
    assert headline(95, 40.0, {"a": 40.0}, change="inconclusive") == (
        "p95 end to end +40 ms: inconclusive (too few requests to tell)"
    )
    assert headline(95, 1234.0, {}, change="regression") == "p95 end to end +1,234 ms (regression)"


def test_real_vllm_pair_decode_owns_the_change() -> None:
    """The sample pair differs only in the per-token decode delay (10 -> 12 ms)."""
    folder = SAMPLES / "generated" / "vllm"
    sides = []
    for side in ("base", "head"):
        data = (folder / side / "vllm_bench_serve.json").read_bytes()
        run = vllm.read(data, side, ReadOptions())[0]
        ok = run.succeeded
        total = run.total if run.total is not None else _total(run.slices)
        sides.append(({k: v[ok] for k, v in run.slices.items()}, total[ok]))
    (base, tb), (head, th) = sides
    assert "decode" in head

    parts = quantile_change(
        quantile_contributions(base, tb, 95), quantile_contributions(head, th, 95)
    )
    assert max(parts, key=lambda s: parts[s]) == "decode"
    assert parts["decode"] > 0.8 * math.fsum(parts.values()) > 0
    change = float(np.percentile(th, 95) - np.percentile(tb, 95))
    assert "(regression): decode +" in headline(95, change, parts, change="regression")

    if len(tb) == len(th):  # same prompts in the same order: pair by position
        phi = shapley_change(base, head, 95)
        assert max(phi, key=lambda s: phi[s]) == "decode"
