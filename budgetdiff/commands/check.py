"""`budgetdiff check`: one run against the SLO and the slice budgets, no base."""

from __future__ import annotations

from budgetdiff.commands.compare import evaluate_and_finish, request
from budgetdiff.commands.output import Edge
from budgetdiff.errors import UsageError
from budgetdiff.options import RunOptions


def run(o: RunOptions, edge: Edge) -> int:
    given = [
        flag
        for flag, value in (
            ("--base", o.base),
            ("--base-ref", o.base_ref),
            ("--base-artifact", o.base_artifact),
            ("--allow-missing-base", o.allow_missing_base),
        )
        if value
    ]
    if given:
        raise UsageError(f"{given[0]}: check takes no base; use compare")
    return evaluate_and_finish(request(o, edge, compare=False), o, edge)
