"""A report as a pandas DataFrame (`Report.to_frame()` in the Python API): one row per SLO
metric, slice and agent row of every scenario, the columns `FRAME_COLUMNS`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from budgetdiff.measure.results import AgentRow, Word

if TYPE_CHECKING:
    import pandas

    from budgetdiff.report.model import Report

# to_frame(): one row per SLO metric, slice and agent row, these columns, in this order.
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


def render_frame(report: Report) -> pandas.DataFrame:
    """One row per SLO metric, slice and agent row (of every scenario), `FRAME_COLUMNS`."""
    try:
        import pandas
    except ImportError:
        raise ImportError(
            "Report.to_frame() needs pandas: pip install 'budgetdiff[pandas]'"
        ) from None
    rows: list[tuple[object, ...]] = []
    for s in report.scenarios:
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
