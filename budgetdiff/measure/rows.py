"""Base vs head at the budget percentile: one row per SLO metric and per slice.

Takes prepared per-request values and returns the rows (values, interval, change, budget use,
tail share), the re-budget proposal and the attainment; `judge` turns them into findings.
`decide_rows` (changes to verdicts) and `against_target` (a value against its target) are the
one path for every row; `aggregate` builds its rows with them too.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from budgetdiff import numbers, stats
from budgetdiff.budget.model import Budget, Regression
from budgetdiff.measure import attribution, rebudget, whatif
from budgetdiff.measure.prepare import Prepared, material, rest_of, slice_sum
from budgetdiff.measure.results import (
    METRIC_LABELS,
    Change,
    Comparison,
    Row,
    RowKind,
    Side,
    Status,
    Unit,
    unit_of,
)
from budgetdiff.numbers import pct
from budgetdiff.table import (
    UNATTRIBUTED,
    FloatArray,
    Run,
    common_ids,
    max_abs,
    repeated_ids,
    taken,
)

OTHER_PERCENTILES = (50.0, 90.0, 99.0)
# The family a compared row is tested in: the rows the gate can fail on, or those that inform
GATE = "gate"
INFORMATION = "information"
PAIRABLE = ("ttft", "total")  # per-request metrics that stay aligned by request id
PER_TOKEN = ("itl", "tpot")  # `min_ms` is a per-request floor: it does not apply per token
UNPAIRED_SPLIT = "each side's Euler allocation at the quantile (unpaired)"  # said in a note


def compare(
    base: Prepared | None,
    head: Prepared,
    budget: Budget,
    *,
    pair: bool | None = None,
    notes: Sequence[str] = (),
    comparisons: int = 1,
) -> Comparison:
    """Base against head at the budget percentile (head alone without a base): pair the
    requests, test every row, split the total into the slices, then word the headline.
    `pair`: what `pairing.match` proved (True: the same requests, paired by id; False: never
    pair), None: pair where most ids are in both; `notes`: what pairing said; `comparisons`:
    how many comparisons of other requests (classes, scenarios) the report holds, which share
    the gate's level (`share_level`)."""
    p, unit = budget.percentile, unit_of(head.run.meta)  # unit: requests, or agent tasks
    pairs = (
        _pairs(base, head, proven=pair is True) if base is not None and pair is not False else None
    )
    split = _split(base, head, _common_slices(base, head), pairs, p)
    series = _series(base, head, split, pairs, budget)
    gated = [budget.gated(s.kind, s.name) for s in series]
    changes = _changes(series, budget, unit, gated, comparisons)
    decided = _decide(series, changes, gated, base, head, budget, comparisons)
    rows = [
        _row(s, change=c, verdict=v, split=split, budget=budget, unit=unit, gated=g, decided=d)
        for s, c, v, g, d in zip(
            series, changes, decided.verdicts, gated, decided.rows(), strict=True
        )
    ]
    slo_rows = tuple(r for r in rows if r.kind == "slo")
    fix_first = whatif.fix_first(head, budget, split.head_parts) if split.served else ()
    said = [
        *_input_notes(base, head),
        *_tool_notes(slo_rows, base, head, p),
        *_unbudgeted_notes(head, split, p),
        *_family_notes(rows, changes, series, budget.regression, decided.tests),
        *notes,
        *pairing_notes(len(pairs[0]) if pairs is not None else None, split.method, p, unit),
        *(_runs_notes(base, head, budget) if base is not None and head.run.agent is None else []),
    ]
    return Comparison(
        name=head.run.scenario,
        percentile=p,
        base=_side(base, budget) if base is not None else None,
        head=_side(head, budget),
        slo=slo_rows,
        slices=tuple(r for r in rows if r.kind == "slice"),
        headline=_headline(slo_rows, split, p),
        rebudget=_proposal(head, budget, split, slo_rows, fix_first),
        feasibility=_feasibility(head, budget, slo_rows),
        not_comparable=tuple(_not_comparable(base, head)) if base is not None else (),
        paired=pairs is not None,
        notes=tuple(said),
        tpot_from=head.tpot_from,
        attribution=split.method,
        fix_first=fix_first,
    )


