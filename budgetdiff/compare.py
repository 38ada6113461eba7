"""Base vs head at the budget percentile: one row per SLO metric and per slice.

Takes prepared per-request values and returns the rows (values, interval, change, budget use,
tail share), the re-budget proposal and the attainment; `judge` turns them into findings.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from budgetdiff import attribution, rebudget, stats, whatif
from budgetdiff.budget import Budget
from budgetdiff.prepare import Prepared, material, slice_sum
from budgetdiff.table import UNATTRIBUTED, FloatArray, Run, repeated_ids

OTHER_PERCENTILES = (50.0, 90.0, 99.0)
# Rows of the SLO table, in order, with how a reader should name them.
METRIC_LABELS = {
    "ttft": "TTFT",
    "total": "end to end",
    "itl": "ITL (token-weighted)",
    "tpot": "TPOT (request-weighted)",
    "max_stall": "longest stall per request",
}
PAIRABLE = ("ttft", "total")  # per-request metrics that stay aligned by request id
PER_TOKEN = ("itl", "tpot")  # `min_ms` is a per-request floor: it does not apply per token


@dataclass(frozen=True)
class Row:
    """One SLO metric or slice, at the budget percentile."""

    name: str
    kind: str  # "slo" | "slice"
    target_ms: float | None  # the SLO target, or the slice's budget
    base_ms: float | None
    head_ms: float | None
    delta_ms: float | None = None
    delta_pct: float | None = None
    ci_ms: tuple[float, float] | None = None
    change: str | None = None  # regression | improvement | none | inconclusive; None: no base
    p_value: float | None = None
    mde_pct: float | None = None
    needed: int | None = None
    paired: bool = False
    notes: tuple[str, ...] = ()
    percentiles: dict[str, tuple[float | None, float | None]] = field(default_factory=dict)
    headroom_pct: float | None = None
    status: str | None = None  # slo rows: ok | low_headroom | breach; None without a target
    budget_use_pct: float | None = None
    over_budget: bool | None = None
    tail_share_pct: float | None = None
    tail_change_ms: float | None = None
    # why a side has no value where one was expected, in words (`p95 not in head.json: ...`)
    unmeasured: tuple[str, ...] = ()
    # the slice's part of the total's percentile (Euler allocation at the quantile): what its
    # budget is held against; the parts add up to the total's percentile
    part_ms: float | None = None
    base_part_ms: float | None = None
    # the head's own interval for its percentile (what a history of runs compares with)
    head_ci_ms: tuple[float, float] | None = None

    @property
    def label(self) -> str:
        return METRIC_LABELS.get(self.name, self.name) if self.kind == "slo" else self.name


@dataclass(frozen=True)
class Side:
    """What the report says about one run as a whole."""

    source: str
    requests: int | None  # None: the file does not say how many requests ran
    failed: int
    attainment: stats.Attainment | None
    meta: dict[str, str | float]
    goodput_rps: float | None = None  # good requests per second of benchmark time
    held_to: tuple[str, ...] = ()  # the SLO metrics `attainment` holds each request to

    @property
    def format(self) -> str:
        """The reader that read this side (`aiperf`, `native`, ...; joined files: `a + b`)."""
        return str(self.meta.get("format", "unknown"))

    @property
    def schema(self) -> str:
        """Which schema (version) of the tool's file was read."""
        return str(self.meta.get("schema", "unknown"))

    @property
    def tool_version(self) -> str | None:
        value = self.meta.get("tool_version")
        return value if isinstance(value, str) else None


@dataclass(frozen=True)
class Comparison:
    """Everything computed for one scenario; the findings come from `judge`."""

    name: str | None
    percentile: float
    base: Side | None
    head: Side
    slo: tuple[Row, ...]
    slices: tuple[Row, ...]
    headline: str | None
    rebudget: rebudget.Proposal | None
    feasibility: tuple[str, ...]
    not_comparable: tuple[str, ...]
    paired: bool
    notes: tuple[str, ...]
    tpot_from: str | None = None  # what the TPOT row divides by (tokens - 1): see prepare
    attribution: str | None = None  # how the change of the total was split into the slices
    fix_first: tuple[whatif.FixFirst, ...] = ()  # each slice 10% faster, the best first


