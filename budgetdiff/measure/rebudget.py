"""Re-budgeting: propose a new split of the SLO across the slices from measured data, and warn
when an SLO cannot be met by construction. Pure: writing the proposal into the budget file is
`budget_file.write_budget`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from budgetdiff.budget.model import Budget
from budgetdiff.errors import BudgetError
from budgetdiff.measure.whatif import FixFirst
from budgetdiff.numbers import budget_ms, fine_ms, ms, pct, percentile, setting_pct
from budgetdiff.table import UNATTRIBUTED

# `unattributed` joins a proposal when its measured value or tail contribution would round to at
# least 1 ms; less is rounding noise.
_UNATTRIBUTED_MIN_MS = 0.5
# How the target is split, said with it: a slice's budget is not its own percentile
SHARE_RULE = (
    "split among the slices in proportion to their parts of the {p} end to end (not their own {p}s)"
)
# Feasibility: warn when the per-token decode time the SLO leaves is this far below measured.
_FAR_BELOW = 0.8


@dataclass(frozen=True)
class Proposal:
    """A proposed allocation of the SLO. `headline` says what the allocation fills; `lines` say
    in plain words what else a reader should know (what does not fit, and why)."""

    allocation: dict[str, int]  # slice -> whole ms, in the budget's slice order
    target_ms: float  # what the allocation fills: total SLO x (1 - headroom), or the SLO
    fits: bool  # the total's (and TTFT's) measured percentile fit their SLO: writable
    shortfall_ms: float  # by how much the total (or TTFT) is over its SLO when not fits, else 0
    work_first: str | None  # the slice whose 10% speed-up helps the total most, when not fits
    headline: str  # `target 5400 ms = total SLO 6000 ms x (1 - 10% headroom)`
    lines: tuple[str, ...]

    @property
    def messages(self) -> tuple[str, ...]:
        """The headline and the lines, as the JSON report lists them."""
        return (self.headline, *self.lines)


def missing_slices(budget: Budget, measured: Mapping[str, float]) -> list[str]:
    """The budget's slices that `measured` has no (finite) value for, in budget order
    (`unattributed` is computed, not measured: absent, it is 0 ms)."""
    return [
        name
        for name in budget.slices
        if name != UNATTRIBUTED and (name not in measured or not math.isfinite(measured[name]))
    ]


def propose(
    budget: Budget,
    parts: Mapping[str, float],
    *,
    total_ms: float,
    ttft_ms: float | None = None,
    fix_first: Sequence[FixFirst] = (),
) -> Proposal:
    """Split the total SLO across the budget's slices so that the same data is within every
    slice budget: a slice's budget holds its part of the total's p-th percentile.

    - `parts`: each slice's part of the total's p-th percentile at head
      (`attribution.quantile_contributions`; they add up to `total_ms`, that percentile);
    - the target is total SLO x (1 - headroom) when the total fits it; when the total fits
      only the SLO itself, the SLO (the report warns of low headroom); without a total SLO, the
      sum of the current slice budgets (so that repeated `rebudget --write` is stable);
    - when the total fits, every slice gets more than its part (at least its part + 1 ms,
      whole ms) and the slack is shared in proportion to the parts, so no slice sits at 100%;
    - it does not fit only when the total (or TTFT) is over its SLO: then it says by how much
      and which slice to work on first (`fix_first`, else the largest part), and the
      allocation is the target split in proportion to the parts (not to be written);
    - the data's slices the budget lacks, then `unattributed`, join the allocation (after the
      budget's slices) when their part is 0.5 ms or more: it is real time, to be covered;
    - whole ms, summing to at most the target, every slice at least 1 ms.

    The caller checks `missing_slices` first; a missing value here is a ValueError.
    """
    names = _slice_names(budget, parts)
    need = {n: max(0.0, parts.get(n, 0.0)) for n in names}
    weights = dict(need) if math.fsum(need.values()) > 0 else dict.fromkeys(names, 1.0)
    target = _target(budget, total_ms=total_ms, ttft_ms=ttft_ms)
    fits = target.over is None
    units = math.floor(target.ms + 1e-9)
    floors = _lower_bounds(need, units) if fits else _at_least_one(names, units)
    allocation = _round(_water_fill(weights, floors, units), units)
    work_first = None if fits else _work_first(names, weights, fix_first)
    p = percentile(budget.percentile)
    lines = [
        *target.lines,
        *_unbudgeted(budget, allocation, need, p),
        *_unchanged(budget, allocation),
        *([] if work_first is None else [_does_not_fit(target, work_first, fix_first)]),
        *_over_ttft(budget, allocation),
    ]
    return Proposal(
        allocation=allocation,
        target_ms=target.ms,
        fits=fits,
        shortfall_ms=target.shortfall_ms,
        work_first=work_first,
        headline=target.headline,
        lines=tuple(lines),
    )


def _slice_names(budget: Budget, parts: Mapping[str, float]) -> list[str]:
    """The slices of the proposal: the budget's, then `unattributed` when it is real time."""
    if not budget.slices:
        raise BudgetError(
            "slices: the budget has no slices to re-budget; add them, e.g. `decode: 4200`"
        )
    missing = missing_slices(budget, parts)
    if missing:
        raise ValueError(f"propose: no measured value for {', '.join(missing)}")
    names = list(budget.slices)
    # the data's slices the budget leaves out, then time in no slice: real time, to be covered
    others = [n for n in parts if n not in budget.slices and n != UNATTRIBUTED]
    for name in (*others, UNATTRIBUTED):
        if name not in budget.slices and parts.get(name, 0.0) >= _UNATTRIBUTED_MIN_MS:
            names.append(name)
    return names


