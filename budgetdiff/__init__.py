"""budgetdiff: latency budgets for LLM serving, base vs head, as a PR comment and a merge gate.

The Python API: `budgetdiff.compare(base, head, budget)` and `budgetdiff.check(head, budget)`
return a `Report`; `budgetdiff.testing.assert_within_budget` makes a budget a test.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

__version__ = "1.0.0"  # the one place; pyproject.toml reads it (see docs/releases.md)

__all__ = ["Report", "__version__", "check", "compare"]

if TYPE_CHECKING:
    from budgetdiff.api import Report, check, compare

# The API is loaded when it is first used, not when any part of the package is: the console
# script's `budgetdiff --help` or `budgetdiff schema` then loads neither the statistics nor the
# readers (PEP 562).
_LAZY = {
    "check": "budgetdiff.api",
    "compare": "budgetdiff.api",
    "Report": "budgetdiff.api",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'budgetdiff' has no attribute {name!r}")
