"""Rows from aggregate-only inputs (tool summaries, Prometheus histograms): what they hold, and
nothing invented. Without per-request data a row has no interval; from histograms a change is
tested on the bucket counts, and a percentile is only as exact as its bucket."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from statistics import NormalDist

import numpy as np

from budgetdiff import stats
from budgetdiff.budget import Budget
from budgetdiff.compare import (
    METRIC_LABELS,
    PER_TOKEN,
    Comparison,
    Row,
    Side,
    _p,
    against_target,
)
from budgetdiff.errors import InputError
from budgetdiff.prepare import Prepared
from budgetdiff.table import KNOWN_SLICES, Histogram, Run, histogram_quantile

NO_INTERVAL = "summary input: no per-request data, so no interval; the change is not judged"


@dataclass(frozen=True)
class _Value:
    ms: float | None
    note: str | None = None
    bucket: tuple[float, float] | None = None
    histogram: Histogram | None = None
    missing: str | None = None  # why there is no value: what the file has instead, and the fix


def compare_aggregate(
    base: Run | Prepared | None, head: Run | Prepared, budget: Budget
) -> Comparison:
    """Rows for runs of which at least one side holds only aggregates."""
    p = budget.percentile
    head_run = _run(head)
    have = set(_names(head)) & (set(_names(base)) if base is not None else set(_names(head)))
    slices = list(budget.slices) or [s for s in KNOWN_SLICES if s in have]
    missing = [s for s in slices if s not in _names(head)]
    if missing:
        raise InputError(
            f"{head_run.source}: the budget's slice {missing[0]!r} is not in this data; it has: "
            f"{', '.join(_names(head)) or 'nothing budgetdiff reads'}"
        )
    metrics = [m for m in METRIC_LABELS if m in have]
    raw = [("slo", m) for m in metrics] + [("slice", s) for s in slices]

    values = [
        (_value(base, name, p) if base is not None else None, _value(head, name, p))
        for _, name in raw
    ]
    changes: list[stats.Change | None] = [
        _change(b, h, p) if b is not None else None for b, h in values
    ]
    tested = [i for i, c in enumerate(changes) if c is not None]
    decided = stats.decide(
        [changes[i] for i in tested if changes[i] is not None],  # type: ignore[misc]
        min_change=budget.regression.min_change,
        min_ms=[0.0 if raw[i][1] in PER_TOKEN else budget.regression.min_ms for i in tested],
        confidence=budget.regression.confidence,
    )
    verdicts = dict(zip(tested, decided, strict=True))
    targets = budget.slo.targets()
    rows = []
    for i, ((kind, name), (b, h)) in enumerate(zip(raw, values, strict=True)):
        c = changes[i]
        target = targets.get(name) if kind == "slo" else budget.slice_budget(name)
        notes = tuple(n for n in ((b.note if b else None), h.note, c.note if c else None) if n)
        row = _row(kind, name, target, b, h, c, verdicts.get(i), budget, notes)
        absent = tuple(
            v.missing or f"no {name} in {src}"
            for v, src in ((h, head_run.source), (b, _source(base)))
            if v is not None and v.ms is None
        )
        rows.append(replace(row, unmeasured=absent))
    return Comparison(
        name=head_run.scenario,
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
            "aggregate input: percentiles are the tool's own; tail shares and the re-budget "
            "proposal need per-request data",
            *_reader_notes(base, head),
        ),
    )


def _row(
    kind: str,
    name: str,
    target: float | None,
    b: _Value | None,
    h: _Value,
    c: stats.Change | None,
    verdict: str | None,
    budget: Budget,
    notes: tuple[str, ...],
) -> Row:
    head_ms = h.ms
    headroom_pct, status, budget_use, over = against_target(kind, target, head_ms, budget.headroom)
    change = verdict if c is not None else ("inconclusive" if b is not None else None)
    return Row(
        name=name,
        kind=kind,
        target_ms=target,
        base_ms=b.ms if b else None,
        head_ms=head_ms,
        delta_ms=c.delta if c else None,
        delta_pct=c.delta_pct if c else None,
        change=change,
        p_value=c.p_value if c else None,
        notes=notes,
        headroom_pct=headroom_pct,
        status=status,
        budget_use_pct=budget_use,
        over_budget=over,
    )


def _change(b: _Value, h: _Value, p: float) -> stats.Change | None:
    if b.ms is None or h.ms is None:
        return None
    delta = h.ms - b.ms
    pct = 100 * delta / b.ms if b.ms else None
    p_value, note = None, NO_INTERVAL
    if b.histogram is not None and h.histogram is not None and b.bucket and h.bucket:
        if b.bucket == h.bucket:
            lo, hi = b.bucket
            note = (
                f"base and head fall in the same bucket ({lo:g}, {hi:g}] ms: the buckets "
                "are too coarse to tell"
            )
        else:
            p_value, note = _exceedance(b, h, p)
    return stats.Change(
        b.ms, h.ms, delta, pct, None, p_value, None, None if p_value is not None else 0, False, note
    )


def _exceedance(b: _Value, h: _Value, p: float) -> tuple[float | None, str]:
    """Did the tail move? The share of requests above the bucket bound between the two
    estimates, base against head (a two-proportion test on the bucket counts)."""
    assert b.histogram is not None and h.histogram is not None and b.bucket and h.bucket
    bound = b.bucket[1] if (h.ms or 0) > (b.ms or 0) else b.bucket[0]
    nb, kb = _above(b.histogram, bound)
    nh, kh = _above(h.histogram, bound)
    if nb == 0 or nh == 0 or not math.isfinite(bound):
        return None, NO_INTERVAL
    pooled = (kb + kh) / (nb + nh)
    se = math.sqrt(pooled * (1 - pooled) * (1 / nb + 1 / nh))
    if se == 0:
        return None, NO_INTERVAL
    z = (kh / nh - kb / nb) / se
    p_value = 2 * (1 - NormalDist().cdf(abs(z)))
    return p_value, (
        f"from histogram buckets: {100 * kb / nb:.1f}% of base and "
        f"{100 * kh / nh:.1f}% of head requests took over {bound:g} ms "
        f"(expected {100 - p:g}% at p{_p(p)})"
    )


def _above(h: Histogram, bound: float) -> tuple[float, float]:
    total = float(np.sum(h.counts))
    below = float(np.sum(h.counts[h.bounds <= bound]))
    return total, total - below


def _value(side: Run | Prepared | None, name: str, p: float) -> _Value:
    if side is None:
        return _Value(None)
    if isinstance(side, Prepared):
        v = side.slices.get(name)
        if v is None:
            v = side.metrics.get(name)
        return _Value(stats.percentile(v, p) if v is not None and len(v) else None)
    if name in side.histograms:
        h = side.histograms[name]
        est, lo, hi = histogram_quantile(h, p)
        if math.isnan(est):
            why = f"the {name} histogram in {side.source} is empty"
            return _Value(None, f"{name}: the histogram is empty", missing=why)
        if math.isinf(hi):
            why = (
                f"p{_p(p)} is above the highest {name} bucket ({lo:g} ms) in {side.source}: "
                "the true value is unknown"
            )
            return _Value(
                None, f"{name}: p{_p(p)} is above the highest bucket ({lo:g} ms)", missing=why
            )
        if hi == float(h.bounds[0]):  # the first bucket: from 0, nothing to place it by
            mean = _mean(side, name)
            said = f"; the mean from _sum/_count is {mean:.3g} ms" if mean is not None else ""
            if mean is not None and mean > hi:
                said += ", above that bucket: the buckets and the sum disagree"
            coarse = f"p{_p(p)} is in the first bucket (0, {hi:g}] ms: too coarse to place{said}"
            return _Value(
                None,
                f"{name}: {coarse}",
                missing=f"{name} in {side.source}: {coarse}",
            )
        return _Value(
            est, f"{name}: from histogram buckets, p{_p(p)} is in ({lo:g}, {hi:g}] ms", (lo, hi), h
        )
    held = side.summary.get(name, {})
    if p in held:
        return _Value(held[p])
    why = _not_held(side.source, p, sorted(held))
    return _Value(None, f"{name}: {why}", missing=why)


def _not_held(source: str, p: float, have: list[float]) -> str:
    """`p95 not in s.json: it has p50, p90, p99; set `percentile: 90` or ...`."""
    if not have:
        return f"p{_p(p)} not in {source}, nor any other percentile; pass the per-request file"
    near = max((q for q in have if q <= p), default=min(have))
    return (
        f"p{_p(p)} not in {source}: it has {', '.join(f'p{_p(q)}' for q in have)}; set "
        f"`percentile: {_p(near)}` in the budget or pass the per-request file"
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


def _reader_notes(base: Run | Prepared | None, head: Run | Prepared) -> list[str]:
    """What a reader of an aggregate side said about the file (e.g. which numbers it took)."""
    sides = [_run(s) for s in (base, head) if s is not None]
    notes = [r.meta.get("note") for r in sides] + [_in_flight(r) for r in sides]
    return list(dict.fromkeys(n for n in notes if isinstance(n, str)))


def _run(side: Run | Prepared) -> Run:
    return side.run if isinstance(side, Prepared) else side


def _side(side: Run | Prepared) -> Side:
    if isinstance(side, Prepared):
        return Side(side.run.source, side.requests, side.failed, None, dict(side.run.meta))
    count = side.summary_count
    if count is None and side.histograms:
        count = int(max(float(np.sum(h.counts)) for h in side.histograms.values()))
    failures = side.meta.get("failures")
    return Side(
        side.source,
        count,
        int(failures) if isinstance(failures, float) else 0,
        None,
        dict(side.meta),
    )
