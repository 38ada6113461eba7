"""Findings and the verdict: the only place that decides what fails."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from budgetdiff.budget.model import Budget
from budgetdiff.judge.agent import agent_findings
from budgetdiff.measure.prepare import UNATTRIBUTED_MIN_MS, UNATTRIBUTED_MIN_SHARE
from budgetdiff.measure.results import (
    Acceptance,
    Change,
    Comparison,
    Finding,
    Kind,
    Row,
    RowKind,
    Status,
    Summary,
    Verdict,
)
from budgetdiff.numbers import (
    amount,
    count,
    given,
    interval,
    ms,
    num,
    pct,
    percentile,
    setting_pct,
    signed_ms,
)
from budgetdiff.stats import normal_quantile
from budgetdiff.stats.cusum import HORIZON
from budgetdiff.table import UNATTRIBUTED, Doubt

if TYPE_CHECKING:
    from budgetdiff.measure.history import History, Trend

VERDICT_ORDER = {Verdict.PASS: 0, Verdict.WARN: 1, Verdict.FAIL: 2}
# What the reading found wrong in the data itself: every command that reads a table shows these
# (`rebudget` and `whatif` too, which are not a Report), failing where they fail `check`
READ_KINDS = frozenset(
    {Kind.UNITS, Kind.IMPOSSIBLE, Kind.FAILURES, Kind.FAILURE_RATE, Kind.MISSING_SLICE}
)
_FIRST_TOKEN_SLICES = ("network", "gateway", "queue", "prefill", "first_token")


@dataclass(frozen=True, slots=True)
class _Raw:
    kind: Kind
    subject: str
    message: str
    # the `fail_on` kind that decides whether it fails: its own kind, a regression-like kind
    # the budget cannot name (a higher failure rate), None for a finding that only informs, or
    # "always": it fails whatever `fail_on` names, unless it names nothing (`never`)
    gate: Kind | Literal["own", "always"] | None = "own"


def judge(
    c: Comparison | None,
    budget: Budget,
    fail_on: Iterable[str],
    *,
    no_base: str | None = None,
    base_only: Sequence[str] = (),
    same_input: str | None = None,
    accepted: Acceptance | None = None,
    history: History | None = None,
    doubts: Sequence[Doubt] = (),
    budget_change: str | None = None,
) -> tuple[list[Finding], Verdict]:
    """Findings for one scenario, and its verdict (pass, warn or fail). With `accepted`, a
    regression that would fail is kept, marked accepted, and fails no more (verdict warn)."""
    fail = set(fail_on)
    raw: list[_Raw] = []
    if budget_change is not None:  # first: which budget the rest is held to (issue 38)
        raw.append(_Raw(Kind.BUDGET_CHANGE, "budget", budget_change, None))
    if no_base is not None:
        raw.append(_Raw(Kind.NO_BASE, "base", no_base))
    if same_input is not None:  # compared with itself: there is no base to speak of
        raw.append(_Raw(Kind.SAME_INPUT, "base", same_input, Kind.NO_BASE))
    for name in base_only:
        raw.append(
            _Raw(
                Kind.SCENARIO_MISSING,
                name,
                f"scenario {name!r} is in base but not in "
                "head: it was not run, so it was not compared",
                None,
            )
        )
    # what the readers found wrong in the data: a unit mix-up fails like a breach (a number
    # shown would be wrong), a summary row left out only informs
    raw += [
        _Raw(Kind(d.kind), d.subject, d.message, Kind.BREACH if d.fails else None) for d in doubts
    ]
    if c is not None:
        raw += _findings(c, budget)
    if c is not None and history is not None:
        raw += [_drift(t, budget, percentile(c.percentile)) for t in history.trends if t.drift]
    findings = []
    for r in raw:
        gate = r.kind if r.gate == "own" else r.gate
        fails = bool(fail) if gate == "always" else gate in fail
        if fails and accepted is not None and gate == Kind.REGRESSION:
            message = f"{r.message} (accepted by {accepted.by} with the label {accepted.label})"
            findings.append(Finding(r.kind, r.subject, False, message, accepted=True))
        else:
            findings.append(Finding(r.kind, r.subject, fails, r.message))
    verdict = (
        Verdict.FAIL
        if any(f.fails for f in findings)
        else Verdict.WARN
        if findings
        else Verdict.PASS
    )
    return findings, verdict


def worst(verdicts: Iterable[Verdict]) -> Verdict:
    return max(verdicts, key=VERDICT_ORDER.__getitem__, default=Verdict.PASS)


# Kinds the summary says without naming them: the SLO at risk, its causes, no base
_SAID = frozenset(
    {
        Kind.LOW_HEADROOM,
        Kind.OVER_BUDGET,
        Kind.BREACH,
        Kind.REGRESSION,
        Kind.NO_BASE,
        Kind.NOT_COMPARABLE,
        Kind.MISSING_SLICE,
    }
)


def summarize(c: Comparison, findings: Sequence[Finding], verdict: Verdict) -> Summary:
    """What to put first about one scenario: the SLO metric at risk, and the cause to name
    (the slices that regressed or went over budget, else the other kinds found)."""
    kinds = {f.kind for f in findings}
    workloads = Kind.NOT_COMPARABLE in kinds  # a change between workloads is not the code's
    regressed = [] if workloads else [r for r in c.slices if r.change == Change.REGRESSION]
    regressed.sort(key=lambda r: -(r.tail_change_ms or r.delta_ms or 0.0))
    over = [r for r in c.slices if r.over_budget and r not in regressed]
    missing = next((r for r in c.slices if r.name == UNATTRIBUTED), None)
    if missing is not None and Kind.MISSING_SLICE in kinds:  # not a slice within its budget
        over = [r for r in over if (r.head_ms or 0.0) > (r.target_ms or 0.0)]
    else:
        missing = None
    risk = at_risk(c)
    # a breach with no SLO row to show it (every request failed) is said by its kind
    said = _SAID if risk is not None and risk.status == Status.BREACH else _SAID - {Kind.BREACH}
    also = tuple(k for k in dict.fromkeys(f.kind for f in findings) if k not in said)
    return Summary(
        verdict=verdict,
        compared=c.base is not None,
        at_risk=risk,
        regressed=tuple(regressed),
        over_budget=tuple(over),
        regressed_slo=() if workloads else tuple(r for r in c.slo if r.change == Change.REGRESSION),
        no_base=Kind.NO_BASE in kinds,
        also=also[:3] if not regressed else (),
        workloads=workloads,
        missing_ms=missing.part_ms if missing is not None else None,
        unit=c.unit,
    )


def at_risk(c: Comparison) -> Row | None:
    """The SLO metric a reviewer should look at: a breach, else one in doubt, else the least
    headroom (a regressed one first), else the largest regression without a target."""
    targeted = [r for r in c.slo if r.status is not None]
    order = {Status.BREACH: 0, Status.DOUBTFUL: 1, Status.LOW_HEADROOM: 2, Status.OK: 3}
    if targeted:
        return min(
            targeted,
            key=lambda r: (
                order[r.status or Status.OK],
                r.change != Change.REGRESSION,
                r.headroom_pct if r.headroom_pct is not None else math.inf,
            ),
        )
    regressed = [r for r in c.slo if r.change == Change.REGRESSION]
    return max(regressed, key=lambda r: r.delta_pct or 0.0, default=None)


def _findings(c: Comparison, budget: Budget) -> list[_Raw]:
    """Every finding of one comparison against its budget, in the order a reader gets them."""
    p = percentile(c.percentile)
    served = not (c.head.requests and c.head.failed == c.head.requests)
    out = [] if served else [_all_failed(c)]
    blind = _unmeasured_sides(c, served)
    out += blind or _unmeasured(c, budget, served)  # a side unseen: its rows need no saying
    out += _overallocated(budget)
    out += _slo_status(c, p)
    out += _over_budget(c, p)
    out += _missing_slice(c, budget, p)
    out += _changes(c, budget, p)
    out += _inconclusive(c, p)
    out += [_Raw(*f) for f in agent_findings(c)]
    counted = c.base is not None and c.base.requests and c.head.requests
    if counted and c.head.failed and c.head.failed < (c.head.requests or 0):
        out.append(_failure_rate(c, budget.regression.confidence))
    elif (
        c.base is None
        and c.head.requests
        and 0 < c.head.failed < c.head.requests
        and "cancelled" not in c.head.meta  # said with the cancellation, below
    ):
        # check: the failures said as compare says them (the percentiles are of the rest)
        units = c.unit.plural
        out.append(
            _Raw(
                Kind.FAILURES,
                units,
                f"{count(c.head.failed)} of {count(c.head.requests)} {units} failed "
                f"({pct(100 * c.head.failed / c.head.requests)}); the percentiles are of the "
                f"{count(c.head.requests - c.head.failed)} that succeeded",
                None,
            )
        )
    if served and "cancelled" in c.head.meta:  # the tool cut requests, or the run, short
        out.append(_cancelled(c))
    if "unaccounted" in c.head.meta:  # asked for, never completed, and no failure count
        out.append(_unaccounted(c, c.head.meta["unaccounted"]))
    out += [_Raw(Kind.INFEASIBLE, "slo", message, None) for message in c.feasibility]
    return out


def _cancelled(c: Comparison) -> _Raw:
    units = c.unit.plural
    failed = (
        f": {count(c.head.failed)} of {count(c.head.requests)} {units} failed"
        if c.head.requests and c.head.failed_known
        else ""
    )
    if c.head.meta["cancelled"] == "requests":  # single requests, the run itself went on
        message = f"the tool cancelled head {units} before they completed{failed}"
    else:
        message = f"the head run was cancelled before it finished{failed}"
    return _Raw(Kind.FAILURES, units, message, None)


def _unaccounted(c: Comparison, missing: str | float) -> _Raw:
    """Requests the file says were asked for but neither completed nor counted as failed (vLLM
    before 0.12 writes no failure count): perhaps failures, so never a silent pass."""
    units, done = c.unit.plural, c.head.requests or 0
    gone = int(float(missing))
    message = (
        f"{count(gone)} of the {count(done + gone)} head {units} asked for did not complete and "
        f"the file has no failure count: they may have failed; the percentiles are of the "
        f"{count(done)} that completed"
    )
    return _Raw(Kind.FAILURES, units, message, None)


def _all_failed(c: Comparison) -> _Raw:
    units = c.unit.plural
    return _Raw(
        Kind.BREACH,
        units,
        f"every one of the {count(c.head.requests or 0)} head {units} failed: no SLO holds",
    )


def _overallocated(budget: Budget) -> list[_Raw]:
    """The slice budgets add up to more than the total SLO: nothing is left for headroom."""
    slice_total = sum(s.budget for s in budget.slices.values())
    slo = budget.slo.total
    if slo is None or not budget.slices or slice_total <= slo:
        return []
    message = (
        f"the slice budgets add up to {ms(slice_total)}, {pct(100 * slice_total / slo, 0)} of "
        f"the {ms(slo)} total SLO: no headroom is left"
    )
    return [_Raw(Kind.OVERALLOCATED, "budget", message)]


def _slo_status(c: Comparison, p: str) -> list[_Raw]:
    """An SLO metric over its target (breach), or below it with too little headroom."""
    out = []
    for r in c.slo:
        if r.status == Status.BREACH:
            over = (r.head_ms or 0) - (r.target_ms or 0)
            message = f"{p} {r.label} is {ms(r.head_ms)}, over its {ms(r.target_ms)} target by "
            out.append(_Raw(Kind.BREACH, r.name, message + ms(over)))
        elif r.status == Status.LOW_HEADROOM:
            message = (
                f"{p} {r.label} is {ms(r.head_ms)}: only {pct(r.headroom_pct)} headroom below "
                f"its {ms(r.target_ms)} target"
            )
            out.append(_Raw(Kind.LOW_HEADROOM, r.name, message))
    return out


def _over_budget(c: Comparison, p: str) -> list[_Raw]:
    out = []
    for r in c.slices:
        if not r.over_budget:
            continue
        held = (
            f"{r.name}'s part of the {p} end to end is {ms(r.part_ms)} (its own {p} "
            f"{ms(r.head_ms)})"
            if r.part_ms is not None
            else f"{p} {r.name} is {ms(r.head_ms)}"
        )
        message = f"{held}, over its {ms(r.target_ms)} budget ({pct(r.budget_use_pct, 0)} used)"
        out.append(_Raw(Kind.OVER_BUDGET, r.name, message))
    return out


def _missing_slice(c: Comparison, budget: Budget, p: str) -> list[_Raw]:
    """Time in no slice (the total over the sum of the slices), its share of the total's p-th
    percentile: a finding of its own, so no slice within its budget is blamed for it. It
    informs only; `unattributed` fails where the budget gives it a budget (`over_budget`)."""
    rest = next((r for r in c.slices if r.name == UNATTRIBUTED), None)
    total = next((r.head_ms for r in c.slo if r.name == "total"), None)
    if rest is None or UNATTRIBUTED in budget.slices or not total or rest.part_ms is None:
        return []
    share = 100 * rest.part_ms / total
    if rest.part_ms < UNATTRIBUTED_MIN_MS or share < 100 * UNATTRIBUTED_MIN_SHARE:
        return []  # rounding, or slices that overlap: no time is missing
    message = (
        f"{ms(rest.part_ms)} of the {p} end to end ({pct(share)}) is in no slice: the total is "
        "over the sum of the slices; add the missing slice to the data, or give "
        f"{UNATTRIBUTED!r} a budget"
    )
    return [_Raw(Kind.MISSING_SLICE, UNATTRIBUTED, message, None)]


def _changes(c: Comparison, budget: Budget, p: str) -> list[_Raw]:
    """The regressions; when base and head ran different workloads, one finding that says
    so instead (a regression then may be the load: it still fails like a regression)."""
    regressed = [r for r in (*c.slo, *c.slices) if r.change == Change.REGRESSION]
    if c.not_comparable and regressed:
        gated = any(budget.gated(r.kind, r.name) for r in regressed)
        message = (
            f"base and head ran different workloads ({'; '.join(c.not_comparable)}): the "
            f"changes of {', '.join(r.label for r in regressed)} may be the load, not the "
            "code; rerun both with the same load"
        )
        return [_Raw(Kind.NOT_COMPARABLE, "workload", message, Kind.REGRESSION if gated else None)]
    out = _regressions(c, budget, p)
    if c.not_comparable:
        message = "base and head ran different workloads: " + "; ".join(c.not_comparable)
        out.append(_Raw(Kind.NOT_COMPARABLE, "workload", message, None))
    return out


def _inconclusive(c: Comparison, p: str) -> list[_Raw]:
    rows = [r for r in (*c.slo, *c.slices) if r.change == Change.INCONCLUSIVE]
    if not rows:
        return []
    need = max((r.needed or 0) for r in rows)
    names = ", ".join(r.label for r in rows)
    side = " per side" if c.base is not None else f" (head has {count(c.head.requests or 0)})"
    why = (
        f"too few {c.unit.plural} for an interval at {p}: needs at least {count(need)}{side}"
        if need
        else f"no per-{c.unit.value} data for an interval"
    )
    return [_Raw(Kind.INCONCLUSIVE, names, f"{names}: {why}; the gate cannot tell", None)]


def fewest_requests(p: float) -> int:
    """The fewest requests that measure the p-th percentile: n (1 - p/100) >= 1, so at least
    one request lies above it (20 at p95, 100 at p99); with fewer it is the slowest request,
    or nothing."""
    return max(1, math.ceil(round(100.0 / (100.0 - p), 9)))


def _unmeasured_sides(c: Comparison, served: bool) -> list[_Raw]:
    """A side with no requests, or too few to measure the budget's percentile: the gate cannot
    see it, so it fails whatever `fail_on` names (issue 35). A head whose every request failed
    is said as a breach (`_all_failed`); a side that does not say its count is not judged."""
    need, p = fewest_requests(c.percentile), percentile(c.percentile)
    out = []
    for name, side in (("base", c.base), ("head", c.head)):
        if side is None or side.requests is None or (name == "head" and not served):
            continue
        measured = side.requests - side.failed
        if measured >= need:
            continue
        units = c.unit.plural if measured != 1 else c.unit.value
        has = f"{count(measured)} {units}" + (" that succeeded" if side.failed else "")
        if measured <= 0:
            has = f"no {c.unit.plural}" + (" that succeeded" if side.failed else "")
        message = (
            f"{name} has {has}: too few to measure its {p} (needs at least {count(need)}, so "
            f"that one lies above it); the gate cannot see this side, so it fails"
        )
        out.append(_Raw(Kind.UNMEASURED, name, message, "always"))
    return out


def _unmeasured(c: Comparison, budget: Budget, served: bool) -> list[_Raw]:
    """A target the budget sets that was not evaluated on both sides: never a silent pass."""
    out = []
    rows = {(r.kind, r.name): r for r in (*c.slo, *c.slices)}
    targets: list[tuple[RowKind, str]] = [("slo", n) for n in budget.slo.targets()]
    targets += [("slice", n) for n in budget.slices]
    for kind, name in targets:
        r = rows.get((kind, name))
        if r is None:
            if kind == "slo":  # a budget slice the data lacks is bad input, not a finding
                out.append(
                    _Raw(
                        Kind.UNMEASURED,
                        name,
                        f"the budget sets a {name} target, but this data "
                        f"cannot give {name}: it is not checked",
                    )
                )
            continue
        sides = [("head", r.head_ms)] + ([("base", r.base_ms)] if c.base is not None else [])
        gone = " and ".join(side for side, value in sides if value is None)
        if gone and (served or r.unmeasured):
            why = f" ({r.unmeasured[0]})" if r.unmeasured else ""
            message = (
                f"{r.label} is not measured at {percentile(c.percentile)} in {gone}{why}: "
                "it is not checked"
            )
            out.append(_Raw(Kind.UNMEASURED, name, message))
        elif r.target_in_bucket is not None:
            out.append(_Raw(Kind.UNMEASURED, name, _in_bucket(r, c.percentile)))
    return out


def _in_bucket(r: Row, p: float) -> str:
    """An SLO target inside the bucket the head's percentile is interpolated in."""
    assert r.target_in_bucket is not None
    lo, hi = r.target_in_bucket
    return (
        f"{percentile(p)} {r.label} is in the bucket ({given(lo)}, {given(hi)}] ms, which holds "
        f"its {ms(r.target_ms)} target: the buckets cannot tell a pass from a breach (the "
        f"interpolated {ms(r.head_ms)} is a guess inside it); it is not checked"
    )