def compare(base: Prepared | None, head: Prepared, budget: Budget) -> Comparison:
    p = budget.percentile
    pairs = _pairs(base, head) if base is not None else None
    names = _metric_names(head, base)
    notes = list(head.notes)
    if base is not None:
        notes += [n for n in base.notes if n not in notes]
    common = [s for s in head.slices if s != UNATTRIBUTED and (base is None or s in base.slices)]
    if base is not None:
        only = {
            side: [s for s in a.slices if s != UNATTRIBUTED and s not in b.slices]
            for side, a, b in (("base", base, head), ("head", head, base))
        }
        if only["base"] or only["head"]:
            notes.append(
                "base and head have different slices ("
                + "; ".join(f"only in {k}: {', '.join(v)}" for k, v in only.items() if v)
                + f"): their time is counted as {UNATTRIBUTED!r}"
            )
    head_parts = _parts(head, common)
    base_parts = _parts(base, common) if base is not None else {}
    slice_names = list(head_parts)
    targets = budget.slo.targets()

    raw: list[tuple[str, str, FloatArray | None, FloatArray | None]] = []
    for m in names:
        raw.append(("slo", m, _values(base, m), _values(head, m)))
    for s in slice_names:
        raw.append(("slice", s, base_parts.get(s) if base else None, head_parts[s]))

    tested = [i for i, r in enumerate(raw) if r[2] is not None and r[3] is not None]
    floors = {
        i: 0.0 if raw[i][1] in PER_TOKEN and raw[i][0] == "slo" else budget.regression.min_ms
        for i in tested
    }
    changes: dict[int, stats.Change] = {}
    for i in tested:
        kind, name, b, h = raw[i]
        assert b is not None and h is not None
        row_pairs = pairs if (kind == "slice" or name in PAIRABLE) else None
        changes[i] = stats.compare_percentile(
            b,
            h,
            p,
            budget.regression.confidence,
            family_size=len(tested),
            pairs=row_pairs,
            also=_others(p),
            min_change=budget.regression.min_change,
            min_ms=floors[i],
        )
    decided = stats.decide(
        [changes[i] for i in tested],
        min_change=budget.regression.min_change,
        min_ms=[floors[i] for i in tested],
        confidence=budget.regression.confidence,
    )
    verdicts = dict(zip(tested, decided, strict=True))

    # every head request may have failed, or the data may not split the total at all
    served = len(head.metrics["total"]) > 0 and bool(head_parts)
    contrib_head = (
        attribution.quantile_contributions(head_parts, slice_sum(head_parts), p) if served else {}
    )
    contrib_base: dict[str, float] = {}
    shares = attribution.tail_shares(contrib_head)
    tail_change: dict[str, float] = {}
    method = None
    if base is not None and served:
        contrib_base = attribution.quantile_contributions(base_parts, slice_sum(base_parts), p)
        n_base, n_head = len(base.metrics["total"]), len(head.metrics["total"])
        if pairs is not None and len(pairs[0]) == n_base == n_head:
            ib, ih = pairs
            split = attribution.shapley(
                {s: x[ib] for s, x in base_parts.items()},
                {s: x[ih] for s, x in head_parts.items()},
                p,
            )
            tail_change, method = split.parts, split.method
        else:  # unpaired, or not every request in both: each side's parts, head minus base
            tail_change = attribution.quantile_change(contrib_base, contrib_head)
            method = "each side's Euler allocation at the quantile (unpaired)"

    rows: list[Row] = []
    for i, (kind, name, b, h) in enumerate(raw):
        target = targets.get(name) if kind == "slo" else budget.slice_budget(name)
        rows.append(
            _row(
                kind,
                name,
                target,
                b,
                h,
                p,
                changes.get(i),
                verdicts.get(i),
                budget.headroom,
                shares.get(name) if kind == "slice" else None,
                tail_change.get(name) if kind == "slice" and base is not None else None,
                contrib_head.get(name) if kind == "slice" else None,
                contrib_base.get(name) if kind == "slice" else None,
                budget.regression.confidence,
            )
        )
    slo_rows = tuple(r for r in rows if r.kind == "slo")
    slice_rows = tuple(r for r in rows if r.kind == "slice")

    headline = None
    total_row = next((r for r in slo_rows if r.name == "total"), None)
    if total_row is not None and total_row.delta_ms is not None and tail_change:
        headline = attribution.headline(
            p, total_row.delta_ms, tail_change, change=total_row.change, ci_ms=total_row.ci_ms
        )

    fix_first = whatif.fix_first(head, budget, head_parts) if served else ()
    proposal = None
    if budget.slices and served:
        proposal = rebudget.propose(
            budget,
            contrib_head,
            total_ms=stats.percentile(head.metrics["total"], p),
            ttft_ms=_head_value(slo_rows, "ttft"),
            fix_first=fix_first,
        )
    tokens = head.run.output_tokens
    feas = rebudget.feasibility(
        budget,
        ttft_p_ms=_head_value(slo_rows, "ttft"),
        output_tokens_p50=float(np.median(tokens[np.isfinite(tokens)]))
        if tokens is not None and np.isfinite(tokens).any()
        else None,
        tpot_measured_ms=float(np.median(head.metrics["tpot"]))
        if len(head.metrics.get("tpot", ())) > 0
        else None,
    )

    for i, r in enumerate(rows):
        big = i in changes and stats.large_enough(
            changes[i], budget.regression.min_change, floors[i]
        )
        if r.change == "none" and big and r.ci_ms and (r.ci_ms[0] > 0 or r.ci_ms[1] < 0):
            notes.append(
                f"{r.label}: its interval excludes 0, but not once all {len(tested)} rows are "
                "tested together (Holm): counted as no significant change"
            )
    if pairs is not None:
        notes.append(f"paired by request id: {len(pairs[0])} requests ran in both")
    if method is not None:
        notes.append(f"the change of the p{_p(p)} end to end is split into the slices by {method}")
    return Comparison(
        name=head.run.scenario,
        percentile=p,
        base=_side(base, budget) if base is not None else None,
        head=_side(head, budget),
        slo=slo_rows,
        slices=slice_rows,
        headline=headline,
        rebudget=proposal,
        feasibility=tuple(feas),
        not_comparable=tuple(_not_comparable(base, head)) if base is not None else (),
        paired=pairs is not None,
        notes=tuple(notes),
        tpot_from=head.tpot_from,
        attribution=method,
        fix_first=fix_first,
    )


