"""Simulations of budgetdiff.stats: A/A false-flag rate, power, MDE and attainment coverage.

The generators live in tests/support/simulation.py (tools/stats_tables.py prints the docs'
tables from the same code). A report has 7 rows tested together (Holm). Fixed seeds. A/A rates
are checked two ways: the point estimate at or below 1 - confidence, and the upper end of its
exact 95% interval at or below 6.5% (so a rate that only passes by simulation luck fails).
"""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np
import pytest

from budgetdiff.budget.file import parse_budget
from budgetdiff.measure.prepare import prepare
from budgetdiff.measure.rows import compare
from budgetdiff.stats import attainment, change, compare_percentile, decide, interval
from budgetdiff.stats import autocorrelation as ac
from budgetdiff.table import Run
from tests.support import simulation as sim

pytestmark = pytest.mark.slow  # thousands of simulated runs per test: `-m "not slow"` skips them

P = sim.P
CONFIDENCE = sim.CONFIDENCE
ALPHA = 1.0 - CONFIDENCE
REPORTS = 1000  # simulated base/head report pairs per scenario
INDEPENDENT = sim.CORRELATED[0]


def allowance(rate: float, pairs: int = REPORTS) -> float:
    return 2.0 * math.sqrt(rate * (1.0 - rate) / pairs)


def _assert_calibrated(aa: sim.AA) -> None:
    low, high = sim.exact_interval(aa.any_flag, aa.reports)
    assert aa.reports >= 1000
    assert aa.any_flag / aa.reports <= ALPHA, (aa, low, high)
    assert high <= 0.065, (aa, low, high)
    assert aa.through_zero == 0, aa  # issue 29: no flagged row's interval holds 0


def _assert_in_band(aa: sim.AA) -> None:
    """Issue 34, item 4: a true A/A design is calibrated, not only under alpha: the rate per
    report in [1%, 5%] (the point estimate; the exact interval's upper end as above)."""
    _assert_calibrated(aa)
    assert aa.any_flag / aa.reports >= 0.01, aa


@pytest.mark.parametrize("scenario", sim.CORRELATED, ids=lambda s: s.name.split(":")[0])
def test_aa_reports_flag_anything_at_most_alpha_under_autocorrelation(
    scenario: sim.Scenario,
) -> None:
    """Issue 12's scenarios at 1,000 requests a side: any flag, either way, no size floors;
    calibrated, not only under alpha (issue 34: in [1%, 5%])."""
    aa = sim.run_aa(scenario, 1000, REPORTS, seed=1201)
    _assert_in_band(aa)
    if scenario is INDEPENDENT:  # the note is rare where there is nothing to note
        assert aa.noted / aa.reports <= 0.05
    else:  # and correlation that moves the tail is found
        assert aa.noted / aa.reports >= 0.95


@pytest.mark.parametrize(
    ("scenario", "n"),
    [
        (INDEPENDENT, 200),
        (sim.SHAPES[0], 200),
        (sim.SHAPES[0], 1000),
        (sim.SHAPES[0], 4000),
    ],
    ids=["lognormal-200", "pareto-200", "pareto-1000", "pareto-4000"],
)
def test_aa_reports_flag_anything_at_most_alpha_for_other_shapes(
    scenario: sim.Scenario, n: int
) -> None:
    """In [1%, 5%] (issue 34): Pareto at 200 a side flagged 0.6% with Holm, 2.8% now."""
    _assert_in_band(sim.run_aa(scenario, n, REPORTS, seed=1202))


@pytest.mark.parametrize("n", [200, 1000])
def test_aa_bimodal_reports_flag_anything_at_most_alpha(n: int) -> None:
    """p95 inside the gap of a bimodal slice: the half band that reaches across the gap is
    steep, and says so (any flag was 5-8% here with one slope over the whole band); in [1%, 5%]
    (issue 34: 1.2% at 200 a side with Holm, 3.3% now)."""
    _assert_in_band(sim.run_aa(sim.SHAPES[1], n, REPORTS, seed=1202))


