"""budgetdiff: latency budgets for LLM serving, base vs head, as a PR comment and a merge gate.

The Python API: `budgetdiff.compare(base, head, budget)` and `budgetdiff.check(head, budget)`
return a `Report`; `budgetdiff.testing.assert_within_budget` makes a budget a test. Importing
the package stays cheap: numpy, pyarrow and the rest load when a function runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from budgetdiff.api import check, compare

if TYPE_CHECKING:
    from budgetdiff.report import Report

__version__ = "1.0.0"  # the one place; pyproject.toml reads it (see docs/releases.md)
__all__ = ["Report", "__version__", "check", "compare"]


def __getattr__(name: str) -> object:
    if name == "Report":
        from budgetdiff.report import Report

        return Report
    raise AttributeError(f"module 'budgetdiff' has no attribute {name!r}")
