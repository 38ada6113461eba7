"""`budgetdiff init --head FILE`: a budget that fits the results file it is pointed at (issue
38): the SLO a little above the file's own p95s, and slice budgets that hold each slice's part
of the p95 end to end with the headroom shared in proportion (`rebudget`'s split), so that the
first `check` on that file passes and later ones catch a change. The slices are the file's
own, or, for a client-only harness (TTFT and end to end, no slices), `first_token` and
`decode` (= end to end - TTFT, derived by the reader)."""

from __future__ import annotations

import math
from collections.abc import Mapping

from budgetdiff.budget.model import Budget, Slice, Slo
from budgetdiff.errors import UsageError
from budgetdiff.evaluate.orchestrator import Files, Reading, read_as_check, rebudget_for
from budgetdiff.numbers import count, ms
from budgetdiff.render.text import plain
from budgetdiff.table import UNATTRIBUTED, Run

# the SLO is the measured p95 / ROOM, rounded up to two figures: 25% above it, more than the
# budget's 10% headroom, so the file itself passes without a low-headroom warning
ROOM = 0.8
CLIENT_SLICES = ("first_token", "decode")


def fitted_budget(file: str, environ: Mapping[str, str]) -> str:
    """The text of budget.yml fitted to `file` (its first scenario)."""
    runs = Reading(Budget(), environ).side(Files((file,))).runs
    run = runs[0]
    if not run.per_request:
        raise UsageError(
            f"init --head: {plain(file)} holds no row per request; point it at a per-request "
            "results file (or run init without --head for the commented example)"
        )
    measured = {r.name: r.head_ms for r in read_as_check([run], Budget()).comparison.slo}
    ttft, total = measured.get("ttft"), measured.get("total")
    if total is None:
        raise UsageError(f"init --head: {plain(file)} has no end to end time to budget")
    slo = Slo(ttft=_above(ttft) if ttft is not None else None, total=_above(total))
    names = _slices(run)
    if not names:
        return _text(file, slo, {}, measured)
    provisional = Budget(slo=slo, slices={n: Slice(budget=1) for n in names})
    again = Reading(provisional, environ).side(Files((file,))).runs[:1]  # the slices it derives
    proposal = rebudget_for(again, provisional, source=file).comparison.rebudget
    allocation = dict(proposal.allocation) if proposal is not None else {}
    return _text(file, slo, allocation, measured)


def _slices(run: Run) -> list[str]:
    """The slices the budget names: the file's own, else those its TTFT and end to end give."""
    own = [s for s in run.slices if s != UNATTRIBUTED]
    if own:
        return own
    return list(CLIENT_SLICES) if run.ttft is not None and run.total is not None else []


def _above(p95: float) -> float:
    """p95 / ROOM, rounded up to two significant figures (5,456 -> 6,900)."""
    x = p95 / ROOM
    step = 10.0 ** max(0, math.floor(math.log10(x)) - 1) if x > 0 else 1.0
    return math.ceil(x / step) * step


def _text(
    file: str, slo: Slo, allocation: Mapping[str, int], measured: Mapping[str, float | None]
) -> str:
    said = {"ttft": "time to first token", "total": "end to end"}
    lines = [
        f"# budgetdiff's latency budget, written by `budgetdiff init --head {plain(file)}` to fit",
        "# that file: each SLO target is a little above its p95 there, and each slice's budget",
        "# holds its part of the p95 end to end (the reference is docs/budget.md).",
        "version: 1",
        "percentile: 95          # every number below is a p95, in milliseconds",
        "slo:",
    ]
    for name, target in slo.targets().items():
        lines.append(
            f"  {name}: {count(int(target)).replace(',', '')}"
            f"  # {said[name]}; measured {ms(measured.get(name))}"
        )
    if allocation:
        lines.append("slices:  # each holds its part of the p95 end to end, not its own p95")
        for name, budget in allocation.items():
            why = {"first_token": "  # TTFT", "decode": "  # end to end - TTFT"}
            derived = why.get(name, "") if set(allocation) <= {*CLIENT_SLICES, UNATTRIBUTED} else ""
            lines.append(f"  {name}: {budget}{derived}")
        if "first_token" in allocation:
            lines.append("first_token_after: first_token   # TTFT = first_token")
    lines += [
        "headroom: 10%           # warn when an SLO metric leaves less than 10% of its target",
        "regression:             # when a change between base and head counts as a regression",
        "  min_change: 5%",
        "  min_ms: 5",
        "  confidence: 0.95",
        "fail_on: [breach, regression]",
    ]
    return "\n".join(lines) + "\n"
