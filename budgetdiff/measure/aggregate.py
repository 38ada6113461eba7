"""Rows from aggregate-only inputs (tool summaries, Prometheus histograms): what they hold, and
nothing invented. Without per-request data a row has no interval; from histograms a change is
tested on the bucket counts, and a percentile is only as exact as its bucket."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from budgetdiff import numbers, stats
from budgetdiff.budget.model import Budget
from budgetdiff.errors import InputError
from budgetdiff.measure.prepare import Prepared
from budgetdiff.measure.results import METRIC_LABELS, Change, Comparison, Row, RowKind, Side
from budgetdiff.measure.rows import (
    PER_TOKEN,
    Standing,
    against_target,
    decide_rows,
    prepared_side,
    share_level,
)
from budgetdiff.table import KNOWN_SLICES, Histogram, Run, histogram_quantile

NO_INTERVAL = "summary input: no per-request data, so no interval; the change is not judged"


@dataclass(frozen=True, slots=True)
class _Value:
    """One side's value of one row, as far as the aggregates hold it."""

    ms: float | None
    note: str | None = None
    bucket: tuple[float, float] | None = None
    histogram: Histogram | None = None
    missing: str | None = None  # why there is no value: what the file has instead, and the fix
    coarse: bool = False  # the percentile is in the first bucket: too coarse to place


@dataclass(frozen=True, slots=True)
class _Pair:
    """One row: an SLO metric or a slice, and each side's value of it."""

    kind: RowKind
    name: str
    base: _Value | None  # None: no base run
    head: _Value

    @property
    def same_bucket(self) -> bool:
        """Both values from histograms, in the same bucket: too coarse to tell a change."""
        b, h = self.base, self.head
        return (
            b is not None
            and b.histogram is not None
            and h.histogram is not None
            and b.bucket is not None
            and b.bucket == h.bucket
        )

    @property
    def coarse(self) -> bool:
        return self.same_bucket or self.head.coarse or (self.base is not None and self.base.coarse)


def compare_aggregate(
    base: Run | Prepared | None, head: Run | Prepared, budget: Budget, *, comparisons: int = 1
) -> Comparison:
    """Rows for runs of which at least one side holds only aggregates (`comparisons`: how many
    the report holds, sharing the gate's level: `rows.share_level`)."""
    p = budget.percentile
    pairs = [
        _Pair(
            kind=kind,
            name=name,
            base=_value(base, name, p) if base is not None else None,
            head=_value(head, name, p),
        )
        for kind, name in _row_names(base, head, budget)
    ]
    changes = [_change(x, p, budget.regression.confidence) for x in pairs]
    # a row named like a per-token metric holds the tool's per-token values: no floor in ms
    floors = [0.0 if x.name in PER_TOKEN else budget.regression.min_ms for x in pairs]
    alpha = share_level(1.0 - budget.regression.confidence, comparisons)
    verdicts = decide_rows(
        changes, floors_ms=floors, regression=budget.regression, level=alpha
    ).verdicts
    rows = [
        _row(x, change=c, verdict=v, budget=budget, sources=(_source(base), _run(head).source))
        for x, c, v in zip(pairs, changes, verdicts, strict=True)
    ]
    return Comparison(
        name=_run(head).scenario,
        percentile=p,
        base=_side(base) if base is not None else None,
        head=_side(head),
        slo=tuple(r for r in rows if r.kind == "slo"),
        slices=tuple(r for r in rows if r.kind == "slice"),
        headline=None,
        rebudget=None,
        feasibility=(),
        not_comparable=(),
        paired=False,
        notes=(
            _kind_note(base, head),
            *_reader_notes(base, head),
            *_other_percentiles(base, head, p),
        ),
    )


def _row_names(
    base: Run | Prepared | None, head: Run | Prepared, budget: Budget
) -> list[tuple[RowKind, str]]:
    """(kind, name) of each row: the SLO metrics both sides hold, then the budget's slices (or
    the known slices both hold); a budget slice the head lacks is bad input."""
    have = set(_names(head)) & (set(_names(base)) if base is not None else set(_names(head)))
    slices = list(budget.slices) or [s for s in KNOWN_SLICES if s in have]
    missing = [s for s in slices if s not in _names(head)]
    if missing:
        raise InputError(
            f"{_run(head).source}: the budget's slice {missing[0]!r} is not in this data; it "
            f"has: {', '.join(_names(head)) or 'nothing budgetdiff reads'}"
        )
    metrics = [m for m in METRIC_LABELS if m in have]
    return [("slo", m) for m in metrics] + [("slice", s) for s in slices]


