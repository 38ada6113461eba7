"""The one orchestrator: runs and a budget in, the Report every renderer reads.

    Reading     the files of each side, through the readers the budget configures
    evaluate    pair the scenarios of base and head -> rows for each pair -> judge -> Report

Every decision between reading and rendering is made here (which runs pair up, whether a pair
is compared request by request or on the aggregates its files hold); the CLI and the Python API
call these functions and decide nothing themselves. `rebudget_for`, `what_if` and `trend_page`
are the same steps for the commands and the page that are not a Report.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, NamedTuple

from budgetdiff import agent, rebudget, rows, sources, whatif
from budgetdiff.budget import did_you_mean
from budgetdiff.errors import InputError, UsageError
from budgetdiff.formats import ReadOptions, detect
from budgetdiff.formats.combine import combine
from budgetdiff.judge import judge
from budgetdiff.prepare import Prepared, prepare
from budgetdiff.render.text import plain
from budgetdiff.report import Report, Scenario
from budgetdiff.results import Comparison
from budgetdiff.rows import runs_match, slice_parts
from budgetdiff.table import UNATTRIBUTED, Run

if TYPE_CHECKING:
    from budgetdiff.budget import Budget
    from budgetdiff.history import History, Loaded
    from budgetdiff.results import Acceptance


# ---- read -----------------------------------------------------------------------------------


class Side(NamedTuple):
    """One side's runs, and each of its files' size in bytes (equal sizes: maybe equal bytes)."""

    runs: list[Run]
    sizes: tuple[int, ...]


def read_options(budget: Budget) -> ReadOptions:
    """What the budget tells a reader: the slices it wants (in every class of traffic) and
    where their columns are."""
    return ReadOptions(
        slices=tuple(s for s in budget.all_slices if s != UNATTRIBUTED),  # computed, not read
        columns={
            n: (s.column or n, s.unit)
            for n, s in budget.all_slices.items()
            if s.column is not None or s.unit is not None
        },
        percentile=budget.percentile,
    )


class Reading(NamedTuple):
    """How the sides of one comparison are read: one format, one budget, one size limit, and
    the scenarios wanted (none named: all of them)."""

    budget: Budget
    environ: Mapping[str, str]
    fmt: str = "auto"
    scenarios: Sequence[str] = ()

    def side(self, paths: Sequence[str], ref: str | None = None) -> Side:
        """One side's runs from its files (the work tree, or commit `ref`)."""
        options = read_options(self.budget)
        limit = sources.max_bytes(self.environ)
        per_file, sizes = [], []
        for path in paths:
            data = sources.read_bytes(path, ref, limit)
            sizes.append(len(data))
            label = f"{ref}:{path}" if ref else path
            per_file.append(detect.read(data, label, self.fmt, options))
        runs = combine(per_file, list(paths))  # one file passes through, after its own checks
        if self.scenarios:
            runs = [r for r in runs if r.scenario in self.scenarios]
            if not runs:
                wanted = ",".join(self.scenarios)
                raise UsageError(f"--scenario {wanted}: none of these is in {paths[0]}")
        return Side(runs, tuple(sizes))


# ---- evaluate -------------------------------------------------------------------------------


class Pair(NamedTuple):
    """A head run and the base run it is compared with; without one, `missing` says why."""

    base: Run | None
    head: Run
    missing: str | None


def evaluate(
    base: list[Run] | None,
    head: list[Run],
    budget: Budget,
    *,
    fail_on: Sequence[str],
    report_id: str = "default",
    no_base: str | None = None,
    same_input: str | None = None,
    accepted: Acceptance | None = None,
    history: Loaded | None = None,
) -> Report:
    """Pair the scenarios, compare and judge each: the Report every renderer reads. `base` None
    is a check of head alone, unless `no_base` says why a compare has no base."""
    pairs, base_only = pair_runs(base, head, no_base)
    scenarios: list[Scenario] = []
    for p in pairs:
        held_to = budget.for_scenario(p.head.scenario)  # its class's SLO and slices, if any
        c = agent.attach(compare_pair(p, held_to), p.base, p.head, held_to)
        if not scenarios and budget.classes:  # said once, with the first
            c = replace(c, notes=(*c.notes, *_unmatched_classes(budget, head)))
        trends = _trends(history, c, held_to)
        findings, verdict = judge(
            c,
            held_to,
            fail_on,
            no_base=p.missing,
            base_only=base_only if not scenarios else [],  # said once, with the first
            same_input=same_input,
            accepted=accepted,
            history=trends,
        )
        scenarios.append(Scenario(c, tuple(findings), verdict, trends))
    mode = "compare" if base is not None or no_base is not None else "check"
    return Report(id=report_id, mode=mode, scenarios=tuple(scenarios), accepted=accepted)


def _unmatched_classes(budget: Budget, head: list[Run]) -> list[str]:
    """A class that names no scenario of head holds nothing: said, as a typo would be silent."""
    names = [r.scenario for r in head if r.scenario is not None]
    unmatched = [c for c in budget.classes if c not in names]
    if not unmatched:
        return []
    which = "class " if len(unmatched) == 1 else "classes "
    match = " matches" if len(unmatched) == 1 else " match"
    return [
        f"the budget's {which}{', '.join(map(repr, unmatched))}{match} no scenario (the data "
        f"has: {', '.join(names) or 'one, unnamed'}){did_you_mean(unmatched[0], names)}; a "
        "class holds the scenario of its name, the others are held to the top level"
    ]


