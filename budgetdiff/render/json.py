"""The JSON report (`budgetdiff.report/v1`): every key of the contract, always present."""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING, Any

from budgetdiff import numbers
from budgetdiff.measure.results import Comparison, Finding, Row, Side, Summary
from budgetdiff.render.agent import json_section
from budgetdiff.render.summary import sentence, verbatim
from budgetdiff.render.text import plain

if TYPE_CHECKING:  # render reads the Report; report.py calls render
    from budgetdiff.report.model import Report, Scenario

SCHEMA = "budgetdiff.report/v1"
MAX_COLUMNS = 500  # of a table's reading in `inputs` (a hostile header may hold 100,000)


def render_json(report: Report) -> str:
    return json.dumps(report_dict(report), indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def report_dict(report: Report) -> dict[str, Any]:
    main = _scenario(report.main)
    out: dict[str, Any] = {"schema": SCHEMA, "id": report.id, "mode": report.mode}
    out.update(main)
    out["verdict"] = report.verdict  # the worst scenario's; its findings are the top level's
    # the PR label that accepted regressions on purpose (their findings say `accepted: true`)
    a = report.accepted
    out["accepted"] = None if a is None else {"label": a.label, "by": a.by}
    if len(report.scenarios) > 1:
        out["scenarios"] = [_scenario(s) for s in report.scenarios]
    return out


def _scenario(s: Scenario) -> dict[str, Any]:
    c = s.comparison
    return {
        "name": c.name,
        "verdict": s.verdict,
        "percentile": c.percentile,
        "requests": {"base": c.base.requests if c.base else None, "head": c.head.requests},
        "failed": {"base": _failed(c.base), "head": _failed(c.head)},
        "inputs": {"base": _input(c.base) if c.base else None, "head": _input(c.head)},
        "paired": c.paired,
        "headline": c.headline,
        "summary": _summary(s.summary, c.percentile),
        "slo": [_slo(r, c) for r in c.slo],
        "slices": [_slice(r) for r in c.slices],
        "findings": [_finding(f) for f in s.findings],
        "regressions": s.regressions,
        "rebudget": dict(c.rebudget.allocation) if c.rebudget else None,
        "rebudget_detail": {
            "target_ms": _f(c.rebudget.target_ms),
            "fits": c.rebudget.fits,
            "shortfall_ms": _f(c.rebudget.shortfall_ms),
            "work_first": c.rebudget.work_first,
            "messages": list(c.rebudget.messages),
        }
        if c.rebudget
        else None,
        "attribution": c.attribution,
        "fix_first": [
            {
                "slice": f.slice,
                "total_change_ms": _f(f.total_change_ms),
                "attainment_change_pct": _f(f.attainment_change_pct),
            }
            for f in c.fix_first
        ],
        "attainment": _attainment(c),
        "not_comparable": list(c.not_comparable),
        "feasibility": list(c.feasibility),
        "notes": list(c.notes),
        "history": _history(s),
        "agent": json_section(c),
    }


def _summary(h: Summary, p: float) -> dict[str, Any]:
    """The headline every rendering puts first: its sentence, and what the judge chose to name."""
    return {
        "text": sentence(h, p, verbatim),
        "at_risk": h.at_risk.name if h.at_risk is not None else None,
        "regressed": [r.name for r in h.regressed],
        "over_budget": [r.name for r in h.over_budget],
    }


def _finding(f: Finding) -> dict[str, Any]:
    return {
        "kind": f.kind,
        "subject": f.subject,
        "fails": f.fails,
        "message": f.message,
        "accepted": f.accepted,
    }


def _history(s: Scenario) -> dict[str, Any] | None:
    h = s.history
    if h is None:
        return None
    return {
        "runs": h.runs,
        "window": h.window,
        "budget_changed": h.budget_changed,
        "warnings": list(h.warnings),
        "trends": [
            {
                "kind": t.kind,
                "name": t.name,
                "unit": t.unit,
                # a count of steps is no duration: the `_steps` keys hold it
                "values_ms": [_f(v) for v in t.values] if t.unit == "ms" else None,
                "values_steps": [_f(v) for v in t.values] if t.unit == "steps" else None,
                "commits": [e.commit for e in t.runs],
                "change_points": list(t.change_points),
                "reference_ms": _f(t.reference) if t.unit == "ms" else None,
                "reference_steps": _f(t.reference) if t.unit == "steps" else None,
                "change_pct": _f(t.change_pct),
                "cumulative_pct": _f(t.cumulative_pct),
                "p_value": _f(t.p_value, 6),
                "change_ci_pct": [_f(x) for x in t.change_ci] if t.change_ci else None,
                "cusum": _f(t.rise),
                "cusum_threshold": _f(t.threshold),
                "steps_below": t.steps_below,
                "slower_since": t.slower_since,
                "drift": t.drift,
            }
            for t in h.trends
        ],
    }


def _failed(side: Side | None) -> int | None:
    """The failed count, null where the file does not say (not 0)."""
    return side.failed if side is not None and side.failed_known else None


def _input(side: Side) -> dict[str, Any]:
    query = side.meta.get("query")  # `--sql`: the query the engine ran, to run by hand
    return {
        **({"query": query} if isinstance(query, str) else {}),
        "source": side.source,
        "format": side.format,
        "schema": side.schema,
        "tool_version": side.tool_version,
        "percentile_method": side.percentile_method,
        "tool_percentiles": _tool_percentiles(side),
        # how each column of a native table was read (empty for a tool's own format)
        "columns": [
            {
                "column": plain(u.column, 120),
                "role": u.role,
                "target": u.target,
                "unit": u.unit,
                "unit_from": u.unit_from,
                "note": u.note,
            }
            for u in side.columns[:MAX_COLUMNS]
        ],
    }


def _tool_percentiles(side: Side) -> dict[str, Any] | None:
    """The tool's own percentiles of a per-request side (GuideLLM's), and how it takes them."""
    if not side.tool_percentiles:
        return None
    return {
        "by": side.meta.get("tool"),
        "method": side.meta.get("percentile_method"),
        "ms": {
            name: {numbers.given(q): _f(v) for q, v in values.items()}
            for name, values in side.tool_percentiles.items()
        },
    }


def _tool_ms(r: Row, c: Comparison) -> dict[str, float | None] | None:
    """A row's percentile as the tool itself took it, on each side whose file has one."""
    own = {
        name: side.tool_percentiles.get(r.name, {}).get(c.percentile) if side else None
        for name, side in (("base", c.base), ("head", c.head))
    }
    return {k: _f(v) for k, v in own.items()} if any(v is not None for v in own.values()) else None


def _common(r: Row) -> dict[str, Any]:
    return {
        "base_ms": _f(r.base_ms),
        "head_ms": _f(r.head_ms),
        "delta_ms": _f(r.delta_ms),
        "delta_pct": _f(r.delta_pct),
        "ci_ms": [_f(r.ci_ms[0]), _f(r.ci_ms[1])] if r.ci_ms else None,
        "head_ci_ms": [_f(r.head_ci_ms[0]), _f(r.head_ci_ms[1])] if r.head_ci_ms else None,
        "change": r.change,
        "p_value": _f(r.p_value, 6),
        "mde_pct": _f(r.mde_pct),
        "needed": r.needed,
        "paired": r.paired,
        "notes": list(r.notes),
        "family": r.family,
        "family_p_value": r.family_p_value,
        "family_test": r.family_test,
        "percentiles": {
            k: {"base_ms": _f(b), "head_ms": _f(h)} for k, (b, h) in r.percentiles.items()
        },
    }


def _slo(r: Row, c: Comparison) -> dict[str, Any]:
    return {
        "metric": r.name,
        "target_ms": _f(r.target_ms),
        **_common(r),
        "tool_ms": _tool_ms(r, c),
        "headroom_pct": _f(r.headroom_pct),
        "status": r.status,
        "doubt": r.doubt,
    }


def _slice(r: Row) -> dict[str, Any]:
    return {
        "name": r.name,
        "budget_ms": _f(r.target_ms),
        **_common(r),
        "over_budget": r.over_budget,
        "budget_use_pct": _f(r.budget_use_pct),
        "tail_share_pct": _f(r.tail_share_pct),
        "tail_change_ms": _f(r.tail_change_ms),
        "part_ms": _f(r.part_ms),
        "base_part_ms": _f(r.base_part_ms),
        "doubt": r.doubt,
    }


def _attainment(c: Comparison) -> dict[str, Any] | None:
    out = {}
    for name, side in (("base", c.base), ("head", c.head)):
        a = side.attainment if side is not None else None
        out[name] = (
            None
            if a is None
            else {
                "good": a.good,
                "requests": a.total,
                "pct": _f(a.pct),
                "ci_pct": [_f(a.ci_pct[0]), _f(a.ci_pct[1])],
                "effective_n": a.effective_n,
                "goodput_rps": _f(side.goodput_rps) if side is not None else None,
                "held_to": list(side.held_to) if side is not None else [],
            }
        )
    return out if any(out.values()) else None


def _f(x: float | None, digits: int = 3) -> float | None:
    if x is None or not math.isfinite(x):
        return None
    return round(float(x), digits)