def test_aa_narrow_slow_mode_default_rules_flag_at_most_8_of_100() -> None:
    """Issue 29, item 1: 95% of decode ~680 ms (σ 0.03), 5% 1.9x slower, 1,000 requests a side,
    the default rules (5%, 5 ms). The p95 sits at the edge of the slow mode and jumps between
    the modes from run to run; one slope over the whole band, taken inside a mode, flagged 17%
    of A/A reports (39 of 100 in the issue's CLI count)."""
    aa = sim.run_aa(sim.NARROW_SLOW, 1000, 100, seed=2901, min_change=0.05, min_ms=5.0)
    assert aa.any_flag <= 8, aa
    assert aa.through_zero == 0, aa


def test_aa_narrow_slow_mode_without_floors_stays_within_alpha() -> None:
    aa = sim.run_aa(sim.NARROW_SLOW, 1000, 400, seed=2902)
    assert aa.any_flag / aa.reports <= ALPHA, aa
    assert aa.through_zero == 0, aa


@pytest.mark.parametrize(("n_base", "n_head"), [(300, 3000), (3000, 300)])
def test_aa_unequal_sizes_flag_neither_way_more_than_3_5pct(n_base: int, n_head: int) -> None:
    """Issue 29, item 2: Pareto 2.5 slices, 300 requests on one side and 3,000 on the other, no
    size floors. The small side's percentile and its standard error move together (a low p95
    has a flat band below it): with one slope over the whole band 5.7% of A/A reports flagged a
    regression (300 base) and 0.5% an improvement, and the other way round when swapped."""
    aa = sim.run_aa(sim.PARETO_25, n_base, 600, seed=2903, n_head=n_head)
    assert aa.regression / aa.reports <= 0.035, aa
    assert aa.improvement / aa.reports <= 0.035, aa
    assert aa.through_zero == 0, aa


def test_aa_three_drifting_runs_a_side_flag_at_most_4_of_60() -> None:
    """Issue 29, item 3: three runs of 1,000 requests a side, each run's decode scaled by its
    own lognormal(0, 3%) factor, no size floors. Told which run each request came from, the
    interval carries the variance between runs (9% of such A/A reports flagged a row without
    it, over 300 reports)."""
    aa = sim.run_drift_aa(60, 2905, runs=3, n=1000, drift=0.03, as_runs=True)
    assert aa.any_flag <= 4, aa
    assert aa.through_zero == 0, aa


def test_runs_that_do_not_drift_keep_the_level() -> None:
    aa = sim.run_drift_aa(200, 2906, runs=3, n=1000, drift=0.0, as_runs=True)
    assert aa.any_flag / aa.reports <= ALPHA, aa


def _budget_for_simulation() -> str:
    slices = ", ".join(f"{k}: 1000" for k in sim.MEDIANS_MS)
    return (
        "version: 1\npercentile: 95\n"
        f"slo: {{ttft: {sim.TTFT_TARGET_MS}, total: {sim.TOTAL_TARGET_MS}}}\n"
        f"slices: {{{slices}}}\nfirst_token_after: prefill\n"
        "regression: {min_change: 0%, min_ms: 0}\n"
    )


def test_the_real_compare_path_decides_as_the_simulated_reports() -> None:
    """The A/A rates above are the pipeline's: per-request runs through prepare and compare give
    the same verdict on every row as the stats layer the simulations call (AR(1) phi 0.9)."""
    budget = parse_budget(_budget_for_simulation(), "budget.yml")
    rng = np.random.default_rng(1203)
    reports = 300
    flagged = 0
    base, head = (sim.slices(rng, sim.CORRELATED[4], reports, 1000) for _ in "bh")
    base_rows, head_rows = sim.rows(base), sim.rows(head)
    for i in range(reports):
        b, h = (
            prepare(Run(name, 1000, slices={k: v[i] for k, v in s.items()}), budget)
            for name, s in (("base.csv", base), ("head.csv", head))
        )
        c = compare(b, h, budget)
        verdicts = {r.name: r.change for r in (*c.slo, *c.slices)}
        assert verdicts == sim.report(base_rows, head_rows, i)[0]
        flagged += any(v in ("regression", "improvement") for v in verdicts.values())
        assert c.head.attainment is not None and c.head.attainment.effective_n is not None
    assert flagged / reports <= ALPHA + allowance(ALPHA, reports)


