"""A latency budget as a test in your own suite: `assert_within_budget(results, budget)`."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from budgetdiff import api

if TYPE_CHECKING:
    from budgetdiff.api import BudgetLike, Report, Results


def assert_within_budget(
    results: Results,
    budget: BudgetLike,
    *,
    base: Results | None = None,
    fail_on: Iterable[str] | None = None,
) -> Report:
    """Check `results` against `budget` (or compare them with `base`); raise AssertionError,
    whose message is the terminal report, when the verdict is fail. Returns the Report.

    Takes what `budgetdiff.check` and `budgetdiff.compare` take. The verdict `warn` (findings
    that `fail_on` does not name) passes, as the CLI exits 0 on it.
    """
    __tracebackhide__ = True  # pytest shows the caller's line, not this one
    if base is None:
        report = api.check(results, budget, fail_on=fail_on)
    else:
        report = api.compare(base, results, budget, fail_on=fail_on)
    if report.verdict == "fail":
        raise AssertionError(report.to_text())
    return report
