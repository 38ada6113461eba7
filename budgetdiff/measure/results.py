"""The result types every stage after the comparison reads: the rows and sides `rows` and
`aggregate` compute, the findings and the summary `judge` decides, and the words each may hold.

Only types live here, so a renderer reads results without importing the code that computes them.
A word the JSON report or `fail_on` spells is an enum member whose value is that word: adding a
finding kind is one line in `Kind`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Literal

from budgetdiff.table import ColumnUse

if TYPE_CHECKING:  # computed by the compute stage, which builds on these types
    from budgetdiff.measure.rebudget import Proposal
    from budgetdiff.measure.whatif import FixFirst
    from budgetdiff.stats import Attainment


class Word(str, Enum):
    """A word of the report: compares, hashes, prints and serializes as its value."""

    def __str__(self) -> str:
        return str(self.value)


class Kind(Word):
    """What a finding is about (`findings[].kind`, the names `fail_on` takes)."""

    NO_BASE = "no_base"
    SAME_INPUT = "same_input"
    SCENARIO_MISSING = "scenario_missing"
    BREACH = "breach"
    LOW_HEADROOM = "low_headroom"
    OVER_BUDGET = "over_budget"
    OVERALLOCATED = "overallocated"
    REGRESSION = "regression"
    FAILURE_RATE = "failure_rate"
    FAILURES = "failures"
    NOT_COMPARABLE = "not_comparable"
    MISSING_SLICE = "missing_slice"
    UNITS = "units"
    IMPOSSIBLE = "impossible"
    INCONCLUSIVE = "inconclusive"
    INFEASIBLE = "infeasible"
    UNMEASURED = "unmeasured"
    DRIFT = "drift"
    AGENT_STEPS = "agent_steps"  # tasks take more steps than budgeted or than the base
    BUDGET_CHANGE = "budget_change"  # the pull request changes its budget (issue 38)


class Verdict(Word):
    """A scenario's or a report's verdict, the mildest first."""

    PASS = "pass"
    WARN = "warn"
    FAIL = "fail"


class Status(Word):
    """Where an SLO row's head value stands against its target."""

    OK = "ok"
    LOW_HEADROOM = "low_headroom"
    BREACH = "breach"
    # computed from values a reader doubts (a column's unit, rows no request can have): neither
    # a pass nor a breach can be told; `Row.doubt` says why
    DOUBTFUL = "doubtful"


class Change(Word):
    """What the test of a row's change from base to head says."""

    REGRESSION = "regression"
    IMPROVEMENT = "improvement"
    NONE = "none"
    INCONCLUSIVE = "inconclusive"


class Unit(Word):
    """What one row of a run is, as the report counts and names it: a request to the server,
    or an agent's task (several steps, each a model call and a tool round trip; issue 28)."""

    REQUEST = "request"
    TASK = "task"

    @property
    def plural(self) -> str:
        return f"{self.value}s"


def unit_of(meta: Mapping[str, object]) -> Unit:
    """The unit a reader gave its run (`meta["unit"]`; agent readers say `task`)."""
    return Unit.TASK if meta.get("unit") == Unit.TASK.value else Unit.REQUEST


RowKind = Literal["slo", "slice"]

# Rows of the SLO table, in order, with how a reader should name them.
METRIC_LABELS = {
    "ttft": "TTFT",
    "total": "end to end",
    "itl": "ITL (token-weighted)",
    "tpot": "TPOT (request-weighted)",
    "max_stall": "longest stall per request",
}


@dataclass(frozen=True)
class Row:
    """One SLO metric or slice, at the budget percentile."""

    name: str
    kind: RowKind
    target_ms: float | None  # the SLO target, or the slice's budget
    base_ms: float | None
    head_ms: float | None
    delta_ms: float | None = None
    delta_pct: float | None = None
    ci_ms: tuple[float, float] | None = None
    change: Change | None = None  # None: no base, or no values to test
    p_value: float | None = None
    mde_pct: float | None = None
    needed: int | None = None
    paired: bool = False
    notes: tuple[str, ...] = ()
    # the family the row's change was tested in: "gate" (the rows the gate can fail on) or
    # "information" (tested among themselves); None when it was not compared
    family: str | None = None
    # the row's p-value adjusted over its family, and how the family was tested: "permutation"
    # (the step-down permuting whole requests) or "holm" (Holm's correction)
    family_p_value: float | None = None
    family_test: str | None = None
    percentiles: dict[str, tuple[float | None, float | None]] = field(default_factory=dict)
    headroom_pct: float | None = None
    status: Status | None = None  # slo rows; None without a target
    budget_use_pct: float | None = None
    over_budget: bool | None = None
    tail_share_pct: float | None = None
    tail_change_ms: float | None = None
    # why a side has no value where one was expected, in words (`p95 not in head.json: ...`)
    unmeasured: tuple[str, ...] = ()
    # the slice's part of the total's percentile (Euler allocation at the quantile): what its
    # budget is held against; the parts add up to the total's percentile
    part_ms: float | None = None
    base_part_ms: float | None = None
    # the head's own interval for its percentile (what a history of runs compares with)
    head_ci_ms: tuple[float, float] | None = None
    # from histograms: base and head fall in the same bucket, or the percentile is in the first
    # bucket, so the buckets are too coarse to tell a change (a note says which)
    coarse_buckets: bool = False
    # from histograms: the head's percentile is interpolated inside this bucket (lo, hi] ms,
    # which holds the SLO target, so pass and breach cannot be told (no status; `unmeasured`)
    target_in_bucket: tuple[float, float] | None = None
    # why the row's values are in doubt, briefly (`head: the unit of ttft_ms`): it shows no
    # pass mark (no headroom, no budget use), the doubt instead (`doubts.mark`)
    doubt: str | None = None

    @property
    def label(self) -> str:
        return METRIC_LABELS.get(self.name, self.name) if self.kind == "slo" else self.name


