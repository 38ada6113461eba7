"""The headline in words: the sentence every rendering puts first, worded from the `Summary`
the judge decided, with the escape of the rendering that shows it."""

from __future__ import annotations

from typing import Protocol

from budgetdiff.measure.results import Change, Kind, Row, Status, Summary, Unit, Verdict
from budgetdiff.numbers import ms, pct, percentile, signed_ms

# A finding's kind as a reader says it; a kind not named here is said as its name. `{units}`
# and `{unit}`: what the run counts (`requests`, or an agent's `tasks`)
KIND_WORDS = {
    Kind.NO_BASE: "no base results",
    Kind.SAME_INPUT: "base and head are the same file",
    Kind.BREACH: "SLO breached",
    Kind.LOW_HEADROOM: "low headroom",
    Kind.OVER_BUDGET: "over budget",
    Kind.OVERALLOCATED: "slice budgets over the SLO",
    Kind.REGRESSION: "regression",
    Kind.FAILURE_RATE: "more {units} failed",
    Kind.FAILURES: "some {units} failed",
    Kind.NOT_COMPARABLE: "different workloads",
    Kind.MISSING_SLICE: "time in no slice",
    Kind.UNITS: "a column's unit looks wrong",
    Kind.IMPOSSIBLE: "rows no {unit} can have",
    Kind.INCONCLUSIVE: "too few {units} to tell",
    Kind.INFEASIBLE: "SLO not reachable",
    Kind.UNMEASURED: "a target not measured",
    Kind.SCENARIO_MISSING: "a scenario not run",
    Kind.BUDGET_CHANGE: "budget change",
}


# Kinds said beside a cause, not as one: a failed request is left out of every percentile, so
# failures never cause a breach or a slice over its budget (they are a finding of their own)
# (nor is a change of the budget: it changes the target, not the latency)
_NOT_A_CAUSE = frozenset({Kind.FAILURES, Kind.FAILURE_RATE, Kind.BUDGET_CHANGE})


def kind_words(kind: Kind, unit: Unit = Unit.REQUEST) -> str:
    words = KIND_WORDS.get(kind, kind.replace("_", " "))
    return words.format(unit=unit.value, units=unit.plural)


class Escape(Protocol):
    """How a rendering makes a name from the input safe to show (`text.md`, `text.plain`)."""

    def __call__(self, text: str, limit: int | None = ..., /) -> str: ...


def verbatim(text: str, limit: int | None = None, /) -> str:
    """For JSON: the name as it is (the encoder escapes it), never cut."""
    return text


def sentence(h: Summary, p: float, say: Escape) -> str:
    """`End to end p95 +1,082 ms (+24%), 6.7% headroom left: decode regressed`."""
    parts = (_at_risk(h.at_risk, percentile(p), say, h.workloads), cause(h, say))
    return ": ".join(x for x in parts if x) or "evaluated"


def _at_risk(row: Row | None, p: str, say: Escape, workloads: bool) -> str:
    if row is None:
        return ""
    if row.status == Status.BREACH:
        over = (row.head_ms or 0) - (row.target_ms or 0)
        return f"{_capital(say(row.label))} {p} {ms(row.head_ms)}, over its target by {ms(over)}"
    if row.status == Status.DOUBTFUL:
        return f"{_capital(say(row.label))} {p} {ms(row.head_ms)}, in doubt"
    change = (
        f"{signed_ms(row.delta_ms)} ({pct(row.delta_pct, 0, signed=True)})"
        if row.change == Change.REGRESSION and row.delta_ms is not None and not workloads
        else ms(row.head_ms)
    )
    return f"{_capital(say(row.label))} {p} {change}, {pct(row.headroom_pct)} headroom left"


def cause(h: Summary, say: Escape) -> str:
    """Why, in words: the slices that regressed or went over budget, or the findings' kinds.
    A regressed slice is said with its part of the end to end's change, the one number the
    finding and the slice table give it too; failures found beside a cause are said as `also`,
    not as a cause."""
    if h.verdict == Verdict.PASS:
        return "no regression, every SLO holds" if h.compared else "every SLO holds"
    parts = [KIND_WORDS[Kind.NO_BASE]] if h.no_base else []
    if h.workloads:
        parts.append("base and head ran different workloads")
    if h.missing_ms is not None:
        parts.append(f"{ms(h.missing_ms)} of it in no slice")
    if h.regressed:
        parts.append(f"{names(h.regressed, say)} regressed{_parts_of_change(h.regressed)}")
    if h.over_budget:
        parts.append(f"{names(h.over_budget, say)} over budget")
    if not h.regressed and not h.over_budget and h.regressed_slo:
        parts.append(f"{', '.join(say(r.label) for r in h.regressed_slo)} regressed")
    parts += [kind_words(k, h.unit) for k in h.also if k not in _NOT_A_CAUSE]
    aside = [kind_words(k, h.unit) for k in h.also if k in _NOT_A_CAUSE]
    if parts and aside:  # failed requests are not in the percentiles: never their cause
        return f"{', '.join(parts)} (also: {', '.join(aside)})"
    return ", ".join(parts + aside)


def _parts_of_change(rows: tuple[Row, ...]) -> str:
    """` (+1,099 ms of the end to end's change)`: each regressed slice's part of it, where the
    change was split into the slices (`Row.tail_change_ms`); nothing where it was not."""
    shown = rows if len(rows) <= 3 else rows[:2]
    if any(r.tail_change_ms is None for r in shown):
        return ""
    amounts = [signed_ms(r.tail_change_ms) for r in shown]
    said = amounts[0] if len(amounts) == 1 else ", ".join(amounts[:-1]) + " and " + amounts[-1]
    return f" ({said} of the end to end's change)"


def names(rows: tuple[Row, ...], say: Escape) -> str:
    """`decode`, `decode and queue`, `a, b and 3 more`."""
    words = [say(r.label, 40) for r in rows]
    if len(words) > 3:
        words = [*words[:2], f"{len(words) - 2} more"]
    return " and ".join(words) if len(words) <= 2 else ", ".join(words[:-1]) + " and " + words[-1]


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]