def _decide(
    series: list[_Series],
    changes: list[stats.Change | None],
    gated: list[bool],
    base: Prepared | None,
    head: Prepared,
    budget: Budget,
    comparisons: int,
) -> Decided:
    """The rows' verdicts, each family tested by permutation over the requests where it can be
    (`decide_rows`), at the gate's level or its share of it."""
    return decide_rows(
        changes,
        floors_ms=[s.floor_ms for s in series],
        regression=budget.regression,
        level=share_level(1.0 - budget.regression.confidence, comparisons),
        gated=gated,
        samples=[(s.base, s.head) for s in series],
        requests=(_succeeded(base), _succeeded(head)) if base is not None else None,
        percentile=budget.percentile,
        pairs=[s.pairs for s in series],
        several_runs=_labels(base, "total") is not None or _labels(head, "total") is not None,
    )


@dataclass(frozen=True, slots=True)
class _Series:
    """One row before its statistics: an SLO metric or a slice, each side's values."""

    kind: RowKind
    name: str
    base: FloatArray | None
    head: FloatArray | None
    target_ms: float | None  # the SLO target, or the slice's budget
    floor_ms: float  # the smallest change in ms that counts (`regression.min_ms`, or none)
    pairs: tuple[np.ndarray, np.ndarray] | None  # the paired requests, where rows stay aligned
    # each value's run, on a side of several runs (None: one run)
    base_runs: np.ndarray | None = None
    head_runs: np.ndarray | None = None

    @property
    def tested(self) -> bool:
        return self.base is not None and self.head is not None


@dataclass(frozen=True, slots=True)
class _Split:
    """How the total's percentile splits into the slices, on each side, and how its change does."""

    head_parts: dict[str, FloatArray]  # per request, the slices that add up to the total
    base_parts: dict[str, FloatArray]
    served: bool = False  # head has requests and slices that split them: there is a split
    head_ms: Mapping[str, float] = field(default_factory=dict)  # each slice's part of head's p
    base_ms: Mapping[str, float] = field(default_factory=dict)
    shares: Mapping[str, float] = field(default_factory=dict)  # each slice's share of head's tail
    change_ms: Mapping[str, float] = field(default_factory=dict)  # each slice's part of the change
    method: str | None = None  # how the change was split: paired Shapley, or each side's parts


def _common_slices(base: Prepared | None, head: Prepared) -> list[str]:
    """The slices both sides measured (`unattributed` is computed, not measured)."""
    return [s for s in head.slices if s != UNATTRIBUTED and (base is None or s in base.slices)]


def _split(
    base: Prepared | None,
    head: Prepared,
    common: list[str],
    pairs: tuple[np.ndarray, np.ndarray] | None,
    p: float,
) -> _Split:
    head_parts = _parts(head, common)
    base_parts = _parts(base, common) if base is not None else {}
    # every head request may have failed, or the data may not split the total at all
    if len(head.metrics["total"]) == 0 or not head_parts:
        return _Split(head_parts=head_parts, base_parts=base_parts)
    head_ms = attribution.quantile_contributions(head_parts, slice_sum(head_parts), p)
    split = _Split(
        head_parts=head_parts,
        base_parts=base_parts,
        served=True,
        head_ms=head_ms,
        shares=attribution.tail_shares(head_ms),
    )
    if base is None:
        return split
    base_ms = attribution.quantile_contributions(base_parts, slice_sum(base_parts), p)
    n_base, n_head = len(base.metrics["total"]), len(head.metrics["total"])
    if pairs is not None and len(pairs[0]) == n_base == n_head:
        ib, ih = pairs
        shapley = attribution.shapley(
            {s: taken(x, ib) for s, x in base_parts.items()},
            {s: taken(x, ih) for s, x in head_parts.items()},
            p,
        )
        change_ms, method = shapley.parts, shapley.method
    else:  # unpaired, or not every request in both: each side's parts, head minus base
        change_ms = attribution.quantile_change(base_ms, head_ms)
        method = UNPAIRED_SPLIT
    return replace(split, base_ms=base_ms, change_ms=change_ms, method=method)


