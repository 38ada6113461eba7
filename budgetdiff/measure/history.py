"""A history of runs (JSON Lines of budgetdiff JSON reports) against the current one: the trend
of every SLO metric and slice (and agent row: steps per task, the step round trip, its parts,
each tool), the change points, and the drift since the budget last changed.

Everything in a history file is attacker-controlled (a PR may have written it, or a hostile
branch): every line is parsed into typed values here, and a line that is not a budgetdiff
report, or holds values no run could have, is skipped with a warning, never trusted. Computes
only: bytes and values in, values out; the CLI reads the file.
"""

from __future__ import annotations

import itertools
import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np

from budgetdiff import numbers, stats
from budgetdiff.budget.model import Budget, Regression
from budgetdiff.measure.agent import STEP_FLOOR
from budgetdiff.measure.results import AGENT_LABELS, METRIC_LABELS, AgentRow, Comparison, Row
from budgetdiff.measure.rows import PER_TOKEN
from budgetdiff.stats import changepoint, cusum
from budgetdiff.table import FloatArray

# The kind of a trend's row: an SLO metric, a slice, or an agent row (`agent.rows` of a report)
TrendKind = Literal["slo", "slice", "agent"]
ValueUnit = Literal["ms", "steps"]  # an agent's steps per task is a count of steps, not a duration
# each kind of row in a report's JSON: (kind, list key, name key, target key, head key, its
# interval's key); the agent's rows are `agent.rows`
_SECTIONS: tuple[tuple[TrendKind, str, str, str, str, str], ...] = (
    ("slo", "slo", "metric", "target_ms", "head_ms", "head_ci_ms"),
    ("slice", "slices", "name", "budget_ms", "head_ms", "head_ci_ms"),
    ("agent", "rows", "name", "target", "head", "head_ci"),
)
MAX_BYTES = 64 * 1024**2  # the whole history file
MAX_LINE = 1024**2  # one report
MAX_RUNS = 5000  # the newest runs read; the Action's store keeps 500
CHANGEPOINT_RUNS = 100  # change points are searched among the newest runs of the window
SPARK_RUNS = 20  # runs drawn in the comment's sparkline
MAX_WARNINGS = 5  # skipped lines named one by one; the rest counted
_SCHEMA = "budgetdiff.report/v1"
_COMMIT = re.compile(r"[0-9a-fA-F]{7,40}")
MAX_NAME = 200  # characters of a row or scenario name
_BARS = "▁▂▃▄▅▆▇█"


@dataclass(frozen=True)
class Point:
    """One run's value of one row: its percentile and its own interval (ms, or steps)."""

    head: float
    ci: tuple[float, float] | None
    unit: ValueUnit = "ms"


@dataclass(frozen=True)
class Entry:
    """One run of the history, as far as it could be trusted."""

    line: int
    commit: str | None
    scenario: str | None
    percentile: float
    targets: tuple[tuple[TrendKind, str, float | None], ...]  # (kind, name, target): the budget
    points: dict[tuple[TrendKind, str], Point]  # (kind, name) -> value

    @property
    def label(self) -> str:
        return f"run {self.line}" + (f" ({self.commit[:7]})" if self.commit else "")


@dataclass(frozen=True)
class Loaded:
    entries: tuple[Entry, ...]
    warnings: tuple[str, ...]
    link: str | None = None  # where the trend page of this run will be


@dataclass(frozen=True)
class Current:
    """A row of the current run, as a trend holds it: an SLO metric, a slice or an agent row."""

    kind: TrendKind
    name: str
    label: str
    target: float | None
    head: float
    head_ci: tuple[float, float] | None
    unit: ValueUnit = "ms"

    @classmethod
    def of(cls, r: Row | AgentRow) -> Current | None:
        """None: the row has no head value."""
        if isinstance(r, AgentRow):
            if r.head is None:
                return None
            return cls("agent", r.name, r.label, r.target, r.head, r.head_ci, r.unit)
        if r.head_ms is None or r.doubt is not None:  # a value in doubt is no point of a trend
            return None
        return cls(r.kind, r.name, r.label, r.target_ms, r.head_ms, r.head_ci_ms)


