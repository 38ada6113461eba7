"""Unit tests of budgetdiff.stats (simulations live in test_stats_simulation.py)."""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np
import pytest
from scipy import stats as sps

from budgetdiff.stats import (
    Change,
    attainment,
    compare_percentile,
    decide,
    holm,
    interval,
    needed_for_interval,
    normal_cdf,
    normal_quantile,
    percentile,
    percentiles,
    two_proportion_p,
)
from budgetdiff.stats.distributions import beta_quantile, t_quantile, t_two_sided_p, welch_df


def _change(base: float, delta: float, p_value: float | None, needed: int | None = None) -> Change:
    return Change(
        base=base,
        head=base + delta,
        delta=delta,
        delta_pct=100.0 * delta / base,
        ci=None if p_value is None else (delta - 1.0, delta + 1.0),
        p_value=p_value,
        mde_pct=None,
        needed=needed,
        paired=False,
        note=None,
    )


@pytest.mark.parametrize("n", [1, 2, 7, 100, 1001])
@pytest.mark.parametrize("p", [1.0, 50.0, 90.0, 95.0, 99.0, 99.9])
def test_percentile_and_compare_values_equal_numpy(n: int, p: float) -> None:
    rng = np.random.default_rng(n)
    x = rng.lognormal(3.0, 0.4, n)
    y = rng.lognormal(3.0, 0.4, n)
    assert percentile(x, p) == float(np.percentile(x, p))
    c = compare_percentile(x, y, p, 0.95)
    assert c.base == float(np.percentile(x, p))
    assert c.head == float(np.percentile(y, p))
    assert c.delta == c.head - c.base


@pytest.mark.parametrize("p", [50.0, 90.0, 95.0, 99.0, 99.9, 5.0])
@pytest.mark.parametrize("confidence", [0.9, 0.95, 0.99])
def test_needed_for_interval_matches_scipy_exact_interval(p: float, confidence: float) -> None:
    n = needed_for_interval(p, confidence)

    def finite(m: int) -> bool:
        x = np.arange(m, dtype=float)
        ci = sps.quantile_test(x, q=float(np.median(x)), p=p / 100).confidence_interval(confidence)
        return bool(np.isfinite(ci.low) and np.isfinite(ci.high))

    assert finite(n)
    assert not finite(n - 1)


def test_needed_for_interval_known_values() -> None:
    assert needed_for_interval(95, 0.95) == 72
    # 0.99**367 = 0.02501 > 0.025: 367 requests leave the upper end of a 95% interval open.
    assert needed_for_interval(99, 0.95) == 368
    assert needed_for_interval(50, 0.95) == 6


def test_too_few_requests_is_inconclusive_with_the_count_needed() -> None:
    rng = np.random.default_rng(0)
    base, head = rng.lognormal(3, 0.4, 30), rng.lognormal(3, 0.4, 30) * 2
    c = compare_percentile(base, head, 99.0, 0.95)
    assert c.needed == needed_for_interval(99.0, 0.95)
    assert c.ci is None and c.p_value is None and c.mde_pct is None
    assert c.base == float(np.percentile(base, 99)) and c.delta > 0
    assert c.note is not None and "needed" in c.note
    assert decide([c], min_change=0.0, min_ms=0.0, confidence=0.95) == ["inconclusive"]


def test_one_side_short_is_inconclusive() -> None:
    rng = np.random.default_rng(1)
    c = compare_percentile(rng.lognormal(3, 0.4, 1000), rng.lognormal(3, 0.4, 71), 95.0, 0.95)
    assert c.needed == 72


def test_empty_side_is_inconclusive_not_a_crash() -> None:
    c = compare_percentile(np.array([]), np.ones(100), 95.0, 0.95)
    assert c.needed == 72 and c.p_value is None and math.isnan(c.base)


def test_interval_covers_delta_and_mde_shrinks_with_n() -> None:
    rng = np.random.default_rng(2)
    small = compare_percentile(rng.lognormal(3, 0.4, 1000), rng.lognormal(3, 0.4, 1000), 95, 0.95)
    big = compare_percentile(rng.lognormal(3, 0.4, 16000), rng.lognormal(3, 0.4, 16000), 95, 0.95)
    assert small.ci is not None and small.ci[0] < small.delta < small.ci[1]
    assert small.mde_pct is not None and big.mde_pct is not None
    # MDE ~ 1/sqrt(n): 16x the requests, about a quarter of the MDE.
    assert big.mde_pct == pytest.approx(small.mde_pct / 4, rel=0.3)