def _series(
    base: Prepared | None,
    head: Prepared,
    split: _Split,
    pairs: tuple[np.ndarray, np.ndarray] | None,
    budget: Budget,
) -> list[_Series]:
    """The rows to compute, in order: the SLO metrics both sides have, then the slices."""
    targets = budget.slo.targets()
    min_ms = budget.regression.min_ms
    slo = [
        _Series(
            kind="slo",
            name=m,
            base=_values(base, m),
            head=_values(head, m),
            target_ms=targets.get(m),
            floor_ms=0.0 if m in PER_TOKEN else min_ms,
            pairs=pairs if m in PAIRABLE else None,
            base_runs=_labels(base, m),
            head_runs=_labels(head, m),
        )
        for m in _metric_names(head, base)
    ]
    slices = [
        _Series(
            kind="slice",
            name=s,
            base=split.base_parts.get(s),
            head=values,
            target_ms=budget.slice_budget(s),
            floor_ms=min_ms,
            pairs=pairs,
            base_runs=_labels(base, "total"),  # a slice's parts: one per request, as the total
            head_runs=_labels(head, "total"),
        )
        for s, values in split.head_parts.items()
    ]
    return slo + slices


def share_level(alpha: float, comparisons: int) -> float:
    """Each comparison's family-wise level when `comparisons` of disjoint requests (the
    classes or scenarios of one report) share `alpha`: Sidak's, exact for independent ones, so
    that a report of three classes flags a false change at most as often as one of one."""
    return 1.0 - math.pow(1.0 - alpha, 1.0 / max(comparisons, 1))


def _changes(
    series: list[_Series], budget: Budget, unit: Unit, gated: list[bool], comparisons: int = 1
) -> list[stats.Change | None]:
    """The change of each row that has values on both sides; None for the others. Each row's
    minimum detectable effect is at its family's size (`gated`: the gate's rows, or the rows
    that inform only), times the comparisons that share the level."""
    p, regression = budget.percentile, budget.regression
    sizes = {
        g: sum(1 for s, h in zip(series, gated, strict=True) if s.tested and h == g)
        for g in (True, False)
    }
    return [
        stats.compare_percentile(
            s.base,
            s.head,
            p,
            regression.confidence,
            family_size=sizes[g] * max(comparisons, 1),
            pairs=s.pairs,
            also=_others(p),
            min_change=regression.min_change,
            min_ms=s.floor_ms,
            base_runs=s.base_runs,
            head_runs=s.head_runs,
            values=unit.plural,
        )
        if s.base is not None and s.head is not None
        else None
        for s, g in zip(series, gated, strict=True)
    ]


@dataclass(frozen=True, slots=True)
class Decided:
    """The rows' verdicts (None: a row without a change), each row's p-value adjusted over its
    family, and how each family was tested (True: the gate's rows, False: information)."""

    verdicts: list[Change | None]
    adjusted: list[float | None]
    tests: dict[bool, stats.FamilyTest]
    families: list[bool]  # each row's: True, the gate's

    def rows(self) -> list[tuple[float | None, stats.FamilyTest | None]]:
        """Each row's adjusted p-value and its family's test."""
        return [(a, self.tests.get(f)) for a, f in zip(self.adjusted, self.families, strict=True)]


