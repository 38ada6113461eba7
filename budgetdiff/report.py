"""The result object every renderer reads: scenarios, each with its rows, findings and verdict."""

from __future__ import annotations

from dataclasses import dataclass

from budgetdiff.compare import Comparison
from budgetdiff.judge import Finding, worst


@dataclass(frozen=True)
class Scenario:
    comparison: Comparison
    findings: tuple[Finding, ...]
    verdict: str

    @property
    def regressions(self) -> list[str]:
        c = self.comparison
        return [r.name for r in (*c.slo, *c.slices) if r.change == "regression"]


@dataclass(frozen=True)
class Report:
    id: str
    mode: str  # "compare" | "check"
    scenarios: tuple[Scenario, ...]

    @property
    def verdict(self) -> str:
        return worst(s.verdict for s in self.scenarios)

    @property
    def main(self) -> Scenario:
        """The worst scenario: the top level of the JSON report describes it."""
        order = {"pass": 0, "warn": 1, "fail": 2}
        return max(self.scenarios, key=lambda s: order[s.verdict])

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
                    f = Finding(f.kind, f.subject, f.fails, f"[{s.comparison.name}] {f.message}")
                out.append(f)
        return out