@dataclass(frozen=True, slots=True)
class _Target:
    """What the allocation fills, and what is over its SLO (`over`, None when it fits)."""

    ms: float
    headline: str
    lines: tuple[str, ...] = ()
    shortfall_ms: float = 0.0
    over: str | None = None


def _target(budget: Budget, *, total_ms: float, ttft_ms: float | None) -> _Target:
    p = percentile(budget.percentile)
    end_to_end = f"the {p} end to end, {ms(total_ms)}"
    target = _total_target(budget, total_ms=total_ms, end_to_end=end_to_end)
    limit = budget.slo.total if budget.slo.total is not None else target.ms
    if total_ms > limit:
        return replace(target, shortfall_ms=total_ms - limit, over=end_to_end)
    ttft_slo = budget.slo.ttft
    if ttft_slo is not None and ttft_ms is not None and ttft_ms > ttft_slo:
        over = f"the {p} TTFT, {ms(ttft_ms)}"
        return replace(target, shortfall_ms=ttft_ms - ttft_slo, over=over)
    return target


def _total_target(budget: Budget, *, total_ms: float, end_to_end: str) -> _Target:
    """The total SLO less the headroom; the SLO itself when the total fits only that; without
    a total SLO, the sum of the current slice budgets."""
    slo = budget.slo.total
    if slo is None:
        whole = math.fsum(s.budget for s in budget.slices.values())
        return _Target(
            ms=whole,
            headline="the budget has no total SLO: the target is the sum of the current slice "
            f"budgets, {budget_ms(whole)} ms (add `slo: total:` to re-budget against an SLO)",
        )
    headroom = setting_pct(budget.headroom)
    target = slo * (1 - budget.headroom)
    headline = (
        f"target {budget_ms(target)} ms = total SLO {budget_ms(slo)} ms x (1 - {headroom} "
        f"headroom), {SHARE_RULE.format(p=percentile(budget.percentile))}"
    )
    if target < total_ms <= slo:
        low = (
            f"{end_to_end}, leaves less than the budget's {headroom} headroom: the split fills "
            f"the SLO itself, {budget_ms(slo)} ms"
        )
        return _Target(ms=slo, headline=headline, lines=(low,))
    return _Target(ms=target, headline=headline)


def _unbudgeted(
    budget: Budget, allocation: Mapping[str, int], need: Mapping[str, float], p: str
) -> list[str]:
    """A line for each slice of the proposal that the budget does not have: `unattributed`, or
    a slice the data measures that the budget leaves out."""
    return [
        f"{name} (not in the budget) {allocation[name]} ms: time the slices do not "
        f"explain ({ms(need[name])} of the {p} end to end); it gets its own line, "
        "or add the slice that is missing"
        if name == UNATTRIBUTED
        else f"{name} (not in the budget) {allocation[name]} ms: the data measures it "
        f"({ms(need[name])} of the {p} end to end), so the budget must cover it"
        for name in allocation
        if budget.slice_budget(name) is None
    ]


def _unchanged(budget: Budget, allocation: Mapping[str, int]) -> list[str]:
    # the per-slice old -> new is `allocation` itself: every rendering shows it as a table
    if all(v == budget.slice_budget(n) for n, v in allocation.items()):
        return ["the current slice budgets already hold the measured parts"]
    return []


def _work_first(
    names: list[str], weights: Mapping[str, float], fix_first: Sequence[FixFirst]
) -> str:
    """The slice to speed up first: the best 10% speed-up, else the largest part."""
    ranked = _helping(names, fix_first)
    return ranked[0].slice if ranked else max(names, key=lambda n: weights[n])


def _helping(names: list[str], fix_first: Sequence[FixFirst]) -> list[FixFirst]:
    return [f for f in fix_first if f.slice in names and f.total_change_ms < 0]


def _does_not_fit(target: _Target, work_first: str, fix_first: Sequence[FixFirst]) -> str:
    ranked = _helping([work_first], fix_first)
    gain = f" (10% faster: {ms(ranked[0].total_change_ms)})" if ranked else ""
    return (
        f"does not fit: {target.over} is over its SLO by {ms(target.shortfall_ms)}; "
        f"no split of the slices can fix that: work on {work_first} first{gain}"
    )


