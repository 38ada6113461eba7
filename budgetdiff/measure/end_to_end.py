"""The end to end of base and head, taken the same way on both sides.

A side whose data has an end-to-end time measured it (a total column, the span of its
timestamps); a side without one derives it (`prepare`: the sum of its slices, TTFT + TPOT x
(output tokens - 1)). A measured end to end against a derived one compares two definitions:
time outside every slice (the client's own work) is on the measured side only, and a slice that
grew by as much reads as "no change". So where one side measured it and the other derived it,
the measured side's is set aside and derived the same way, with a note; where that side cannot
be derived so, the compare refuses. Pure: runs in, prepared runs out.
"""

from __future__ import annotations

from dataclasses import replace

from budgetdiff.budget.model import Budget
from budgetdiff.errors import InputError
from budgetdiff.measure.prepare import Prepared, prepare
from budgetdiff.table import Run

MEASURED = frozenset({"measured", "timestamps"})  # `Prepared.total_from` of a measured total
_DERIVED = {
    "slices": "the sum of the slices",
    "ttft + slices": "the measured TTFT plus the slices after the first token",
    "ttft + tpot": "TTFT + TPOT x (output tokens - 1)",
}


def prepare_alike(
    base: Run, head: Run, budget: Budget
) -> tuple[Prepared, Prepared, tuple[str, ...]]:
    """Both sides prepared with their end to end taken the same way, and the note that says
    so where one side's measured end to end was set aside for it."""
    b, h = prepare(base, budget), prepare(head, budget)
    if (b.total_from in MEASURED) == (h.total_from in MEASURED):
        return b, h, ()
    measured, derived = (b, h) if b.total_from in MEASURED else (h, b)
    redone = _derived_as(measured.run, budget, derived)
    note = (
        f"{measured.run.source} measured its end to end ({_column(measured.run)}) and "
        f"{derived.run.source} has none: both ends to end are {_DERIVED[derived.total_from]}, "
        f"taken the same way ({_column(measured.run)} is not read); time outside every slice, "
        "which only a measured end to end holds, is in neither"
    )
    return (redone, h, (note,)) if measured is b else (b, redone, (note,))


def _derived_as(run: Run, budget: Budget, other: Prepared) -> Prepared:
    """`run` prepared without its measured end to end, derived as `other`'s is; an InputError
    where it cannot be (its data lacks what the other side's derivation takes)."""
    how = _DERIVED[other.total_from]
    refusal = InputError(
        f"{run.source} measured its end to end ({_column(run)}) and {other.run.source} has "
        f"none: {other.run.source}'s is {how}, which {run.source} cannot give, so the two "
        f"cannot be compared the same way; add an end-to-end column to {other.run.source}"
    )
    try:
        redone = prepare(replace(run, total=None, end_time=None), budget)
    except InputError:
        raise refusal from None
    if redone.total_from != other.total_from:
        raise refusal
    return redone


def _column(run: Run) -> str:
    """The column a table's measured end to end was read from, as the note names it."""
    use = next((u for u in run.columns if u.role == "metric" and u.target == "total"), None)
    return use.column if use is not None else "its end-to-end time"