@dataclass(frozen=True)
class Trend:
    """One SLO metric, slice or agent row over the history, with the head as its last point.
    Its values, target and reference are in `unit`: ms, or (steps per task) steps."""

    kind: TrendKind
    name: str
    label: str
    target: float | None
    runs: tuple[Entry, ...]  # the window: since the budget last changed
    values: tuple[float, ...]  # the window's values, then the head's
    change_points: tuple[int, ...]  # indices into values where the level changed (E-divisive)
    reference: float | None  # the level before the current rise: the mean of its first runs
    reference_runs: int  # how many runs that level is the mean of
    change_pct: float | None  # head vs reference
    z: float | None
    p_value: float | None  # one-sided, head vs reference (information: the CUSUM decides)
    steps_below: bool  # every step from run to run below regression.min_change
    slower_since: str | None  # a drift's: where its rise began; else the first higher level
    drift: bool = False
    unit: ValueUnit = "ms"
    change_ci: tuple[float, float] | None = None  # change_pct's interval at the confidence
    rise: float | None = None  # the CUSUM at the head (stats/cusum.py); None: not tested
    rise_since: str | None = None  # the first run of the current rise
    threshold: float | None = None  # the CUSUM's threshold over this report's rows

    @property
    def cumulative_pct(self) -> float | None:
        """The head against the first run since the budget last changed."""
        first = self.values[0]
        return 100 * (self.values[-1] - first) / first if len(self.values) > 1 and first else None

    @property
    def subject(self) -> str:
        """What its `drift` finding is about: the row's name (`agent.step` for an agent row)."""
        return f"agent.{self.name}" if self.kind == "agent" else self.name

    @property
    def sparkline(self) -> str:
        return sparkline(self.values[-SPARK_RUNS:])


@dataclass(frozen=True)
class History:
    trends: tuple[Trend, ...]
    runs: int  # runs in the file (after skipped lines)
    window: int  # runs since the budget last changed
    warnings: tuple[str, ...]
    budget_changed: bool  # the current budget is not the one of the newest run
    link: str | None = None  # where the trend page is (the Action's artifact)


# ---- reading ----------------------------------------------------------------------------------


def parse(data: bytes, source: str, link: str | None = None) -> Loaded:
    """The trusted part of each line; a line that is not a report is a warning, not an error."""
    entries: list[Entry] = []
    skipped: list[str] = []
    lines = data.split(b"\n")
    first = max(0, len(lines) - MAX_RUNS - 1)
    if first:
        skipped.append(f"{source}: only the newest {numbers.count(MAX_RUNS)} runs are read")
    for number, raw in enumerate(lines[first:], first + 1):
        if not raw.strip():
            continue
        try:
            entries += _entries(raw, number)
        except _Skip as e:
            skipped.append(f"{source}: line {number}: skipped ({e})")
    shown = skipped[:MAX_WARNINGS]
    if len(skipped) > MAX_WARNINGS:
        shown.append(f"{source}: {len(skipped) - MAX_WARNINGS} more line(s) skipped")
    return Loaded(tuple(entries), tuple(shown), link)


class _Skip(Exception):
    """A history line that is not a report this program can trust."""


def _entries(raw: bytes, number: int) -> list[Entry]:
    """One entry per scenario of the line's report."""
    if len(raw) > MAX_LINE:
        raise _Skip(
            f"{numbers.count(len(raw))} bytes, over the {numbers.count(MAX_LINE)}-byte limit "
            "for one report"
        )
    try:
        doc = json.loads(raw)
    except (ValueError, RecursionError):
        raise _Skip("not JSON: one budgetdiff JSON report per line") from None
    if not isinstance(doc, dict) or doc.get("schema") != _SCHEMA:
        raise _Skip(f'not a budgetdiff JSON report (no "schema": "{_SCHEMA}")')
    commit = doc.get("commit")
    if commit is not None and not (isinstance(commit, str) and _COMMIT.fullmatch(commit)):
        raise _Skip("`commit` is not a commit hash")
    parts = doc.get("scenarios")
    if isinstance(parts, list) and 1 < len(parts) <= 256:
        return [_entry(part, number, commit) for part in parts]
    return [_entry(doc, number, commit)]


