"""The budget file: frozen dataclasses, the table of its keys, and the one loader that reports
every problem with its file, key and line.

Each key's kind (a number of milliseconds, a percentage, a name, one of a few words, a list, a
section) both checks what a user wrote and describes it in the JSON Schema (`budgetdiff
schema`), so the two cannot disagree. The checks are written here rather than left to pydantic:
its import and model building were 90 ms of the 250 ms a 100-row compare takes."""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Iterable, Mapping
from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path
from typing import Any, Literal

from budgetdiff.errors import BudgetError
from budgetdiff.numbers import count, schema_bound, setting_pct
from budgetdiff.table import MAX_MS

FailKind = Literal[
    "breach",
    "regression",
    "low_headroom",
    "over_budget",
    "overallocated",
    "no_base",
    "unmeasured",
    "drift",
]
FAIL_KINDS: tuple[str, ...] = FailKind.__args__  # type: ignore[attr-defined]
Unit = Literal["ms", "s", "us"]
UNITS: tuple[str, ...] = Unit.__args__  # type: ignore[attr-defined]
# The SLO table's rows, by the names `regression.metrics` uses (the slices are the budget's).
METRICS = ("ttft", "total", "itl", "tpot", "max_stall")
# A number may be written in quotes (`budget: '800'`, kept as written by `rebudget --write`).
_QUOTED_NUMBER = r"^\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*$"
_QUOTED = re.compile(_QUOTED_NUMBER)
_PERCENT = re.compile(r"^\s*(-?\d+(?:\.\d+)?)\s*%\s*$")
# The schema's view of a percentage: 0% to under 100%, which a pattern can say.
_PERCENT_SCHEMA = r"^\s*0*\d{1,2}(\.\d+)?\s*%\s*$"
Loc = tuple[str, ...]


class _Problem(Exception):
    """One thing wrong with the budget: where (below the key being checked) and what. An
    unknown key carries the keys allowed there: its hint is worded only for the problem shown
    (difflib over 10,000 unknown keys would take a second)."""

    def __init__(self, words: str, at: Loc = (), *, allowed: tuple[str, ...] = ()) -> None:
        super().__init__(words)
        self.words, self.at, self.allowed = words, at, allowed

    @property
    def unknown(self) -> bool:
        return bool(self.allowed)

    @property
    def message(self) -> str:
        return self.words + (_hint(self.at[-1], list(self.allowed)) if self.allowed else "")

    def below(self, name: str) -> _Problem:
        return _Problem(self.words, (name, *self.at), allowed=self.allowed)


def _shown(value: object) -> str:
    """What the user wrote, short: `'8s'`, `-5`, `a list`, `nothing`."""
    if value is None:
        return "nothing"
    if isinstance(value, Mapping | list | tuple):
        return f"a {'dict' if isinstance(value, Mapping) else 'list'}"
    shown = repr(value)
    return shown if len(shown) <= 40 else shown[:37] + "..."


def _did_you_mean(word: str, choices: Iterable[str]) -> str:
    import difflib

    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f"; did you mean `{close[0]}`?" if close else ""


# The kinds of key. Each checks a value (`parse`, raising _Problem) and describes it (`schema`).
# Plain classes: a frozen dataclass costs 0.4 ms of start-up to create, and these are constants.