def test_the_real_compare_path_flags_a_narrow_slow_mode_at_most_8_of_100() -> None:
    """Issue 29's count was made through the CLI (39 of 100 with the default rules): the same
    A/A pairs through prepare and compare, the budget's default rules (5%, 5 ms)."""
    budget = parse_budget(
        _budget_for_simulation().replace("regression: {min_change: 0%, min_ms: 0}\n", ""),
        "budget.yml",
    )
    assert (budget.regression.min_change, budget.regression.min_ms) == (0.05, 5.0)
    rng = np.random.default_rng(2908)
    reports, flagged = 100, 0
    base, head = (sim.slices(rng, sim.NARROW_SLOW, reports, 1000) for _ in "bh")
    for i in range(reports):
        b, h = (
            prepare(Run(name, 1000, slices={k: v[i] for k, v in s.items()}), budget)
            for name, s in (("base.csv", base), ("head.csv", head))
        )
        c = compare(b, h, budget)
        flagged += any(r.change in ("regression", "improvement") for r in (*c.slo, *c.slices))
    assert flagged <= 8


@pytest.mark.parametrize(
    ("scenario", "n", "name", "shift"),
    [
        (INDEPENDENT, 1000, "decode", sim.scale("decode", 1.15)),
        (INDEPENDENT, 1000, "queue", sim.scale("queue", 1.15)),
        (INDEPENDENT, 1000, "prefill", sim.scale_top_tenth("prefill", 1.15)),
        (sim.SHAPES[0], 4000, "app", sim.scale("app", 1.15)),
    ],
    ids=["lognormal-decode", "lognormal-queue", "lognormal-prefill-top10", "pareto-app"],
)
def test_power_15pct_p95_shift_in_a_family_of_seven(
    scenario: sim.Scenario, n: int, name: str, shift: sim.Shift
) -> None:
    power = sim.run_power(scenario, n, shift, name, REPORTS, seed=7)
    if name == "decode":  # issue 12: the lognormal slice, at 1,000 a side, holds 80%
        assert power >= 0.80
    assert power >= 0.80 - allowance(0.80)


def test_top_tenth_shift_leaves_median_alone_but_moves_p95() -> None:
    rng = np.random.default_rng(3)
    s = sim.slices(rng, INDEPENDENT, 1, 100_000)
    shifted = sim.scale_top_tenth("prefill", 1.15)(s)["prefill"]
    assert np.median(shifted) == np.median(s["prefill"])
    assert np.percentile(shifted, 95) / np.percentile(s["prefill"], 95) == pytest.approx(1.15)


@pytest.mark.parametrize(("n", "runs", "min_ms"), [(1000, 1000, 0.0), (20_000, 300, 5.0)])
def test_a_shift_equal_to_the_shown_mde_is_caught_about_80pct(
    n: int, runs: int, min_ms: float
) -> None:
    """'80% chance to catch >= X%': every rule counts, min_change (5%) and min_ms included (at
    20,000 requests the statistics alone could see 3%, the rules cannot). One lognormal row in a
    family of 7 whose other rows did not change: Holm's first step, alpha / 7."""
    rng = np.random.default_rng(1204)
    rules = {"min_change": 0.05, "min_ms": min_ms}
    family = 7
    med = sim.MEDIANS_MS["decode"]

    def row(factor: float = 1.0) -> np.ndarray:
        return np.asarray(factor * med * np.exp(sim.SIGMA * rng.standard_normal(n)))

    shown = [
        compare_percentile(row(), row(), P, CONFIDENCE, family_size=family, **rules).mde_pct
        for _ in range(50)
    ]
    mde = float(np.median([m for m in shown if m is not None]))
    assert len(shown) == 50 and mde >= 5.0
    caught = 0
    for _ in range(runs):
        c = compare_percentile(row(), row(1 + mde / 100), P, CONFIDENCE, family_size=family)
        caught += decide([c], **rules, confidence=1 - ALPHA / family) == ["regression"]
    # about 80%: the standard error is itself estimated, which costs a few points at n = 1,000
    # (76-81% measured over seeds; it was 69% before the MDE used Student's t and head's scale)
    assert 0.75 <= caught / runs <= 0.80 + allowance(0.80, runs)