def _entry(doc: object, number: int, commit: str | None) -> Entry:
    if not isinstance(doc, dict):
        raise _Skip("`scenarios` must be a list of reports")
    scenario = doc.get("name")
    if scenario is not None and not (isinstance(scenario, str) and len(scenario) <= MAX_NAME):
        raise _Skip("`name` is not a scenario name")
    percentile = _number(doc.get("percentile"), "percentile")
    if percentile is None or not 0 < percentile < 100:
        raise _Skip("`percentile` must be a number between 0 and 100")
    targets: list[tuple[TrendKind, str, float | None]] = []
    points: dict[tuple[TrendKind, str], Point] = {}
    agent = doc.get("agent")  # null in a report without agent tasks
    if agent is not None and not isinstance(agent, dict):
        raise _Skip("`agent` must be an object")
    for kind, key, name_key, target_key, head_key, ci_key in _SECTIONS:
        section = doc if kind != "agent" else agent
        if section is None:
            continue
        where = key if kind != "agent" else f"agent.{key}"
        rows = section.get(key)
        if not isinstance(rows, list) or len(rows) > 256:
            raise _Skip(f"`{where}` must be a list of rows")
        for i, row in enumerate(rows):
            if not isinstance(row, dict):
                raise _Skip(f"`{where}` must be a list of rows")
            # a name is only ever matched against the current report's rows, never shown
            name = row.get(name_key)
            if not isinstance(name, str) or not 0 < len(name) <= MAX_NAME:
                raise _Skip(f"`{where}[{i}].{name_key}` is not a name")
            at = f"{where}[{i}]"
            unit: ValueUnit = "steps" if kind == "agent" and row.get("unit") == "steps" else "ms"
            target = _number(row.get(target_key), f"{at}.{target_key}", unit)
            targets.append((kind, name, target))
            head = _number(row.get(head_key), f"{at}.{head_key}", unit)
            if head is None or row.get("doubt"):  # a value in doubt is no point of a trend
                continue
            ci = row.get(ci_key)
            interval = None
            if isinstance(ci, list) and len(ci) == 2:
                low, high = (_number(v, f"{at}.{ci_key}", unit) for v in ci)
                if low is not None and high is not None and low <= head <= high:
                    interval = (low, high)
            points[(kind, name)] = Point(head, interval, unit)
    return Entry(number, commit, scenario, percentile, tuple(sorted(targets)), points)


def _number(value: object, where: str, unit: ValueUnit = "ms") -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _Skip(f"`{where}` is not a number")
    x = float(value)
    if not math.isfinite(x) or x < 0 or x > 1e9:
        what = "a duration in ms" if unit == "ms" else "a count of steps"
        raise _Skip(f"`{where}` is {numbers.given(x)}: not {what}")
    return x


# ---- against the current run --------------------------------------------------------------------


def analyse(loaded: Loaded, c: Comparison, budget: Budget) -> History:
    """Trends of the current rows over the runs since the budget last changed, and the drift."""
    agent: tuple[AgentRow, ...] = c.agent.rows if c.agent is not None else ()
    shown: list[Row | AgentRow] = [*c.slo, *c.slices, *agent]
    rows = [x for x in (Current.of(r) for r in shown) if x is not None]
    return _analyse(loaded, rows, c.name, c.percentile, budget.regression)


def latest(loaded: Loaded, regression: Regression) -> History | None:
    """The history's newest run as the current one (`budgetdiff history FILE`)."""
    if not loaded.entries:
        return None
    last = loaded.entries[-1]
    earlier = Loaded(tuple(e for e in loaded.entries if e.line != last.line), loaded.warnings)
    targets = {(k, n): t for k, n, t in last.targets}
    rows = [
        Current(kind, name, _label(kind, name), targets.get((kind, name)), p.head, p.ci, p.unit)
        for (kind, name), p in last.points.items()
    ]
    order = {"slo": 0, "slice": 1, "agent": 2}
    rows.sort(key=lambda r: order[r.kind])  # the SLO metrics first, as in the report
    return _analyse(earlier, rows, last.scenario, last.percentile, regression)


def _label(kind: TrendKind, name: str) -> str:
    """A row's label from its kind and name, as the report would say it."""
    labels = {"slo": METRIC_LABELS, "agent": AGENT_LABELS}.get(kind, {})
    return labels.get(name, name)


def _analyse(
    loaded: Loaded,
    rows: list[Current],
    scenario: str | None,
    percentile: float,
    regression: Regression,
) -> History:
    key = (percentile, _targets(tuple(sorted((r.kind, r.name, r.target) for r in rows))))
    window: list[Entry] = []
    for entry in reversed(loaded.entries):
        if entry.scenario != scenario:
            continue
        if (entry.percentile, _targets(entry.targets)) != key:
            break
        window.append(entry)
    window.reverse()
    trends = [_trend(r, window, regression) for r in rows]
    tested = [i for i, t in enumerate(trends) if t.rise is not None]
    out = list(trends)
    if tested:  # the chance of a false drift on any row, over the life of the history
        h = cusum.threshold((1 - regression.confidence) / len(tested))
        for i in tested:
            t = trends[i]
            drift = t.rise is not None and t.rise > h and _large(t, regression)
            since = t.rise_since if drift else t.slower_since
            out[i] = replace(t, threshold=h, drift=drift, slower_since=since)
    return History(
        tuple(out),
        len({e.line for e in loaded.entries}),
        len(window),
        loaded.warnings,
        bool(loaded.entries) and not window,
        loaded.link,
    )


def _large(t: Trend, regression: Regression) -> bool:
    """The head above the reference by more than `min_change` and `min_ms` (the agent's step
    floor for a count of steps, none for a per-token metric), as a regression must be."""
    floor = 0.0 if t.kind == "slo" and t.name in PER_TOKEN else regression.min_ms
    if t.unit == "steps":
        floor = STEP_FLOOR  # as the agent's rows are held base vs head
    return (
        t.change_pct is not None
        and t.reference is not None
        and t.change_pct > 100 * regression.min_change
        and t.values[-1] - t.reference > floor
    )


