"""Is the change of a percentile between base and head real? Pure numpy, no I/O.

Given per-request values of base and head, say how large the change of the p-th percentile is,
how sure we can be of it, and the smallest change the data could have shown; `decide` turns
those numbers into a verdict. Method and its simulations: docs/statistics.md.

Standard error of a percentile (O(n), one selection, no bootstrap): the distribution-free
order-statistic band around rank k = n*q is [k - h, k + h] with h = z * sqrt(n q (1-q)) ranks;
the slope of the empirical quantile function over that band, times the binomial standard
deviation of the rank, is the standard error (Siddiqui / Bloch-Gastwirth sparsity estimate,
with the Price-Bonett / McKean-Schrader band as bandwidth), taken for each half of the band
too, so that the interval's two ends see a skewed tail or a gap on their own side. Autocorrelation
in arrival order inflates it by a batch-means factor on the indicator I(x <= percentile).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from budgetdiff import numbers
from budgetdiff.stats.autocorrelation import Score, autocorrelation, score_chunks
from budgetdiff.stats.distributions import (
    normal_cdf,
    normal_quantile,
    t_quantile,
    t_two_sided_p,
    welch_df,
)
from budgetdiff.stats.quantiles import (
    lerp,
    linear_ranks,
    needed_for_interval,
    percentiles,
    pooled_percentile,
)
from budgetdiff.table import (
    CHUNK,
    BoolArray,
    FloatArray,
    between,
    chunks,
    order_statistics,
    taken,
)

IntArray = np.ndarray[Any, np.dtype[np.intp]]  # numpy.typing's NDArray: see table.FloatArray

# Power the minimum detectable effect is stated at.
MDE_POWER = 0.8
# Degrees of freedom of the sparsity estimate (the slope of the order statistics across the
# band), per rank in the band. Chosen by simulation: with the normal reference (inf) about 5%
# of independent A/A reports of 7 rows flag a row; with 2 it is 3.9% (4,000 reports,
# lognormal, n = 1,000) and the power for a 15% shift stays at 80%; 1 (about the chi-square
# count of the spacings, which ignores the estimate's upward bias) costs 2-3 points of power.
SPARSITY_DF_PER_RANK = 2.0
# Each side's standard error below and above its percentile (the interval's two ends, and the
# p-value against the end facing 0): the slope of that half of the order-statistic band, its
# variance weighted HALF_BAND against the whole band's (the steadier estimate). The halves see
# a gap next to the percentile (a narrow slow mode: 17% of A/A reports flagged with the whole
# band, 0.9% now) and, with `_Side.bias`, a skewed tail at unequal sizes (base 300 / head 3,000
# Pareto 2.5: 5.3% of A/A reports flagged a regression, 2.6% now). Chosen by simulation (0.5-1.0
# tried; 1.0 costs 2 points of power and lifts load regimes' A/A over 5%): docs/statistics.md.
HALF_BAND = 0.7
# A side's percentile sits at the edge of a mode when the order statistics' slope on one side
# of it is this many times the other's (raw halves of the band). Chosen by simulation: about
# 1% of independent lognormal sides at 1,000 requests say so, every narrow slow mode's does.
EDGE_RATIO = 6.0


@dataclass(frozen=True, slots=True)
class Change:
    """The change of one percentile between base and head, with its uncertainty."""

    base: float  # p-th percentile of base
    head: float
    delta: float  # head - base
    delta_pct: float | None  # 100*delta/base, None if base == 0
    ci: tuple[float, float] | None  # interval of delta at `confidence` (unadjusted), ms
    p_value: float | None  # two-sided, unadjusted; None when inconclusive
    mde_pct: float | None  # smallest relative change flagged with 80% chance, all rules included
    needed: int | None  # requests per side needed for a finite interval at p, when too few
    paired: bool
    note: str | None  # caveat as data
    # (base, head) at each of `also` percentiles, from the same selection
    others: tuple[tuple[float, float], ...] = ()
    # whether each side is autocorrelated in arrival order (then its requests are not
    # permuted: `decide.family_test`)
    autocorrelated: tuple[bool, bool] = (False, False)
    # head's own interval of its percentile (`interval`), from the same side: None when the
    # comparison did not compute one (too few requests on a side). Not part of the change
    # (a by-product: the engine path computes it beside its Change)
    head_interval: tuple[float, float] | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class _Side:
    """One side's percentile and its standard errors: below and above it (each from its own
    half of the order-statistic band, so a skewed or gapped neighbourhood is seen as such) and
    over the whole band."""

    value: float
    down: float  # how far below `value` the percentile may be (lower half-band, blended)
    up: float  # above it (upper half-band, blended)
    se: float  # the whole band's
    # Expected estimate less the true percentile: numpy's linear percentile is, on average, the
    # ((n - 1) q + 1) / (n + 1) quantile, (1 - 2q) ranks from the q-th; times the band's slope.
    # Small beside se at one size, it tilts a comparison of unequal sizes (issue 29).
    bias: float
    indicator: BoolArray  # I(x <= value), in the order given
    inflation: float  # autocorrelation variance factor applied (1.0 when none)
    df: float = math.inf  # degrees of freedom of se (Student-t reference)
    tied: bool = False  # values repeat around the percentile (quantised data)
    tick: float = 0.0  # when tied: the step between neighbouring values there (clock tick)
    others: tuple[float, ...] = ()  # the `also` percentiles
    # where the percentile can be at all, distribution-free (order statistics at BOUND_Z
    # binomial deviations of the rank, at the effective n): what clips the change's interval
    floor: float = -math.inf
    ceiling: float = math.inf
    # the order statistics' slope below the percentile over the slope above it (raw halves):
    # far from 1, the percentile sits at the edge of a mode (a gap on the steep side)
    skew: float = 1.0
    correlated: bool = False  # its requests (after any warm-up) are correlated in arrival order
    warmup: int = 0  # requests at its start set apart as a warm-up (autocorrelation.PREFIX_Z)


@dataclass(frozen=True, slots=True)
class SideRanks:
    """The 0-based ranks a side's percentile, its band, its bounds and the percentiles beside
    it are read at: arithmetic on n alone, so the in-memory selection and the engine's
    quantile query read the same order statistics."""

    n: int
    q: float
    virtual: float  # the percentile's rank, exactly as np.percentile(method="linear") takes it
    lo: int
    hi: int
    lr: int  # the band's ends, (1-based ranks clipped into [1, n]) as 0-based
    ur: int
    mid: int
    k: float
    sd_rank: float
    bounds: tuple[int, int]
    extra: tuple[tuple[int, int, float], ...]  # the `also` percentiles' ranks and weights

    def wanted(self) -> list[int]:
        at = {self.lo, self.hi, self.lr, self.ur, self.mid, *self.bounds}
        return sorted(r for r in at | {r for e in self.extra for r in e[:2]} if 0 <= r < self.n)


def side_ranks(n: int, p: float, confidence: float, also: Sequence[float] = ()) -> SideRanks:
    q = p / 100.0
    virtual = (n - 1) * q
    lo = math.floor(virtual)
    sd_rank = math.sqrt(n * q * (1.0 - q))
    h = normal_quantile((1.0 + confidence) / 2.0) * sd_rank
    k = n * q
    return SideRanks(
        n=n,
        q=q,
        virtual=virtual,
        lo=lo,
        hi=min(lo + 1, n - 1),
        lr=min(max(math.floor(k - h), 1), n) - 1,
        ur=min(max(math.ceil(k + h), 1), n) - 1,
        mid=(n - 1) // 2,
        k=k,
        sd_rank=sd_rank,
        bounds=_bound_ranks(n, k, sd_rank, confidence),
        extra=tuple(linear_ranks(n, a) for a in also),
    )


@dataclass(frozen=True, slots=True)
class Band:
    """What a side's order statistics say of its percentile: the value, the percentiles
    beside it, the band's slope as a standard error (whole, below and above: each half
    blended with the whole), the edge-of-mode ratio and the sparsity bias."""

    value: float
    others: tuple[float, ...]
    se: float
    down: float
    up: float
    skew: float
    bias: float


def band(r: SideRanks, part: Any) -> Band:
    """`part[rank]` is the order statistic at each rank of `r.wanted()` (a selected array,
    or the engine's {rank: value})."""
    at = {i: float(part[i]) for i in (r.lo, r.hi, r.lr, r.ur)}
    value = lerp(at[r.lo], at[r.hi], r.virtual - r.lo)
    others = tuple(lerp(float(part[a]), float(part[b]), t) for a, b, t in r.extra)
    # n >= needed_for_interval keeps h > 0.5 rank, so ur > lr.
    slope = (at[r.ur] - at[r.lr]) / max(r.ur - r.lr, 1)
    se = slope * r.sd_rank
    down = (value - at[r.lr]) / max(r.virtual - r.lr, 0.5) * r.sd_rank
    up = (at[r.ur] - value) / max(r.ur - r.virtual, 0.5) * r.sd_rank
    skew = down / up if up > 0.0 else (1.0 if down == 0.0 else math.inf)
    down, up = (math.sqrt(HALF_BAND * v * v + (1.0 - HALF_BAND) * se * se) for v in (down, up))
    bias = (1.0 - 2.0 * r.q) * (at[r.ur] - at[r.lr]) / max(r.ur - r.lr, 1)
    return Band(value, others, se, down, up, skew, bias)


def _side(
    x: FloatArray,
    p: float,
    confidence: float,
    also: Sequence[float] = (),
    *,
    correlated: bool = False,
) -> _Side:
    r = side_ranks(x.size, p, confidence, also)
    n, k, sd_rank, lr, ur = r.n, r.k, r.sd_rank, r.lr, r.ur
    part = order_statistics(x, r.wanted())
    bnd = band(r, part)
    value, bounds = bnd.value, r.bounds
    indicator, above, score = _marks(x, value, float(part[r.mid]))
    auto = autocorrelation(indicator, above, score, correlated=correlated)
    # Degrees of freedom of se: the sparsity estimate's and the autocorrelation factor's when
    # one is applied (the squared coefficients of variation of a product add up).
    df = 1.0 / (1.0 / (SPARSITY_DF_PER_RANK * max(ur - lr, 1)) + 1.0 / auto.df)
    tied, tick = _tied(x, float(part[lr]), float(part[ur]), ur - lr + 1)
    inflate = math.sqrt(auto.factor)
    if auto.factor > 1.0:  # the bounds at the effective n: the ranks spread further
        bounds = _bound_ranks(n, k, sd_rank * inflate, confidence)
    inside = [b for b in bounds if 0 <= b < n]
    # the bounds' order statistics again when their ranks moved
    ranked = order_statistics(x, inside) if auto.factor > 1.0 and inside else part
    floor = float(ranked[bounds[0]]) if bounds[0] >= 0 else -math.inf
    ceiling = float(ranked[bounds[1]]) if bounds[1] < n else math.inf
    return _Side(
        value=value,
        down=bnd.down * inflate,
        up=bnd.up * inflate,
        se=bnd.se * inflate,
        bias=bnd.bias,
        indicator=indicator,
        inflation=auto.factor,
        df=df,
        tied=tied,
        tick=tick,
        others=bnd.others,
        floor=floor,
        ceiling=ceiling,
        skew=bnd.skew,
        correlated=auto.correlated,
        warmup=auto.warmup,
    )


def _marks(x: FloatArray, value: float, median: float) -> tuple[BoolArray, BoolArray, Score]:
    """Each request at or below the percentile `value` (the indicator), above the `median`,
    and its rank score for the autocorrelation's tests: how many of the run's quartiles it is
    above (0-3; the median's and the outer two), so every request's rank is read, not one
    share's. The outer quartiles are those of every k-th value (k = n // 10,000, at least 1):
    any thresholds fixed before the tests make a valid score, and a selection of each on all n
    values would cost about as much as the percentile's own. All three in one read of `x`, a
    chunk at a time while the cache holds it (`CHUNK`: 27 -> 17 ms at ten million)."""
    sample = x[:: max(1, x.size // 10_000)]
    q1, q3 = np.percentile(sample, [25.0, 75.0])
    n = x.size
    indicator, above = np.empty(n, dtype=bool), np.empty(n, dtype=bool)
    score = np.empty(n, dtype=np.int8)
    scratch = np.empty(min(n, CHUNK), dtype=bool)
    for at, m in chunks(n):
        chunk, t, s = x[at], scratch[:m], score[at]
        np.less_equal(chunk, value, out=indicator[at])
        np.copyto(s, np.greater(chunk, median, out=above[at]))
        s += np.greater(chunk, q1, out=t)
        s += np.greater(chunk, q3, out=t)
    return indicator, above, score_chunks(score)


def _bound_ranks(n: int, k: float, sd_rank: float, confidence: float) -> tuple[int, int]:
    """0-based ranks of the order statistics that hold a side's true percentile between them
    with chance 1 - (1 - confidence) / 20 (normal approximation of the binomial rank), -1 or n
    where the rank is outside the sample (no bound that way)."""
    h = normal_quantile(1.0 - (1.0 - confidence) / 40.0) * sd_rank
    low, high = math.floor(k - h), math.ceil(k + h)  # 1-based
    return (low - 1 if low >= 1 else -1), (high - 1 if high <= n else n)


def _with_runs(
    s: _Side, x: FloatArray, runs: IntArray | None, p: float, confidence: float
) -> _Side:
    """A side of several runs (clusters): its percentile's variance gains the variance between
    runs of the same configuration, which the spread inside one run does not show. Per run,
    the percentile and its standard error; the between-run variance tau^2 is what the runs'
    percentiles vary beyond their own errors (method of moments, clipped at 0), and the pooled
    percentile carries tau^2 * sum(share_r^2). Its degrees of freedom are the runs' minus one,
    combined with the side's by Welch-Satterthwaite. One run, or a run too short for its own
    interval: the side as it is."""
    if runs is None:
        return s
    labels, index = np.unique(runs, return_inverse=True)
    groups = [x[index == i] for i in range(labels.size)]
    if len(groups) < 2 or min(g.size for g in groups) < needed_for_interval(p, confidence):
        return s
    sides = [_side(g, p, confidence) for g in groups]
    values = np.array([r.value for r in sides])
    within = float(np.mean([r.se * r.se for r in sides]))
    tau2 = max(float(values.var(ddof=1)) - within, 0.0)
    shares = np.array([g.size for g in groups], dtype=np.float64) / x.size
    between = tau2 * float(shares @ shares)
    if between == 0.0:
        return s
    v = s.se * s.se
    # the order-statistic bounds know nothing of the drift between runs: no clip
    df = (v + between) ** 2 / (v * v / s.df + between * between / (len(groups) - 1))
    return replace(
        s,
        down=math.sqrt(s.down**2 + between),
        up=math.sqrt(s.up**2 + between),
        se=math.sqrt(v + between),
        df=df,
        floor=-math.inf,
        ceiling=math.inf,
    )


def interval(x: FloatArray, p: float, confidence: float) -> tuple[float, float] | None:
    """The run's own interval for its p-th percentile (the same standard errors, below and
    above, and Student-t reference as a comparison's), or None with too few values for one."""
    if x.size < needed_for_interval(p, confidence):
        return None
    return _own_interval(_side(x, p, confidence), confidence)


def _own_interval(s: _Side, confidence: float) -> tuple[float, float]:
    tc = t_quantile((1.0 + confidence) / 2.0, s.df)
    return (s.value - s.bias - tc * s.down, s.value - s.bias + tc * s.up)


def _tied(x: FloatArray, low: float, high: float, ranks: int) -> tuple[bool, float]:
    """Quantised data (whole milliseconds, a coarse clock): far fewer distinct values than
    ranks in the band. There the slope of the band says nothing about how far the percentile
    can jump (a whole step), and the interval method would flag noise. Also the step: the
    smallest gap between distinct values in the band, or next to it when the band is one value."""
    band = np.sort(between(x, low, high))
    # distinct values counted from the sorted band (np.unique would import numpy.ma: 7 ms)
    steps = np.diff(band)
    distinct = int(np.count_nonzero(steps)) + min(len(band), 1)
    if distinct * 2 >= ranks:
        return False, 0.0
    if distinct > 1:
        return True, float(steps[steps > 0].min())
    below, above = x[x < low], x[x > high]
    gaps = [low - float(below.max())] if below.size else []
    gaps += [float(above.min()) - high] if above.size else []
    return True, min(gaps, default=0.0)


def _above_and_at(x: FloatArray, q: float) -> tuple[int, int]:
    """How many values of `x` are above `q` and how many equal it: both tests on a chunk at a
    time while the cache holds it (`CHUNK`)."""
    above = equal = 0
    scratch = np.empty(min(CHUNK, x.size), dtype=bool)
    for at, m in chunks(x.size):
        chunk, t = x[at], scratch[:m]
        above += int(np.count_nonzero(np.greater(chunk, q, out=t)))
        equal += int(np.count_nonzero(np.equal(chunk, q, out=t)))
    return above, equal


def _exceedance_z(base: FloatArray, head: FloatArray, p: float, inflation: float) -> float:
    """Did the tail move? Each request scores 1 above the pooled p-th percentile q, 1/2 at it
    (ties split, as mid-ranks do) and 0 below; z of head's mean score against base's.
    Valid with ties: under no change the two samples are exchangeable and q depends only on
    the pool."""
    q = pooled_percentile((base, head), p)  # no pool of both: a copy of every value
    (above_b, at_b), (above_h, at_h) = _above_and_at(base, q), _above_and_at(head, q)
    score_b, score_h = float(above_b + 0.5 * at_b), float(above_h + 0.5 * at_h)
    nb, nh = base.size, head.size
    mean = (score_b + score_h) / (nb + nh)
    second = (above_b + above_h + 0.25 * (at_b + at_h)) / (nb + nh)
    var = (second - mean * mean) * (1.0 / nb + 1.0 / nh) * inflation
    if var <= 0.0:
        return 0.0
    return (score_h / nh - score_b / nb) / math.sqrt(var)


def _above_base_z(b: _Side, h: _Side, head: FloatArray, p: float) -> float:
    """The quantile test: z of the share of head requests above base's p-th percentile (1/2 at
    it) against 1 - p. Its variance adds head's sampling and base's percentile's, each times its
    run's autocorrelation factor: q(1 - q) (f_h / n_h + f_b / n_b)."""
    q = p / 100.0
    nh, nb = head.size, b.indicator.size
    above = np.count_nonzero(head > b.value) + 0.5 * np.count_nonzero(head == b.value)
    var = (h.inflation / nh + b.inflation / nb) / 4.0
    return (math.asin(math.sqrt(above / nh)) - math.asin(math.sqrt(1.0 - q))) / math.sqrt(var)


def two_proportion_p(
    *, above_base: float, n_base: float, above_head: float, n_head: float
) -> float | None:
    """Two-sided p-value of the pooled two-proportion z-test: is the share of head requests
    above a bound different from base's? None when the pooled share is 0 or 1 (no variance)."""
    pooled = (above_base + above_head) / (n_base + n_head)
    se = math.sqrt(pooled * (1 - pooled) * (1 / n_base + 1 / n_head))
    if se == 0:
        return None
    z = (above_head / n_head - above_base / n_base) / se
    return 2 * (1 - normal_cdf(abs(z)))


def _paired_rho(b: _Side, h: _Side, pairs: tuple[IntArray, IntArray]) -> float:
    """Correlation of the two percentile estimates from the paired requests (`paired_rho`, on
    the counts of the indicators over the pairs)."""
    ib, ih = pairs
    xb, xh = taken(b.indicator, ib), taken(h.indicator, ih)
    both = int(np.count_nonzero(xb & xh))
    counts = PairCounts(len(ib), int(np.count_nonzero(xb)), int(np.count_nonzero(xh)), both)
    return paired_rho(counts, b.indicator.size, h.indicator.size)


@dataclass(frozen=True, slots=True)
class PairCounts:
    """Over m paired requests: how many have base's value at or below base's percentile
    (`base`), head's at or below head's (`head`), and both (`both`): all the paired
    correlation reads, so an engine can count them in a join."""

    m: int
    base: int
    head: int
    both: int


def paired_rho(c: PairCounts, n_base: int, n_head: int) -> float:
    """Correlation of the two percentile estimates from the paired requests, clipped to [0, 1).

    The phi coefficient of the indicators over the pairs, from their 2x2 counts (integers, one
    rounding), scaled by m / sqrt(n_b n_h) for m pairs (equal to the phi coefficient when every
    request is paired).
    """
    m = c.m
    if m < 2:
        return 0.0
    spread = c.base * (m - c.base) * c.head * (m - c.head)
    if spread == 0:  # every pair on one side of a percentile: no correlation to see
        return 0.0
    phi = (m * c.both - c.base * c.head) / math.sqrt(spread)
    rho = phi * m / math.sqrt(n_base * n_head)
    return min(max(rho, 0.0), 0.999)


def _autocorr_note(b: _Side, h: _Side) -> str | None:
    parts = [
        f"effective n {round(s.indicator.size / s.inflation)} of {s.indicator.size} ({name})"
        for name, s in (("base", b), ("head", h))
        if s.inflation > 1.0
    ]
    return "autocorrelated in arrival order: " + ", ".join(parts) if parts else None


def compare_percentile(
    base: FloatArray,
    head: FloatArray,
    p: float,
    confidence: float,
    *,
    family_size: int = 1,
    pairs: tuple[IntArray, IntArray] | None = None,
    also: Sequence[float] = (),
    min_change: float = 0.0,
    min_ms: float = 0.0,
    base_runs: IntArray | None = None,
    head_runs: IntArray | None = None,
    values: str = "requests",
) -> Change:
    """Compare the p-th percentile of head with base.

    `base` / `head`: per-request values in arrival order, no NaN. `pairs`: index arrays (ib, ih)
    with base[ib[k]] and head[ih[k]] the same request (paired analysis). `family_size`,
    `min_change`, `min_ms`: the rows tested in the report and the size rules of `decide`, used
    only for the minimum detectable effect. `base_runs` / `head_runs`: the run of each request
    when a side is several runs of the same configuration (see `_with_runs`). `values`: what
    the values are of, for the notes (`requests`; an agent's `tasks` or `steps`).
    """
    if not 0.0 < p < 100.0:
        raise ValueError(f"percentile must be in (0, 100), got {p}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    base = np.asarray(base, dtype=np.float64)
    head = np.asarray(head, dtype=np.float64)
    paired = pairs is not None
    need = needed_for_interval(p, confidence)
    if base.size == 0 or head.size == 0:
        return _no_requests(needed=need, paired=paired, values=values)
    if min(base.size, head.size) < need:
        return _too_few(base, head, p, also=also, needed=need, paired=paired, values=values)

    sb, sh, head_alone = _sides(base, head, p, confidence, also)  # `also` moves no error
    sb = _with_runs(sb, base, base_runs, p, confidence)
    sh = _with_runs(sh, head, head_runs, p, confidence)
    test = _test(sb, sh, base, head, p, confidence=confidence, pairs=pairs)
    ci = no_lower_than_all(test.ci, sb.value, min(float(base.min()), float(head.min())))
    mde = _mde_pct(sb.value, test.spread, 1.0 - confidence, family_size, min_change, min_ms)
    return Change(
        base=sb.value,
        head=sh.value,
        delta=test.delta,
        delta_pct=_pct(test.delta, sb.value),
        ci=ci,
        p_value=test.p_value,
        mde_pct=mde,
        needed=None,
        paired=paired,
        note=test.note,
        others=tuple(zip(sb.others, sh.others, strict=True)),
        autocorrelated=(sb.inflation > 1.0, sh.inflation > 1.0),
        head_interval=_own_interval(head_alone, confidence),
    )


def _sides(
    base: FloatArray, head: FloatArray, p: float, confidence: float, also: Sequence[float]
) -> tuple[_Side, _Side, _Side]:
    """Both sides; when arrival order is found correlated on one side only, the other is
    taken as correlated too (with its own batch-means factor): base and head are runs of one
    benchmark, sent the same way. With 20 consecutive requests sharing a slowdown at 300
    requests a side, most rows that A/A reports flagged had one side's correlation missed.
    Also head as it is alone (its own interval: `interval`)."""
    sb, sh = _side(base, p, confidence, also), _side(head, p, confidence, also)
    if sb.correlated == sh.correlated:
        return sb, sh, sh
    if sh.correlated:
        return _side(base, p, confidence, also, correlated=True), sh, sh
    return sb, _side(head, p, confidence, also, correlated=True), sh


def _no_requests(*, needed: int, paired: bool, values: str) -> Change:
    """No values on a side: nothing to compare."""
    nan = math.nan
    return Change(
        base=nan,
        head=nan,
        delta=nan,
        delta_pct=None,
        ci=None,
        p_value=None,
        mde_pct=None,
        needed=needed,
        paired=paired,
        note=f"no {values}",
    )


def _too_few(
    base: FloatArray,
    head: FloatArray,
    p: float,
    *,
    also: Sequence[float],
    needed: int,
    paired: bool,
    values: str,
) -> Change:
    """The percentiles of both sides, without an interval: fewer requests than `needed`."""
    (vb, *ob), (vh, *oh) = percentiles(base, [p, *also]), percentiles(head, [p, *also])
    note = (
        f"too few {values} for an interval at {numbers.percentile(p)}: "
        f"{base.size} base, {head.size} head, {needed} needed per side"
    )
    delta = vh - vb
    return Change(
        base=vb,
        head=vh,
        delta=delta,
        delta_pct=_pct(delta, vb),
        ci=None,
        p_value=None,
        mde_pct=None,
        needed=needed,
        paired=paired,
        note=note,
        others=tuple(zip(ob, oh, strict=True)),
    )


@dataclass(frozen=True, slots=True)
class _Spread:
    """The standard error of head - base in one direction, with its degrees of freedom, and
    head's part of it (which grows with head under a change)."""

    se: float
    df: float
    head_se: float


def _spread(base_se: float, head_se: float, sb: _Side, sh: _Side, rho: float) -> _Spread:
    var = base_se**2 + head_se**2 - 2.0 * rho * base_se * head_se
    # Student-t reference: the sparsity estimate and an autocorrelation factor are estimates
    df = welch_df(base_se**2, sb.df, head_se**2, sh.df)
    return _Spread(math.sqrt(max(var, 0.0)), df, head_se)


@dataclass(frozen=True, slots=True)
class _Test:
    """The test of one change: its interval, p-value and the standard error behind them (the
    one a regression is measured against, which the minimum detectable effect reads)."""

    delta: float
    spread: _Spread
    ci: tuple[float, float]
    p_value: float
    note: str | None


def _test(
    sb: _Side,
    sh: _Side,
    base: FloatArray,
    head: FloatArray,
    p: float,
    *,
    confidence: float,
    pairs: tuple[IntArray, IntArray] | None,
) -> _Test:
    """Interval and p-value of head's percentile minus base's, from one model: each side's
    standard error below and above its percentile (less their correlation when paired). The
    interval's lower end combines base's upward and head's downward error (how much smaller
    the change may be), the upper end the other two; the p-value is taken against the end that
    faces 0, so it is below 1 - confidence exactly when the interval excludes 0. By exceedance
    when values repeat."""
    delta = sh.value - sb.value
    rho = _paired_rho(sb, sh, pairs) if pairs is not None else 0.0
    lower = _spread(sb.up, sh.down, sb, sh, rho)  # how far below delta the change may be
    upper = _spread(sb.down, sh.up, sb, sh, rho)
    # the interval is of the change of the true percentiles: each estimate less its bias
    center = delta - (sh.bias - sb.bias)
    toward_zero = lower if center >= 0.0 else upper
    if sb.tied or sh.tied:
        return _tied_test(sb, sh, base, head, p, confidence=confidence, rho=rho)
    note = _join(_autocorr_note(sb, sh), _edge_note(sb, sh, p))
    tl = t_quantile((1.0 + confidence) / 2.0, lower.df)
    tu = t_quantile((1.0 + confidence) / 2.0, upper.df)
    ci = _clip((center - tl * lower.se, center + tu * upper.se), sb, sh)
    if toward_zero.se <= 0.0:  # every value in both bands tied: single-point intervals
        p_value = 1.0 if delta == 0.0 else 0.0
        note = "tied values around the percentile: interval of zero width"
        return _Test(delta=delta, spread=lower, ci=ci, p_value=p_value, note=note)
    own = t_two_sided_p(center / toward_zero.se, toward_zero.df)
    p_value = own
    if sb.inflation > 1.0 or sh.inflation > 1.0:
        # A burst of slow requests can make a run's whole tail one event: se says so, and
        # the interval is wide. Whether the tail moved is also asked of every head request
        # (the quantile test); the smaller p-value, doubled (Bonferroni), keeps the level.
        tail = _tail_p(sb, sh, head, p, delta=center, df=toward_zero.df)
        p_value = min(1.0, 2.0 * min(own, tail))
    return _Test(delta=delta, spread=lower, ci=ci, p_value=p_value, note=note)


def _join(*notes: str | None) -> str | None:
    said = [n for n in notes if n]
    return "; ".join(said) if said else None


def _clip(ci: tuple[float, float], sb: _Side, sh: _Side) -> tuple[float, float]:
    """The interval, no wider than the two samples make possible: the change of the true
    percentiles lies between head's floor less base's ceiling and head's ceiling less base's
    floor (distribution-free order-statistic bounds, each side's at 1 - alpha / 20). A clip
    never moves an end across 0: whether the change is significant is the test's to say."""
    low, high = sh.floor - sb.ceiling, sh.ceiling - sb.floor
    lo, hi = ci
    if low > lo:
        lo = low if lo > 0.0 or low <= 0.0 else 0.0
    if high < hi:
        hi = high if hi < 0.0 or high >= 0.0 else 0.0
    return (lo, max(hi, lo))


def no_lower_than_all(
    ci: tuple[float, float], base_value: float, lowest: float
) -> tuple[float, float]:
    """A latency cannot fall by more than all of it: where no value on either side is
    negative (`lowest`, the smallest of both), the change's lower end is at least -base
    (-100%), in every path (a clip that was skipped, runs drifting, quantised values; the
    engine's too). It never moves the upper end, so whether the interval excludes 0 is
    unchanged."""
    lo, hi = ci
    if base_value <= 0.0 or lo >= -base_value or lowest < 0.0:
        return ci
    return (-base_value, max(hi, -base_value))


def _edge_note(sb: _Side, sh: _Side, p: float) -> str | None:
    """Where a side's percentile sits at the edge of a mode (the order statistics far sparser
    on one side of it than on the other: a gap there), say so: its interval is wide that way
    because the percentile may jump across the gap from run to run."""
    for name, s in (("head", sh), ("base", sb)):
        ratio = max(s.skew, 1.0 / s.skew) if s.skew > 0.0 else math.inf
        if ratio >= EDGE_RATIO:
            where = "below" if s.skew > 1.0 else "above"
            return (
                f"{name}'s {numbers.percentile(p)} sits at the edge of a mode: its values are "
                f"{numbers.times(ratio)} sparser just {where} it (a gap), so it may jump "
                f"across from run to run and the interval is wide {where}"
            )
    return None


def _tied_test(
    sb: _Side,
    sh: _Side,
    base: FloatArray,
    head: FloatArray,
    p: float,
    *,
    confidence: float,
    rho: float,
) -> _Test:
    """Quantised values: test the tail by exceedance, and size the interval from that test
    (symmetric: whole ticks either way, not a slope)."""
    delta = sh.value - sb.value
    band = _spread(sb.se, sh.se, sb, sh, rho)
    tc = t_quantile((1.0 + confidence) / 2.0, band.df)
    z = _exceedance_z(base, head, p, max(sb.inflation, sh.inflation))
    agree = z * delta > 0.0
    p_value = t_two_sided_p(z, band.df) if agree else 1.0
    if agree:  # the interval the test implies: it excludes 0 exactly when p < 1 - confidence
        se = abs(delta) / abs(z)
        half = tc * se
    else:  # the interval must reach 0, and the percentile can move a whole tick
        half = max(tc * band.se, abs(delta), sb.tick, sh.tick)
        se = half / tc
    return _Test(
        delta=delta,
        spread=_Spread(se, band.df, sh.se),
        ci=(delta - half, delta + half),
        p_value=p_value,
        note="values repeat around the percentile (quantised): tested by exceedance",
    )


def _tail_p(sb: _Side, sh: _Side, head: FloatArray, p: float, *, delta: float, df: float) -> float:
    """The quantile test of the change (did head's tail move past base's percentile?): head's
    indicator taken at base's percentile. Its p-value counts only in the direction of the
    change."""
    z = _above_base_z(sb, sh, head, p)
    return t_two_sided_p(z, df) if z * delta > 0.0 else 1.0


def _mde_pct(
    base_value: float,
    spread: _Spread,
    alpha: float,
    family_size: int,
    min_change: float,
    min_ms: float,
) -> float | None:
    """The smallest relative change flagged with MDE_POWER chance, every rule of `decide`
    included: at least max(min_change * base, min_ms), and significant at Holm's strictest level
    alpha / family_size. A change d of the percentile is flagged about when the estimate lands
    at or above max(size rule, t_crit * se): d = max(size rule, t_crit * se) + t_power * se.
    Under a change, head's standard error scales with it (latency grows in proportion), so se is
    taken at the detectable change itself (a fixed point, a few steps)."""
    se, df = spread.se, spread.df
    if base_value == 0.0 or se <= 0.0:
        return None
    base = abs(base_value)
    t_crit = t_quantile(1.0 - alpha / (2.0 * max(family_size, 1)), df)
    t_power = t_quantile(MDE_POWER, df)
    size = max(min_change * base, min_ms)
    head_se = spread.head_se
    rest = max(se * se - head_se * head_se, 0.0)  # what does not scale with head (base, pairing)
    # At the standard error of the interval first; head's part then grows with the change,
    # but never by more than that first answer (where head's error is most of se, the fixed
    # point would run away: "needs 609%" beside an interval 40% wide).
    first = max(size, t_crit * se) + t_power * se
    d = 0.0
    for _ in range(6):
        s = math.sqrt(rest + (head_se * (1.0 + min(d, first) / base)) ** 2)
        d = max(size, t_crit * s) + t_power * s
    return 100.0 * d / base


def _pct(delta: float, base: float) -> float | None:
    return None if base == 0.0 else 100.0 * delta / base
