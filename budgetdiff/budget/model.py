"""The budget file as pydantic models (frozen, unknown keys refused): what people write that a
plain type does not take (a number in quotes, a percentage, `decode: 4200`) is a validator, and
`budgetdiff schema` is the models' JSON Schema. `budget_file` reads the YAML with each key's
line; `budget_problems` says every problem of a budget at once, one line each."""

from __future__ import annotations

import difflib
import re
import unicodedata
from collections.abc import Iterator, Mapping
from typing import Annotated, Any, Literal, Union

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, model_validator
from pydantic.json_schema import GenerateJsonSchema
from pydantic_core import PydanticCustomError, core_schema

from budgetdiff.numbers import given, setting_pct
from budgetdiff.table import KNOWN_SLICES, MAX_MS, UNATTRIBUTED

FailKind = Literal[
    "breach",
    "regression",
    "low_headroom",
    "over_budget",
    "overallocated",
    "no_base",
    "unmeasured",
    "drift",
    "agent_steps",
]
FAIL_KINDS: tuple[str, ...] = FailKind.__args__  # type: ignore[attr-defined]
Unit = Literal["ms", "s", "us"]
UNITS: tuple[str, ...] = Unit.__args__  # type: ignore[attr-defined]
_DEFAULT_FAIL_ON: tuple[FailKind, ...] = ("breach", "regression")
# The SLO table's rows, by the names `regression.metrics` uses (the slices are the budget's).
METRICS = ("ttft", "total", "itl", "tpot", "max_stall")
# A number may be written in quotes (`budget: '800'`, kept as written by `rebudget --write`).
_QUOTED_NUMBER = r"^\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*$"
_PERCENT = re.compile(r"^\s*(-?\d+(?:\.\d+)?)\s*%\s*$")
# The schema's view of a percentage: 0% to under 100%, which a pattern can say.
_PERCENT_SCHEMA = r"^\s*0*\d{1,2}(\.\d+)?\s*%\s*$"
Loc = tuple[str, ...]


# ---- what a user may write, beyond a plain type ----------------------------------------------


def _number(value: object) -> object:
    """A number written in quotes, as a number; anything else as it is (pydantic judges it)."""
    if isinstance(value, str) and re.match(_QUOTED_NUMBER, value):
        return float(value)
    return value


def _share(value: object) -> float:
    """'10%' (or a fraction from 0 to under 1) as the fraction."""
    m = _PERCENT.match(value) if isinstance(value, str) else None
    share = float(m.group(1)) / 100 if m else _number(value)
    if isinstance(share, bool) or not isinstance(share, int | float):
        raise PydanticCustomError("percentage", "write a percentage such as '10%'")
    if m and (not 0 <= share < 1 or m.group(1).startswith("-")):
        raise PydanticCustomError(
            "percentage_range",
            "write a percentage from 0% to under 100%, not {given}",
            {"given": setting_pct(share)},
        )
    if not 0 <= share < 1:
        raise PydanticCustomError(
            "fraction_range",
            "write {value}% (with the % sign) or a fraction from 0 to under 1",
            {"value": given(share) if isinstance(share, float) else share},
        )
    return float(share)


def _version(value: object) -> object:
    if isinstance(value, bool) or not isinstance(value, int | float) or value != 1:
        raise PydanticCustomError("version", "must be 1 (the only version of the budget file)")
    return 1


def _short_slice(value: object) -> object:
    """`decode: 4200` means `decode: {budget: 4200}`."""
    if isinstance(value, Mapping | Slice):
        return value
    number = _number(value)
    if isinstance(number, int | float) and not isinstance(number, bool):
        return {"budget": value}
    raise PydanticCustomError("slice_form", "write the slice's budget in milliseconds")


