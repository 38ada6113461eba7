"""`budgetdiff check`: one run against the SLO and the slice budgets, no base."""

from __future__ import annotations

from budgetdiff.commands.compare import evaluate_and_finish, request
from budgetdiff.commands.edge import Edge
from budgetdiff.commands.options import RunOptions
from budgetdiff.errors import UsageError


def run(o: RunOptions, edge: Edge) -> int:
    given = o.base_flags()
    if given:
        raise UsageError(f"{given[0]}: check takes no base; use compare")
    return evaluate_and_finish(request(o, edge, compare=False), o, edge)
