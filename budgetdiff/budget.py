"""The budget file: a strict, frozen pydantic model, and the one loader that reports every problem
with its file, key and line."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Annotated, Any, Literal, Union

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

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
_DEFAULT_FAIL_ON: tuple[FailKind, ...] = ("breach", "regression")
_PERCENT = re.compile(r"^\s*(-?\d+(?:\.\d+)?)\s*%\s*$")
# The SLO table's rows, by the names `regression.metrics` uses (the slices are the budget's).
METRICS = ("ttft", "total", "itl", "tpot", "max_stall")


def _fraction(value: object) -> object:
    """'10%' -> 0.1; a number from 0 to 1 is taken as a fraction already."""
    if isinstance(value, str):
        m = _PERCENT.match(value)
        if not m:
            raise ValueError(f"write a percentage such as '10%', not {value!r}")
        value = float(m.group(1)) / 100
        if not 0 <= value < 1:
            raise ValueError(f"write a percentage from 0% to under 100%, not {setting_pct(value)}")
        return value
    if isinstance(value, bool):
        raise ValueError("write a percentage such as '10%'")
    if isinstance(value, int | float) and not 0 <= value < 1:
        raise ValueError(f"write {value}% (with the % sign) or a fraction from 0 to under 1")
    return value


Ms = Annotated[float, Field(gt=0, le=MAX_MS, allow_inf_nan=False)]  # at most a day
# What a user may write (the schema's view): a fraction, or a percentage string like '10%'.
_FractionInput = Union[  # noqa: UP007 (a runtime type expression on Python 3.10)
    Annotated[float, Field(ge=0, lt=1)], Annotated[str, Field(pattern=_PERCENT.pattern)]
]
Fraction = Annotated[float, BeforeValidator(_fraction, json_schema_input_type=_FractionInput)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Slice(_Strict):
    """One slice of the budget, long form. The short form `decode: 4200` means `budget: 4200`."""

    budget: Ms = Field(description="milliseconds this slice may take at `percentile`")
    column: str | None = Field(
        default=None, description="input column holding this slice (default: the slice's name)"
    )
    unit: Unit | None = Field(
        default=None, description="unit of `column` (default: from its suffix, else ms)"
    )


class Slo(_Strict):
    ttft: Ms | None = Field(default=None, description="time to first token, ms")
    total: Ms | None = Field(default=None, description="end to end, ms")
    itl: Ms | None = Field(default=None, description="inter-token latency per token, ms")
    tpot: Ms | None = Field(default=None, description="time per output token per request, ms")

    def targets(self) -> dict[str, float]:
        return {k: v for k, v in self.model_dump().items() if v is not None}


class Regression(_Strict):
    min_change: Fraction = Field(
        default=0.05, description="a smaller relative change never counts ('5%')"
    )
    min_ms: float = Field(
        default=5.0, ge=0, le=MAX_MS, description="nor a smaller absolute one, ms"
    )
    confidence: float = Field(default=0.95, gt=0.5, lt=1)
    metrics: list[str] | None = Field(
        default=None,
        description="the rows whose regression may fail the gate: SLO metrics ("
        + ", ".join(METRICS)
        + ") and slices (default: every SLO metric with a target and every slice with a "
        "budget; the other rows are information)",
    )


class Budget(_Strict):
    """budgetdiff's budget file (`budget.yml`)."""

    version: Literal[1] = 1
    # p1 to p99.99: beyond them 100 - p (or p) is lost to rounding and no interval exists
    percentile: float = Field(
        default=95, ge=1, le=99.99, description="budgets and SLOs are stated at this percentile"
    )
    slo: Slo = Field(default_factory=Slo)
    slices: dict[
        str, Annotated[Slice, BeforeValidator(_short_slice, json_schema_input_type=Ms | Slice)]
    ] = Field(
        default_factory=dict,
        description="in the order a request crosses them: `name: ms` or `name: {budget: ms, ...}`",
    )
    first_token_after: str | None = Field(
        default=None, description="TTFT = the slices up to and including this one"
    )
    headroom: Fraction = Field(default=0.10, description="flag an SLO metric with less than this")
    regression: Regression = Field(default_factory=Regression)
    fail_on: list[FailKind] = Field(default_factory=lambda: list(_DEFAULT_FAIL_ON))

    @field_validator("slices")
    @classmethod
    def _slice_names(cls, v: dict[str, Slice]) -> dict[str, Slice]:
        for name in v:
            if not name or len(name) > 100:
                raise ValueError("slice names are 1 to 100 characters")
        return v

    @model_validator(mode="after")
    def _first_token_slice(self) -> Budget:
        if self.first_token_after is not None and self.first_token_after not in self.slices:
            raise ValueError(
                f"first_token_after: {self.first_token_after!r} is not one of the slices "
                f"({', '.join(self.slices) or 'none'})"
            )
        return self

    @model_validator(mode="after")
    def _regression_metrics(self) -> Budget:
        from budgetdiff.table import KNOWN_SLICES, UNATTRIBUTED

        known = [*METRICS, *(self.slices or KNOWN_SLICES), UNATTRIBUTED]
        for name in self.regression.metrics or ():
            if name not in known:
                raise ValueError(
                    f"regression.metrics: {name!r} is not a row of the report: name SLO "
                    f"metrics ({', '.join(METRICS)}) or slices "
                    f"({', '.join(self.slices or KNOWN_SLICES)}){_did_you_mean(name, known)}"
                )
        return self

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
        return names[: names.index(last) + 1] if last is not None else []

    def slice_budget(self, name: str) -> float | None:
        s = self.slices.get(name)
        return s.budget if s else None


