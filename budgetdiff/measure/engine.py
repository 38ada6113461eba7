"""Issue 36: the change of a percentile computed out of core, from what an engine returns
(`sources.engine`: order statistics at ranks, counts, arrival-order counts), the same numbers
as `stats.compare_percentile` gives on the values in memory (tests/measure/test_engine.py
compares them exactly on 1e5 rows).

The formulas are `stats.change`'s, called where they take no values (`_bound_ranks`,
`_spread`, `_clip`, `_edge_note`, `_mde_pct`, the autocorrelation's `_merged_factors`); the
steps that read the values themselves are asked of the engine at the same ranks instead. What
this path does not compute is said, never guessed: several runs a side (the between-run
variance), the permutation step-down (Holm's correction decides instead). Paired sides take the
correlation of their estimates from four counts over the pairs (`stats.change.paired_rho`),
which `engine_pairing` counts in a join.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from budgetdiff import numbers
from budgetdiff.sources.engine import Arrival, Engine, Plan, Scan, ident
from budgetdiff.stats import Change
from budgetdiff.stats import autocorrelation as ac
from budgetdiff.stats import change as ch
from budgetdiff.stats.distributions import t_quantile, t_two_sided_p
from budgetdiff.stats.quantiles import lerp, linear_ranks, needed_for_interval


@dataclass(frozen=True, slots=True)
class Column:
    """One side's column as the engine holds it: the relation it is read from and its rows."""

    engine: Engine
    rel: str
    name: str
    n: int
    label: str

    def at(self, ranks: Sequence[int], verify: bool = True) -> dict[int, float]:
        inside = [r for r in ranks if 0 <= r < self.n]
        return self.engine.order_statistics(self.rel, self.name, self.n, inside, self.label, verify)


@dataclass(frozen=True, slots=True)
class EngineSide:
    """A side as `stats.change._Side` holds it (`side`, without the indicator array), its
    rows, and whether its values are tied around the percentile."""

    side: ch._Side
    n: int
    scan: Scan  # what its pass over the column counted and kept


def autocorr(a: Arrival, n: int) -> ac.Autocorr:
    """`stats.autocorrelation.autocorrelation` from the arrival-order counts: the same batch
    means (count / b), factors and runs test."""
    b, blocks = a.batch, a.batch_counts.size
    if b < 2 or blocks < ac.MIN_BLOCKS:
        return ac.INDEPENDENT
    means = a.batch_counts.astype(np.float64) / b
    m = float(means.mean())
    if m <= 0.0 or m >= 1.0:
        return ac.INDEPENDENT
    scale = m * (1.0 - m)
    f0 = b * float(means.var(ddof=1)) / scale
    strict = 1.0 + ac.AUTOCORR_C * math.sqrt(2.0 / (means.size - 1))
    if f0 <= strict and _runs_z(a, n) <= ac.AUTOCORR_Z:
        return ac.INDEPENDENT
    f, k = max(ac._merged_factors(means, b, scale))
    return ac.Autocorr(f, k - 1.0) if f > 1.0 else ac.INDEPENDENT


def _runs_z(a: Arrival, n: int) -> float:
    """`autocorrelation._runs_z` from its counts."""
    if n < 3:
        return 0.0
    k = a.above
    m = k / n
    ss = n * m * (1.0 - m)
    if ss == 0.0:
        return 0.0
    first, last = int(a.first), int(a.last)
    cross = a.both - m * ((k - last) + (k - first)) + (n - 1) * m * m
    return cross / ss * math.sqrt(n)


@dataclass(frozen=True, slots=True)
class Ranks:
    """A side's ranks (`stats.change.side_ranks`) and the order statistics there (one query,
    checked by the side's scan)."""

    at: ch.SideRanks
    part: dict[int, float]


def ranks(col: Column, p: float, confidence: float, also: Sequence[float]) -> Ranks:
    at = ch.side_ranks(col.n, p, confidence, also)
    return Ranks(at, col.at(at.wanted(), verify=False))