_Quoted = BeforeValidator(_number)
_Finite = {"strict": True, "allow_inf_nan": False}
Ms = Annotated[float, Field(gt=0, le=MAX_MS, **_Finite), _Quoted]  # at most a day
_ShareInput = Union[  # noqa: UP007 (a runtime type expression on Python 3.10)
    Annotated[float, Field(ge=0, lt=1)], Annotated[str, Field(pattern=_PERCENT_SCHEMA)]
]
Share = Annotated[float, BeforeValidator(_share, json_schema_input_type=_ShareInput)]
# A slice's or a class's name is printed in step outputs, annotations, the comment and the
# terminal, so it is one line of visible text (issue 35): no control character (newline, tab,
# ESC, BEL), no invisible format character (the bidi controls such as U+202E, zero-width
# characters), no line or paragraph separator, no space at either end. Markup and shell
# characters are allowed: every output escapes them (render/text.py, github/actions.py).
NAME_RULE = (
    "visible text: no control character (newline, tab, ESC, BEL), no invisible format "
    "character (bidi controls such as U+202E, zero-width characters), no space at either end"
)
_HIDDEN = ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp")


def _identifier(name: str) -> str:
    hidden = any(unicodedata.category(c) in _HIDDEN for c in name)
    if hidden or name != name.strip():
        raise PydanticCustomError("name", "a name is " + NAME_RULE)
    return name


Name = Annotated[str, Field(min_length=1, max_length=100), AfterValidator(_identifier)]


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Slice(_Section):
    """One slice of the budget, long form. The short form `decode: 4200` means `budget: 4200`."""

    budget: Ms = Field(description="milliseconds this slice may take at `percentile`")
    column: str | None = Field(default=None, description="input column (default: the name)")
    unit: Unit | None = Field(default=None, description="`column`'s unit (default: suffix, or ms)")


_SliceInput = Union[Ms, Slice]  # noqa: UP007 (as _ShareInput)
Slices = dict[
    Name, Annotated[Slice, BeforeValidator(_short_slice, json_schema_input_type=_SliceInput)]
]


class Slo(_Section):
    """The SLO's targets, each in milliseconds at `percentile`."""

    ttft: Ms | None = Field(default=None, description="time to first token, ms")
    total: Ms | None = Field(default=None, description="end to end, ms")
    itl: Ms | None = Field(default=None, description="inter-token latency per token, ms")
    tpot: Ms | None = Field(default=None, description="time per output token per request, ms")

    def targets(self) -> dict[str, float]:
        return {k: v for k in type(self).model_fields if (v := getattr(self, k)) is not None}


class Regression(_Section):
    """When a change counts as a regression."""

    min_change: Share = Field(default=0.05, description="a smaller relative change never counts")
    min_ms: Annotated[float, Field(ge=0, le=MAX_MS, **_Finite), _Quoted] = Field(
        default=5.0, description="nor a smaller absolute one, ms"
    )
    confidence: Annotated[float, Field(gt=0.5, lt=1, **_Finite), _Quoted] = 0.95
    metrics: list[str] | None = Field(
        default=None,
        description="the rows whose regression may fail the gate: SLO metrics ("
        + ", ".join(METRICS)
        + ") and slices (default: every SLO metric with a target and every slice with a "
        "budget; the other rows are information)",
    )


class Agent(_Section):
    """An agent loop: a task takes `steps` tool round trips of `step` ms each, at `percentile`
    (the task itself, end to end, is `slo.total`). A step is one model call that asks for a
    tool and that tool call; `model`, `tool` and `between` budget its parts."""

    steps: Annotated[int, Field(ge=1, le=10_000, strict=True)] | None = Field(
        default=None, description="tool round trips a task is budgeted for"
    )
    step: Ms | None = Field(default=None, description="ms per tool round trip")
    model: Ms | None = Field(default=None, description="ms of a step's model call")
    tool: Ms | None = Field(default=None, description="ms of a step's tool call(s)")
    between: Ms | None = Field(
        default=None, description="ms of a step outside its model and tool calls"
    )

    def parts(self) -> dict[str, float]:
        """The step's parts that have a budget, by name."""
        named = {"model": self.model, "tool": self.tool, "between": self.between}
        return {k: v for k, v in named.items() if v is not None}