class Number:
    """A number within bounds (`above`/`below` exclusive, `least`/`most` inclusive), plain or
    quoted; milliseconds unless `ms` is False."""

    def __init__(
        self,
        *,
        example: str = "4200",
        above: float | None = None,
        least: float | None = None,
        most: float | None = None,
        below: float | None = None,
        ms: bool = True,
    ) -> None:
        self.example, self.ms = example, ms
        self.above, self.least, self.most, self.below = above, least, most, below

    def parse(self, value: object, key: str) -> float:
        number = _number(value)
        if number is None or not math.isfinite(number):
            what = "a number" + (" of milliseconds" if self.ms else "")
            raise _Problem(f"must be {what}, e.g. `{key}: {self.example}`, not {_shown(value)}")
        unit = " ms" if self.ms else ""
        for words, limit, holds in (
            ("more than", self.above, operator.gt),
            ("at least", self.least, operator.ge),
            ("less than", self.below, operator.lt),
            ("at most", self.most, operator.le),
        ):
            if limit is not None and not holds(number, limit):
                raise _Problem(
                    f"must be {words} {schema_bound(float(limit))}{unit}, not {_shown(value)}"
                )
        return number

    def schema(self) -> dict[str, Any]:
        bounds = {
            "exclusiveMinimum": self.above,
            "minimum": self.least,
            "maximum": self.most,
            "exclusiveMaximum": self.below,
        }
        plain = {"type": "number", **{k: v for k, v in bounds.items() if v is not None}}
        return {"anyOf": [plain, {"type": "string", "pattern": _QUOTED_NUMBER}]}


def _number(value: object) -> float | None:
    """A number as written, plain or quoted; None when it is not one (a boolean is not)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        try:
            return float(value)
        except OverflowError:  # an int from Python past a float's range
            return math.inf
    if isinstance(value, str) and _QUOTED.match(value):
        return float(value)
    return None


class Share:
    """A share, written as a percentage ('10%') or a fraction from 0 to under 1."""

    def __init__(self, example: str) -> None:
        self.example = example

    def parse(self, value: object, key: str) -> float:
        if isinstance(value, str):
            m = _PERCENT.match(value)
            if not m:
                raise _Problem(f"write a percentage such as '{self.example}', not {_shown(value)}")
            share = float(m.group(1)) / 100
            if not 0 <= share < 1 or m.group(1).startswith("-"):
                raise _Problem(
                    f"write a percentage from 0% to under 100%, not {setting_pct(share)}"
                )
            return share
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise _Problem(f"write a percentage such as '{self.example}', not {_shown(value)}")
        if not 0 <= value < 1:
            raise _Problem(f"write {value}% (with the % sign) or a fraction from 0 to under 1")
        return float(value)

    def schema(self) -> dict[str, Any]:
        fraction = {"type": "number", "minimum": 0, "exclusiveMaximum": 1}
        return {"anyOf": [fraction, {"type": "string", "pattern": _PERCENT_SCHEMA}]}


class Name:
    """A name: a column's, a slice's, a row's."""

    def parse(self, value: object, key: str) -> str:
        if not isinstance(value, str):
            raise _Problem(f"must be a name (text), not {_shown(value)}")
        return value

    def schema(self) -> dict[str, Any]:
        return {"type": "string"}


class OneOf:
    """One of a few words."""

    def __init__(self, choices: tuple[str, ...]) -> None:
        self.choices = choices

    def parse(self, value: object, key: str) -> str:
        if value not in self.choices or not isinstance(value, str):
            choices = ", ".join(self.choices)
            hint = _did_you_mean(str(value), self.choices)
            raise _Problem(f"{_shown(value)} is not one of {choices}{hint}")
        return value

    def schema(self) -> dict[str, Any]:
        return {"type": "string", "enum": list(self.choices)}


class Version:
    """The budget file's version: 1, the only one."""

    def parse(self, value: object, key: str) -> int:
        if isinstance(value, bool) or not isinstance(value, int | float) or value != 1:
            raise _Problem(f"must be 1 (the only version of the budget file), not {_shown(value)}")
        return 1

    def schema(self) -> dict[str, Any]:
        return {"type": "integer", "const": 1}


class ListOf:
    """A list of names or of words, each checked by `item`."""

    def __init__(self, item: Name | OneOf, example: str) -> None:
        self.item, self.example = item, example

    def parse(self, value: object, key: str) -> list[str]:
        if not isinstance(value, list | tuple):
            raise _Problem(f"must be a list, e.g. `{key}: {self.example}`, not {_shown(value)}")
        items = []
        for i, each in enumerate(value):
            try:
                items.append(self.item.parse(each, str(i)))
            except _Problem as p:
                raise p.below(str(i)) from None
        return items

    def schema(self) -> dict[str, Any]:
        return {"type": "array", "items": self.item.schema()}