@pytest.mark.parametrize(
    ("n", "shape"),
    [(1000, None), (300, 2.5), (3000, 2.5)],
    ids=["lognormal", "pareto-300", "pareto-3000"],
)
def test_a_runs_own_interval_covers_its_true_p95_about_95pct(n: int, shape: float | None) -> None:
    """The interval beside a run's p95 (asymmetric ends, centred less the bias) holds the true
    p95 of the distribution it was drawn from: lognormal(0, 0.4) or 1 + Pareto(2.5)."""
    rng = np.random.default_rng(1208)
    truth = math.exp(0.4 * NormalDist().inv_cdf(0.95)) if shape is None else 0.05 ** (-1 / shape)
    runs = 1000
    held = 0
    for _ in range(runs):
        x = rng.lognormal(0, 0.4, n) if shape is None else 1 + rng.pareto(shape, n)
        ci = interval(x, P, CONFIDENCE)
        assert ci is not None
        held += ci[0] <= truth <= ci[1]
    assert 0.93 <= held / runs <= 0.98


@pytest.mark.parametrize("scenario", sim.CORRELATED, ids=lambda s: s.name.split(":")[0])
def test_attainment_interval_covers_the_true_attainment(scenario: sim.Scenario) -> None:
    assert sim.attainment_coverage(scenario, 1000, 1000, seed=1205) >= 0.92


def test_attainment_reports_the_effective_number_of_requests_when_autocorrelated() -> None:
    rng = np.random.default_rng(1206)
    good = sim.good(sim.rows(sim.slices(rng, sim.CORRELATED[4], 1, 1000)))[0]
    a = attainment(good, CONFIDENCE)
    shuffled = attainment(rng.permutation(good), CONFIDENCE)
    assert shuffled.effective_n is None and a.effective_n is not None and a.effective_n < 600
    assert a.ci_pct[1] - a.ci_pct[0] > 1.2 * (shuffled.ci_pct[1] - shuffled.ci_pct[0])


def test_a_burst_of_slow_requests_does_not_hide_a_whole_run_shift() -> None:
    """100 requests a side, head 20% slower throughout plus one burst of 8 slow requests (a
    warm-up wave): the burst is head's whole tail, so the interval is wide, but every head
    request is above base's p95 and the quantile test says so."""
    rng = np.random.default_rng(1207)
    base = 680.0 * np.exp(0.02 * rng.standard_normal(100))
    head = 816.0 * np.exp(0.02 * rng.standard_normal(100))
    head[10:18] *= rng.permutation(np.linspace(1.12, 1.25, 8))
    c = compare_percentile(base, head, P, CONFIDENCE, family_size=5)
    assert c.note is not None and c.note.startswith("autocorrelated in arrival order")
    assert c.ci is not None and c.ci[0] < 0.2 * c.delta  # the interval alone: barely above 0
    assert c.p_value is not None and c.p_value < 1e-3
    assert decide([c], min_change=0.05, min_ms=5.0, confidence=CONFIDENCE) == ["regression"]


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
    for _ in range(REPORTS):
        cost = np.exp(0.4 * rng.standard_normal(n))
        base = 100.0 * cost * np.exp(0.15 * rng.standard_normal(n))
        head = 100.0 * cost * np.exp(0.15 * rng.standard_normal(n))
        idx = np.arange(n)
        c = compare_percentile(base, head, P, CONFIDENCE, pairs=(idx, idx))
        assert c.p_value is not None
        flagged += c.p_value < 1.0 - CONFIDENCE
    assert flagged / REPORTS <= ALPHA + allowance(ALPHA)


def test_autocorrelation_is_reported_as_effective_n() -> None:
    rng = np.random.default_rng(1)
    ar = sim.slices(rng, sim.CORRELATED[3], 2, 1000)["decode"]
    c = compare_percentile(ar[0], ar[1], P, CONFIDENCE)
    assert c.note is not None and "autocorrelated in arrival order: effective n" in c.note
    iid = sim.slices(rng, INDEPENDENT, 1, 1000)["decode"][0]
    assert compare_percentile(iid, iid[::-1].copy(), P, CONFIDENCE).note is None