def decide_rows(
    changes: Sequence[stats.Change | None],
    *,
    floors_ms: Sequence[float],
    regression: Regression,
    level: float | None = None,
    gated: Sequence[bool] | None = None,
    samples: Sequence[tuple[FloatArray | None, FloatArray | None]] | None = None,
    requests: tuple[int, int] | None = None,
    percentile: float | None = None,
    pairs: Sequence[tuple[np.ndarray, np.ndarray] | None] | None = None,
    several_runs: bool = False,
) -> Decided:
    """The verdict of each row with a change (`stats.decide`), None for a row without one.
    Rows are decided in two families: those the gate acts on (`gated`, `Budget.gated`), and
    those that only inform, tested among themselves (so they never dilute the gate's). With
    each row's values (`samples`, base and head, and `pairs` as the changes took them; a row of
    one value per request has `requests` values a side) a family is tested by the permutation
    step-down over whole requests at the `percentile`, where the requests are exchangeable
    (`stats.family_test`; not with `several_runs` a side); otherwise by Holm's correction.
    `floors_ms`: each row's smallest change in ms that counts; `level`: each family's (default
    1 - confidence; less where comparisons share it, `share_level`)."""
    alpha = 1.0 - regression.confidence if level is None else level
    families = list(gated) if gated is not None else [True] * len(changes)
    verdicts: list[Change | None] = [None] * len(changes)
    adjusted: list[float | None] = [None] * len(changes)
    tests: dict[bool, stats.FamilyTest] = {}
    for family in (True, False):
        tested = [i for i, c in enumerate(changes) if c is not None and families[i] == family]
        chosen = [c for i, c in enumerate(changes) if c is not None and i in tested]
        if not chosen:
            continue
        test = _family_test(
            chosen, tested, samples, requests, percentile, pairs, several_runs, alpha
        )
        tests[family] = test
        decided = stats.decide(
            chosen,
            min_change=regression.min_change,
            min_ms=[floors_ms[i] for i in tested],
            confidence=1.0 - alpha,
            adjusted=test.adjusted,
        )
        family_p = (
            test.adjusted
            if test.adjusted is not None
            else stats.holm_adjusted([c.p_value for c in chosen])
        )
        for i, verdict, a in zip(tested, decided, family_p, strict=True):
            verdicts[i] = Change(verdict)
            adjusted[i] = a
    return Decided(verdicts, adjusted, tests, families)


def _family_test(
    chosen: list[stats.Change],
    tested: list[int],
    samples: Sequence[tuple[FloatArray | None, FloatArray | None]] | None,
    requests: tuple[int, int] | None,
    percentile: float | None,
    pairs: Sequence[tuple[np.ndarray, np.ndarray] | None] | None,
    several_runs: bool,
    level: float,
) -> stats.FamilyTest:
    """One family's test (`stats.family_test`), or Holm's correction without values."""
    if samples is None or percentile is None or requests is None:
        return stats.FamilyTest(stats.HOLM, None)
    values = [samples[i] for i in tested]
    base = [b for b, _ in values if b is not None]
    head = [h for _, h in values if h is not None]
    if len(base) != len(chosen) or len(head) != len(chosen):
        return stats.FamilyTest(stats.HOLM, None)
    return stats.family_test(
        chosen,
        base,
        head,
        percentile,
        requests=requests,
        pairs=[pairs[i] for i in tested] if pairs is not None else None,
        several_runs=several_runs,
        level=level,
    )