def _row(
    kind: str,
    name: str,
    target: float | None,
    b: FloatArray | None,
    h: FloatArray | None,
    p: float,
    change: stats.Change | None,
    verdict: str | None,
    headroom: float,
    share: float | None,
    tail_change: float | None,
    part: float | None = None,
    base_part: float | None = None,
    confidence: float = 0.95,
) -> Row:
    head_ms = change.head if change else _at(h, p)
    base_ms = change.base if change else _at(b, p)
    qs = _others(p)
    if change is not None and len(change.others) == len(qs):  # from the same selection
        pairs: list[tuple[float | None, float | None]] = list(change.others)
    else:
        pairs = list(zip(_many(b, qs), _many(h, qs), strict=True))
    others = {f"p{_p(q)}": pair for q, pair in zip(qs, pairs, strict=True)}
    held = part if part is not None else head_ms  # a slice's budget holds its part of the total
    headroom_pct, status, budget_use, over = against_target(kind, target, held, headroom)
    notes = [change.note] if change and change.note else []
    return Row(
        name=name,
        kind=kind,
        target_ms=target,
        base_ms=base_ms,
        head_ms=head_ms,
        delta_ms=change.delta if change else None,
        delta_pct=change.delta_pct if change else None,
        ci_ms=change.ci if change else None,
        change=verdict,
        p_value=change.p_value if change else None,
        mde_pct=change.mde_pct if change else None,
        needed=change.needed if change else None,
        paired=change.paired if change else False,
        notes=tuple(notes),
        percentiles=others,
        headroom_pct=headroom_pct,
        status=status,
        budget_use_pct=budget_use,
        over_budget=over,
        tail_share_pct=share,
        tail_change_ms=tail_change,
        part_ms=part,
        base_part_ms=base_part,
        head_ci_ms=stats.interval(h, p, confidence) if h is not None and h.size else None,
    )


def against_target(
    kind: str, target: float | None, head_ms: float | None, headroom: float
) -> tuple[float | None, str | None, float | None, bool | None]:
    """(headroom %, status) of an SLO row, or (budget use %, over budget) of a slice row."""
    if target is None or head_ms is None:
        return None, None, None, None
    if kind == "slice":
        return None, None, 100.0 * head_ms / target, head_ms > target
    room = 100.0 * (target - head_ms) / target
    status = "breach" if head_ms > target else "low_headroom" if room < 100 * headroom else "ok"
    return room, status, None, None


def _others(p: float) -> list[float]:
    """The percentiles shown beside the budget's."""
    return [q for q in OTHER_PERCENTILES if q != p]


def _many(x: FloatArray | None, qs: list[float]) -> list[float | None]:
    if x is None or len(x) == 0:
        return [None] * len(qs)
    return list(stats.percentiles(x, qs))


def _at(x: FloatArray | None, q: float) -> float | None:
    return stats.percentile(x, q) if x is not None and len(x) > 0 else None


def _p(q: float) -> str:
    return f"{q:g}"


def _values(prep: Prepared | None, metric: str) -> FloatArray | None:
    if prep is None:
        return None
    v = prep.metrics.get(metric)
    return v if v is not None and len(v) else None


def _metric_names(head: Prepared, base: Prepared | None) -> list[str]:
    have = set(head.metrics) & (set(base.metrics) if base is not None else set(head.metrics))
    return [m for m in METRIC_LABELS if m in have]


def _parts(prep: Prepared, names: list[str]) -> dict[str, FloatArray]:
    """The slices that split each request's total: `names`, and `unattributed` for the signed
    rest of the measured total when it is more than rounding (slices missing, or overlapping)."""
    if not names:  # no slices at all: the total is not split, there is nothing to attribute
        return {}
    parts = {s: prep.slices[s] for s in names}
    total = prep.metrics["total"]
    rest = total - slice_sum(parts, len(total))
    if UNATTRIBUTED in prep.slices or (len(rest) and float(np.max(np.abs(rest))) > material(total)):
        parts[UNATTRIBUTED] = rest
    return parts