class Nullable:
    """`kind`, or nothing (null): the key's default."""

    def __init__(self, kind: Number | Name | OneOf | ListOf) -> None:
        self.kind = kind

    def parse(self, value: object, key: str) -> object:
        return None if value is None else self.kind.parse(value, key)

    def schema(self) -> dict[str, Any]:
        return {"anyOf": [self.kind.schema(), {"type": "null"}]}


def _mapping(value: object, key: str) -> Mapping[Any, Any]:
    if not isinstance(value, Mapping):
        raise _Problem(f"must be a mapping of keys (`{key}: {{...}}`), not {_shown(value)}")
    return value


class Section:
    """A mapping of the keys of `model`, each checked by its kind; the rest are unknown."""

    def __init__(self, model: type[Any]) -> None:
        self.model = model

    def parse(self, value: object, key: str) -> Any:
        return _build(self.model, _mapping(value, key))

    def schema(self) -> dict[str, Any]:
        return _model_schema(self.model)


class Slices:
    """The slices by name, each `name: ms` (short) or `name: {budget: ms, ...}` (long)."""

    def parse(self, value: object, key: str) -> dict[str, Slice]:
        value = _mapping(value, key)
        if any(isinstance(name, str) and not 0 < len(name) <= 100 for name in value):
            raise _Problem("slice names are 1 to 100 characters")
        slices, problems = {}, []
        for name, given in value.items():
            try:
                slices[name] = self._slice(name, given)
            except (_Problem, _Problems) as e:
                problems += _below(str(name), e)
        if problems:
            raise _Problems(problems)
        return slices

    @staticmethod
    def _slice(name: object, given: object) -> Slice:
        if not isinstance(name, str):
            raise _Problem(f"a slice's name must be text, not {_shown(name)}; quote it")
        if isinstance(given, Mapping):
            built: Slice = _build(Slice, given)
            return built
        if _number(given) is not None:
            return Slice(budget=MS.parse(given, name))
        raise _Problem(
            f"write the slice's budget in milliseconds, `{name}: 4200` or "
            f"`{name}: {{budget: 4200, column: NAME}}`, not {_shown(given)}"
        )

    def schema(self) -> dict[str, Any]:
        short = MS.schema()
        return {"type": "object", "additionalProperties": {"anyOf": [short, _model_schema(Slice)]}}


Kind = Number | Share | Name | OneOf | Version | ListOf | Nullable | Section | Slices


class _Problems(Exception):
    """Every problem found in one mapping."""

    def __init__(self, problems: list[_Problem]) -> None:
        super().__init__(problems[0].words)
        self.all = problems


def _below(name: str, error: _Problem | _Problems) -> list[_Problem]:
    """The problems of one key's value, placed under the key."""
    return [p.below(name) for p in (error.all if isinstance(error, _Problems) else [error])]


def key(kind: Kind, description: str = "") -> dict[str, Any]:
    """A dataclass field's metadata that makes it a budget key: its kind, its description."""
    return {"kind": kind, "description": description}


# The budget's model: frozen dataclasses whose fields are the keys, in the file's order.

MS = Number(above=0, most=MAX_MS)  # at most a day


@dataclass(frozen=True)
class Slice:
    """One slice of the budget, long form. The short form `decode: 4200` means `budget: 4200`."""

    budget: float = field(metadata=key(MS, "milliseconds this slice may take at `percentile`"))
    column: str | None = field(
        default=None,
        metadata=key(
            Nullable(Name()), "input column holding this slice (default: the slice's name)"
        ),
    )
    unit: Unit | None = field(
        default=None,
        metadata=key(
            Nullable(OneOf(UNITS)), "unit of `column` (default: from its suffix, else ms)"
        ),
    )