def _row(
    s: _Series,
    *,
    change: stats.Change | None,
    verdict: Change | None,
    split: _Split,
    budget: Budget,
    unit: Unit,
    gated: bool = True,
    decided: tuple[float | None, stats.FamilyTest | None] = (None, None),
) -> Row:
    p = budget.percentile
    # check: head alone (a slice of a run where nothing succeeded has no value: not measured)
    if change is None and s.base is None and s.head is not None and s.head.size:
        change, verdict = _too_few_alone(s.head, p, budget.regression.confidence, unit)
    head_ms = change.head if change else _at(s.head, p)
    part = split.head_ms.get(s.name) if s.kind == "slice" else None
    held = part if part is not None else head_ms  # a slice's budget holds its part of the total
    standing = against_target(s.kind, s.target_ms, held, budget.headroom)
    return Row(
        name=s.name,
        kind=s.kind,
        target_ms=s.target_ms,
        base_ms=change.base if change and s.base is not None else _at(s.base, p),
        head_ms=head_ms,
        delta_ms=change.delta if change and s.base is not None else None,
        delta_pct=change.delta_pct if change else None,
        ci_ms=change.ci if change else None,
        change=verdict,
        p_value=change.p_value if change else None,
        mde_pct=change.mde_pct if change else None,
        needed=change.needed if change else None,
        paired=change.paired if change else False,
        notes=(change.note,) if change and change.note else (),
        family=(GATE if gated else INFORMATION) if s.tested else None,
        family_p_value=decided[0],
        family_test=decided[1].method if decided[1] is not None and s.tested else None,
        percentiles=_percentiles(s, change, p),
        headroom_pct=standing.headroom_pct,
        status=standing.status,
        budget_use_pct=standing.budget_use_pct,
        over_budget=standing.over_budget,
        tail_share_pct=split.shares.get(s.name) if s.kind == "slice" else None,
        tail_change_ms=split.change_ms.get(s.name) if s.kind == "slice" else None,
        part_ms=part,
        base_part_ms=split.base_ms.get(s.name) if s.kind == "slice" else None,
        head_ci_ms=_head_interval(s, change, p, budget.regression.confidence),
    )


def _head_interval(
    s: _Series, change: stats.Change | None, p: float, confidence: float
) -> tuple[float, float] | None:
    """Head's own interval of its percentile: the comparison's, from the same selection, or
    computed here (head alone, or too few requests on a side for the comparison's)."""
    if change is not None and change.head_interval is not None:
        return change.head_interval
    return stats.interval(s.head, p, confidence) if s.head is not None and s.head.size else None


def _too_few_alone(
    head: FloatArray, p: float, confidence: float, unit: Unit
) -> tuple[stats.Change | None, Change | None]:
    """Without a base, a percentile of fewer requests than an interval needs is `inconclusive`
    with the count it needs, as in a compare: never a silent pass (None: enough requests)."""
    need = stats.needed_for_interval(p, confidence)
    if head.size >= need:
        return None, None
    value = stats.percentile(head, p)
    note = (
        f"too few {unit.plural} for an interval at {numbers.percentile(p)}: {head.size} head, "
        f"{need} needed"
    )
    change = stats.Change(
        base=math.nan,
        head=value,
        delta=math.nan,
        delta_pct=None,
        ci=None,
        p_value=None,
        mde_pct=None,
        needed=need,
        paired=False,
        note=note,
    )
    return change, Change.INCONCLUSIVE


def _percentiles(
    s: _Series, change: stats.Change | None, p: float
) -> dict[str, tuple[float | None, float | None]]:
    """(base, head) at the percentiles shown beside the budget's, keyed `p50`, `p99`, ..."""
    qs = _others(p)
    if change is not None and len(change.others) == len(qs):  # from the same selection
        pairs: list[tuple[float | None, float | None]] = list(change.others)
    else:
        pairs = list(zip(_many(s.base, qs), _many(s.head, qs), strict=True))
    return {numbers.percentile(q): pair for q, pair in zip(qs, pairs, strict=True)}


@dataclass(frozen=True, slots=True)
class Standing:
    """Where a row's head value stands against its target: the headroom and status of an SLO
    row, or the budget use of a slice row (all None without a target or a value)."""

    headroom_pct: float | None = None
    status: Status | None = None
    budget_use_pct: float | None = None
    over_budget: bool | None = None


def against_target(
    kind: RowKind, target: float | None, head_ms: float | None, headroom: float
) -> Standing:
    """The headroom % and status of an SLO row, or the budget use % of a slice row."""
    if target is None or head_ms is None:
        return Standing()
    if kind == "slice":
        return Standing(budget_use_pct=100.0 * head_ms / target, over_budget=head_ms > target)
    room = 100.0 * (target - head_ms) / target
    status = (
        Status.BREACH
        if head_ms > target
        else Status.LOW_HEADROOM
        if room < 100 * headroom
        else Status.OK
    )
    return Standing(headroom_pct=room, status=status)