def test_mde_grows_with_family_size() -> None:
    rng = np.random.default_rng(3)
    b, h = rng.lognormal(3, 0.4, 2000), rng.lognormal(3, 0.4, 2000)
    one = compare_percentile(b, h, 95, 0.95, family_size=1)
    twelve = compare_percentile(b, h, 95, 0.95, family_size=12)
    assert one.mde_pct is not None and twelve.mde_pct is not None
    assert twelve.mde_pct > one.mde_pct
    assert one.ci == twelve.ci and one.p_value == twelve.p_value


def test_standard_error_matches_asymptotic_formula() -> None:
    # lognormal sigma 0.4, n = 1000: the p95 is known to about +-2.7% (1 se) per side.
    rng = np.random.default_rng(4)
    rel = []
    for _ in range(200):
        c = compare_percentile(rng.lognormal(0, 0.4, 1000), rng.lognormal(0, 0.4, 1000), 95, 0.95)
        assert c.ci is not None
        rel.append((c.ci[1] - c.ci[0]) / 2 / 1.959964 / math.sqrt(2) / c.base)
    assert float(np.median(rel)) == pytest.approx(0.0267, rel=0.1)


def test_one_run_a_side_is_the_side_as_it_is() -> None:
    rng = np.random.default_rng(12)
    b, h = rng.lognormal(3, 0.4, 2000), rng.lognormal(3, 0.4, 2000)
    one = np.zeros(2000, dtype=np.intp)
    plain = compare_percentile(b, h, 95, 0.95)
    assert compare_percentile(b, h, 95, 0.95, base_runs=one, head_runs=one) == plain
    # runs too short for their own interval (p95 needs 72): nothing to estimate drift from
    short = np.arange(2000) // 50
    assert compare_percentile(b, h, 95, 0.95, base_runs=short, head_runs=short) == plain


def test_runs_that_differ_widen_the_interval_by_the_variance_between_them() -> None:
    """Four runs a side, each shifted by its own factor: the interval with the runs given is
    wider than the one that sees only the spread inside the pooled runs, and holds the same
    change."""
    rng = np.random.default_rng(13)
    factors = np.repeat([0.94, 1.0, 1.05, 1.1], 1000)
    runs = np.repeat(np.arange(4), 1000)
    b = rng.lognormal(3, 0.3, 4000) * factors
    h = rng.lognormal(3, 0.3, 4000) * factors[::-1]
    pooled = compare_percentile(b, h, 95, 0.95)
    clustered = compare_percentile(b, h, 95, 0.95, base_runs=runs, head_runs=runs)
    assert pooled.ci is not None and clustered.ci is not None
    assert clustered.delta == pooled.delta
    assert clustered.ci[1] - clustered.ci[0] > 1.5 * (pooled.ci[1] - pooled.ci[0])
    # the runs' own p95s vary by more than their errors: that spread is what was added
    p95s = [np.percentile(b[runs == r], 95) for r in range(4)]
    assert np.std(p95s, ddof=1) > 3 * (pooled.ci[1] - pooled.ci[0]) / (2 * 1.96) / math.sqrt(2)


def test_holm_hand_example() -> None:
    # alpha 0.05, m = 4: sorted 0.01 <= 0.0125 yes, 0.015 <= 0.01667 yes, 0.03 <= 0.025 no: stop.
    assert holm([0.03, 0.01, 0.2, 0.015], 0.05) == [False, True, False, True]
    # None entries are not in the family: m = 2, 0.02 <= 0.025 and 0.04 <= 0.05.
    assert holm([0.04, None, 0.02, None], 0.05) == [True, False, True, False]
    assert holm([0.04, 0.3, 0.02, 0.5], 0.05) == [False, False, False, False]
    assert holm([], 0.05) == []


def test_decide_respects_min_change_and_min_ms() -> None:
    base = 200.0
    tiny = _change(base, 6.0, 1e-9)  # 3%: below min_change 5%
    small_abs = _change(base, 12.0, 1e-9)  # 6% but 12 ms < min_ms 15
    real = _change(base, 20.0, 1e-9)  # 10% and 20 ms
    not_sig = _change(base, 40.0, 0.2)
    verdicts = decide(
        [tiny, small_abs, real, not_sig], min_change=0.05, min_ms=15.0, confidence=0.95
    )
    assert verdicts == ["none", "none", "regression", "none"]


def test_a_row_is_never_flagged_while_its_interval_holds_zero() -> None:
    """Issue 29, item 4: the p-value alone (here from a second test) does not flag a row whose
    shown interval says "maybe no change"."""
    through_zero = Change(
        base=100.0,
        head=105.2,
        delta=5.2,
        delta_pct=5.2,
        ci=(-0.5, 10.8),
        p_value=1e-6,
        mde_pct=None,
        needed=None,
        paired=False,
        note=None,
    )
    assert decide([through_zero], min_change=0.0, min_ms=0.0, confidence=0.95) == ["none"]
    below = _change(100.0, -8.0, 1e-6)  # interval (-9, -7)
    assert decide([below], min_change=0.0, min_ms=0.0, confidence=0.95) == ["improvement"]


