"""The permutation step-down over a family's rows (budgetdiff.stats.permutation), against truths
computed independently: np.percentile of each deal, a brute-force permutation test written
here, Sidak's step-down on independent rows, and the exact family-wise rate on A/A data."""

from __future__ import annotations

import numpy as np
import pytest

from budgetdiff.stats import compare_percentile, family_test
from budgetdiff.stats import permutation as pm


def _brute_p(base: np.ndarray, head: np.ndarray, p: float, draws: int, seed: int) -> float:
    """A plain permutation test of |p-th percentile of head - of base|, np.percentile per
    deal (the truth the windowed counting is held to)."""
    rng = np.random.default_rng(seed)
    pool = np.concatenate([head, base])
    observed = abs(np.percentile(head, p) - np.percentile(base, p))
    hits = 0
    for _ in range(draws):
        dealt = rng.permutation(pool)
        stat = abs(np.percentile(dealt[: head.size], p) - np.percentile(dealt[head.size :], p))
        hits += stat >= observed
    return (1 + hits) / (draws + 1)


@pytest.mark.parametrize("p", [50.0, 90.0, 95.0, 99.0, 10.0])
@pytest.mark.parametrize(("nh", "nb"), [(300, 300), (301, 280), (80, 1200)])
def test_each_deal_is_np_percentile_exactly(p: float, nh: int, nb: int) -> None:
    rng = np.random.default_rng([int(p), nh, nb])
    values = rng.lognormal(0.0, 0.5, nh + nb)
    values[::5] = np.round(values[::5], 1)  # ties
    pool = pm._Pool(values, nh, nb, p)
    deals = rng.permuted(np.broadcast_to(np.arange(nh + nb), (400, nh + nb)), axis=1) < nh
    deals[0] = np.arange(nh + nb) < nh  # the observed split
    deals[1] = np.arange(nh + nb) >= nb  # a split far in the tail: the whole-pool path
    want = [abs(np.percentile(values[d], p) - np.percentile(values[~d], p)) for d in deals]
    np.testing.assert_array_equal(pool.statistic(deals), want)


def test_one_row_is_the_plain_permutation_test() -> None:
    rng = np.random.default_rng(3)
    base, head = rng.lognormal(0, 0.4, 300), rng.lognormal(0.15, 0.4, 300)
    truth = _brute_p(base, head, 95.0, 4000, seed=11)
    (got,) = pm.step_down([base], [head], 95.0).adjusted
    assert abs(got - truth) < 0.02, (got, truth)
    assert 0.005 < truth < 0.6  # a case where the comparison says something


def test_identical_rows_pay_no_multiplicity() -> None:
    """A TTFT that is one slice's values is the same test twice: adjusted as one."""
    rng = np.random.default_rng(5)
    base, head = rng.lognormal(0, 0.4, 300), rng.lognormal(0.1, 0.4, 300)
    other = [rng.lognormal(0, 0.4, 300), rng.lognormal(0, 0.4, 300)]
    alone = pm.step_down([base, other[0]], [head, other[1]], 95.0).adjusted
    twice = pm.step_down([base, base, other[0]], [head, head, other[1]], 95.0).adjusted
    assert twice[0] == twice[1]
    assert twice[0] == pytest.approx(alone[0], abs=0.01)


def test_independent_rows_are_about_sidak() -> None:
    """Rows of independent requests: the smallest adjusted p-value is about Sidak's
    1 - (1 - p)^m of the row's own permutation p-value (the other rows permuted on their own
    lengths, so independently)."""
    rng = np.random.default_rng(9)
    m = 5
    base = [rng.lognormal(0, 0.4, 300 + 7 * j) for j in range(m)]
    head = [rng.lognormal(0.0, 0.4, 300 + 7 * j) for j in range(m)]
    head[0] = rng.lognormal(0.12, 0.4, 300)
    adjusted = pm.step_down(base, head, 95.0).adjusted
    own = _brute_p(base[0], head[0], 95.0, 4000, seed=2)
    sidak = 1.0 - (1.0 - own) ** m
    assert abs(adjusted[0] - sidak) < 0.03, (adjusted[0], own, sidak)
    assert adjusted[0] == min(adjusted)


def test_adjusted_p_values_are_monotone_in_the_rows_own() -> None:
    rng = np.random.default_rng(12)
    shifts = [0.0, 0.03, 0.06, 0.1, 0.15]
    base = [rng.lognormal(0, 0.4, 300) for _ in shifts]
    head = [rng.lognormal(s, 0.4, 300) for s in shifts]
    adjusted = pm.step_down(base, head, 95.0).adjusted
    own = [pm.step_down([b], [h], 95.0).adjusted[0] for b, h in zip(base, head, strict=True)]
    order = np.argsort(own, kind="stable")
    assert all(adjusted[i] >= own[i] - 0.02 for i in range(len(shifts)))  # own: other draws
    ranked = [adjusted[i] for i in order]
    assert ranked == sorted(ranked)