def side(col: Column, r: Ranks, bracket: tuple[float, float], confidence: float) -> EngineSide:
    """`stats.change._side`, from the side's order statistics and one scan of its column."""
    n, part, at = col.n, r.part, r.at
    lr, ur = at.lr, at.ur
    bnd = ch.band(at, part)
    value = bnd.value
    scan = col.engine.scan(
        col.rel, col.name, n, Plan(value, part[at.mid], part, bracket), col.label
    )
    auto = autocorr(scan.arrival, n)
    df = 1.0 / (1.0 / (ch.SPARSITY_DF_PER_RANK * max(ur - lr, 1)) + 1.0 / auto.df)
    tied, tick = _tied(col, scan, part[lr], part[ur], ur - lr + 1)
    inflate = math.sqrt(auto.factor)
    bounds = at.bounds
    if auto.factor > 1.0:
        bounds = ch._bound_ranks(n, at.k, at.sd_rank * inflate, confidence)
        part = {**part, **col.at(list(bounds))}
    s = ch._Side(
        value=value,
        down=bnd.down * inflate,
        up=bnd.up * inflate,
        se=bnd.se * inflate,
        bias=bnd.bias,
        indicator=np.empty(0, dtype=np.bool_),  # never read here: `n` says the size
        inflation=auto.factor,
        df=df,
        tied=tied,
        tick=tick,
        others=bnd.others,
        floor=part[bounds[0]] if bounds[0] >= 0 else -math.inf,
        ceiling=part[bounds[1]] if bounds[1] < n else math.inf,
        skew=bnd.skew,
    )
    return EngineSide(s, n, scan)


def _tied(col: Column, scan: Scan, low: float, high: float, ranks: int) -> tuple[bool, float]:
    """`stats.change._tied`, from the values the scan kept around the percentiles (or by
    queries when it kept none): far fewer distinct values than ranks in the band, and the
    step between them there."""
    if scan.bracket is None:
        tied = col.engine.band(col.rel, col.name, low, high, col.label) * 2 < ranks
        return tied, col.engine.tick(col.rel, col.name, low, high, col.label) if tied else 0.0
    b = scan.bracket
    band = b[np.searchsorted(b, low, "left") : np.searchsorted(b, high, "right")]
    steps = np.diff(band)
    distinct = int(np.count_nonzero(steps)) + min(len(band), 1)
    if distinct * 2 >= ranks:
        return False, 0.0
    if distinct > 1:
        return True, float(steps[steps > 0].min())
    return True, col.engine.tick(col.rel, col.name, low, high, col.label)


def _above(col: Column, s: EngineSide, bound: float) -> tuple[int, int]:
    """Values of the side above `bound` and equal to it: from the values its scan kept when
    `bound` is inside them, else a query."""
    b = s.scan.bracket
    if b is not None and b.size and b[0] <= bound <= b[-1]:
        upto = s.scan.below + int(np.searchsorted(b, bound, "right"))
        at = int(np.searchsorted(b, bound, "right") - np.searchsorted(b, bound, "left"))
        return col.n - upto, at
    return col.engine.above(col.rel, col.name, bound, col.label)


def head_interval(h: EngineSide, confidence: float) -> tuple[float, float]:
    """`stats.interval` of head's percentile, from its side."""
    s = h.side
    tc = t_quantile((1.0 + confidence) / 2.0, s.df)
    return (s.value - s.bias - tc * s.down, s.value - s.bias + tc * s.up)


@dataclass(frozen=True, slots=True)
class Sides:
    """Both sides of a row, measured (`sides`): what the test then reads."""

    base: EngineSide
    head: EngineSide


def sides(base: Column, head: Column, p: float, confidence: float, also: Sequence[float]) -> Sides:
    """Each side's percentile, band, autocorrelation and ties (`stats.change._side`): the
    side's order statistics and one scan of its column each."""
    rb, rh = ranks(base, p, confidence, also), ranks(head, p, confidence, also)
    # the values both scans keep: both sides' bands, and what lies between them (where the
    # pooled percentile, and base's percentile among head's values, are)
    low = min(rb.part[rb.at.lr], rh.part[rh.at.lr])
    high = max(rb.part[rb.at.ur], rh.part[rh.at.ur])
    return Sides(side(base, rb, (low, high), confidence), side(head, rh, (low, high), confidence))


