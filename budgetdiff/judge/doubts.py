"""Which rows a reader's doubt reaches, and those rows marked: a number computed from a column
whose unit looks wrong, or from rows no request can have, shows no pass mark (no status ok, no
headroom, no budget use) but the doubt, in every rendering.

A doubt names what its values are read as (`Doubt.affects`: `ttft`, `total`, a slice, `itl`);
the rows made of them follow from how `prepare` derives what the data lacks: the total from the
slices, TTFT from the slices before the first token, TPOT from the total and TTFT (or decode),
and every slice's part from the total and all the slices (the parts are scaled to add up to
the total's percentile). Pure: a Comparison in, the same with its doubtful rows marked.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from budgetdiff.budget.model import Budget
from budgetdiff.measure.results import Comparison, Row, Side, Status
from budgetdiff.table import KNOWN_SLICES, UNATTRIBUTED, Doubt, Run

_FIRST_TOKEN = KNOWN_SLICES[: KNOWN_SLICES.index("first_token") + 1]
_PARTS = ("parts", "")  # every slice's part of the total's percentile


def mark(c: Comparison, budget: Budget, head: Run, base: Run | None) -> Comparison:
    """`c` with every row a failing doubt of either side reaches marked doubtful; without
    such a doubt, `c` itself. A side's SLO attainment, the re-budget proposal and what to fix
    first go too when they are made of such rows (a note says why)."""
    # TTFT stands in for `first_token` when the data has no slice before the first token
    stand_in = "first_token" in {r.name for r in c.slices} and "first_token" not in head.slices
    by_side = {
        "head": _reach(head, budget, "head", stand_in),
        "base": _reach(base, budget, "base", stand_in) if base is not None else {},
    }
    reach = dict(by_side["head"])
    for key, why in by_side["base"].items():
        reach[key] = [*reach.get(key, []), *why]
    c = _span_in_doubt(c, head, base)
    if not reach:
        return c
    parts = reach.get(_PARTS, [])
    slo = tuple(_marked(r, reach.get(("slo", r.name))) for r in c.slo)
    slices = tuple(
        _marked(r, [*reach.get(("slice", r.name), []), *(parts if r.part_ms is not None else [])])
        for r in c.slices
    )
    notes = list(c.notes)
    head_side, note = _attainment(c.head, "head", slo, by_side["head"])
    base_side, base_note = (
        _attainment(c.base, "base", slo, by_side["base"]) if c.base is not None else (None, None)
    )
    notes += [n for n in (note, base_note) if n]
    rebudget, fix_first = c.rebudget, c.fix_first
    # the proposal and the ranking are the head's: made of its slices' parts
    if (rebudget is not None or fix_first) and any(k[0] != "slo" for k in by_side["head"]):
        rebudget, fix_first = None, ()
        notes.append(
            "no re-budget proposal and no 'what to fix first': the slices' parts are in doubt "
            "(see the findings)"
        )
    return replace(
        c,
        slo=slo,
        slices=slices,
        head=head_side,
        base=base_side,
        notes=tuple(notes),
        rebudget=rebudget,
        fix_first=fix_first,
    )


def _attainment(
    side: Side, name: str, slo: tuple[Row, ...], reach: dict[tuple[str, str], list[str]]
) -> tuple[Side, str | None]:
    """The side without its SLO attainment (and goodput) when it holds requests to a metric
    the side's doubts reach, and the note that says so."""
    held = [r.label for r in slo if r.name in side.held_to and ("slo", r.name) in reach]
    if side.attainment is None or not held:
        return side, None
    note = (
        f"the {name}'s SLO attainment is left out: it holds each request to "
        f"{', '.join(held)}, whose values are in doubt (see the findings)"
    )
    return replace(side, attainment=None, goodput_rps=None), note


def _span_in_doubt(c: Comparison, head: Run, base: Run | None) -> Comparison:
    """Without a side's goodput when the unit of its start times is in doubt (seconds or
    milliseconds since the run began): it divides by the run's span."""
    for name, run in (("head", head), ("base", base)):
        side = c.head if name == "head" else c.base
        said = [d.subject for d in run.doubts if "start_time" in d.affects] if run else []
        if not said or side is None or side.goodput_rps is None:
            continue
        note = f"the {name}'s goodput is left out: the unit of {said[0]} is in doubt"
        side = replace(side, goodput_rps=None)
        c = replace(c, notes=(*c.notes, note))
        c = replace(c, head=side) if name == "head" else replace(c, base=side)
    return c


def _marked(r: Row, why: list[str] | None) -> Row:
    """The row with its doubt and no pass mark: its values stay, shown as doubtful."""
    if not why:
        return r
    return replace(
        r,
        doubt="; ".join(dict.fromkeys(why)),
        status=Status.DOUBTFUL if r.status is not None else None,
        headroom_pct=None,
        budget_use_pct=None,
        over_budget=None,
    )


def _why(d: Doubt) -> str:
    """A doubt in a few words, for the row it reaches."""
    if d.kind == "units":
        return f"the unit of {d.subject}"
    return f"rows no request can have ({d.subject} below TTFT)"


def _reach(run: Run, budget: Budget, side: str, stand_in: bool) -> dict[tuple[str, str], list[str]]:
    """(row kind, row name) -> why, for every row one of the run's failing doubts reaches;
    `stand_in`: the `first_token` slice is the run's TTFT."""
    doubted: dict[str, list[str]] = {}  # what the values are read as -> why they are in doubt
    for d in run.doubts:
        if d.fails:
            for name in d.affects:
                doubted.setdefault(name, []).append(f"{side}: {_why(d)}")
    if not doubted:
        return {}

    def of(names: Iterable[str]) -> list[str]:
        return [w for n in names for w in doubted.get(n, [])]

    early = budget.ttft_slices if budget.slices else _FIRST_TOKEN
    ttft = of(["ttft"]) + ([] if run.ttft is not None else of(early))
    total = of(["total"]) + ([] if run.total is not None else of(run.slices) + ttft)
    tpot = of(["tpot"]) + ([] if run.tpot is not None else total + ttft + of(["decode"]))
    # a slice's part is its share of the total's percentile, scaled so that the parts add up:
    # a doubt on the total or on any slice (TTFT, where it stands in for one) reaches them all
    parts = total + of(run.slices) + (ttft if stand_in else [])
    out: dict[tuple[str, str], list[str]] = {
        ("slo", "ttft"): ttft,
        ("slo", "total"): total,
        ("slo", "tpot"): tpot,
        ("slo", "itl"): of(["itl"]),
        ("slo", "max_stall"): of(["itl"]),
        ("slice", UNATTRIBUTED): parts,
        _PARTS: parts,
    }
    for name in run.slices:
        out[("slice", name)] = of([name])
    if stand_in:
        out[("slice", "first_token")] = ttft
    return {key: why for key, why in out.items() if why}