class TrafficClass(_Section):
    """One class of traffic, the scenario of that name: each section it gives replaces the top
    level's whole; what it leaves out is the top level's."""

    slo: Slo | None = Field(default=None, description="in place of the top level's `slo`")
    slices: Slices | None = Field(default=None, description="in place of the top level's")
    first_token_after: str | None = Field(default=None, description="in place of the top's")


# A Prometheus metric name (the histogram family, without `_bucket`)
_FAMILY = r"^[a-zA-Z_:][a-zA-Z0-9_:]*$"
Family = Annotated[str, Field(min_length=1, max_length=200, pattern=_FAMILY)]


class Prometheus(_Section):
    """What `--prometheus` reads besides vLLM's and SGLang's own histograms."""

    metrics: dict[Name, Family] = Field(
        default_factory=dict,
        description="slice or SLO metric -> the histogram family (in seconds) that measures it: "
        "`queue: my_queue_seconds`",
    )


class Budget(_Section):
    """budgetdiff's budget file (`budget.yml`)."""

    version: Annotated[Literal[1], BeforeValidator(_version)] = 1
    # p1 to p99.99: beyond them 100 - p (or p) is lost to rounding and no interval exists
    percentile: Annotated[float, Field(ge=1, le=99.99, **_Finite), _Quoted] = Field(
        default=95, description="budgets and SLOs are stated at this percentile"
    )
    slo: Slo = Field(default_factory=Slo)
    slices: Slices = Field(
        default_factory=dict,
        description="in the order a request crosses them: `name: ms` or `name: {budget: ms, ...}`",
    )
    first_token_after: str | None = Field(
        default=None, description="TTFT = the slices up to and including this one"
    )
    headroom: Share = Field(default=0.10, description="flag an SLO metric with less than this")
    regression: Regression = Field(default_factory=Regression)
    fail_on: list[FailKind] = Field(
        default_factory=lambda: list(_DEFAULT_FAIL_ON), description="what fails the check"
    )
    agent: Agent | None = Field(
        default=None,
        description="an agent loop's budget per step times the steps: `{steps: 5, step: 500}`"
        " (the task end to end is `slo.total`); see docs/agents.md",
    )
    classes: dict[Name, TrafficClass] = Field(
        default_factory=dict,
        description="classes of traffic (scenarios) held to their own `slo`, `slices` and "
        "`first_token_after`: `chat: {slo: {ttft: 1000}}`",
    )
    prometheus: Prometheus = Field(
        default_factory=Prometheus, description="for `--prometheus`: histogram families"
    )

    @model_validator(mode="after")
    def _check_across_keys(self) -> Budget:
        problems = list(_across_keys(self))
        if problems:
            words = "; ".join(f"{'.'.join(at)}: {what}" for at, what in problems)
            raise PydanticCustomError("across_keys", "{words}", {"words": words, "all": problems})
        return self

    def for_scenario(self, name: str | None) -> Budget:
        """The budget scenario `name` is held to: the sections its class gives in place of the
        top level's (`first_token_after: null` too), or the top level when no class has its
        name. It has no classes of its own."""
        chosen = self.classes.get(name) if name is not None else None
        gives = {k: getattr(chosen, k) for k in chosen.model_fields_set} if chosen else {}
        update = {k: v for k, v in gives.items() if v is not None or k == "first_token_after"}
        # model_copy does not validate: these sections were checked together with the classes
        return self.model_copy(update={"classes": {}, **update}) if self.classes else self

    @property
    def all_slices(self) -> dict[str, Slice]:
        """Every slice the budget names, at the top level or in a class: what a table is read
        for (one table holds every class; a slice reads the same column in each)."""
        every = dict(self.slices)
        for c in self.classes.values():
            for name, s in (c.slices or {}).items():
                every.setdefault(name, s)
        return every

    def gated(self, kind: str, name: str) -> bool:
        """May a regression of this row fail the gate? What `regression.metrics` names, else
        every SLO metric with a target and every slice with a budget."""
        if self.regression.metrics is not None:
            return name in self.regression.metrics
        if kind == "slo":
            return name in self.slo.targets()
        return name in self.slices

    @property
    def ttft_slices(self) -> list[str]:
        """The slices whose sum is the time to first token."""
        names = list(self.slices)
        last = self.first_token_after
        if last is None:
            last = next((c for c in ("first_token", "prefill") if c in names), None)
        before = names[: names.index(last) + 1] if last is not None else []
        return [n for n in before if n not in ("decode", "app")]  # never before it, in any order

    def slice_budget(self, name: str) -> float | None:
        s = self.slices.get(name)
        return s.budget if s else None