def _row(
    x: _Pair,
    *,
    change: stats.Change | None,
    verdict: Change | None,
    budget: Budget,
    sources: tuple[str, str],
) -> Row:
    b, h = x.base, x.head
    target = budget.slo.targets().get(x.name) if x.kind == "slo" else budget.slice_budget(x.name)
    straddled = _straddled(x, target)
    # a bucket that holds the target cannot tell pass from breach: no status (judge: unmeasured)
    standing = Standing() if straddled else against_target(x.kind, target, h.ms, budget.headroom)
    notes = (b.note if b else None, h.note, change.note if change else None)
    base_source, head_source = sources
    absent = tuple(
        v.missing or f"no {x.name} in {source}"
        for v, source in ((h, head_source), (b, base_source))
        if v is not None and v.ms is None
    )
    return Row(
        name=x.name,
        kind=x.kind,
        target_ms=target,
        base_ms=b.ms if b else None,
        head_ms=h.ms,
        delta_ms=change.delta if change else None,
        delta_pct=change.delta_pct if change else None,
        change=verdict if change is not None else (Change.INCONCLUSIVE if b is not None else None),
        p_value=change.p_value if change else None,
        needed=(change.needed or None) if change else None,  # 0: no count would do
        notes=tuple(n for n in notes if n),
        headroom_pct=standing.headroom_pct,
        status=standing.status,
        budget_use_pct=standing.budget_use_pct,
        over_budget=standing.over_budget,
        unmeasured=absent,
        coarse_buckets=x.coarse,
        target_in_bucket=straddled,
    )


def _straddled(x: _Pair, target: float | None) -> tuple[float, float] | None:
    """The head's bucket (lo, hi] of an SLO row when the target lies strictly inside it: the
    true percentile may be on either side of the target, whatever the interpolation says. (A
    target on a bound is decided: at most `hi` is within it, above `lo` is over it.)"""
    if x.kind != "slo" or target is None or x.head.bucket is None:
        return None
    lo, hi = x.head.bucket
    return (lo, hi) if lo < target < hi else None


def _change(x: _Pair, p: float, confidence: float) -> stats.Change | None:
    """The change between the two values, tested on the bucket counts where both are from
    histograms in different buckets and hold enough requests; None without a base or a value
    on either side."""
    b, h = x.base, x.head
    if b is None or b.ms is None or h.ms is None:
        return None
    delta = h.ms - b.ms
    p_value, note, needed = None, NO_INTERVAL, 0
    if x.same_bucket:
        assert b.bucket is not None
        lo, hi = b.bucket
        note = (
            f"base and head fall in the same bucket ({numbers.given(lo)}, {numbers.given(hi)}] "
            "ms: the buckets are too coarse to tell"
        )
    elif b.histogram is not None and h.histogram is not None and b.bucket and h.bucket:
        needed = _too_few(b.histogram, h.histogram, p, confidence)
        if needed:
            note = (
                f"too few requests in the histograms for {numbers.percentile(p)}: "
                f"{_requests(b.histogram)} base, {_requests(h.histogram)} head; needs at least "
                f"{numbers.count(needed)} per side"
            )
        else:
            p_value, note = _exceedance(b, h, p)
    return stats.Change(
        base=b.ms,
        head=h.ms,
        delta=delta,
        delta_pct=100 * delta / b.ms if b.ms else None,
        ci=None,
        p_value=p_value,
        mde_pct=None,
        needed=None if p_value is not None else needed,
        paired=False,
        note=note,
    )


def _too_few(b: Histogram, h: Histogram, p: float, confidence: float) -> int:
    """The requests a side needs for the change at `p` to be tested (the fewest that place a
    percentile at all, `stats.needed_for_interval`), when either side has fewer; else 0."""
    need = stats.needed_for_interval(p, confidence)
    fewest = min(float(np.sum(b.counts)), float(np.sum(h.counts)))
    return need if fewest < need else 0


