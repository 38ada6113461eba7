"""The result object every renderer reads: scenarios, each with its rows, findings and verdict."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from budgetdiff.judge.findings import VERDICT_ORDER, summarize, worst
from budgetdiff.measure.agent_results import AgentRow
from budgetdiff.measure.results import (
    Acceptance,
    Change,
    Comparison,
    Finding,
    Summary,
    Verdict,
    Word,
)
from budgetdiff.render.json import render_json, report_dict
from budgetdiff.render.markdown import render_markdown
from budgetdiff.render.table import render_table

if TYPE_CHECKING:
    import pandas

    from budgetdiff.measure.history import History

# Report.to_frame(): one row per SLO metric, slice and agent row, these columns, in this order.
# An agent comparison's rows (kind `agent`, named as the JSON report's `agent.rows`) put the
# step round trip, its parts and each tool in the `_ms` columns, and steps per task, a count
# of steps, in the `_steps` columns (its `_ms` columns empty); `tool` names a per-tool row.
FRAME_COLUMNS = (
    "scenario",
    "kind",
    "name",
    "percentile",
    "target_ms",
    "base_ms",
    "head_ms",
    "delta_ms",
    "delta_pct",
    "ci_low_ms",
    "ci_high_ms",
    "change",
    "p_value",
    "status",
    "headroom_pct",
    "over_budget",
    "budget_use_pct",
    "tail_share_pct",
    "tail_change_ms",
    "tool",
    "target_steps",
    "base_steps",
    "head_steps",
    "delta_steps",
    "ci_low_steps",
    "ci_high_steps",
    "base_p50_steps",
    "head_p50_steps",
    "base_max_steps",
    "head_max_steps",
)
_NO_STEPS = (None,) * 10  # the `_steps` columns of a row in ms


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

    # ---- the renderings, for the Python API (the CLI calls the renderers itself) -------------

    def to_text(self, width: int | None = 80) -> str:
        """The terminal report (`--output table`), folded to `width` columns (None: no limit)."""
        return render_table(self, width)

    def to_markdown(self) -> str:
        """The markdown report: the PR comment and the step summary."""
        return render_markdown(self)

    def to_json(self) -> str:
        """The JSON report (`budgetdiff.report/v1`), as `--output json` prints it."""
        return render_json(self)

    def to_dict(self) -> dict[str, Any]:
        """The JSON report as Python values."""
        return report_dict(self)

    def to_frame(self) -> pandas.DataFrame:
        """One row per SLO metric, slice and agent row (of every scenario), as a pandas
        DataFrame (`FRAME_COLUMNS`)."""
        try:
            import pandas
        except ImportError:
            raise ImportError(
                "Report.to_frame() needs pandas: pip install 'budgetdiff[pandas]'"
            ) from None
        rows: list[tuple[object, ...]] = []
        for s in self.scenarios:
            c = s.comparison
            for r in (*c.slo, *c.slices):
                low, high = r.ci_ms if r.ci_ms is not None else (None, None)
                rows.append(
                    (
                        c.name, r.kind, r.name, c.percentile, r.target_ms, r.base_ms, r.head_ms,
                        r.delta_ms, r.delta_pct, low, high, _word(r.change), r.p_value,
                        _word(r.status), r.headroom_pct, r.over_budget, r.budget_use_pct,
                        r.tail_share_pct, r.tail_change_ms, None, *_NO_STEPS,
                    )
                )  # fmt: skip
            if c.agent is not None:
                rows += [_agent_row(c.name, c.agent.percentile, a) for a in c.agent.rows]
        frame: pandas.DataFrame = pandas.DataFrame(rows, columns=list(FRAME_COLUMNS))
        return frame

    def _repr_markdown_(self) -> str:
        """A notebook shows the report as the PR comment looks."""
        return self.to_markdown()


def _word(value: Word | None) -> str | None:
    """A frame holds the plain word, as the JSON report does (`regression`, `breach`)."""
    return None if value is None else str(value)


def _agent_row(scenario: str | None, p: float, r: AgentRow) -> tuple[object, ...]:
    """One agent row in `FRAME_COLUMNS`: its values in the `_ms` columns, or (steps per task)
    in the `_steps` ones; no status, headroom or tail share (the agent rows have none)."""
    row: dict[str, object] = dict.fromkeys(FRAME_COLUMNS)
    unit = "ms" if r.unit == "ms" else "steps"
    low, high = r.ci if r.ci is not None else (None, None)
    row.update(
        {
            "scenario": scenario,
            "kind": "agent",
            "name": r.name,
            "percentile": p,
            f"target_{unit}": r.target,
            f"base_{unit}": r.base,
            f"head_{unit}": r.head,
            f"delta_{unit}": r.delta,
            "delta_pct": r.delta_pct,
            f"ci_low_{unit}": low,
            f"ci_high_{unit}": high,
            "change": _word(r.change),
            "p_value": r.p_value,
            "over_budget": r.over_budget,
            "tool": r.tool,
        }
    )
    if r.unit == "steps":
        row.update(
            base_p50_steps=r.p50[0],
            head_p50_steps=r.p50[1],
            base_max_steps=r.max[0],
            head_max_steps=r.max[1],
        )
    return tuple(row.values())
