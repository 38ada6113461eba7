"""The agent section's findings (issue 28), for `judge`: more steps than budgeted or than the
base (`agent_steps`), a slower step named by its part and its tool (`regression`), a step part
over its budget (`over_budget`). Each is (kind, subject, message, gate), the gate being the
`fail_on` kind that decides whether it fails ("own": its kind)."""

from __future__ import annotations

from typing import Literal

from budgetdiff.measure.results import AgentRow, AgentSection, Change, Comparison, Kind
from budgetdiff.numbers import ms, pct, percentile, signed_ms, steps

Raw = tuple[Kind, str, str, Kind | Literal["own"] | None]


def agent_findings(c: Comparison) -> list[Raw]:
    """Every finding of the comparison's agent section, the steps first."""
    s = c.agent
    if s is None:
        return []
    p = percentile(s.percentile)
    return [*_steps(s, p), *_slower(s, p), *_over(s, p)]


def _steps(s: AgentSection, p: str) -> list[Raw]:
    r, out = s.steps, list[Raw]()
    counts = f"(p50 {steps(r.p50[1])}, max {steps(r.max[1])})"
    if r.change == Change.REGRESSION:
        part = (
            f", {signed_ms(s.split.more_steps_ms)} of the task's {p} change of " if s.split else ""
        )
        moved = f"{signed_ms(s.split.change_ms)}" if s.split else ""
        message = (
            f"tasks take more steps: {p} {steps(r.head)} steps per task instead of "
            f"{steps(r.base)} {counts}{part}{moved}"
        )
        out.append((Kind.AGENT_STEPS, "steps", message, Kind.REGRESSION))
    if r.over_budget:
        message = (
            f"{p} steps per task is {steps(r.head)}, over the {steps(r.target)} budgeted {counts}"
        )
        out.append((Kind.AGENT_STEPS, "steps", message, "own"))
    return out


def _slower(s: AgentSection, p: str) -> list[Raw]:
    """Each part of the step that regressed, with the tools whose calls did; the round trip
    itself when no part did."""
    tools = [r for r in s.tools if r.change == Change.REGRESSION]
    parts = [r for r in s.parts if r.change == Change.REGRESSION]
    if not parts and tools:
        parts = [r for r in s.parts if r.name == "tool"]
    if not parts and s.step.change == Change.REGRESSION:
        parts = [s.step]
    out: list[Raw] = []
    for r in parts:
        named = (
            f": tool {', '.join(t.tool or '' for t in tools)}" if r.name == "tool" and tools else ""
        )
        by = [f"{t.tool} {_moved(t)}" for t in tools] if r.name == "tool" else []
        more = f" ({'; '.join(by)})" if by else ""
        message = f"agent steps got slower{named}: {p} {_what(r)} {_moved(r)}{more}"
        subject = f"agent.{r.name}" + (f" {'+'.join(t.tool or '' for t in tools)}" if named else "")
        out.append((Kind.REGRESSION, subject, message, "own"))
    return out


def _what(r: AgentRow) -> str:
    return "step round trip" if r.name == "step" else f"step {r.name}"


def _moved(r: AgentRow) -> str:
    return f"{signed_ms(r.delta)} ({pct(r.delta_pct, signed=True)}): {ms(r.base)} -> {ms(r.head)}"


def _over(s: AgentSection, p: str) -> list[Raw]:
    out: list[Raw] = []
    for r in (s.step, *s.parts):
        if r.over_budget and r.change != Change.REGRESSION:
            message = f"{p} {_what(r)} is {ms(r.head)}, over its {ms(r.target)} budget"
            out.append((Kind.OVER_BUDGET, f"agent.{r.name}", message, "own"))
    return out