@dataclass(frozen=True)
class Slo:
    """The SLO's targets, each in milliseconds at `percentile`."""

    ttft: float | None = field(default=None, metadata=key(Nullable(MS), "time to first token, ms"))
    total: float | None = field(default=None, metadata=key(Nullable(MS), "end to end, ms"))
    itl: float | None = field(
        default=None, metadata=key(Nullable(MS), "inter-token latency per token, ms")
    )
    tpot: float | None = field(
        default=None, metadata=key(Nullable(MS), "time per output token per request, ms")
    )

    def targets(self) -> dict[str, float]:
        return {f.name: v for f in fields(self) if (v := getattr(self, f.name)) is not None}


@dataclass(frozen=True)
class Regression:
    """When a change counts as a regression."""

    min_change: float = field(
        default=0.05, metadata=key(Share("5%"), "a smaller relative change never counts ('5%')")
    )
    min_ms: float = field(
        default=5.0,
        metadata=key(Number(least=0, most=MAX_MS), "nor a smaller absolute one, ms"),
    )
    confidence: float = field(
        default=0.95, metadata=key(Number(example="0.95", above=0.5, below=1, ms=False))
    )
    metrics: list[str] | None = field(
        default=None,
        metadata=key(
            Nullable(ListOf(Name(), "[ttft, decode]")),
            "the rows whose regression may fail the gate: SLO metrics ("
            + ", ".join(METRICS)
            + ") and slices (default: every SLO metric with a target and every slice with a "
            "budget; the other rows are information)",
        ),
    )


@dataclass(frozen=True)
class Budget:
    """budgetdiff's budget file (`budget.yml`)."""

    version: int = field(default=1, metadata=key(Version()))
    # p1 to p99.99: beyond them 100 - p (or p) is lost to rounding and no interval exists
    percentile: float = field(
        default=95,
        metadata=key(
            Number(example="95", least=1, most=99.99, ms=False),
            "budgets and SLOs are stated at this percentile",
        ),
    )
    slo: Slo = field(default_factory=Slo, metadata=key(Section(Slo)))
    slices: dict[str, Slice] = field(
        default_factory=dict,
        metadata=key(
            Slices(),
            "in the order a request crosses them: `name: ms` or `name: {budget: ms, ...}`",
        ),
    )
    first_token_after: str | None = field(
        default=None,
        metadata=key(Nullable(Name()), "TTFT = the slices up to and including this one"),
    )
    headroom: float = field(
        default=0.10, metadata=key(Share("10%"), "flag an SLO metric with less than this")
    )
    regression: Regression = field(default_factory=Regression, metadata=key(Section(Regression)))
    fail_on: list[FailKind] = field(
        default_factory=lambda: ["breach", "regression"],
        metadata=key(ListOf(OneOf(FAIL_KINDS), "[breach, regression]"), "what fails the check"),
    )

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
            for candidate in ("first_token", "prefill"):
                if candidate in names:
                    last = candidate
                    break
        before = names[: names.index(last) + 1] if last is not None else []
        return [n for n in before if n not in ("decode", "app")]  # never before it, in any order

    def slice_budget(self, name: str) -> float | None:
        s = self.slices.get(name)
        return s.budget if s else None


def budget_keys(model: type[Any] = Budget) -> list[str]:
    """The keys a section of the budget file takes, in order."""
    return [f.name for f in fields(model)]


def _build(model: type[Any], data: Mapping[Any, Any]) -> Any:
    """`model` from the mapping a user wrote: every key checked by its kind, a missing key
    given its default; every problem raised together, unknown keys first."""
    known = {f.name: f for f in fields(model)}
    problems = [
        _Problem("unknown key", (str(name),), allowed=tuple(known))
        for name in data
        if name not in known
    ]
    values = {}
    for name, f in known.items():
        if name not in data:
            if f.default is MISSING and f.default_factory is MISSING:
                write = "; write `budget: MS`" if name == "budget" else ""
                problems.append(_Problem(f"required here{write}", (name,)))
            continue
        try:
            values[name] = f.metadata["kind"].parse(data[name], name)
        except (_Problem, _Problems) as e:
            problems += _below(name, e)
    if problems:
        raise _Problems(problems)
    return model(**values)


