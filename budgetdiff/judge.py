"""Findings and the verdict: the only place that decides what fails."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from statistics import NormalDist

from budgetdiff.budget import Budget
from budgetdiff.compare import Comparison, Row
from budgetdiff.render.numbers import ms, pct, signed_ms

# Kinds a budget's `fail_on` does not name but that stand for a regression the gate must not miss.
GOVERNED_BY_REGRESSION = ("failure_rate", "not_comparable")
VERDICT_ORDER = {"pass": 0, "warn": 1, "fail": 2}


@dataclass(frozen=True)
class Finding:
    kind: str
    subject: str
    fails: bool
    message: str


def judge(
    c: Comparison | None, budget: Budget, fail_on: Iterable[str], *, no_base: str | None = None
) -> tuple[list[Finding], str]:
    """Findings for one scenario, and its verdict (pass, warn or fail)."""
    fail = set(fail_on)
    raw: list[tuple[str, str, str]] = []
    if no_base is not None:
        raw.append(("no_base", "base", no_base))
    if c is not None:
        raw += _findings(c, budget)
    findings = [
        Finding(
            kind,
            subject,
            kind in fail or (kind in GOVERNED_BY_REGRESSION and "regression" in fail),
            message,
        )
        for kind, subject, message in raw
    ]
    verdict = "fail" if any(f.fails for f in findings) else "warn" if findings else "pass"
    return findings, verdict


def worst(verdicts: Iterable[str]) -> str:
    return max(verdicts, key=VERDICT_ORDER.__getitem__, default="pass")


def _findings(c: Comparison, budget: Budget) -> list[tuple[str, str, str]]:
    p = f"p{c.percentile:g}"
    out: list[tuple[str, str, str]] = []
    slice_total = sum(s.budget for s in budget.slices.values())
    if budget.slo.total is not None and budget.slices and slice_total > budget.slo.total:
        out.append(
            (
                "overallocated",
                "budget",
                f"the slice budgets add up to {ms(slice_total)}, "
                f"{100 * slice_total / budget.slo.total:.0f}% of the "
                f"{ms(budget.slo.total)} total SLO: "
                "no headroom is left",
            )
        )
    for r in c.slo:
        if r.status == "breach":
            out.append(
                (
                    "breach",
                    r.name,
                    f"{p} {r.label} is {ms(r.head_ms)}, over its "
                    f"{ms(r.target_ms)} target by {ms((r.head_ms or 0) - (r.target_ms or 0))}",
                )
            )
        elif r.status == "low_headroom":
            out.append(
                (
                    "low_headroom",
                    r.name,
                    f"{p} {r.label} is {ms(r.head_ms)}: only "
                    f"{pct(r.headroom_pct)} headroom below its {ms(r.target_ms)} target",
                )
            )
    for r in c.slices:
        if r.over_budget:
            out.append(
                (
                    "over_budget",
                    r.name,
                    f"{p} {r.name} is {ms(r.head_ms)}, over its "
                    f"{ms(r.target_ms)} budget ({pct(r.budget_use_pct, 0)} used)",
                )
            )
    rows = [*c.slo, *c.slices]
    regressed = [r for r in rows if r.change == "regression"]
    if c.not_comparable and regressed:
        out.append(
            (
                "not_comparable",
                "workload",
                "base and head ran different workloads ("
                + "; ".join(c.not_comparable)
                + "): the changes of "
                + ", ".join(r.label for r in regressed)
                + " may be the load, not the code; rerun both with the same load",
            )
        )
    else:
        for r in regressed:
            out.append(("regression", r.name, _regression_message(r, p)))
        if c.not_comparable:
            out.append(
                (
                    "not_comparable",
                    "workload",
                    "base and head ran different workloads: " + "; ".join(c.not_comparable),
                )
            )
    inconclusive = [r for r in rows if r.change == "inconclusive"]
    if inconclusive:
        need = max((r.needed or 0) for r in inconclusive)
        names = ", ".join(r.label for r in inconclusive)
        why = (
            f"too few requests for an interval at {p}: needs at least {need} per side"
            if need
            else "no per-request data for an interval"
        )
        out.append(("inconclusive", names, f"{names}: {why}; the gate cannot tell"))
    if c.base is not None and c.head.failed:
        out.append(_failure_rate(c))
    for message in c.feasibility:
        out.append(("infeasible", "slo", message))
    return out


def _regression_message(r: Row, p: str) -> str:
    ci = ""
    if r.ci_ms is not None and r.base_ms:
        lo, hi = (100 * v / r.base_ms for v in r.ci_ms)
        ci = f" [{lo:+.1f}%, {hi:+.1f}%]"
    return (
        f"{p} {r.label} regressed {signed_ms(r.delta_ms)} ({pct(r.delta_pct, signed=True)}"
        f"{ci}): {ms(r.base_ms)} -> {ms(r.head_ms)}"
    )


def _failure_rate(c: Comparison) -> tuple[str, str, str]:
    """Failed requests always show; a significantly higher failure rate fails like a regression."""
    assert c.base is not None
    fb, nb, fh, nh = c.base.failed, c.base.requests, c.head.failed, c.head.requests
    rb, rh = fb / nb if nb else 0.0, fh / nh if nh else 0.0
    pooled = (fb + fh) / (nb + nh)
    se = math.sqrt(pooled * (1 - pooled) * (1 / nb + 1 / nh)) if nb and nh else 0.0
    significant = se > 0 and (rh - rb) / se > NormalDist().inv_cdf(0.975)
    message = (
        f"{fh} of {nh} requests failed at head ({100 * rh:.1f}%), "
        f"{fb} of {nb} at base ({100 * rb:.1f}%)"
    )
    return ("failure_rate" if significant else "failures", "requests", message)