def _over_ttft(budget: Budget, allocation: Mapping[str, int]) -> list[str]:
    """A line when the slices up to the first token get more than the TTFT SLO."""
    ttft_slices = budget.ttft_slices
    if budget.slo.ttft is None or not ttft_slices:
        return []
    ttft_sum = sum(allocation[n] for n in ttft_slices)
    if ttft_sum <= budget.slo.ttft:
        return []
    return [
        f"the slices up to {ttft_slices[-1]} get {ttft_sum} ms, more than the "
        f"ttft SLO {budget_ms(budget.slo.ttft)} ms"
    ]


def _at_least_one(names: list[str], units: int) -> dict[str, float]:
    return dict.fromkeys(names, 1.0 if units >= len(names) else 0.0)


def _lower_bounds(measured: dict[str, float], units: int) -> dict[str, float]:
    """Whole-ms floors: above the measured parts (+1 ms, so none sits at 100%) where that fits
    in whole ms, else the parts rounded up, else down."""
    for rounding in (lambda m: math.floor(m) + 1, math.ceil, math.floor):
        floors = {n: float(max(1, rounding(m))) for n, m in measured.items()}
        if sum(floors.values()) <= units:
            return floors
    return _at_least_one(list(measured), units)


def _water_fill(
    weights: dict[str, float], floors: dict[str, float], units: int
) -> dict[str, float]:
    """Split `units` in proportion to `weights`, with no slice below its floor (sum of floors
    <= units): fix the slices whose share falls below their floor at the floor, re-split the
    rest, until none does."""
    fixed: dict[str, float] = {}
    while True:
        free = [n for n in weights if n not in fixed]
        left = units - math.fsum(fixed.values())
        wsum = math.fsum(weights[n] for n in free)
        if wsum > 0:
            shares = {n: left * weights[n] / wsum for n in free}
        else:  # only weightless slices are left: split evenly
            shares = {n: left / len(free) for n in free} if free else {}
        under = [n for n in free if shares[n] < floors[n]]
        if not under:
            return {n: fixed.get(n, shares.get(n, 0.0)) for n in weights}
        for n in under:
            fixed[n] = floors[n]


def _round(shares: dict[str, float], units: int) -> dict[str, int]:
    """Whole ms: floor each share, then hand the ms left to the largest remainders, so the sum
    is `units` (the floors are whole, so floor(share) never drops below one)."""
    out = {n: math.floor(s + 1e-9) for n, s in shares.items()}
    left = units - sum(out.values())
    order = sorted(shares, key=lambda n: out[n] - shares[n])  # largest remainder first
    for n in order[: max(0, left)]:
        out[n] += 1
    return out


def feasibility(
    budget: Budget,
    *,
    ttft_p_ms: float | None,
    output_tokens_p50: float | None,
    tpot_measured_ms: float | None,
) -> list[str]:
    """Warnings for an SLO that cannot be met by construction (empty when there is none).

    The decode time per output token that the total SLO leaves after TTFT is
    (total target - ttft target, or the measured TTFT without one) / (median output tokens - 1).
    Warn when nothing is left, when it is below 1 ms per token, or when it is more than 20%
    below the median measured TPOT (`tpot_measured_ms`): a typical answer at a typical rate.
    """
    total = budget.slo.total
    ttft = budget.slo.ttft if budget.slo.ttft is not None else ttft_p_ms
    if total is None or ttft is None or output_tokens_p50 is None:
        return []
    if not math.isfinite(output_tokens_p50) or output_tokens_p50 <= 1:
        return []
    tokens = output_tokens_p50
    source = "ttft target" if budget.slo.ttft is not None else "measured ttft"
    left = total - ttft
    if left <= 0:
        return [
            f"the {source} ({budget_ms(ttft)} ms) leaves nothing of the total target "
            f"({budget_ms(total)} ms) for the {budget_ms(tokens)} output tokens of a median answer"
        ]
    per_token = left / (tokens - 1)
    said = (
        f"the total target {budget_ms(total)} ms leaves {fine_ms(per_token)} ms per output "
        f"token after the {source} of {budget_ms(ttft)} ms, for a median answer of "
        f"{budget_ms(tokens)} tokens"
    )
    reasons: list[str] = []
    if per_token < 1.0:
        reasons.append("below 1 ms per token, which no serving stack reaches")
    if tpot_measured_ms is not None and per_token < _FAR_BELOW * tpot_measured_ms:
        faster = 100.0 * (1 - per_token / tpot_measured_ms)
        reasons.append(
            f"the median measured TPOT is {fine_ms(tpot_measured_ms)} ms: decoding must get "
            f"{pct(faster, 0)} faster, or the total SLO grow to about "
            f"{budget_ms(ttft + tpot_measured_ms * (tokens - 1))} ms"
        )
    return [f"{said}: {'; '.join(reasons)}"] if reasons else []