def _moved_by(c: Comparison, budget: Budget) -> dict[str, set[str]]:
    """Which slices each SLO row is made of: a regression of the slice moves the row."""
    names = {r.name for r in c.slices}
    decode = {"decode"} if "decode" in names else names - set(budget.ttft_slices)
    early = set(_FIRST_TOKEN_SLICES)  # a known slice the budget leaves out: by its name
    ttft = set(budget.ttft_slices) | (early - set(budget.slices)) if budget.slices else early
    return {
        "total": names,
        "ttft": ttft & names,
        "tpot": decode,
        "itl": decode,
        "max_stall": decode,
    }


def _regressions(c: Comparison, budget: Budget, p: str) -> list[_Raw]:
    """One finding per cause: a slice that regressed lists the SLO rows it moved (decode ->
    end to end, TPOT); an SLO row no regressed slice explains is its own finding. A finding
    fails only when a row in it is one the budget gates (`Budget.gated`)."""
    made_of = _moved_by(c, budget)
    slo = [r for r in c.slo if r.change == Change.REGRESSION]
    causes = [r for r in c.slices if r.change == Change.REGRESSION]
    explained: set[str] = set()
    out = []
    for cause in causes:
        moved = [r for r in slo if cause.name in made_of.get(r.name, ())]
        explained |= {r.name for r in moved}
        message = _regression_message(cause, p)
        if moved:
            message += "; it moved " + " and ".join(
                f"{r.label} by {pct(r.delta_pct, signed=True)}" for r in moved
            )
        out.append(_regression(cause, moved, budget, message))
    for r in slo:
        if r.name not in explained:
            out.append(_regression(r, [], budget, _regression_message(r, p)))
    return out