def test_decide_improvement_and_inconclusive() -> None:
    better = _change(100.0, -20.0, 1e-6)
    short = _change(100.0, 50.0, None, needed=368)
    assert decide([better, short], min_change=0.05, min_ms=1.0, confidence=0.95) == [
        "improvement",
        "inconclusive",
    ]


def test_decide_applies_holm_over_the_family() -> None:
    # 0.02 alone is significant; among three tested rows it needs <= 0.05/3.
    row = _change(100.0, 20.0, 0.02)
    assert decide([row], min_change=0, min_ms=0, confidence=0.95) == ["regression"]
    others = [_change(100.0, 1.0, 0.5), _change(100.0, 1.0, 0.6)]
    assert decide([row, *others], min_change=0, min_ms=0, confidence=0.95)[0] == "none"


def test_real_improvement_is_classified_as_improvement() -> None:
    rng = np.random.default_rng(6)
    base = rng.lognormal(5, 0.4, 3000)
    head = rng.lognormal(5, 0.4, 3000) * 0.7
    c = compare_percentile(base, head, 95, 0.95)
    assert c.delta < 0 and c.ci is not None and c.ci[1] < 0
    assert decide([c], min_change=0.05, min_ms=5.0, confidence=0.95) == ["improvement"]


def test_tied_values_give_a_decision_not_a_division_by_zero() -> None:
    base = np.full(500, 10.0)
    same = compare_percentile(base, base.copy(), 95, 0.95)
    assert same.p_value == 1.0 and same.ci == (0.0, 0.0)
    moved = compare_percentile(base, np.full(500, 12.0), 95, 0.95)
    assert moved.p_value is not None and moved.p_value < 1e-9
    assert decide([moved], min_change=0.05, min_ms=1.0, confidence=0.95) == ["regression"]


def test_zero_base_has_no_relative_numbers() -> None:
    base = np.zeros(200)
    c = compare_percentile(base, np.ones(200), 95, 0.95)
    assert c.delta_pct is None and c.mde_pct is None


@pytest.mark.parametrize(
    ("k", "n"), [(0, 10), (10, 10), (1, 1), (3, 17), (950, 1000), (999_000, 1_000_000), (5, 5000)]
)
@pytest.mark.parametrize("confidence", [0.9, 0.95, 0.99])
def test_attainment_clopper_pearson_matches_scipy(k: int, n: int, confidence: float) -> None:
    good = np.zeros(n, dtype=bool)
    good[:k] = True
    good = np.random.default_rng(k).permutation(good)  # independent requests: any order
    a = attainment(good, confidence)
    assert a.effective_n is None
    alpha = 1 - confidence
    lo = 0.0 if k == 0 else float(sps.beta.ppf(alpha / 2, k, n - k + 1))
    hi = 1.0 if k == n else float(sps.beta.ppf(1 - alpha / 2, k + 1, n - k))
    assert (a.good, a.total) == (k, n)
    assert a.pct == pytest.approx(100.0 * k / n)
    assert a.ci_pct[0] == pytest.approx(100 * lo, abs=1e-9)
    assert a.ci_pct[1] == pytest.approx(100 * hi, abs=1e-9)


def test_the_distributions_answer_the_questions_their_names_ask() -> None:
    """Thin wrappers over NormalDist and scipy.special: argument order and tails, checked
    against textbook values and scipy.stats (t table: 2.571 at df 5, 2.228 at df 10)."""
    assert normal_quantile(0.975) == NormalDist().inv_cdf(0.975)
    assert normal_cdf(-1.0) == NormalDist().cdf(-1.0)
    assert t_quantile(0.975, 5.0) == pytest.approx(2.5706, abs=1e-4)
    assert t_quantile(0.975, 10.0) == pytest.approx(2.2281, abs=1e-4)
    assert t_quantile(0.975, math.inf) == pytest.approx(1.959964, abs=1e-6)
    assert t_two_sided_p(2.5706, 5.0) == pytest.approx(0.05, abs=1e-5)
    assert t_two_sided_p(-1.959964, math.inf) == pytest.approx(0.05, abs=1e-6)
    assert t_two_sided_p(40.0, 3.0) == pytest.approx(2 * sps.t.sf(40.0, 3.0), rel=1e-9)
    for df in (1.5, 7.0, 63.0):
        for prob in (0.6, 0.9, 0.999):
            assert t_quantile(prob, df) == pytest.approx(sps.t.ppf(prob, df), rel=1e-12)
    assert beta_quantile(0.025, 3, 17) == pytest.approx(sps.beta.ppf(0.025, 3, 17), rel=1e-12)
    assert beta_quantile(0.5, 1, 1) == pytest.approx(0.5)
    for outside in (0.0, 1.0, -0.5):
        with pytest.raises(ValueError):
            normal_quantile(outside)


