"""Statistics core: is the change of a percentile between base and head real? Pure numpy, no I/O.

One job: given per-request values of base and head, say how large the change of the p-th
percentile is, how sure we can be of it, and the smallest change the data could have shown.
`decide` is the one place that turns those numbers into regression / improvement / none /
inconclusive. Method and its simulations: docs/statistics.md.

Standard error of a percentile (O(n), one selection, no bootstrap): the distribution-free
order-statistic band around rank k = n*q is [k - h, k + h] with h = z * sqrt(n q (1-q)) ranks;
the slope of the empirical quantile function over that band, times the binomial standard
deviation of the rank, is the standard error (Siddiqui / Bloch-Gastwirth sparsity estimate,
with the Price-Bonett / McKean-Schrader band as bandwidth). Autocorrelation in arrival order
inflates it by a batch-means factor on the indicator I(x <= percentile).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from budgetdiff import numbers
from budgetdiff.table import BoolArray, FloatArray

IntArray = np.ndarray[Any, np.dtype[np.intp]]  # numpy.typing's NDArray: see table.FloatArray

# Power the minimum detectable effect is stated at.
MDE_POWER = 0.8
# Autocorrelation in arrival order is applied when either test finds it (each at a strict level,
# so that a report of ~7 rows x 2 runs of independent requests rarely says "autocorrelated"):
# the runs test around the median (lag-1 autocorrelation of "above the median" times sqrt(n),
# one-sided; it finds mild AR(1) correlation, phi 0.3, that the batch means cannot), or the batch
# means of the tail indicator above 1 + AUTOCORR_C * sqrt(2 / (blocks - 1)) (correlation
# that is long but weak from one request to the next). Chosen by simulation
# (tests/test_stats_simulation.py, docs/statistics.md).
AUTOCORR_Z = 3.5
AUTOCORR_C = 4.0
MIN_BLOCKS = 8
# Degrees of freedom of the sparsity estimate (the slope of the order statistics across the
# band), per rank in the band. Chosen by simulation: with the normal reference (inf) about 5%
# of independent A/A reports of 7 rows flag a row; with 2 it is 3.9% (4,000 reports,
# lognormal, n = 1,000) and the power for a 15% shift stays at 80%; 1 (about the chi-square
# count of the spacings, which ignores the estimate's upward bias) costs 2-3 points of power.
SPARSITY_DF_PER_RANK = 2.0


def normal_cdf(z: float) -> float:
    """The standard normal distribution function: `statistics.NormalDist().cdf`, exactly."""
    return 0.5 * (1.0 + math.erf(z / _SQRT2))


def normal_quantile(prob: float) -> float:
    """The standard normal quantile, 0 < prob < 1: `statistics.NormalDist().inv_cdf`, exactly
    (its algorithm, Wichura's AS241, with its coefficients). `statistics` itself imports
    random, fractions and decimal: 2 ms of every run's start-up."""
    if prob <= 0.0 or prob >= 1.0:
        raise ValueError(f"prob must be in the range 0.0 < prob < 1.0, not {prob!r}")
    q = prob - 0.5
    if abs(q) <= 0.425:
        num, den = _AS241_CENTRAL
        r = 0.180625 - q * q
        return q * _horner(num, r) / _horner(den, r)
    r = math.sqrt(-math.log(prob if q <= 0.0 else 1.0 - prob))
    num, den = _AS241_NEAR if r <= 5.0 else _AS241_FAR
    r = r - 1.6 if r <= 5.0 else r - 5.0
    x = _horner(num, r) / _horner(den, r)
    return -x if q < 0.0 else x


def _horner(coefficients: tuple[float, ...], r: float) -> float:
    """The polynomial at r, its coefficients from the highest power down: `(a * r + b) * r + c`
    in the order of the nested form, so the same rounding."""
    value = 0.0
    for c in coefficients:
        value = value * r + c
    return value


_SQRT2 = math.sqrt(2.0)
# AS241's numerators and denominators, as CPython's statistics module writes them: the central
# region |p - 0.5| <= 0.425, then the tails with r = sqrt(-log(tail)) up to 5 and beyond.
# fmt: off
_AS241_CENTRAL = (
    (2.5090809287301226727e+3, 3.3430575583588128105e+4, 6.7265770927008700853e+4,
     4.5921953931549871457e+4, 1.3731693765509461125e+4, 1.9715909503065514427e+3,
     1.3314166789178437745e+2, 3.3871328727963666080e+0),
    (5.2264952788528545610e+3, 2.8729085735721942674e+4, 3.9307895800092710610e+4,
     2.1213794301586595867e+4, 5.3941960214247511077e+3, 6.8718700749205790830e+2,
     4.2313330701600911252e+1, 1.0),
)
_AS241_NEAR = (
    (7.7454501427834140764e-4, 2.2723844989269184583e-2, 2.4178072517745061177e-1,
     1.2704582524523683826e+0, 3.6478483247632045605e+0, 5.7694972214606914055e+0,
     4.6303378461565452959e+0, 1.4234371107496835773e+0),
    (1.0507500716444168432e-9, 5.4759380849953449460e-4, 1.5198666563616457197e-2,
     1.4810397642748007459e-1, 6.8976733498510000455e-1, 1.6763848301838038494e+0,
     2.0531916266377588219e+0, 1.0),
)
_AS241_FAR = (
    (2.0103343992922881327e-7, 2.7115555687434875782e-5, 1.2426609473880784386e-3,
     2.6532189526576123093e-2, 2.9656057182850489123e-1, 1.7848265399172913358e+0,
     5.4637849111641143699e+0, 6.6579046435011037772e+0),
    (2.0442631033899397856e-15, 1.4215117583164458887e-7, 1.8463183175100546818e-5,
     7.8686913114561325910e-4, 1.4875361290850614853e-2, 1.3692988092273580531e-1,
     5.9983220655588793769e-1, 1.0),
)
# fmt: on


def t_two_sided_p(t: float, df: float) -> float:
    """Two-sided p-value of Student's t with `df` degrees of freedom (normal when df is inf)."""
    if math.isinf(df):
        return math.erfc(abs(t) / math.sqrt(2.0))
    return betainc(0.5 * df, 0.5, df / (df + t * t))


def t_quantile(prob: float, df: float) -> float:
    """Student's t quantile: the Cornish-Fisher expansion in z (Abramowitz-Stegun 26.7.5), then
    Newton steps on the exact distribution function (`betainc`)."""
    z = normal_quantile(prob)
    if math.isinf(df) or prob == 0.5:
        return z
    g1 = (z**3 + z) / 4.0
    g2 = (5 * z**5 + 16 * z**3 + 3 * z) / 96.0
    g3 = (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / 384.0
    g4 = (79 * z**9 + 776 * z**7 + 1482 * z**5 - 1920 * z**3 - 945 * z) / 92160.0
    t = z + g1 / df + g2 / df**2 + g3 / df**3 + g4 / df**4
    log_norm = math.lgamma(0.5 * (df + 1)) - math.lgamma(0.5 * df) - 0.5 * math.log(df * math.pi)
    for _ in range(20):
        upper = 0.5 * betainc(0.5 * df, 0.5, df / (df + t * t))  # P(T > |t|)
        cdf = 1.0 - upper if t > 0 else upper
        pdf = math.exp(log_norm - 0.5 * (df + 1) * math.log1p(t * t / df))
        step = (cdf - prob) / pdf
        t -= step
        if abs(step) < 1e-9 * max(1.0, abs(t)):
            break
    return t


def welch_df(v1: float, df1: float, v2: float, df2: float) -> float:
    """Welch-Satterthwaite degrees of freedom of v1 + v2, each variance estimated with its own
    degrees of freedom (inf: treated as known)."""
    denom = (v1 * v1 / df1 if not math.isinf(df1) else 0.0) + (
        v2 * v2 / df2 if not math.isinf(df2) else 0.0
    )
    return math.inf if denom <= 0.0 else (v1 + v2) ** 2 / denom


def percentile(x: FloatArray, p: float, *, in_place: bool = False) -> float:
    """The p-th percentile (0 < p < 100) with linear interpolation, numpy's (and vLLM's) default:
    np.percentile's value exactly (see `percentiles`). `in_place` reorders `x` instead of copying
    it (a pool the caller owns)."""
    return percentiles(x, [p], in_place=in_place)[0]


def needed_for_interval(p: float, confidence: float) -> int:
    """The fewest requests that give a finite distribution-free interval for the p-th percentile.

    With n requests, the chance that all of them fall below the true p-th percentile is
    (p/100)^n; the exact two-sided interval at `confidence` has a finite upper end only when that
    is at most (1 - confidence) / 2 (same rule as `scipy.stats.quantile_test`). E.g. p95 at 0.95
    needs 72 requests, p99 needs 368.
    """
    q = max(p, 100.0 - p) / 100.0
    tail = (1.0 - confidence) / 2.0
    n = max(1, math.ceil(math.log(tail) / math.log(q)))
    # Guard the float boundary both ways: the smallest n with q**n <= tail.
    while n > 1 and q ** (n - 1) <= tail:
        n -= 1
    while q**n > tail:
        n += 1
    return n


@dataclass(frozen=True)
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


class _Side(NamedTuple):
    """One side's percentile and its standard error."""

    value: float
    se: float
    indicator: BoolArray  # I(x <= value), in the order given
    inflation: float  # autocorrelation variance factor applied (1.0 when none)
    df: float = math.inf  # degrees of freedom of se (Student-t reference)
    tied: bool = False  # values repeat around the percentile (quantised data)
    tick: float = 0.0  # when tied: the step between neighbouring values there (clock tick)
    others: tuple[float, ...] = ()  # the `also` percentiles


def _lerp(a: float, b: float, t: float) -> float:
    """numpy's interpolation, operation for operation, so values match np.percentile exactly."""
    diff = b - a
    return b - diff * (1.0 - t) if t >= 0.5 else a + diff * t


def _batch_means(indicator: BoolArray) -> tuple[FloatArray, int, float] | None:
    """Non-overlapping batch means of `indicator` in batches of b = floor(sqrt(n)) requests,
    with b and m(1 - m) for the overall mean m; None when there are too few batches or the
    indicator is constant."""
    n = indicator.size
    b = max(1, math.isqrt(n))
    blocks = n // b
    if b < 2 or blocks < MIN_BLOCKS:
        return None
    means = indicator[: blocks * b].reshape(blocks, b).mean(axis=1)
    m = float(means.mean())
    return None if m <= 0.0 or m >= 1.0 else (means, b, m * (1.0 - m))


def _merged_factors(means: FloatArray, b: int, scale: float) -> list[tuple[float, int]]:
    """(variance factor, batches) at b, then with batches merged in pairs (2b, 4b, ...) while
    at least MIN_BLOCKS remain, so that correlation longer than sqrt(n) requests (load regimes)
    is not missed."""
    out = [(b * float(means.var(ddof=1)) / scale, means.size)]
    while means.size >= 2 * MIN_BLOCKS:
        even = means.size - means.size % 2
        means = 0.5 * (means[0:even:2] + means[1:even:2])
        b *= 2
        out.append((b * float(means.var(ddof=1)) / scale, means.size))
    return out


def _runs_z(above: BoolArray) -> float:
    """Lag-1 autocorrelation of `above` (a request above the median) times sqrt(n): about
    standard normal for independent requests, large and positive when neighbours in arrival
    order look alike (the runs test around the median)."""
    n = above.size
    if n < 3:
        return 0.0
    k = int(np.count_nonzero(above))
    m = k / n
    ss = n * m * (1.0 - m)  # sum of (s - m)^2, from counts: no float copy of n values
    if ss == 0.0:
        return 0.0
    both = int(np.count_nonzero(above[:-1] & above[1:]))
    first, last = int(above[0]), int(above[-1])
    cross = both - m * ((k - last) + (k - first)) + (n - 1) * m * m
    return cross / ss * math.sqrt(n)


class _Autocorr(NamedTuple):
    """Variance inflation of a share's mean from correlation in arrival order."""

    factor: float  # 1.0 when none is detected
    df: float  # degrees of freedom of the factor's estimate; inf when none is applied


_INDEPENDENT = _Autocorr(1.0, math.inf)


def _autocorrelation(indicator: BoolArray, above_median: BoolArray) -> _Autocorr:
    """The batch-means variance factor of the mean of `indicator`, applied only when arrival
    order is detected to matter (see AUTOCORR_Z / AUTOCORR_C); its degrees of freedom are the
    batches' minus one, so the caller can use a Student-t reference."""
    batches = _batch_means(indicator)
    if batches is None:
        return _INDEPENDENT
    means, b, scale = batches
    f0 = b * float(means.var(ddof=1)) / scale
    strict = 1.0 + AUTOCORR_C * math.sqrt(2.0 / (means.size - 1))
    if f0 <= strict and _runs_z(above_median) <= AUTOCORR_Z:
        return _INDEPENDENT
    f, blocks = max(_merged_factors(means, b, scale))
    return _Autocorr(f, blocks - 1.0) if f > 1.0 else _INDEPENDENT


def _linear_ranks(n: int, p: float) -> tuple[int, int, float]:
    """The two order statistics (0-based) and the weight np.percentile interpolates with."""
    virtual = (n - 1) * (p / 100.0)
    lo = math.floor(virtual)
    return lo, min(lo + 1, n - 1), virtual - lo


def percentiles(x: FloatArray, ps: Sequence[float], *, in_place: bool = False) -> list[float]:
    """Several percentiles in one selection, each exactly as np.percentile computes it (NaN when
    `x` holds one), without the np.unique inside np.percentile, whose first call imports
    numpy.ma (8 ms of every start). `in_place` reorders `x` instead of copying it."""
    n = x.size
    ranks = [_linear_ranks(n, p) for p in ps]
    kth = sorted({n - 1, *(r for lo, hi, _ in ranks for r in (lo, hi))})  # n - 1: a NaN sorts last
    if in_place:
        x.partition(kth)
        part = x
    else:
        part = np.partition(x, kth)
    if math.isnan(part[-1]):
        return [math.nan] * len(ranks)
    return [_lerp(float(part[lo]), float(part[hi]), t) for lo, hi, t in ranks]


def _side(x: FloatArray, p: float, confidence: float, also: Sequence[float] = ()) -> _Side:
    n = x.size
    q = p / 100.0
    # Percentile exactly as np.percentile(method="linear") computes it.
    virtual = (n - 1) * (p / 100.0)
    lo = math.floor(virtual)
    hi = min(lo + 1, n - 1)
    sd_rank = math.sqrt(n * q * (1.0 - q))
    h = normal_quantile((1.0 + confidence) / 2.0) * sd_rank
    k = n * q
    # Band ranks (1-based), clipped into [1, n], as 0-based indices.
    lr = min(max(math.floor(k - h), 1), n) - 1
    ur = min(max(math.ceil(k + h), 1), n) - 1
    extra = [_linear_ranks(n, a) for a in also]
    mid = (n - 1) // 2
    part = np.partition(x, sorted({lo, hi, lr, ur, mid, *(r for e in extra for r in e[:2])}))
    value = _lerp(float(part[lo]), float(part[hi]), virtual - lo)
    others = tuple(_lerp(float(part[a]), float(part[b]), t) for a, b, t in extra)
    # n >= needed_for_interval keeps h > 0.5 rank, so ur > lr.
    se = (float(part[ur]) - float(part[lr])) / max(ur - lr, 1) * sd_rank
    indicator = x <= value
    auto = _autocorrelation(indicator, x > float(part[mid]))
    # Degrees of freedom of se: the sparsity estimate's and the autocorrelation factor's when
    # one is applied (the squared coefficients of variation of a product add up).
    df = 1.0 / (1.0 / (SPARSITY_DF_PER_RANK * max(ur - lr, 1)) + 1.0 / auto.df)
    tied, tick = _tied(x, float(part[lr]), float(part[ur]), ur - lr + 1)
    return _Side(
        value=value,
        se=se * math.sqrt(auto.factor),
        indicator=indicator,
        inflation=auto.factor,
        df=df,
        tied=tied,
        tick=tick,
        others=others,
    )


def interval(x: FloatArray, p: float, confidence: float) -> tuple[float, float] | None:
    """The run's own interval for its p-th percentile (the same standard error and Student-t
    reference as a comparison's), or None with too few values for one."""
    if x.size < needed_for_interval(p, confidence):
        return None
    s = _side(x, p, confidence)
    half = t_quantile((1.0 + confidence) / 2.0, s.df) * s.se
    return (s.value - half, s.value + half)


def _tied(x: FloatArray, low: float, high: float, ranks: int) -> tuple[bool, float]:
    """Quantised data (whole milliseconds, a coarse clock): far fewer distinct values than
    ranks in the band. There the slope of the band says nothing about how far the percentile
    can jump (a whole step), and the interval method would flag noise. Also the step: the
    smallest gap between distinct values in the band, or next to it when the band is one value."""
    band = np.sort(x[(x >= low) & (x <= high)])
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


def _exceedance_z(base: FloatArray, head: FloatArray, p: float, inflation: float) -> float:
    """Did the tail move? Each request scores 1 above the pooled p-th percentile q, 1/2 at it
    (ties split, as mid-ranks do) and 0 below; z of head's mean score against base's. Valid with
    ties: under no change the two samples are exchangeable and q depends only on the pool."""
    pool = np.concatenate([base, head])
    # the pool is a copy of our own: select in place (pooled ITL: no second 100 MB copy)
    q = percentile(pool, p, in_place=True)

    def score(x: FloatArray) -> float:
        return float(np.count_nonzero(x > q) + 0.5 * np.count_nonzero(x == q))

    nb, nh = base.size, head.size
    mean = (score(base) + score(head)) / (nb + nh)
    second = (np.count_nonzero(pool > q) + 0.25 * np.count_nonzero(pool == q)) / (nb + nh)
    var = (second - mean * mean) * (1.0 / nb + 1.0 / nh) * inflation
    return 0.0 if var <= 0.0 else (score(head) / nh - score(base) / nb) / math.sqrt(var)


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
    """Correlation of the two percentile estimates from the paired requests, clipped to [0, 1).

    The phi coefficient of the indicators over the pairs, scaled by m / sqrt(n_b n_h) for m pairs
    (equal to the phi coefficient when every request is paired).
    """
    ib, ih = pairs
    m = len(ib)
    if m < 2:
        return 0.0
    xb = b.indicator[ib].astype(np.float64)
    xh = h.indicator[ih].astype(np.float64)
    sb, sh = float(xb.std()), float(xh.std())
    if sb == 0.0 or sh == 0.0:
        return 0.0
    phi = float(((xb - xb.mean()) * (xh - xh.mean())).mean()) / (sb * sh)
    rho = phi * m / math.sqrt(b.indicator.size * h.indicator.size)
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
) -> Change:
    """Compare the p-th percentile of head with base.

    `base` / `head`: per-request values in arrival order, no NaN. `pairs`: index arrays (ib, ih)
    with base[ib[k]] and head[ih[k]] the same request (paired analysis). `family_size`,
    `min_change`, `min_ms`: the rows tested in the report and the size rules of `decide`, used
    only for the minimum detectable effect.
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
        return _no_requests(needed=need, paired=paired)
    if min(base.size, head.size) < need:
        return _too_few(base, head, p, also=also, needed=need, paired=paired)

    sb = _side(base, p, confidence, also)
    sh = _side(head, p, confidence, also)
    test = _test(sb, sh, base, head, p, confidence=confidence, pairs=pairs)
    mde = _mde_pct(sb, sh, test.se, test.df, 1.0 - confidence, family_size, min_change, min_ms)
    return Change(
        base=sb.value,
        head=sh.value,
        delta=test.delta,
        delta_pct=_pct(test.delta, sb.value),
        ci=test.ci,
        p_value=test.p_value,
        mde_pct=mde,
        needed=None,
        paired=paired,
        note=test.note,
        others=tuple(zip(sb.others, sh.others, strict=True)),
    )


def _no_requests(*, needed: int, paired: bool) -> Change:
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
        note="no requests",
    )


def _too_few(
    base: FloatArray,
    head: FloatArray,
    p: float,
    *,
    also: Sequence[float],
    needed: int,
    paired: bool,
) -> Change:
    """The percentiles of both sides, without an interval: fewer requests than `needed`."""
    (vb, *ob), (vh, *oh) = percentiles(base, [p, *also]), percentiles(head, [p, *also])
    note = (
        f"too few requests for an interval at {numbers.percentile(p)}: "
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


class _Test(NamedTuple):
    """The test of one change: its interval, p-value and the standard error behind them."""

    delta: float
    se: float
    df: float
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
    """Interval and p-value of head's percentile minus base's: by the standard errors of the
    two sides (less their correlation when paired), by exceedance when values repeat."""
    delta = sh.value - sb.value
    var = sb.se**2 + sh.se**2
    if pairs is not None:
        rho = _paired_rho(sb, sh, pairs)
        var -= 2.0 * rho * sb.se * sh.se
    se = math.sqrt(max(var, 0.0))
    # Student-t reference: an autocorrelation factor from a few batch means is an estimate
    df = welch_df(sb.se**2, sb.df, sh.se**2, sh.df)
    tc = t_quantile((1.0 + confidence) / 2.0, df)
    note = _autocorr_note(sb, sh)
    if sb.tied or sh.tied:
        # quantised values: test the tail by exceedance, and size the interval from that test
        z = _exceedance_z(base, head, p, max(sb.inflation, sh.inflation))
        agree = z * delta > 0.0
        p_value = t_two_sided_p(z, df) if agree else 1.0
        if agree:
            se = max(se, abs(delta) / abs(z))
        else:  # the interval must reach 0, and the percentile can move a whole tick
            se = max(se, abs(delta) / tc, max(sb.tick, sh.tick) / tc)
        note = "values repeat around the percentile (quantised): tested by exceedance"
    elif se > 0.0:
        p_value = _p_value(sb, sh, head, p, delta=delta, se=se, df=df)
    else:  # every value in both bands tied: the distribution-free intervals are single points
        p_value = 1.0 if delta == 0.0 else 0.0
        note = "tied values around the percentile: interval of zero width"
    ci = (delta - tc * se, delta + tc * se)
    return _Test(delta=delta, se=se, df=df, ci=ci, p_value=p_value, note=note)


def _p_value(
    sb: _Side, sh: _Side, head: FloatArray, p: float, *, delta: float, se: float, df: float
) -> float:
    """Two-sided p-value of the change from its standard error; with autocorrelation also the
    quantile test's, the smaller doubled."""
    p_value = t_two_sided_p(delta / se, df)
    if sb.inflation > 1.0 or sh.inflation > 1.0:
        # A burst of slow requests can make a run's whole tail one event: se says so, and
        # the interval is wide. Whether the tail moved is also asked of every head request
        # (the quantile test); the smaller p-value, doubled (Bonferroni), keeps the level.
        z = _above_base_z(sb, sh, head, p)
        p_tail = t_two_sided_p(z, df) if z * delta > 0.0 else 1.0
        p_value = min(1.0, 2.0 * min(p_value, p_tail))
    return p_value


def _mde_pct(
    b: _Side,
    h: _Side,
    se: float,
    df: float,
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
    if b.value == 0.0 or se <= 0.0:
        return None
    base = abs(b.value)
    t_crit = t_quantile(1.0 - alpha / (2.0 * max(family_size, 1)), df)
    t_power = t_quantile(MDE_POWER, df)
    size = max(min_change * base, min_ms)
    rest = max(se * se - h.se * h.se, 0.0)  # what does not scale with head (base, pairing)
    d = 0.0
    for _ in range(6):
        s = math.sqrt(rest + (h.se * (1.0 + d / base)) ** 2)
        d = max(size, t_crit * s) + t_power * s
    return 100.0 * d / base


def _pct(delta: float, base: float) -> float | None:
    return None if base == 0.0 else 100.0 * delta / base


def holm(p_values: Sequence[float | None], alpha: float) -> list[bool]:
    """Which p-values are significant after Holm's step-down correction at family level alpha.

    None entries are never significant and do not count in the family.
    """
    tested = sorted((pv, i) for i, pv in enumerate(p_values) if pv is not None)
    m = len(tested)
    out = [False] * len(p_values)
    for rank, (pv, i) in enumerate(tested):
        if pv > alpha / (m - rank):
            break
        out[i] = True
    return out


def large_enough(c: Change, min_change: float, min_ms: float) -> bool:
    """The change is at least `min_change` of base and `min_ms`, either way: the size half of
    the rule, which `decide` combines with significance."""
    return c.delta != 0.0 and abs(c.delta) >= max(min_change * abs(c.base), min_ms)


def decide(
    changes: Sequence[Change],
    *,
    min_change: float,
    min_ms: float | Sequence[float],
    confidence: float,
) -> list[str]:
    """The one place that decides, per change: regression, improvement, none or inconclusive.

    A regression (improvement) is at least max(min_change * |base|, min_ms) up (down) and
    significant after Holm over `changes` at 1 - confidence. Too few requests -> inconclusive.
    `min_ms` may be one floor per change (per-token rows take none: 5 ms is a whole token).
    """
    significant = holm([c.p_value for c in changes], 1.0 - confidence)
    floors = [float(min_ms)] * len(changes) if isinstance(min_ms, int | float) else list(min_ms)
    out: list[str] = []
    for c, sig, floor in zip(changes, significant, floors, strict=True):
        if c.needed is not None or c.p_value is None:
            out.append("inconclusive")
            continue
        if sig and large_enough(c, min_change, floor):
            out.append("regression" if c.delta > 0.0 else "improvement")
        else:
            out.append("none")
    return out


# --- SLO attainment: exact (Clopper-Pearson) interval of a share, without scipy ---------------


@dataclass(frozen=True)
class Attainment:
    """Share of requests that met the SLO, with its interval (percent)."""

    good: int
    total: int
    pct: float
    ci_pct: tuple[float, float]
    # requests that count as independent, when arrival order is autocorrelated (None: all)
    effective_n: int | None = None


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function (Numerical Recipes `betacf`, Lentz)."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c = 1.0
    d = 1.0 - qab * x / qap
    d = tiny if abs(d) < tiny else d
    d = 1.0 / d
    h = d
    for m in range(1, 10_000):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = tiny if abs(d) < tiny else d
        c = 1.0 + aa / c
        c = tiny if abs(c) < tiny else c
        d = 1.0 / d
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = tiny if abs(d) < tiny else d
        c = 1.0 + aa / c
        c = tiny if abs(c) < tiny else c
        d = 1.0 / d
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-15:
            break
    return h


def betainc(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    ln_front = (
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    front = math.exp(ln_front)
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def beta_ppf(prob: float, a: float, b: float) -> float:
    """The beta(a, b) quantile, by bisection on `betainc` (monotone in x)."""
    lo, hi = 0.0, 1.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if betainc(a, b, mid) < prob:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-15:
            break
    return 0.5 * (lo + hi)


def attainment(good: BoolArray, confidence: float) -> Attainment:
    """Share of good requests with its Clopper-Pearson interval at `confidence`: exact for
    independent requests. `good` in arrival order: when that order is autocorrelated (the same
    tests as the percentiles), the interval is taken at the effective number of requests,
    n / f for the batch-means variance factor f, and at the confidence whose normal quantile is
    Student's t quantile with the batch means' degrees of freedom."""
    total = int(good.size)
    k = int(np.count_nonzero(good))
    if total == 0:
        return Attainment(0, 0, math.nan, (0.0, 100.0))
    auto = _autocorrelation(good, good)
    n_eff, k_eff = total / auto.factor, k / auto.factor
    if auto.factor > 1.0:
        confidence = 1.0 - math.erfc(t_quantile((1.0 + confidence) / 2.0, auto.df) / math.sqrt(2))
    alpha = 1.0 - confidence
    lower = 0.0 if k == 0 else beta_ppf(alpha / 2.0, k_eff, n_eff - k_eff + 1)
    upper = 1.0 if k == total else beta_ppf(1.0 - alpha / 2.0, k_eff + 1, n_eff - k_eff)
    effective = round(n_eff) if auto.factor > 1.0 else None
    return Attainment(k, total, 100.0 * k / total, (100.0 * lower, 100.0 * upper), effective)