def _regression(cause: Row, moved: list[Row], budget: Budget, message: str) -> _Raw:
    if any(budget.gated(r.kind, r.name) for r in (cause, *moved)):
        return _Raw(Kind.REGRESSION, cause.name, message)
    message += (
        " (information: the budget sets no target or budget for it; name it in "
        "regression.metrics to gate on it)"
    )
    return _Raw(Kind.REGRESSION, cause.name, message, None)


def _regression_message(r: Row, p: str) -> str:
    """`p95 decode regressed +1,099 ms of the p95 end to end (its own p95 +1,135 ms, ...)`: a
    slice leads with its part of the end to end's change, the number the heading and the
    slice table give it (one number per cause); its own percentile's change is beside it."""
    ci = ""
    if r.ci_ms is not None and r.base_ms:
        lo, hi = (100 * v / r.base_ms for v in r.ci_ms)
        ci = " " + interval(lo, hi, unit="%")
    change = f"{pct(r.delta_pct, signed=True)}{ci}"
    moved = f"{ms(r.base_ms)} -> {ms(r.head_ms)}"
    if r.kind == "slice" and r.tail_change_ms is not None:
        return (
            f"{p} {r.label} regressed {signed_ms(r.tail_change_ms)} of the {p} end to end "
            f"(its own {p} {signed_ms(r.delta_ms)}, {change}: {moved})"
        )
    return f"{p} {r.label} regressed {signed_ms(r.delta_ms)} ({change}): {moved}"