def _headline(slo_rows: tuple[Row, ...], split: _Split, p: float) -> str | None:
    """The attribution's sentence: the change of the total's percentile and the slices it came
    from (the summary that heads every rendering is the judge's, `judge.summarize`)."""
    total = next((r for r in slo_rows if r.name == "total"), None)
    if total is None or total.delta_ms is None or not split.change_ms:
        return None
    return attribution.headline(
        p, total.delta_ms, split.change_ms, change=total.change, ci_ms=total.ci_ms
    )


def _proposal(
    head: Prepared,
    budget: Budget,
    split: _Split,
    slo_rows: tuple[Row, ...],
    fix_first: tuple[whatif.FixFirst, ...],
) -> rebudget.Proposal | None:
    """A new split of the budget from head's parts of its total, when the budget has slices."""
    if not budget.slices or not split.served:
        return None
    return rebudget.propose(
        budget,
        split.head_ms,
        total_ms=stats.percentile(head.metrics["total"], budget.percentile),
        ttft_ms=_head_value(slo_rows, "ttft"),
        fix_first=fix_first,
    )


def _feasibility(head: Prepared, budget: Budget, slo_rows: tuple[Row, ...]) -> tuple[str, ...]:
    """Can the SLO be met at all, by head's TTFT, answer length and TPOT? (Medians through
    stats.percentile: np.median imports numpy.ma, 8 ms of every run's start-up.)"""
    tokens = head.run.output_tokens
    tpot = head.metrics.get("tpot", ())
    return tuple(
        rebudget.feasibility(
            budget,
            ttft_p_ms=_head_value(slo_rows, "ttft"),
            output_tokens_p50=stats.percentile(tokens[np.isfinite(tokens)], 50.0)
            if tokens is not None and np.isfinite(tokens).any()
            else None,
            tpot_measured_ms=stats.percentile(head.metrics["tpot"], 50.0) if len(tpot) else None,
        )
    )


def _tool_notes(rows: Sequence[Row], base: Prepared | None, head: Prepared, p: float) -> list[str]:
    """A tool's own percentiles of a side (GuideLLM's), beside budgetdiff's, each saying how it
    is taken: on a small run nearest rank and interpolation differ by a few percent."""
    notes = []
    for side, prep in (("base", base), ("head", head)):
        own = prep.run.tool_percentiles if prep is not None else {}
        if prep is None or not own:
            continue
        figures = [
            f"{r.label} {numbers.ms(theirs)} (budgetdiff {numbers.ms(mine)}, "
            f"{numbers.pct(100 * (mine - theirs) / theirs, 2, signed=True)})"
            for r in rows
            if (theirs := own.get(r.name, {}).get(p))  # not None, not 0
            and (mine := r.base_ms if side == "base" else r.head_ms) is not None
        ]
        if figures:
            by = prep.run.meta.get("percentiles_by", "the tool")
            how = prep.run.meta.get("percentile_method", "its own method")
            notes.append(
                f"{side}: {by}'s own {numbers.percentile(p)} ({how}): {', '.join(figures)}; "
                "budgetdiff's by linear interpolation"
            )
    return notes


def _input_notes(base: Prepared | None, head: Prepared) -> list[str]:
    """What preparing each side said, once each, and the slices only one side has."""
    notes = list(head.notes)
    if base is None:
        return notes
    notes += [n for n in base.notes if n not in notes]
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
    return notes