def pair_runs(
    base: list[Run] | None, head: list[Run], no_base: str | None = None
) -> tuple[list[Pair], list[str]]:
    """Each head run with its base run (by scenario), and the base scenarios head lacks."""
    if base is None:
        return [Pair(None, h, no_base) for h in head], []
    matched, base_only = runs_match(base, head)
    pairs = []
    for b, h in matched:
        missing = no_base
        if b is None:
            missing = (
                f"scenario {h.scenario or 'default'!r} is in head but not in base: nothing to "
                "compare"
            )
        elif b.n and not b.succeeded.any():
            missing = f"{b.source}: every base request failed: nothing to compare against"
            b = None
        pairs.append(Pair(b, h, missing))
    return pairs, [r.scenario or "default" for r in base_only]


def compare_pair(pair: Pair, budget: Budget) -> Comparison:
    """The rows of one pair: request by request when both sides hold one row per request, else
    from what the files hold (percentiles, histograms, means)."""
    b, h = pair.base, pair.head
    if h.per_request and (b is None or b.per_request):
        base = prepare(b, budget) if b is not None else None
        return rows.compare(base, prepare(h, budget), budget)
    from budgetdiff.aggregate import compare_aggregate  # only for aggregate inputs (start-up)

    def side(r: Run) -> Run | Prepared:
        return prepare(r, budget) if r.per_request else r

    return compare_aggregate(side(b) if b is not None else None, side(h), budget)


def _trends(history: Loaded | None, c: Comparison, budget: Budget) -> History | None:
    if history is None:
        return None
    from budgetdiff.history import analyse  # only with --history (start-up)

    return analyse(history, c, budget)


# ---- the commands that are not a Report -----------------------------------------------------


def rebudget_for(head: list[Run], budget: Budget, *, source: str) -> Comparison:
    """The comparison of `head` alone whose `rebudget` holds the proposal; an InputError when
    the data cannot support one (`source` names the file in the message)."""
    c = evaluate(None, head, budget, fail_on=[]).main.comparison
    measured = {r.name: r.head_ms for r in c.slices if r.head_ms is not None}
    missing = rebudget.missing_slices(budget, measured)
    if missing:
        raise InputError(
            f"{source}: no data for slice(s) {', '.join(missing)}; the data has: "
            f"{', '.join(measured)}"
        )
    if c.rebudget is None:
        raise InputError(
            f"{source}: re-budgeting needs one row per request (the tail contributions); "
            "this file holds only aggregates: pass the tool's per-request file"
        )
    return c


@dataclass(frozen=True)
class WhatIf:
    """One run recomputed with some slices changed: its percentiles before and after."""

    requests: int  # the requests that succeeded: what was recomputed
    before: whatif.Outcome
    after: whatif.Outcome


def what_if(
    head: list[Run], budget: Budget, changes: Mapping[str, whatif.Change], *, source: str
) -> WhatIf:
    """The SLO metrics of `head` (one run, one row per request) with `changes` applied."""
    if len(head) != 1 or not head[0].per_request:
        raise InputError(
            f"{source}: whatif needs one run with one row per request (pick one with --scenario)"
        )
    prep = prepare(head[0], budget)
    parts = slice_parts(prep)
    unknown = [s for s in changes if s not in parts]
    if unknown:
        raise UsageError(
            f"whatif: {plain(unknown[0])} is not a slice of {source}; it has: "
            f"{', '.join(parts) or 'no slices'}"
        )
    if not len(prep.metrics["total"]):
        raise InputError(f"{source}: no request succeeded: nothing to recompute")
    return WhatIf(
        requests=len(prep.metrics["total"]),
        before=whatif.outcome(prep, budget, parts),
        after=whatif.outcome(prep, budget, parts, changes),
    )


def trend_page(report: Report, base: list[Run] | None, head: list[Run], budget: Budget) -> str:
    """`--html PAGE`: the history's charts and the main scenario's base vs head distributions."""
    from budgetdiff.render.page import Cdf, render_page  # only with --html (start-up)

    main = report.main
    c = main.comparison
    pairs = pair_runs(base, head)[0]
    shown = next((p for p in pairs if p.head.scenario == c.name), pairs[0])
    b, h = shown.base, shown.head
    cdfs = []
    if h.per_request and (b is None or b.per_request):
        sides = [prepare(r, budget) if r is not None else None for r in (b, h)]
        values = [
            {**{r.name: s.metrics.get(r.name) for r in c.slo}, **slice_parts(s)}
            if s is not None
            else {}
            for s in sides
        ]
        for r in (*c.slo, *c.slices):
            hv = values[1].get(r.name)
            if hv is None or not len(hv):
                continue
            bv = values[0].get(r.name)
            cdfs.append(Cdf(r.label, tuple(bv) if bv is not None else (), tuple(hv)))
    title = "budgetdiff" if report.id == "default" else f"budgetdiff · {plain(report.id)}"
    return render_page(title, c.percentile, main.history, cdfs)