def _failure_rate(c: Comparison, confidence: float) -> _Raw:
    """Failed requests always show; a significantly higher failure rate fails like a regression."""
    assert c.base is not None
    fb, nb, fh, nh = c.base.failed, c.base.requests or 0, c.head.failed, c.head.requests or 0
    rb, rh = fb / nb if nb else 0.0, fh / nh if nh else 0.0
    pooled = (fb + fh) / (nb + nh)
    se = math.sqrt(pooled * (1 - pooled) * (1 / nb + 1 / nh)) if nb and nh else 0.0
    significant = se > 0 and (rh - rb) / se > normal_quantile((1 + confidence) / 2)
    units = c.unit.plural
    message = (
        f"{count(fh)} of {count(nh)} {units} failed at head ({pct(100 * rh)}), "
        f"{count(fb)} of {count(nb)} at base ({pct(100 * rb)})"
    )
    if significant:  # the budget cannot name it: a higher failure rate fails as a regression
        return _Raw(Kind.FAILURE_RATE, units, message, Kind.REGRESSION)
    return _Raw(Kind.FAILURES, units, message, None)


def _drift(t: Trend, budget: Budget, p: str) -> _Raw:
    """A rise since the budget last changed: head against the history's reference, the
    CUSUM over its threshold (measure/history.py, stats/cusum.py)."""
    regression = budget.regression
    message = (
        f"{p} {t.label} {pct(t.cumulative_pct, signed=True)} over {len(t.values) - 1} run(s) "
        f"since the budget last changed ({amount(t.values[0], t.unit)} -> "
        f"{amount(t.values[-1], t.unit)})"
    )
    if t.steps_below:
        message += f", each step below the {setting_pct(regression.min_change)} threshold"
    message += (
        f"; {pct(t.change_pct, signed=True)} above the level of its first "
        f"{t.reference_runs} run(s) ({amount(t.reference, t.unit)}"
    )
    if t.change_ci is not None:
        message += f"; {setting_pct(regression.confidence)} interval "
        message += interval(*t.change_ci, unit="%")
    message += ")"
    if t.slower_since:
        message += f"; slower since {t.slower_since}"
    if t.rise is not None and t.threshold is not None:
        message += (
            f" (CUSUM {num(t.rise)}, over its threshold {num(t.threshold)}: pure noise passes it "
            f"in at most {setting_pct(1 - regression.confidence)} of {HORIZON}-run histories)"
        )
    # an agent row may fail the gate when the budget holds it (`regression.metrics` names the
    # SLO metrics and slices only)
    gated = t.target is not None if t.kind == "agent" else budget.gated(t.kind, t.name)
    gate: Kind | Literal["own"] | None = "own" if gated else None
    return _Raw(Kind.DRIFT, t.subject, message, gate)