def _requests(h: Histogram) -> str:
    return numbers.count(round(float(np.sum(h.counts))))


def _exceedance(b: _Value, h: _Value, p: float) -> tuple[float | None, str]:
    """Did the tail move? The share of requests above the bucket bound between the two
    estimates, base against head (a two-proportion test on the bucket counts)."""
    assert b.histogram is not None and h.histogram is not None and b.bucket and h.bucket
    bound = b.bucket[1] if (h.ms or 0) > (b.ms or 0) else b.bucket[0]
    nb, kb = _above(b.histogram, bound)
    nh, kh = _above(h.histogram, bound)
    if nb == 0 or nh == 0 or not math.isfinite(bound):
        return None, NO_INTERVAL
    p_value = stats.two_proportion_p(above_base=kb, n_base=nb, above_head=kh, n_head=nh)
    if p_value is None:
        return None, NO_INTERVAL
    return p_value, (
        f"from histogram buckets: {numbers.pct(100 * kb / nb)} of base and "
        f"{numbers.pct(100 * kh / nh)} of head requests took over {numbers.given(bound)} ms "
        f"(expected {numbers.given(100 - p)}% at {numbers.percentile(p)})"
    )


def _above(h: Histogram, bound: float) -> tuple[float, float]:
    total = float(np.sum(h.counts))
    below = float(np.sum(h.counts[h.bounds <= bound]))
    return total, total - below


def _value(side: Run | Prepared | None, name: str, p: float) -> _Value:
    """One side's p-th percentile of `name`: from per-request values, the histogram, or the
    tool's summary; without one, why not."""
    if side is None:
        return _Value(None)
    if isinstance(side, Prepared):
        v = side.slices.get(name)
        if v is None:
            v = side.metrics.get(name)
        return _Value(stats.percentile(v, p) if v is not None and len(v) else None)
    if name in side.histograms:
        return _from_histogram(side, name, p)
    held = side.summary.get(name, {})
    if p in held:
        return _Value(held[p])
    why = _not_held(side.source, p, sorted(held))
    return _Value(None, note=f"{name}: {why}", missing=why)


def _from_histogram(run: Run, name: str, p: float) -> _Value:
    """The percentile inside its bucket, or why the buckets cannot place it."""
    h = run.histograms[name]
    est, lo, hi = histogram_quantile(h, p)
    at, low, high = numbers.percentile(p), numbers.given(lo), numbers.given(hi)
    if math.isnan(est):
        why = f"the {name} histogram in {run.source} is empty"
        return _Value(None, note=f"{name}: the histogram is empty", missing=why)
    if math.isinf(hi):
        why = (
            f"{at} is above the highest {name} bucket ({low} ms) in {run.source}: "
            "the true value is unknown"
        )
        note = f"{name}: {at} is above the highest bucket ({low} ms)"
        return _Value(None, note=note, missing=why)
    if hi == float(h.bounds[0]):  # the first bucket: from 0, nothing to place it by
        mean = _mean(run, name)
        said = f"; the mean from _sum/_count is {numbers.ms(mean)}" if mean is not None else ""
        if mean is not None and mean > hi:
            said += ", above that bucket: the buckets and the sum disagree"
        coarse = f"{at} is in the first bucket (0, {high}] ms: too coarse to place{said}"
        return _Value(
            None,
            note=f"{name}: {coarse}",
            missing=f"{name} in {run.source}: {coarse}",
            coarse=True,
        )
    return _Value(
        est,
        note=f"{name}: from histogram buckets, {at} is in ({low}, {high}] ms",
        bucket=(lo, hi),
        histogram=h,
    )


def _not_held(source: str, p: float, have: list[float]) -> str:
    """`p95 not in s.json: it has p50, p90, p99; set `percentile: 90` or ...`."""
    if not have:
        return (
            f"{numbers.percentile(p)} not in {source}, nor any other percentile; "
            "pass the per-request file"
        )
    near = max((q for q in have if q <= p), default=min(have))
    return (
        f"{numbers.percentile(p)} not in {source}: it has "
        f"{', '.join(numbers.percentile(q) for q in have)}; set "
        f"`percentile: {numbers.given(near)}` in the budget or pass the per-request file"
    )


