"""What changed between two budgets, key by key, in words (`slo.total: 6,000 -> 9,000`): the
`budget_change` finding of a pull request that edits its budget (issue 38). Pure."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from budgetdiff.budget.model import Budget
from budgetdiff.numbers import count, given

MAX_SAID = 8  # the changes a finding lists; the rest are counted


def budget_changes(old: Budget, new: Budget) -> list[str]:
    """Every key whose value differs, in the file's order: `slices.decode.budget: 4,200 ->
    9,000`; a key only one side has is `(none)` on the other."""
    before = dict(_leaves(old.model_dump(mode="json")))
    after = dict(_leaves(new.model_dump(mode="json")))
    keys = list(dict.fromkeys([*before, *after]))
    return [
        f"{key}: {_said(before.get(key))} -> {_said(after.get(key))}"
        for key in keys
        if before.get(key) != after.get(key)
    ]


def said_briefly(changes: list[str]) -> str:
    """The changes in one line, the first `MAX_SAID` of them."""
    shown = "; ".join(changes[:MAX_SAID])
    more = len(changes) - MAX_SAID
    return shown + (f"; and {more} more" if more > 0 else "")


def _leaves(value: Any, at: str = "") -> Iterator[tuple[str, Any]]:
    if isinstance(value, Mapping):
        for k, v in value.items():
            yield from _leaves(v, f"{at}.{k}" if at else str(k))
    elif value is not None:
        yield at, value


def _said(value: Any) -> str:
    if value is None:
        return "(none)"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int | float):  # whole numbers with thousands separators: 6,000
        return count(int(value)) if float(value).is_integer() else given(float(value))
    if isinstance(value, list):
        return "[" + ", ".join(_said(v) for v in value) + "]"
    return str(value)