@pytest.mark.parametrize(("median", "step"), [(40.0, 10.0), (60.0, 10.0), (5.0, 1.0)])
def test_aa_quantised_values_are_not_flagged(median: float, step: float) -> None:
    """Latencies on a coarse clock (whole ms, 10 ms ticks) repeat around the percentile; the
    percentile then jumps a whole step between runs of the same system. Two-sided, no floors.
    The interval is never a single point: the percentile can move a tick either way."""
    rng = np.random.default_rng(7)
    pairs = 400
    flagged = 0
    for _ in range(pairs):
        a, b = (np.round(rng.lognormal(np.log(median), 0.4, 1000) / step) * step for _ in "ab")
        c = compare_percentile(a, b, P, CONFIDENCE)
        flagged += decide([c], min_change=0.0, min_ms=0.0, confidence=CONFIDENCE)[0] != "none"
        assert c.ci is not None and c.ci[1] > c.ci[0]
        if c.delta == 0.0:
            assert c.ci[1] - c.ci[0] >= 2 * step
    assert flagged / pairs <= ALPHA + allowance(ALPHA, pairs)


def test_quantised_15pct_shift_is_still_found() -> None:
    rng = np.random.default_rng(8)
    hits = 0
    for _ in range(200):
        a = np.round(rng.lognormal(np.log(50), 0.4, 1000) / 10) * 10
        b = np.round(1.15 * rng.lognormal(np.log(50), 0.4, 1000) / 10) * 10
        c = compare_percentile(a, b, P, CONFIDENCE)
        hits += decide([c], min_change=0.05, min_ms=5.0, confidence=CONFIDENCE)[0] == "regression"
    assert hits / 200 >= 0.8


@pytest.mark.parametrize("n", [300, 1000])
def test_aa_warm_up_in_both_sides_is_calibrated(n: int) -> None:
    """Issue 34's warm-up design (the first 5% of each side twice as slow), 1,000 reports.
    Read as autocorrelation, the warm-up block inflated the error 3.5-6x and 0.1% (300) / 0.0%
    (1,000) of A/A reports flagged a row; even uninflated, the independent error overstates the
    variance of a run whose slow requests' count is fixed by its start. Set apart as a stratum
    (`autocorrelation.PREFIX_Z`), it is calibrated; at 1,000 a side it is found on every row,
    so reports rarely say "autocorrelated"."""
    aa = sim.run_aa(sim.WARMUP, n, REPORTS, seed=3401)
    _assert_in_band(aa)
    if n == 1000:
        assert aa.noted / aa.reports <= 0.05, aa


@pytest.mark.parametrize("n", [300, 1000])
def test_aa_batch_coupled_noise_is_calibrated(n: int) -> None:
    """Issue 34's batch-coupled noise (20 consecutive requests share a lognormal(0, 0.2)
    factor), 1,000 reports. At 300 a side the tail indicator's batch means and the lag-1 runs
    test found it on a fifth to a half of the rows, and 14.4% of A/A reports flagged a row (5.0%
    at 1,000); the overlapping batch means of the quartile score find it, and a row's two sides
    are taken as correlated when either is."""
    aa = sim.run_aa(sim.BATCH, n, REPORTS, seed=3401)
    _assert_in_band(aa)
    assert aa.noted / aa.reports >= 0.95


@pytest.fixture(scope="module")
def three_classes(tmp_path_factory: pytest.TempPathFactory) -> sim.ClassesAA:
    """Issue 34's comment of 24 rows: three classes of traffic (one table a side, a `class`
    column), six slices and two SLOs each, 300 requests a class a side, no size floors, through
    `budgetdiff compare` (300 A/A pairs, about 25 s)."""
    return sim.cli_classes_aa(tmp_path_factory.mktemp("classes"), 300, 3403, n=300)