def slice_parts(prep: Prepared) -> dict[str, FloatArray]:
    """Every slice of one run per request, with `unattributed` when they miss part of the total."""
    return _parts(prep, [s for s in prep.slices if s != UNATTRIBUTED])


def _pairs(base: Prepared, head: Prepared) -> tuple[np.ndarray, np.ndarray] | None:
    """Indices of the requests that ran in both (same request id), when most did."""
    a, b = base.request_id, head.request_id
    if a is None or b is None or len(a) < 2 or len(b) < 2:
        return None
    if not (a != "").all() or not (b != "").all():  # blank ids name no request
        return None
    if len(a) == len(b) and bool(np.array_equal(a, b)):
        if repeated_ids(a):
            return None
        idx = np.arange(len(a))
        return idx, idx
    # a cheap look first: fresh ids per run (the common case) must not cost a full join
    sample = set(b[:: max(1, len(b) // 32)][:32].tolist())
    if sum(1 for x in a.tolist() if x in sample) < 0.9 * len(sample):
        return None
    common, ib, ih = np.intersect1d(a, b, assume_unique=False, return_indices=True)
    if len(common) < 0.9 * min(len(a), len(b)) or repeated_ids(a):
        return None
    if repeated_ids(b):  # a repeated head id would pair one base request twice
        return None
    return ib, ih


def _side(prep: Prepared, budget: Budget) -> Side:
    conf = budget.regression.confidence
    att = stats.attainment(prep.good, conf) if prep.good is not None else None
    duration = prep.duration_s
    return Side(
        source=prep.run.source,
        requests=prep.requests,
        failed=prep.failed,
        attainment=att,
        meta=dict(prep.run.meta),
        goodput_rps=att.good / duration if att is not None and duration else None,
        held_to=prep.held_to if att is not None else (),
    )


def _head_value(rows: tuple[Row, ...], name: str) -> float | None:
    return next((r.head_ms for r in rows if r.name == name), None)


def _not_comparable(base: Prepared, head: Prepared) -> list[str]:
    """Reasons the two runs ran different workloads, so a difference is not a regression."""
    reasons = []
    for key in ("concurrency", "rate"):
        vb, vh = base.run.meta.get(key), head.run.meta.get(key)
        if vb is not None and vh is not None and vb != vh:
            reasons.append(f"{key} differs: base {vb}, head {vh}")
    for label, attr in (("prompt length", "input_tokens"), ("answer length", "output_tokens")):
        xb: FloatArray | None = getattr(base.run, attr)
        xh: FloatArray | None = getattr(head.run, attr)
        if xb is None or xh is None:
            continue
        mb, mh = _finite_mean(xb), _finite_mean(xh)
        if mb and mh and abs(mh - mb) / mb > 0.10 and _clearly_apart(xb, xh):
            reasons.append(
                f"mean {label} differs: base {mb:.0f} tokens, head {mh:.0f} ({(mh / mb - 1):+.0%})"
            )
    return reasons


def _clearly_apart(a: FloatArray, b: FloatArray) -> bool:
    """The means differ beyond noise (Welch z > 3, at least 30 requests a side): a workload
    that differs by chance in a small sample is not a different workload."""
    a, b = a[np.isfinite(a)], b[np.isfinite(b)]
    if len(a) < 30 or len(b) < 30:
        return False
    se = float(np.sqrt(a.var(ddof=1) / len(a) + b.var(ddof=1) / len(b)))
    return se == 0.0 or abs(float(a.mean() - b.mean())) / se > 3.0


def _finite_mean(x: FloatArray) -> float | None:
    f = x[np.isfinite(x)]
    return float(f.mean()) if len(f) else None


def runs_match(base: list[Run], head: list[Run]) -> tuple[list[tuple[Run | None, Run]], list[Run]]:
    """Pair the scenarios of base and head: by name, else by load settings (a file with one run
    leaves it unnamed); a lone pair always pairs. Also the base scenarios head lacks."""
    if len(base) == 1 and len(head) == 1:
        return [(base[0], head[0])], []
    left = list(base)
    pairs: list[tuple[Run | None, Run]] = []
    for h in head:
        match = next(
            (b for b in left if h.scenario is not None and b.scenario == h.scenario), None
        ) or next((b for b in left if _load(b) == _load(h) != (None, None)), None)
        if match is not None:
            left.remove(match)
        pairs.append((match, h))
    return pairs, left


def _load(run: Run) -> tuple[object, object]:
    meta = run.meta
    return meta.get("concurrency"), meta.get("rate", meta.get("requested_rate"))