def _targets(
    targets: Sequence[tuple[TrendKind, str, float | None]],
) -> tuple[tuple[TrendKind, str, float], ...]:
    """The budget's part: rows with a target (a row the data lacks or gains is not a change)."""
    return tuple((k, n, t) for k, n, t in targets if t is not None)


def _trend(r: Current, window: list[Entry], regression: Regression) -> Trend:
    runs = [e for e in window if (r.kind, r.name) in e.points]
    points = [e.points[(r.kind, r.name)] for e in runs]
    values = [p.head for p in points] + [r.head]
    recent = max(0, len(values) - CHANGEPOINT_RUNS)
    found = [recent + i for i in changepoint.change_points(np.array(values[recent:]))]
    errors = [_se(p.ci, regression.confidence) for p in points]
    errors.append(_se(r.head_ci, regression.confidence))
    ses = None if None in errors else np.array(errors, dtype=float)
    rise = cusum.rise(np.array(values), ses) if ses is not None else None
    # the level before the current rise: every run before the head when there is none
    end = rise.start if rise is not None and rise.start is not None else len(values) - 1
    level = _Level.of(values, ses, end, regression.confidence)
    steps = [abs(b - a) / a for a, b in itertools.pairwise(values) if a > 0]
    return Trend(
        kind=r.kind,
        name=r.name,
        label=r.label,
        target=r.target,
        runs=tuple(runs),
        values=tuple(values),
        change_points=tuple(found),
        reference=level.reference,
        reference_runs=end,
        change_pct=level.change_pct,
        z=level.z,
        p_value=level.p_value,
        steps_below=bool(steps) and max(steps) < regression.min_change,
        slower_since=_slower(values, found, runs),
        unit=r.unit,
        change_ci=level.ci,
        rise=rise.statistic if rise is not None else None,
        rise_since=_run_label(runs, end) if rise is not None and rise.start is not None else None,
    )


@dataclass(frozen=True)
class _Level:
    """The head against the mean of the runs before the current rise (the reference)."""

    reference: float | None
    change_pct: float | None
    z: float | None = None
    p_value: float | None = None
    ci: tuple[float, float] | None = None  # of change_pct

    @classmethod
    def of(cls, values: list[float], ses: FloatArray | None, end: int, confidence: float) -> _Level:
        """With each run's standard error, the head's change has a z, a one-sided p-value and an
        interval: the variance of the head and of the reference's mean, each with the spread
        between runs that their own errors do not explain (`cusum.between_runs`)."""
        if not end:
            return cls(None, None)
        before = np.array(values[:end])
        ref = float(before.mean())
        head = values[-1]
        change_pct = 100 * (head - ref) / ref if ref else None
        if ses is None or not ref:
            return cls(ref, change_pct)
        tau2 = cusum.between_runs(before, ses[:end])
        var = float(ses[-1] ** 2 + tau2 + (np.mean(ses[:end] ** 2) + tau2) / end)
        if var <= 0:
            return cls(ref, change_pct)
        se = math.sqrt(var)
        half = stats.normal_quantile((1 + confidence) / 2) * se
        ci = (100 * (head - ref - half) / ref, 100 * (head - ref + half) / ref)
        z = (head - ref) / se
        return cls(ref, change_pct, z, 1 - stats.normal_cdf(z), ci)  # only worse is drift


def _slower(values: list[float], found: list[int], runs: list[Entry]) -> str | None:
    """The first run of the first level (between change points) above the one before it."""
    for n, i in enumerate(found):
        after = values[i : found[n + 1] if n + 1 < len(found) else None]
        if np.mean(after) > np.mean(values[max(0, i - changepoint.MIN_SEGMENT) : i]):
            return _run_label(runs, i)
    return None


def _run_label(runs: list[Entry], i: int) -> str:
    return runs[i].label if i < len(runs) else "this run"


def _se(ci: tuple[float, float] | None, confidence: float) -> float | None:
    """A run's standard error back from its own interval (the Student-t width is close enough
    to the normal one at the sizes a benchmark has)."""
    if ci is None:
        return None
    return (ci[1] - ci[0]) / (2 * stats.normal_quantile((1 + confidence) / 2))


def sparkline(values: Sequence[float]) -> str:
    """▁▂▃▅▇: each value's place between the smallest and the largest."""
    if not values:
        return ""
    low, high = min(values), max(values)
    if high - low <= 1e-9 * max(abs(high), 1.0):
        return _BARS[3] * len(values)
    return "".join(_BARS[min(7, int(8 * (v - low) / (high - low)))] for v in values)