def _mean(run: Run, name: str) -> float | None:
    """The histogram's own mean, `_sum / _count` (ms), where the scrape has both."""
    total, count = run.meta.get(f"sum:{name}"), run.meta.get(f"count:{name}")
    if isinstance(total, float) and isinstance(count, float) and count > 0:
        return total / count
    return None


def _in_flight(run: Run) -> str | None:
    """Histograms of one scrape that count different requests: some were in flight."""
    counts = {k: round(float(np.sum(h.counts))) for k, h in run.histograms.items()}
    if len(set(counts.values())) < 2:
        return None
    listed = ", ".join(f"{k} {v}" for k, v in counts.items())
    return (
        f"{run.source}: the histograms count different requests ({listed}): requests were in "
        "flight when it was scraped (TTFT is counted at the first token, the others at the end); "
        "each percentile is of its own requests, so the metrics are not compared with each other"
    )


def _names(side: Run | Prepared | None) -> list[str]:
    if side is None:
        return []
    if isinstance(side, Prepared):
        return [*side.slices, *side.metrics]
    return [*side.summary, *[k for k in side.histograms if k not in side.summary]]


def _source(side: Run | Prepared | None) -> str:
    return "base" if side is None else _run(side).source


def _kind_note(base: Run | Prepared | None, head: Run | Prepared) -> str:
    """Whose percentiles these are: the tool's own, or estimates from histogram buckets."""
    sides = [_run(s) for s in (base, head) if s is not None]
    own = any(r.summary for r in sides)
    buckets = any(r.histograms for r in sides)
    kind = {
        (True, False): "percentiles are the tool's own",
        (False, True): "percentiles are estimates from histogram buckets (as Prometheus's "
        "histogram_quantile makes them), not measured values",
        (True, True): "percentiles are the tool's own where it gives them, else estimates from "
        "histogram buckets",
    }.get((own, buckets), "percentiles are the tool's own")
    return f"aggregate input: {kind}; tail shares and the re-budget proposal need per-request data"


def _other_percentiles(base: Run | Prepared | None, head: Run | Prepared, p: float) -> list[str]:
    """The file's own percentiles beside the budget's (p50, p90, p99 where it has them): the
    shape of the distribution an aggregate otherwise hides."""
    out = []
    for label, side in (("base", base), ("head", head)):
        if side is None or isinstance(side, Prepared) or not side.summary:
            continue
        parts = []
        for name in METRIC_LABELS:
            by_q = side.summary.get(name, {})
            shown = [q for q in (50.0, 90.0, 99.0) if q in by_q and q != p]
            if shown:
                values = ", ".join(f"{numbers.percentile(q)} {numbers.ms(by_q[q])}" for q in shown)
                parts.append(f"{METRIC_LABELS[name]} {values}")
        if parts:
            out.append(f"{label} {side.source}: " + "; ".join(parts))
    return out


def _reader_notes(base: Run | Prepared | None, head: Run | Prepared) -> list[str]:
    """What a reader of an aggregate side said about the file (e.g. which numbers it took)."""
    sides = [_run(s) for s in (base, head) if s is not None]
    notes = [r.meta.get("note") for r in sides] + [_in_flight(r) for r in sides]
    return list(dict.fromkeys(n for n in notes if isinstance(n, str)))


def _run(side: Run | Prepared) -> Run:
    return side.run if isinstance(side, Prepared) else side


def _side(side: Run | Prepared) -> Side:
    if isinstance(side, Prepared):
        return prepared_side(side)
    count = side.summary_count
    if count is None and side.histograms:
        count = int(max(float(np.sum(h.counts)) for h in side.histograms.values()))
    failures = side.meta.get("failures")
    return Side(
        source=side.source,
        requests=count,
        failed=int(failures) if isinstance(failures, float) else 0,
        attainment=None,
        meta=dict(side.meta),
        failed_known=isinstance(failures, float),
        percentile_method="the tool's own" if side.summary else "interpolated in its buckets",
    )