def _hint(word: str, keys: list[str]) -> str:
    return _did_you_mean(word, keys) or f"; the keys here are {', '.join(keys)}"


def _model_schema(model: type[Any]) -> dict[str, Any]:
    properties = {}
    for f in fields(model):
        node = f.metadata["kind"].schema()
        if f.metadata["description"]:
            node["description"] = f.metadata["description"]
        if f.default is not MISSING:
            node["default"] = f.default
        elif f.default_factory is not MISSING and not isinstance(f.metadata["kind"], Section):
            node["default"] = f.default_factory()
        properties[f.name] = node
    required = [
        f.name for f in fields(model) if f.default is MISSING and f.default_factory is MISSING
    ]
    schema: dict[str, Any] = {"type": "object", "additionalProperties": False}
    schema["description"] = (model.__doc__ or "").strip()
    schema["properties"] = properties
    if required:
        schema["required"] = required
    return schema


def json_schema() -> dict[str, Any]:
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "budgetdiff budget file",
        **_model_schema(Budget),
    }
    return schema


def _cross_checks(budget: Budget) -> None:
    """The checks across keys, once every key is right on its own."""
    from budgetdiff.table import KNOWN_SLICES, UNATTRIBUTED

    first = budget.first_token_after
    if first is not None and first not in budget.slices:
        raise _Problem(
            f"{first!r} is not one of the slices ({', '.join(budget.slices) or 'none'})",
            ("first_token_after",),
        )
    slices = list(budget.slices or KNOWN_SLICES)
    known = [*METRICS, *slices, UNATTRIBUTED]
    for name in budget.regression.metrics or ():
        if name not in known:
            raise _Problem(
                f"{name!r} is not a row of the report: name SLO metrics ({', '.join(METRICS)}) "
                f"or slices ({', '.join(slices)}){_did_you_mean(name, known)}",
                ("regression", "metrics"),
            )


def parse_budget(text: str, source: str) -> Budget:
    """Parse YAML text into a Budget; every problem becomes one line `source:line: key: what`."""
    data, root = _load_yaml(text, source)
    if data is None:
        raise BudgetError(
            f"{source}: the budget file is empty; run `budgetdiff schema` to see keys"
        )
    return validate_budget(data, source, root)


def validate_budget(data: object, source: str, root: Any = None) -> Budget:
    """A Budget from parsed data (YAML's, or a dict from Python); `root`, the YAML node tree,
    gives each problem its line."""
    if not isinstance(data, Mapping):
        raise BudgetError(
            f"{source}: the budget must be a mapping of keys, see `budgetdiff schema`"
        )
    try:
        budget: Budget = _build(Budget, data)
        _cross_checks(budget)
    except (_Problem, _Problems) as e:
        problems = e.all if isinstance(e, _Problems) else [e]
        # an unknown key first: it often explains the rest (`budgt:` -> `budget` is missing)
        first = sorted(problems, key=lambda p: not p.unknown)[0]
        line = _line_of(root, list(first.at))
        more = f" (and {len(problems) - 1} more problem(s))" if len(problems) > 1 else ""
        where = f"{source}:{line}" if line else source
        raise BudgetError(f"{where}: {'.'.join(first.at)}: {first.message}{more}") from None
    return budget


# A budget is a few keys two or three levels deep; anything far past that is not a budget, and
# PyYAML's composer recurses once per level (10,000 levels would be a RecursionError).
MAX_BUDGET_DEPTH = 20
MAX_BUDGET_BYTES = 1 << 20
# Digits of the longest integer literal read: Python refuses to parse more than 4,300, and no
# budget value needs more than a few.
MAX_INT_DIGITS = 30