def test_the_same_runs_give_the_same_p_values() -> None:
    rng = np.random.default_rng(4)
    base = [rng.lognormal(0, 0.4, 300) for _ in range(3)]
    head = [rng.lognormal(0.05, 0.4, 300) for _ in range(3)]
    first = pm.step_down(base, head, 95.0).adjusted
    assert pm.step_down([b.copy() for b in base], [h.copy() for h in head], 95.0).adjusted == first
    head[1] = head[1] * 1.0001  # another run: another seed, other draws
    assert pm.step_down(base, head, 95.0).adjusted != first


def _report_rows(rng: np.random.Generator, n: int, decode: float = 1.0) -> list[np.ndarray]:
    """A report's 7 rows from one set of requests: ttft and total are sums of the slices."""
    slices = [rng.lognormal(np.log(m), 0.4, n) for m in (10.0, 20.0, 80.0, 700.0, 15.0)]
    slices[3] = slices[3] * decode
    ttft = slices[0] + slices[1] + slices[2]
    return [ttft, ttft + slices[3] + slices[4], *slices]


@pytest.mark.slow
def test_family_wise_rate_on_aa_is_alpha() -> None:
    """Under A/A (iid requests, the rows dependent through the sums) the family-wise rate of
    the step-down is its level: exact for a permutation test, up to the permutations' steps
    (neither conservative, as Holm's is, nor liberal)."""
    rng = np.random.default_rng(2026)
    reports, hits = 1000, 0
    for _ in range(reports):
        base, head = _report_rows(rng, 100), _report_rows(rng, 100)
        hits += min(pm.step_down(base, head, 95.0).adjusted) <= 0.05
    rate = hits / reports
    # at most 5% + 2 standard errors of 1,000 reports; at 100 a side the percentiles are coarse
    # steps (ties among the permuted statistics), which keeps it a little under 5% (3.4-3.8%)
    assert 0.03 <= rate <= 0.064, rate


def test_paired_requests_swap_within_pairs() -> None:
    """The same requests on both sides, head 3% slower each: swapping within pairs sees it,
    dealing the pool as if unpaired barely can; A/A paired keeps the rate."""
    rng = np.random.default_rng(8)
    n = 300
    base = rng.lognormal(0, 0.4, n)
    head = base * 1.03 * rng.lognormal(0, 0.02, n)
    order = np.arange(n)
    (paired,) = pm.step_down([base], [head], 95.0, pairs=[(order, order)]).adjusted
    (unpaired,) = pm.step_down([base], [head], 95.0).adjusted
    assert paired < 0.01 < 0.2 < unpaired
    hits = 0
    for _ in range(300):
        b = rng.lognormal(0, 0.4, n)
        h = b * rng.lognormal(0, 0.05, n)
        hits += (
            pm.step_down([b], [h], 95.0, pairs=[(order, order)], permutations=400).adjusted[0]
            <= 0.05
        )
    assert 0.02 <= hits / 300 <= 0.085, hits


def test_family_test_keeps_holm_where_requests_are_not_exchangeable() -> None:
    rng = np.random.default_rng(1)
    base, head = _report_rows(rng, 300), _report_rows(rng, 300)
    changes = [
        compare_percentile(b, h, 95.0, 0.95, family_size=7) for b, h in zip(base, head, strict=True)
    ]
    permuted = family_test(changes, base, head, 95.0, requests=(300, 300))
    assert permuted.method == "permutation" and permuted.why is None
    assert permuted.adjusted is not None and len(permuted.adjusted) == 7
    runs = family_test(changes, base, head, 95.0, requests=(300, 300), several_runs=True)
    assert runs.method == "holm" and runs.adjusted is None and "several runs" in str(runs.why)
    big_b, big_h = _report_rows(rng, 2_400), _report_rows(rng, 2_401)
    large = [compare_percentile(b, h, 95.0, 0.95) for b, h in zip(big_b, big_h, strict=True)]
    too_many = family_test(large, big_b, big_h, 95.0, requests=(2_400, 2_401))
    assert too_many.method == "holm" and "4,801 requests" in str(too_many.why)
    trend = np.linspace(0.0, 3.0, 300)  # slower and slower in arrival order
    drifting = [x * np.exp(trend) for x in base]
    ordered = [compare_percentile(b, h, 95.0, 0.95) for b, h in zip(drifting, head, strict=True)]
    assert any(any(c.autocorrelated) for c in ordered)
    assert family_test(ordered, drifting, head, 95.0, requests=(300, 300)).method == "holm"


