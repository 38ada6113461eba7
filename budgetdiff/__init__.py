"""budgetdiff: latency budgets for LLM serving, base vs head, as a PR comment and a merge gate.

The Python API: `budgetdiff.compare(base, head, budget)` and `budgetdiff.check(head, budget)`
return a `Report`; `budgetdiff.testing.assert_within_budget` makes a budget a test.
"""

from __future__ import annotations

__version__ = "1.0.0"  # the one place; pyproject.toml reads it (see docs/releases.md)

from budgetdiff.api import check, compare  # after the version: parser reads it
from budgetdiff.report import Report

__all__ = ["Report", "__version__", "check", "compare"]