def compare(
    base: Column,
    head: Column,
    p: float,
    confidence: float,
    *,
    family_size: int,
    also: Sequence[float],
    min_change: float,
    min_ms: float,
    measured: Sides | None = None,
    pairs: ch.PairCounts | None = None,
) -> tuple[Change, tuple[float, float] | None]:
    """`stats.compare_percentile` (one run a side) and head's own interval (`stats.interval`),
    from the engine; `measured`: the sides when `sides` measured them already; `pairs`: the
    paired requests' counts (`stats.change.paired_rho`) when the sides are paired."""
    need = needed_for_interval(p, confidence)
    if min(base.n, head.n) < need:
        return _too_few(base, head, p, also, need, paired=pairs is not None), None
    m = measured if measured is not None else sides(base, head, p, confidence, also)
    sb, sh = m.base, m.head
    rho = ch.paired_rho(pairs, base.n, head.n) if pairs is not None else 0.0
    others = tuple(zip(sb.side.others, sh.side.others, strict=True))
    if sb.side.tied or sh.side.tied:
        test = _tied_test(sb, sh, base, head, p, confidence, rho)
    else:
        test = _test(sb, sh, head, p, confidence, rho)
    delta, ci, p_value, spread, note = test
    ci = ch.no_lower_than_all(ci, sb.side.value, min(sb.scan.lowest, sh.scan.lowest))
    mde = ch._mde_pct(sb.side.value, spread, 1.0 - confidence, family_size, min_change, min_ms)
    c = _change(sb, sh, delta=delta, ci=ci, p_value=p_value, mde=mde, note=note)
    c = replace(c, others=others, paired=pairs is not None)
    return c, head_interval(sh, confidence)


def _change(
    sb: EngineSide,
    sh: EngineSide,
    *,
    delta: float,
    ci: tuple[float, float] | None,
    p_value: float | None,
    mde: float | None,
    note: str | None,
) -> Change:
    b, h = sb.side, sh.side
    return Change(
        base=b.value,
        head=h.value,
        delta=delta,
        delta_pct=ch._pct(delta, b.value),
        ci=ci,
        p_value=p_value,
        mde_pct=mde,
        needed=None,
        paired=False,
        note=note,
        autocorrelated=(b.inflation > 1.0, h.inflation > 1.0),
    )


# a test's delta, interval, p-value, spread and note (`stats.change._Test`)
_Tested = tuple[float, tuple[float, float], float, ch._Spread, str | None]


def _test(
    sb: EngineSide, sh: EngineSide, head: Column, p: float, confidence: float, rho: float
) -> _Tested:
    """`stats.change._test`, unpaired and untied: the interval from each side's standard
    errors below and above, the p-value against the end facing 0, the quantile test (head's
    values above base's percentile, counted by the engine) when a side is autocorrelated."""
    b, h = sb.side, sh.side
    delta = h.value - b.value
    lower = ch._spread(b.up, h.down, b, h, rho)
    upper = ch._spread(b.down, h.up, b, h, rho)
    center = delta - (h.bias - b.bias)
    toward_zero = lower if center >= 0.0 else upper
    note = ch._join(_autocorr_note(sb, sh), ch._edge_note(b, h, p))
    tl = t_quantile((1.0 + confidence) / 2.0, lower.df)
    tu = t_quantile((1.0 + confidence) / 2.0, upper.df)
    ci = ch._clip((center - tl * lower.se, center + tu * upper.se), b, h)
    if toward_zero.se <= 0.0:
        p_value = 1.0 if delta == 0.0 else 0.0
        return (
            delta,
            ci,
            p_value,
            lower,
            "tied values around the percentile: interval of zero width",
        )
    own = t_two_sided_p(center / toward_zero.se, toward_zero.df)
    p_value = own
    if b.inflation > 1.0 or h.inflation > 1.0:  # counted only where it decides
        tail = _tail_p(sb, sh, head, p, delta=center, df=toward_zero.df)
        p_value = min(1.0, 2.0 * min(own, tail))
    return delta, ci, p_value, lower, note


def _tied_test(
    sb: EngineSide,
    sh: EngineSide,
    base: Column,
    head: Column,
    p: float,
    confidence: float,
    rho: float,
) -> _Tested:
    """`stats.change._tied_test`: quantised values, the tail tested by exceedance over the
    pooled percentile (asked of the engine over both sides' rows), the interval from that test."""
    b, h = sb.side, sh.side
    delta = h.value - b.value
    band = ch._spread(b.se, h.se, b, h, rho)
    tc = t_quantile((1.0 + confidence) / 2.0, band.df)
    z = _exceedance_z(sb, sh, base, head, p)
    agree = z * delta > 0.0
    p_value = t_two_sided_p(z, band.df) if agree else 1.0
    if agree:
        se = abs(delta) / abs(z)
        half = tc * se
    else:
        half = max(tc * band.se, abs(delta), b.tick, h.tick)
        se = half / tc
    note = "values repeat around the percentile (quantised): tested by exceedance"
    spread = ch._Spread(se, band.df, h.se)
    return delta, (delta - half, delta + half), p_value, spread, note