def test_aa_three_classes_each_class_keeps_the_level(three_classes: sim.ClassesAA) -> None:
    """Each class is its own family (its 8 rows), at its share of the level: each class's A/A
    rate is at most alpha, the gate (a regression anywhere) too, and no flagged row's interval
    holds 0."""
    aa = three_classes
    assert aa.rows == 3 * (6 + 2), aa
    assert all(k / aa.pairs <= ALPHA for k in aa.per_class), aa
    assert aa.regression / aa.pairs <= ALPHA, aa
    assert aa.through_zero == 0, aa


def test_aa_three_classes_one_comment_is_calibrated(three_classes: sim.ClassesAA) -> None:
    """The comment as a whole: its three comparisons share the level (Sidak, 1.7% each), so
    any row of any class flags a chance change at most alpha of the time (it was 6.3% with
    each class at the whole level)."""
    aa = three_classes
    assert 0.01 <= aa.flagged / aa.pairs <= ALPHA, aa


@pytest.mark.parametrize("n", [400, 40_000])
def test_the_score_s_overlapping_batch_means_follow_their_definition(n: int) -> None:
    """The score test's long-run variance, against the overlapping batch means written out
    (Meketon-Schmeiser): every window of b values starting at each chunk (chunks of one request
    at 400, of 12 at 40,000), b n / (n - b) times the mean squared deviation of the window
    means, over the score's variance."""
    rng = np.random.default_rng(3404)
    score = rng.integers(0, 4, n).astype(np.int8)
    chunks = ac.score_chunks(score)
    step = chunks.step
    assert step == (1 if n <= 1000 else math.isqrt(n) // 16)
    used = score[: n // step * step].astype(np.float64)
    m = used.size
    b = math.isqrt(m) // step * step
    windows = np.array([used[j : j + b].mean() for j in range(0, m - b + 1, step)])
    mu, var = used.mean(), used.var()
    want = b * m / (m - b) * float(np.mean((windows - mu) ** 2)) / var
    got = ac._obm_factor(chunks)
    assert got is not None
    assert got[0] == pytest.approx(want, rel=1e-9)
    assert got[2] == pytest.approx(var, rel=1e-9)


def test_a_warm_up_is_a_stratum_of_its_own_not_correlation() -> None:
    """The first 50 of 1,000 requests twice as slow: found as a warm-up of about 50, and the
    variance factor is the stratified share's, from numpy on the same indicator; the same
    values shuffled have none."""
    rng = np.random.default_rng(3405)
    x = 400.0 * np.exp(0.4 * rng.standard_normal(1000))
    x[:50] *= 2.0
    side = change._side(x, P, CONFIDENCE)
    assert 45 <= side.warmup <= 55 and not side.correlated
    w, ind = side.warmup, x <= side.value
    m, first, then = ind.mean(), ind[:w].mean(), ind[w:].mean()
    within = w * first * (1 - first) + (1000 - w) * then * (1 - then)
    assert side.inflation == pytest.approx(within / (1000 * m * (1 - m)), rel=1e-12)
    assert side.inflation < 1.0
    shuffled = change._side(rng.permutation(x), P, CONFIDENCE)
    assert shuffled.warmup == 0 and shuffled.inflation == 1.0


def test_the_tail_regression_is_caught_near_the_oracle() -> None:
    """Issue 34, item 5, on the bench's own cases (bench/power_oracle.py, the real pipeline):
    8% of head's requests at twice the per-token delay, 300 a side, fails the gate naming
    decode in at least 80% of 100 reports, and at least 90% as often as a permutation test of
    the same p95 difference held to the gate's own A/A rate on 100 A/A reports (at least
    1 in 100). The full table, at 200 reports and 1,000 a side too, is in docs/statistics.md."""
    from bench import power_oracle as po

    null = po.run_case("A/A", 300, 100, seed=3405)
    tail = po.run_case(list(po.CASES)[3], 300, 100, seed=3405)
    level = max(null.gate, 1.0 / 100)
    oracle = float(np.mean(np.array(tail.oracle_p) <= level))
    assert null.gate <= ALPHA, null.gate
    assert tail.gate >= 0.8, (tail.gate, oracle)
    assert tail.gate >= 0.9 * oracle, (tail.gate, oracle)