@dataclass(frozen=True)
class Side:
    """What the report says about one run as a whole."""

    source: str
    requests: int | None  # None: the file does not say how many requests ran
    failed: int
    attainment: Attainment | None
    meta: dict[str, str | float]
    goodput_rps: float | None = None  # good requests per second of benchmark time
    held_to: tuple[str, ...] = ()  # the SLO metrics `attainment` holds each request to
    columns: tuple[ColumnUse, ...] = ()  # how a native table's columns were read
    failed_known: bool = True  # False: the file does not say how many failed (`failed` is 0)
    # how this side's percentiles are taken: budgetdiff's of per-request values, else the file's
    percentile_method: str = "linear interpolation"
    # the tool's own percentiles of the same requests (`Run.tool_percentiles`), where it has them
    tool_percentiles: Mapping[str, Mapping[float, float]] = field(default_factory=dict)

    @property
    def format(self) -> str:
        """The reader that read this side (`aiperf`, `native`, ...; joined files: `a + b`)."""
        return str(self.meta.get("format", "unknown"))

    @property
    def schema(self) -> str:
        """Which schema (version) of the tool's file was read."""
        return str(self.meta.get("schema", "unknown"))

    @property
    def tool_version(self) -> str | None:
        value = self.meta.get("tool_version")
        return value if isinstance(value, str) else None

    @property
    def unit(self) -> Unit:
        """What `requests` counts: requests, or agent tasks."""
        return unit_of(self.meta)


@dataclass(frozen=True)
class Comparison:
    """Everything computed for one scenario; the findings come from `judge`."""

    name: str | None
    percentile: float
    base: Side | None
    head: Side
    slo: tuple[Row, ...]
    slices: tuple[Row, ...]
    headline: str | None  # the change of the total, split into the slices (attribution)
    rebudget: Proposal | None
    feasibility: tuple[str, ...]
    not_comparable: tuple[str, ...]
    paired: bool
    notes: tuple[str, ...]
    tpot_from: str | None = None  # what the TPOT row divides by (tokens - 1): see prepare
    attribution: str | None = None  # how the change of the total was split into the slices
    fix_first: tuple[FixFirst, ...] = ()  # each slice 10% faster, the best first
    agent: AgentSection | None = None  # agent tasks: steps, the step's parts (`agent`)

    @property
    def unit(self) -> Unit:
        """What the counts, attainment and pairing count: requests, or agent tasks."""
        return self.head.unit


@dataclass(frozen=True)
class Finding:
    kind: Kind
    subject: str
    fails: bool
    message: str
    accepted: bool = False  # a regression that would fail, accepted on purpose (a PR label)


@dataclass(frozen=True)
class Acceptance:
    """A pull request's label that accepts its regressions on purpose, and who set it."""

    label: str
    by: str  # `@login`, or how the label was found when the event does not say who set it