def _unbudgeted_notes(head: Prepared, split: _Split, p: float) -> list[str]:
    """The data's slices the budget leaves out: in the total, shown without a budget."""
    if not head.unbudgeted:
        return []
    total = sum(split.head_ms.values())
    share = sum(split.head_ms.get(s, 0.0) for s in head.unbudgeted)
    at = numbers.percentile(p)
    part = f" ({pct(100 * share / total)} of the {at} end to end)" if total else ""
    return [
        f"the budget leaves out {', '.join(head.unbudgeted)}{part}: counted in the end to end "
        "and TTFT, shown as slices without a budget; add them to the budget to hold them"
    ]


def _family_notes(
    rows: list[Row],
    changes: list[stats.Change | None],
    series: list[_Series],
    regression: Regression,
    tests: Mapping[bool, stats.FamilyTest],
) -> list[str]:
    """Which rows were tested together, where some only inform; how a family was tested where
    it could not be by permutation; and the rows whose own interval excludes 0 but that their
    family's test does not count."""
    size = {f: sum(1 for r in rows if r.family == f) for f in (GATE, INFORMATION)}
    notes = []
    if size[GATE] and size[INFORMATION]:
        info = ", ".join(r.label for r in rows if r.family == INFORMATION)
        how = TESTED_BY.get(tests[True].method, "") if True in tests else ""
        notes.append(
            f"the {size[GATE]} rows the gate can fail on are tested as one family{how}; the "
            f"information rows among themselves: {info}"
        )
    for gated, test in tests.items():
        if test.why is not None:
            which = "the rows the gate can fail on" if gated else "the information rows"
            notes.append(
                f"{which} are tested with Holm's correction, not by permuting requests: {test.why}"
            )
    for r, c, s in zip(rows, changes, series, strict=True):
        big = c is not None and stats.large_enough(c, regression.min_change, s.floor_ms)
        if r.change == Change.NONE and big and r.ci_ms and (r.ci_ms[0] > 0 or r.ci_ms[1] < 0):
            which = "rows the gate can fail on" if r.family == GATE else "information rows"
            how = TESTED_BY.get(r.family_test or "", "")
            notes.append(
                f"{r.label}: its interval excludes 0, but not once the {size[r.family or GATE]} "
                f"{which} are tested together{how}: counted as no significant change"
            )
    return notes


TESTED_BY = {
    stats.PERMUTATION: " (permutation step-down over whole requests)",
    stats.HOLM: " (Holm's correction)",
}


def pairing_notes(pairs: int | None, method: str | None, p: float, unit: Unit) -> list[str]:
    """How the requests (or tasks) were paired (`pairs`: how many, None: unpaired), and how
    the change of the total was split (the engine path says the same)."""
    notes = []
    if pairs is not None:
        n = numbers.count(pairs)
        notes.append(f"paired by {unit.value} id: {n} {unit.plural} succeeded in both")
    if method is not None:
        notes.append(
            f"the change of the {numbers.percentile(p)} end to end is split into the slices "
            f"by {method}"
        )
    return notes


def _succeeded(prep: Prepared) -> int:
    """How many values a row of one value per request holds (the requests that succeeded)."""
    total = prep.metrics.get("total")
    return (
        len(total) if total is not None else max((len(v) for v in prep.slices.values()), default=0)
    )


def _labels(prep: Prepared | None, name: str) -> np.ndarray | None:
    """The run of each of a row's values, on a side of two or more runs."""
    return prep.runs.get(name) if prep is not None and prep.run_count > 1 else None


def _runs_notes(base: Prepared, head: Prepared, budget: Budget) -> list[str]:
    """Whether the intervals include the drift between runs of one configuration: only where
    a side is several runs, each long enough for an interval of its own. (Not for agent tasks:
    their steps are read from one file a side.)"""
    if base.run_count == head.run_count == 1:
        return [
            "one run a side: the intervals leave out the drift between runs; repeated or "
            "interleaved runs (several --base/--head files) put it in (docs/github.md)"
        ]
    need = stats.needed_for_interval(budget.percentile, budget.regression.confidence)
    counts = f"runs: {base.run_count} base, {head.run_count} head"
    short = [
        side
        for side, prep in (("base", base), ("head", head))
        if prep.run_count > 1 and _shortest_run(prep) < need
    ]
    if short:
        return [
            f"{counts}; a run of {' and '.join(short)} has fewer than {need} requests, too few "
            "for an interval of its own: the drift between runs is not in the intervals"
        ]
    single = [side for side, prep in (("base", base), ("head", head)) if prep.run_count == 1]
    if single:
        return [f"{counts}: the intervals include the variance between runs, not {single[0]}'s"]
    return [f"{counts}: the intervals include the variance between runs"]