def _exceedance_z(sb: EngineSide, sh: EngineSide, base: Column, head: Column, p: float) -> float:
    """`stats.change._exceedance_z`: the pooled p-th percentile q of both sides' rows, each
    side's score above it (1/2 at it), z of head's against base's."""
    inflation = max(sb.side.inflation, sh.side.inflation)
    q = _pooled(sb, sh, base, head, p)
    (gb, eb), (gh, eh) = _above(base, sb, q), _above(head, sh, q)
    nb, nh = base.n, head.n
    score_b, score_h = float(gb + 0.5 * eb), float(gh + 0.5 * eh)
    mean = (score_b + score_h) / (nb + nh)
    second = ((gb + gh) + 0.25 * (eb + eh)) / (nb + nh)
    var = (second - mean * mean) * (1.0 / nb + 1.0 / nh) * inflation
    if var <= 0.0:
        return 0.0
    return (score_h / nh - score_b / nb) / math.sqrt(var)


def _pooled(sb: EngineSide, sh: EngineSide, base: Column, head: Column, p: float) -> float:
    """The p-th percentile of both sides' rows together: from the values both scans kept (the
    same bracket, so the count below it adds up) when its ranks are among them, else one query
    over the union of the two."""
    n = base.n + head.n
    lo, hi, t = linear_ranks(n, p)
    kb, kh = sb.scan.bracket, sh.scan.bracket
    if kb is not None and kh is not None:
        below = sb.scan.below + sh.scan.below
        both = np.sort(np.concatenate([kb, kh]))
        if below <= lo and hi - below < both.size:
            return lerp(float(both[lo - below]), float(both[hi - below]), t)
    c = ident(base.name)
    pool = Column(
        base.engine,
        f"(SELECT {c} FROM {base.rel} UNION ALL SELECT {c} FROM {head.rel})",
        base.name,
        n,
        f"{base.label} and {head.label}",
    )
    part = pool.at([lo, hi, n - 1])
    return lerp(part[lo], part[hi], t)


def _tail_p(
    sb: EngineSide, sh: EngineSide, head: Column, p: float, *, delta: float, df: float
) -> float:
    """`stats.change._tail_p`: head's values above base's percentile (1/2 at it), counted."""
    b, h = sb.side, sh.side
    q = p / 100.0
    nh, nb = head.n, sb.n
    gt, eq = _above(head, sh, b.value)
    above = gt + 0.5 * eq
    var = (h.inflation / nh + b.inflation / nb) / 4.0
    z = (math.asin(math.sqrt(above / nh)) - math.asin(math.sqrt(1.0 - q))) / math.sqrt(var)
    return t_two_sided_p(z, df) if z * delta > 0.0 else 1.0


def _autocorr_note(sb: EngineSide, sh: EngineSide) -> str | None:
    """`stats.change._autocorr_note`, with each side's rows counted by the engine."""
    parts = [
        f"effective n {round(s.n / s.side.inflation)} of {s.n} ({name})"
        for name, s in (("base", sb), ("head", sh))
        if s.side.inflation > 1.0
    ]
    return "autocorrelated in arrival order: " + ", ".join(parts) if parts else None


def _too_few(
    base: Column, head: Column, p: float, also: Sequence[float], need: int, paired: bool
) -> Change:
    """Fewer rows than an interval needs: the percentiles only (as `stats.change._too_few`)."""
    sides = []
    for col in (base, head):
        col.engine.check_missing(col.rel, col.name, col.label)  # no scan checks it here
        ranks = [linear_ranks(col.n, x) for x in (p, *also)]
        part = col.at([r for lo, hi, _ in ranks for r in (lo, hi)])
        sides.append([lerp(part[lo], part[hi], t) for lo, hi, t in ranks])
    (vb, *ob), (vh, *oh) = sides
    delta = vh - vb
    return Change(
        base=vb,
        head=vh,
        delta=delta,
        delta_pct=ch._pct(delta, vb),
        ci=None,
        p_value=None,
        mde_pct=None,
        needed=need,
        paired=paired,
        note=(
            f"too few requests for an interval at {numbers.percentile(p)}: {base.n} base, "
            f"{head.n} head, {need} needed per side"
        ),
        others=tuple(zip(ob, oh, strict=True)),
    )