@dataclass(frozen=True, slots=True)
class Summary:
    """What the headline of every rendering says about one scenario, decided by `judge`: the
    SLO metric at risk and the cause to name. Renderers word it (`render.summary`); none
    decides it. (Not `Comparison.headline`, the attribution's sentence under the tables.)"""

    verdict: Verdict
    compared: bool  # there is a base: "no regression" can be said
    at_risk: Row | None  # a breach, else the least headroom, else the largest regression
    regressed: tuple[Row, ...]  # slices that regressed, the largest part of the change first
    over_budget: tuple[Row, ...]  # slices over their budget that did not regress
    regressed_slo: tuple[Row, ...]  # SLO rows that regressed, named when no slice is the cause
    no_base: bool  # the compare had no base to compare with
    also: tuple[Kind, ...]  # up to three other kinds found, named when no slice regressed
    # base and head ran different workloads: no change is named as the code's
    workloads: bool = False
    # the ms of the percentile in no slice, when that is a finding (named, not a slice)
    missing_ms: float | None = None
    unit: Unit = Unit.REQUEST  # what a kind's words count (`some tasks failed`)

    def __repr__(self) -> str:
        """One short line, the rows by name: `Summary(verdict=fail, at_risk=total,
        regressed=(decode,), ...)` (the rows themselves are in the Comparison)."""

        def rows(of: tuple[Row, ...]) -> str:
            return "(" + "".join(f"{r.name}," for r in of) + ")"

        said = {
            "verdict": self.verdict.value,
            "at_risk": self.at_risk.name if self.at_risk is not None else None,
            "regressed": rows(self.regressed),
            "over_budget": rows(self.over_budget),
            "regressed_slo": rows(self.regressed_slo),
            "also": "(" + "".join(f"{k.value}," for k in self.also) + ")",
            "no_base": self.no_base,
        }
        return "Summary(" + ", ".join(f"{k}={v}" for k, v in said.items()) + ")"

    @property
    def owners(self) -> tuple[Row, ...]:
        """The slices a reviewer should look at: those that regressed, else those over budget."""
        return self.regressed or self.over_budget


# ---- the agent section (issue 28): what `agent` computes from the tasks of both sides ----

# How an agent row is named among the SLO metrics and slices; a tool's row is `tool NAME`
AGENT_LABELS = {
    "steps": "steps per task",
    "step": "step round trip",
    "model": "step model",
    "tool": "step tool",
    "between": "step between",
}


@dataclass(frozen=True)
class AgentRow:
    """Steps per task, the step round trip, one of its parts, or one tool's calls, at the
    budget's percentile (`unit`: steps, or ms)."""

    name: str  # steps, step, model, tool, between, or `tool NAME`
    unit: Literal["steps", "ms"]
    target: float | None  # agent.steps, agent.step, agent.model, ...
    base: float | None
    head: float | None
    count: tuple[int | None, int]  # values (tasks or steps) behind base and head
    delta: float | None = None
    delta_pct: float | None = None
    ci: tuple[float, float] | None = None
    change: Change | None = None  # None: no base
    p_value: float | None = None
    notes: tuple[str, ...] = ()
    # the steps row: p50 and max per side (base, head), beside the percentile
    p50: tuple[float | None, float | None] = (None, None)
    max: tuple[float | None, float | None] = (None, None)
    # the head's own interval for its percentile (what a history of runs compares with)
    head_ci: tuple[float, float] | None = None

    @property
    def label(self) -> str:
        """The row's name beside the SLO metrics and slices (a history's trends)."""
        return AGENT_LABELS.get(self.name, self.name)

    @property
    def over_budget(self) -> bool:
        return self.target is not None and self.head is not None and self.head > self.target

    @property
    def tool(self) -> str | None:
        """The tool a per-tool row is about."""
        return self.name.removeprefix("tool ") if self.name.startswith("tool ") else None


@dataclass(frozen=True)
class StepSplit:
    """The change of the task's percentile, base to head, split in two factors: the task's
    percentile taken as S x r + rest (S the percentile of steps per task, r the mean step round
    trip), the change of S x r split between them by Shapley (each factor's change times the
    other's mean of base and head). The parts add up to the change:
    change_ms = more_steps_ms + slower_steps_ms + rest_ms, slower_steps_ms = sum(parts_ms)."""

    base_ms: float
    head_ms: float
    change_ms: float
    more_steps_ms: float
    slower_steps_ms: float
    parts_ms: dict[str, float]  # slower_steps_ms by part: model, tool, between
    rest_ms: float  # answers, time outside the steps, and the tail's own shape
    steps: tuple[float, float]  # S of base and head
    step_ms: tuple[float, float]  # r of base and head


@dataclass(frozen=True)
class AgentSection:
    """The agent section of one comparison: tasks, their steps, the round trip and its parts,
    per-tool rows when several tools are used, and the split of the task's change."""

    percentile: float
    tasks: tuple[int | None, int]  # succeeded tasks of base and head
    answers: tuple[float | None, float]  # mean model calls without a tool per task
    steps: AgentRow
    step: AgentRow
    parts: tuple[AgentRow, ...]  # model, tool, between
    tools: tuple[AgentRow, ...]  # one per tool, when several are used
    split: StepSplit | None  # with a base
    sentence: str | None  # `task p95 +640 ms: 7 steps instead of 5 (+560 ms)`
    planned_ms: float | None  # agent.steps x agent.step, when both are set
    tools_left_out: int = 0  # tools without a row (only the most used get one)
    calls_outside: tuple[int, int] = (0, 0)  # traces' model/tool calls in no task (base, head)

    @property
    def rows(self) -> tuple[AgentRow, ...]:
        return (self.steps, self.step, *self.parts, *self.tools)