def test_welch_df_is_satterthwaite_and_known_variances_count_as_infinite() -> None:
    # equal variances, 10 degrees of freedom each: (v + v)^2 / (v^2/10 + v^2/10) = 20
    assert welch_df(4.0, 10.0, 4.0, 10.0) == pytest.approx(20.0)
    assert welch_df(1.0, math.inf, 1.0, 9.0) == pytest.approx(36.0)
    assert welch_df(1.0, math.inf, 1.0, math.inf) == math.inf


def test_attainment_of_no_requests() -> None:
    a = attainment(np.zeros(0, dtype=bool), 0.95)
    assert a.total == 0 and a.ci_pct == (0.0, 100.0) and math.isnan(a.pct)


def test_other_percentiles_come_from_the_same_selection_exactly() -> None:
    rng = np.random.default_rng(11)
    for n in (5, 73, 1000, 4001):
        x = rng.lognormal(3, 0.5, n)
        qs = [50.0, 90.0, 95.0, 99.0]
        assert percentiles(x, qs) == [float(np.percentile(x, q)) for q in qs]
        y = rng.lognormal(3, 0.5, n)
        c = compare_percentile(x, y, 95, 0.95, also=[50.0, 90.0, 99.0])
        expect = [(float(np.percentile(x, q)), float(np.percentile(y, q))) for q in (50, 90, 99)]
        assert list(c.others) == expect


def test_a_comparison_gives_heads_own_interval_as_interval_does() -> None:
    rng = np.random.default_rng(12)
    for n in (73, 1000, 200_000):  # the last past order_statistics' bracketing size
        x, y = rng.lognormal(3, 0.5, n), rng.lognormal(3.1, 0.5, n)
        runs = np.repeat([0, 1], [n // 2, n - n // 2])  # runs widen the change, not head's own
        for p, also in ((95.0, [50.0, 90.0, 99.0]), (50.0, [])):
            c = compare_percentile(x, y, p, 0.95, also=also, head_runs=runs)
            assert c.head_interval == interval(y, p, 0.95)
    assert compare_percentile(x[:10], y, 95.0, 0.95).head_interval is None  # too few a side


@pytest.mark.parametrize(
    ("above_base", "n_base", "above_head", "n_head"),
    [(50, 1000, 80, 1000), (5, 96, 12, 96), (30, 200, 10, 300), (7, 50, 7, 50)],
)
def test_two_proportion_p_is_pearsons_chi_square_without_correction(
    above_base: int, n_base: int, above_head: int, n_head: int
) -> None:
    table = [[above_base, n_base - above_base], [above_head, n_head - above_head]]
    expected = sps.chi2_contingency(table, correction=False).pvalue
    p = two_proportion_p(above_base=above_base, n_base=n_base, above_head=above_head, n_head=n_head)
    assert p is not None and p == pytest.approx(expected, rel=1e-9, abs=1e-12)


def test_two_proportion_p_of_a_share_of_0_or_1_on_both_sides_is_none() -> None:
    assert two_proportion_p(above_base=0, n_base=100, above_head=0, n_head=80) is None
    assert two_proportion_p(above_base=100, n_base=100, above_head=80, n_head=80) is None


def test_paired_correlation_is_the_phi_coefficient_of_the_indicators() -> None:
    """numpy's Pearson correlation of the paired 0/1 indicators I(x <= percentile), scaled by
    m / sqrt(n_b n_h), clipped to [0, 0.999]: every request paired in order, and a subset."""
    from budgetdiff.stats.change import _paired_rho, _side

    rng = np.random.default_rng(13)
    n = 5_000
    common = rng.lognormal(3, 0.5, n)
    x, y = common * rng.lognormal(0, 0.2, n), common * rng.lognormal(0.05, 0.2, n)
    sb, sh = _side(x, 95.0, 0.95), _side(y, 95.0, 0.95)
    every = np.arange(n)
    some = np.sort(rng.choice(n, 3_000, replace=False))
    for ib, ih in ((every, every), (some, some)):
        phi = np.corrcoef(x[ib] <= sb.value, y[ih] <= sh.value)[0, 1]
        want = min(max(phi * len(ib) / n, 0.0), 0.999)
        assert want > 0.2
        assert _paired_rho(sb, sh, (ib, ih)) == pytest.approx(want, rel=1e-12)
    flat = _side(np.ones(n), 95.0, 0.95)  # every indicator 1: no variance, no correlation
    assert _paired_rho(flat, sh, (every, every)) == 0.0