def budget_keys(model: type[BaseModel] = Budget) -> list[str]:
    """The keys a section of the budget file takes, in order."""
    return list(model.model_fields)


# ---- checks across keys ----------------------------------------------------------------------


def _across_keys(budget: Budget) -> Iterator[tuple[Loc, str]]:
    """What each key, right on its own, gets wrong about another."""
    yield from _first_token(budget, ("first_token_after",))
    every = budget.all_slices
    for name, c in budget.classes.items():
        own = "first_token_after" in c.model_fields_set
        if own or c.slices is not None:
            at = ("classes", name, "first_token_after" if own else "slices")
            yield from _first_token(budget.for_scenario(name), at, inherited=not own)
        for s, its in (c.slices or {}).items():
            if (its.column or s, its.unit) != (every[s].column or s, every[s].unit):
                yield ("classes", name, "slices", s), _ONE_COLUMN
    slices = list(every or KNOWN_SLICES)
    known = [*METRICS, *slices, UNATTRIBUTED]
    for i, row in enumerate(budget.regression.metrics or ()):
        if row not in known:
            rows = f"SLO metrics ({', '.join(METRICS)}) or slices ({', '.join(slices)})"
            yield (
                ("regression", "metrics", str(i)),
                (f"{row!r} is not a row of the report: name {rows}{did_you_mean(row, known)}"),
            )

    for row in budget.prometheus.metrics:
        if row not in (*METRICS, *every, *KNOWN_SLICES):
            yield (
                ("prometheus", "metrics", row),
                f"{row!r} is neither an SLO metric ({', '.join(METRICS)}) nor a slice "
                f"({', '.join(slices)}){did_you_mean(row, known)}",
            )


_ONE_COLUMN = (
    "reads another column or unit than the same slice elsewhere in the budget; one table holds "
    "every class: give a slice one column and unit"
)


def _first_token(budget: Budget, at: Loc, inherited: bool = False) -> Iterator[tuple[Loc, str]]:
    first, names = budget.first_token_after, ", ".join(budget.slices) or "none"
    if first is not None and first not in budget.slices:
        whose = "the top level's first_token_after " if inherited else ""
        yield at, f"{whose}{first!r} is not one of the slices ({names})"


def did_you_mean(word: str, choices: list[str]) -> str:
    """`; did you mean `X`?` for the choice closest to `word`, if one is close."""
    close = difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    return f"; did you mean `{close[0]}`?" if close else ""


# ---- the JSON Schema -------------------------------------------------------------------------


class _Schema(GenerateJsonSchema):
    """Every number may also be written in quotes; no titles made up from the key names."""

    def float_schema(self, schema: core_schema.FloatSchema) -> dict[str, Any]:
        quoted = {"type": "string", "pattern": _QUOTED_NUMBER}
        return {"anyOf": [super().float_schema(schema), quoted]}

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False


def json_schema() -> dict[str, Any]:
    schema = Budget.model_json_schema(schema_generator=_Schema)
    schema["title"] = "budgetdiff budget file"
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **schema}