def _shortest_run(prep: Prepared) -> int:
    labels = np.sort(prep.runs["total"])
    bounds = np.flatnonzero(np.diff(labels)) + 1
    return int(np.diff(np.concatenate([[0], bounds, [len(labels)]])).min())


def _others(p: float) -> list[float]:
    """The percentiles shown beside the budget's."""
    return [q for q in OTHER_PERCENTILES if q != p]


def _many(x: FloatArray | None, qs: list[float]) -> list[float | None]:
    if x is None or len(x) == 0:
        return [None] * len(qs)
    return list(stats.percentiles(x, qs))


def _at(x: FloatArray | None, q: float) -> float | None:
    return stats.percentile(x, q) if x is not None and len(x) > 0 else None


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
    rest = rest_of(total, parts)
    if UNATTRIBUTED in prep.slices or (len(rest) and max_abs(rest) > material(total)):
        parts[UNATTRIBUTED] = rest
    return parts


def slice_parts(prep: Prepared) -> dict[str, FloatArray]:
    """Every slice of one run per request, with `unattributed` when they miss part of the total."""
    return _parts(prep, [s for s in prep.slices if s != UNATTRIBUTED])


def _pairs(
    base: Prepared, head: Prepared, *, proven: bool = False
) -> tuple[np.ndarray, np.ndarray] | None:
    """Indices of the requests that ran in both (same request id), when most did, or every
    one that did when `pairing.match` proved the ids name the same requests."""
    a, b = base.request_id, head.request_id
    if a is None or b is None or len(a) < 2 or len(b) < 2:
        return None
    if a.blank().any() or b.blank().any():  # blank ids name no request
        return None
    if proven:  # unique, and the same requests: those that succeeded on both sides pair
        ib, ih = common_ids(a, b)
        return (ib, ih) if len(ib) >= 2 else None
    if a.same(b):
        if repeated_ids(a):
            return None
        idx = np.arange(len(a))
        return idx, idx
    # a cheap look first: fresh ids per run (the common case) must not cost a full join
    sample = set(b[:: max(1, len(b) // 32)][:32].tolist())
    if a.count_in(sample) < 0.9 * len(sample):
        return None
    ib, ih = common_ids(a, b)
    if len(ib) < 0.9 * min(len(a), len(b)) or repeated_ids(a):
        return None
    if repeated_ids(b):  # a repeated head id would pair one base request twice
        return None
    return ib, ih


def _side(prep: Prepared, budget: Budget) -> Side:
    conf = budget.regression.confidence
    return prepared_side(prep, stats.attainment(prep.good, conf) if prep.good is not None else None)


def prepared_side(prep: Prepared, att: stats.Attainment | None = None) -> Side:
    """A side as its prepared requests give it; with their attainment, its goodput too."""
    duration = prep.duration_s
    return Side(
        source=prep.run.source,
        requests=prep.requests,
        failed=prep.failed,
        attainment=att,
        meta=dict(prep.run.meta),
        goodput_rps=att.good / duration if att is not None and duration else None,
        held_to=prep.held_to if att is not None else (),
        columns=prep.run.columns,
        tool_percentiles=prep.run.tool_percentiles,
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
                f"mean {label} differs: base {numbers.count(round(mb))} tokens, head "
                f"{numbers.count(round(mh))} ({pct(100 * (mh / mb - 1), digits=0, signed=True)})"
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