def _did_you_mean(word: str, choices: Iterable[str]) -> str:
    import difflib

    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f"; did you mean `{close[0]}`?" if close else ""


def _short_slice(value: object) -> object:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return {"budget": value}
    return value


def json_schema() -> dict[str, Any]:
    schema: dict[str, Any] = _quoted_numbers(Budget.model_json_schema())
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "budgetdiff budget file"
    return schema


def _quoted_numbers(node: Any) -> Any:
    """The budget takes a number written in quotes too (`budget: '800'`, kept as written by
    `rebudget --write`): every number in the schema may also be a string that is one."""
    if isinstance(node, list):
        return [_quoted_numbers(n) for n in node]
    if not isinstance(node, dict):
        return node
    node = {k: _quoted_numbers(v) for k, v in node.items()}
    if node.get("type") == "number":
        number = {k: v for k, v in node.items() if k not in ("title", "description", "default")}
        rest = {k: v for k, v in node.items() if k not in number}
        quoted = {"type": "string", "pattern": r"^\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*$"}
        return {**rest, "anyOf": [number, quoted]}
    return node


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
        return Budget.model_validate(data)
    except ValidationError as e:
        # an unknown key first: it often explains the rest (`budgt:` -> `budget` is missing)
        errors = sorted(e.errors(), key=lambda err: err["type"] != "extra_forbidden")
        loc = [str(p) for p in errors[0]["loc"] if not str(p).startswith("function-")]
        if loc[0::2] == ["slices", "budget"] and not isinstance(
            data["slices"].get(loc[1]), Mapping
        ):
            loc = loc[:2]  # written short, `decode: -5`: there is no `budget:` key to name
        msg = _in_budget_words(errors[0], loc)
        if not loc:  # a check across keys names its key first: `first_token_after: ...`
            loc = msg.split(":", 1)[0].split(".")
            msg = msg.split(": ", 1)[-1]
        line = _line_of(root, loc)
        more = f" (and {len(errors) - 1} more problem(s))" if len(errors) > 1 else ""
        raise BudgetError(
            f"{source}{f':{line}' if line else ''}: {'.'.join(loc)}: {msg}{more}"
        ) from None


def _keys_at(loc: list[str]) -> list[str]:
    """The keys the budget allows in the mapping that holds `loc[-1]`."""
    model: type[BaseModel] = Budget
    parent = loc[:-1]
    if parent[:1] == ["slo"]:
        model = Slo
    elif parent[:1] == ["regression"]:
        model = Regression
    elif parent[:1] == ["slices"] and len(parent) == 2:
        model = Slice
    return list(model.model_fields)


def _in_budget_words(err: Any, loc: list[str]) -> str:
    """A pydantic error, said in the budget's own terms: what is wrong and what to write."""
    kind, key, given = err["type"], (loc[-1] if loc else ""), err.get("input")
    shown = repr(given) if not isinstance(given, dict | list) else f"a {type(given).__name__}"
    shown = "nothing" if given is None else shown
    shown = shown if len(shown) <= 40 else shown[:37] + "..."
    ctx = err.get("ctx") or {}
    if kind == "extra_forbidden":
        keys = _keys_at(loc)
        hint = _did_you_mean(key, keys) or f"; the keys here are {', '.join(keys)}"
        return f"unknown key{hint}"
    if kind == "missing":
        return "required here" + ("; write `budget: MS`" if key == "budget" else "")
    if len(loc) == 2 and loc[0] == "slices" and kind in ("model_type", "dict_type"):
        return (
            f"write the slice's budget in milliseconds, `{key}: 4200` or "
            f"`{key}: {{budget: 4200, column: NAME}}`, not {shown}"
        )
    if kind in ("model_type", "dict_type"):
        return f"must be a mapping of keys (`{key}: {{...}}`), not {shown}"
    if kind == "list_type":
        return f"must be a list, e.g. `{key}: [breach, regression]`, not {shown}"
    if kind == "literal_error" and key == "version":
        return f"must be 1 (the only version of the budget file), not {shown}"
    if kind == "literal_error":
        allowed = re.findall(r"'([^']*)'|(\d+)", str(ctx.get("expected", "")))
        choices = [a or b for a, b in allowed]
        return f"{shown} is not one of {', '.join(choices)}{_did_you_mean(str(given), choices)}"
    unit = {"percentile": "", "confidence": "", "version": ""}.get(key, " ms")
    bound = {
        "greater_than": "more than",
        "greater_than_equal": "at least",
        "less_than": "less than",
        "less_than_equal": "at most",
    }
    if kind in bound:
        limit = float(next(iter(ctx.values()), 0))
        return f"must be {bound[kind]} {schema_bound(limit)}{unit}, not {shown}"
    if kind.startswith(("float", "int", "finite")):
        example = {"percentile": "95", "confidence": "0.95"}.get(key, "4200")
        what = "a number" + (" of milliseconds" if unit else "")
        return f"must be {what}, e.g. `{key}: {example}`, not {shown}"
    if kind == "string_type":
        return f"must be a name (text), not {shown}"
    return str(err["msg"]).removeprefix("Value error, ")


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
