"""The result object every renderer reads: scenarios, each with its rows, findings and verdict."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from budgetdiff.judge.findings import VERDICT_ORDER, summarize, worst
from budgetdiff.measure.results import (
    Acceptance,
    Change,
    Comparison,
    Finding,
    Summary,
    Verdict,
)

if TYPE_CHECKING:
    from budgetdiff.measure.history import History


@dataclass(frozen=True)
class Scenario:
    comparison: Comparison
    findings: tuple[Finding, ...]
    verdict: Verdict
    history: History | None = None  # the trends over a history file (`--history`)
    # what every rendering puts first, decided by the judge from the fields above
    summary: Summary = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "summary", summarize(self.comparison, self.findings, self.verdict))

    @property
    def regressions(self) -> list[str]:
        c = self.comparison
        return [r.name for r in (*c.slo, *c.slices) if r.change == Change.REGRESSION]


@dataclass(frozen=True)
class Report:
    id: str
    mode: str  # "compare" | "check"
    scenarios: tuple[Scenario, ...]
    accepted: Acceptance | None = None  # the PR label that accepts regressions, when set

    @property
    def verdict(self) -> Verdict:
        return worst(s.verdict for s in self.scenarios)

    @property
    def main(self) -> Scenario:
        """The worst scenario: the top level of the JSON report describes it."""
        return max(self.scenarios, key=lambda s: VERDICT_ORDER[s.verdict])

    @property
    def regressions(self) -> list[str]:
        return self.main.regressions

    @property
    def findings(self) -> list[Finding]:
        multi = len(self.scenarios) > 1
        out = []
        for s in self.scenarios:
            for f in s.findings:
                if multi and s.comparison.name:
                    f = replace(f, message=f"[{s.comparison.name}] {f.message}")
                out.append(f)
        return out