def test_rows_too_short_for_an_interval_stay_out_of_the_family() -> None:
    rng = np.random.default_rng(6)
    base, head = _report_rows(rng, 300), _report_rows(rng, 300)
    short_b, short_h = rng.lognormal(0, 0.4, 40), rng.lognormal(0, 0.4, 40)
    rows_b, rows_h = [*base, short_b], [*head, short_h]
    changes = [compare_percentile(b, h, 95.0, 0.95) for b, h in zip(rows_b, rows_h, strict=True)]
    assert changes[-1].needed is not None
    test = family_test(changes, rows_b, rows_h, 95.0, requests=(300, 300))
    assert test.adjusted is not None and test.adjusted[-1] is None
    assert (
        test.adjusted[:7]
        == family_test(changes[:7], base, head, 95.0, requests=(300, 300)).adjusted
    )


def test_stopping_early_only_where_more_draws_would_not_change_a_verdict() -> None:
    """With the level, the deals stop early when every row's adjusted p-value is far from it,
    either way (most A/A reports, and clear regressions); the verdicts are those of all the
    deals, and a row near the level takes them all."""
    rng = np.random.default_rng(21)
    stopped = 0
    for decode in (1.0,) * 10 + (1.3,) * 4:
        base, head = _report_rows(rng, 300), _report_rows(rng, 300, decode=decode)
        full = pm.step_down(base, head, 95.0)
        early = pm.step_down(base, head, 95.0, level=0.05)
        assert [a <= 0.05 for a in early.bounded()] == [a <= 0.05 for a in full.bounded()]
        if early.permutations < full.permutations:
            stopped += 1
            assert all(abs(a - 0.05) > 0.02 for a in early.adjusted), early
        else:
            assert early == full
    assert stopped >= 10


def test_a_row_is_significant_only_if_other_draws_would_say_so_too() -> None:
    """The level is held by the upper end of the adjusted p-value's Monte Carlo error: at
    2,000 permutations an estimate of 0.036 is significant at 5%, one of 0.038 is not."""
    bounded = pm.StepDown([0.036, 0.038, 1 / 2001, 1.0], 2000).bounded()
    assert bounded[0] <= 0.05 < bounded[1]
    assert bounded[2] < 0.0025 and bounded[3] == 1.0
    assert pm.StepDown([0.036], 250).bounded()[0] > 0.05  # fewer draws, wider error


def test_family_test_decides_on_the_bounded_p_values() -> None:
    rng = np.random.default_rng(14)
    base, head = _report_rows(rng, 300), _report_rows(rng, 300, decode=1.2)
    changes = [compare_percentile(b, h, 95.0, 0.95) for b, h in zip(base, head, strict=True)]
    test = family_test(changes, base, head, 95.0, requests=(300, 300), level=0.05)
    assert test.method == "permutation"  # (about 1 report in 100 of iid requests is not)
    estimate = pm.step_down(base, head, 95.0, level=0.05)
    assert test.adjusted == estimate.bounded()
    assert test.adjusted is not None
    assert all(
        a is not None and a >= e for a, e in zip(test.adjusted, estimate.adjusted, strict=True)
    )


def test_pooled_gaps_are_not_dealt_as_requests() -> None:
    """Inter-token gaps cluster within their requests, so dealing them one by one would
    understate their noise: a pooled row takes Holm's correction at its share of the level
    (1 row of 8: p x 8), the requests' rows the permutation step-down at theirs (7 of 8)."""
    rng = np.random.default_rng(31)
    base, head = _report_rows(rng, 300), _report_rows(rng, 300)
    gaps_b, gaps_h = rng.lognormal(0, 0.3, 3000), rng.lognormal(0.02, 0.3, 3100)
    rows_b, rows_h = [*base, gaps_b], [*head, gaps_h]
    changes = [compare_percentile(b, h, 95.0, 0.95) for b, h in zip(rows_b, rows_h, strict=True)]
    test = family_test(changes, rows_b, rows_h, 95.0, requests=(300, 300), level=0.05)
    assert test.method == "permutation" and test.adjusted is not None
    own = changes[-1].p_value
    assert own is not None and test.adjusted[-1] == pytest.approx(min(1.0, 8 * own))
    dealt = pm.step_down(base, head, 95.0, level=0.05 * 7 / 8).bounded()  # their share
    assert test.adjusted[:7] == pytest.approx([min(1.0, a * 8 / 7) for a in dealt])
    only_gaps = family_test(changes[-1:], [gaps_b], [gaps_h], 95.0, requests=(300, 300))
    assert only_gaps.method == "holm" and "pooled inter-token gaps" in str(only_gaps.why)