def _load_yaml(text: str, source: str) -> tuple[object, Any]:
    """The document and its node tree, loaded safely: no Python objects, a bounded size and
    depth, no key given twice (YAML would keep the last silently), no booleans (`ttft: true`
    would be 1 ms) and no integer too long to convert."""
    import yaml

    if len(text) > MAX_BUDGET_BYTES:
        raise BudgetError(
            f"{source}: {count(len(text))} characters is not a budget file; keep it "
            f"under {count(MAX_BUDGET_BYTES)}"
        )
    # libyaml when PyYAML has it: ten times faster on a budget of 10,000 slices
    safe: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        _check_depth(text, source, safe)
        loader = _strict_loader(safe, source)(text)
        try:
            root = loader.get_single_node()
            data = loader.construct_document(root) if root is not None else None
        finally:
            loader.dispose()
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f":{mark.line + 1}" if mark is not None else ""
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise BudgetError(f"{source}{where}: not valid YAML ({problem})") from None
    return data, root


def _check_depth(text: str, source: str, loader: Any) -> None:
    """Refuse a document nested deeper than MAX_BUDGET_DEPTH, from its tokens, before the
    composer recurses into it."""
    import yaml

    opening = (
        yaml.BlockMappingStartToken
        | yaml.BlockSequenceStartToken
        | yaml.FlowMappingStartToken
        | yaml.FlowSequenceStartToken
    )
    closing = yaml.BlockEndToken | yaml.FlowMappingEndToken | yaml.FlowSequenceEndToken
    depth = 0
    for token in yaml.scan(text, Loader=loader):
        if isinstance(token, opening):
            depth += 1
            if depth > MAX_BUDGET_DEPTH:
                raise BudgetError(
                    f"{source}:{token.start_mark.line + 1}: nested more than "
                    f"{MAX_BUDGET_DEPTH} levels deep; a budget is a few keys, see "
                    "`budgetdiff schema`"
                )
        elif isinstance(token, closing):
            depth -= 1


def _strict_loader(safe: Any, source: str) -> Any:
    """A loader class on `safe` that refuses a key given twice, a boolean and an integer too
    long to convert, each with the line it is on."""
    import yaml

    def fail(node: Any, what: str) -> BudgetError:
        return BudgetError(f"{source}:{node.start_mark.line + 1}: {what}")

    class Loader(safe):  # type: ignore[misc]
        def construct_mapping(self, node: Any, deep: bool = False) -> Any:
            seen: set[str] = set()
            for key, _ in node.value:
                if isinstance(key, yaml.ScalarNode) and key.tag != "tag:yaml.org,2002:merge":
                    if key.value in seen:
                        raise fail(key, f"key {key.value!r} is given twice; keep one")
                    seen.add(key.value)
            return super().construct_mapping(node, deep)

        def construct_yaml_bool(self, node: Any) -> Any:
            raise fail(
                node,
                f"`{node.value}` reads as a boolean (true/false), which no budget key takes; "
                "write a number, or quote it as text",
            )

        def construct_yaml_int(self, node: Any) -> Any:
            if sum(c.isdigit() for c in node.value) > MAX_INT_DIGITS:
                raise fail(
                    node, f"an integer of {count(len(node.value))} digits; write a plain number"
                )
            return super().construct_yaml_int(node)

    Loader.add_constructor("tag:yaml.org,2002:bool", Loader.construct_yaml_bool)
    Loader.add_constructor("tag:yaml.org,2002:int", Loader.construct_yaml_int)
    return Loader


def _line_of(node: Any, loc: list[str]) -> int | None:
    """The 1-based line of the YAML node at `loc`, as far down as it exists."""
    import yaml

    line = None
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                if str(key.value) == part:
                    line = key.start_mark.line + 1
                    node = value
                    break
            else:
                return line
        elif isinstance(node, yaml.SequenceNode) and part.isdigit() and int(part) < len(node.value):
            node = node.value[int(part)]
            line = node.start_mark.line + 1
        else:
            return line
    return line


def load_budget(path: Path) -> Budget:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise BudgetError(
            f"{path}: no such budget file; pass --budget FILE or create budget.yml "
            "(`budgetdiff schema` lists the keys)"
        ) from None
    except (OSError, UnicodeDecodeError) as e:
        raise BudgetError(f"{path}: cannot read the budget file ({e})") from None
    return parse_budget(text, str(path))
