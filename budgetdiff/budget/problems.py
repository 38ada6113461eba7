"""A budget's ValidationError in the budget's own words: one line per problem, `file:line:
key.path: what to write`, in the file's order. `_WORDS` maps each kind of pydantic error to a
sentence; an unknown key gets "did you mean". Imported only for a budget with problems."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any, NamedTuple

from pydantic import BaseModel, ValidationError

from budgetdiff.budget.model import (
    NAME_RULE,
    Agent,
    Budget,
    Loc,
    Regression,
    Slice,
    Slo,
    TrafficClass,
    budget_keys,
    did_you_mean,
)
from budgetdiff.numbers import count, schema_bound

_MAPPING = "must be a mapping of keys (`{key}: {{...}}`), not {shown}"
_NUMBER = "must be {number}, e.g. `{key}: {example}`, not {shown}"
_WORDS = {
    "extra_forbidden": "unknown key{hint}",
    "missing": "required here{write}",
    "model_type": _MAPPING,
    "model_attributes_type": _MAPPING,
    "dict_type": _MAPPING,
    "list_type": "must be a list, e.g. `{key}: {example}`, not {shown}",
    "string_type": "must be a name (text), not {shown}",
    "literal_error": "{shown} is not one of {choices}{hint}",
    "float_type": _NUMBER,
    "int_type": "must be a whole number, e.g. `{key}: {example}`, not {shown}",
    "finite_number": _NUMBER,
    "greater_than": "must be more than {limit}{unit}, not {shown}",
    "greater_than_equal": "must be at least {limit}{unit}, not {shown}",
    "less_than": "must be less than {limit}{unit}, not {shown}",
    "less_than_equal": "must be at most {limit}{unit}, not {shown}",
    "version": "must be 1 (the only version of the budget file), not {shown}",
    "percentage": "write a percentage such as '{example}', not {shown}",
    "slice_form": "write the slice's budget in milliseconds, `{key}: 4200` or "
    "`{key}: {{budget: 4200, column: NAME}}`, not {shown}",
}
# A slice's or a class's name (pydantic's `[key]`): whatever is wrong with it, this.
_NAME = "{whose} name must be 1 to 100 characters of " + NAME_RULE + "; not {shown}"
# What each key's message suggests writing (a number of milliseconds, `4200`, unless here).
_EXAMPLES = {
    "percentile": "95",
    "confidence": "0.95",
    "headroom": "10%",
    "min_change": "5%",
    "fail_on": "[breach, regression]",
    "metrics": "[ttft, decode]",
    "steps": "5",
}
_PLAIN_NUMBERS = ("percentile", "confidence", "steps")  # not milliseconds
_BOUNDS = ("gt", "ge", "lt", "le")
_SECTIONS: dict[Loc, type[BaseModel]] = {
    ("slo",): Slo,
    ("regression",): Regression,
    ("agent",): Agent,
    ("slices", "*"): Slice,
    ("classes", "*"): TrafficClass,
    ("classes", "*", "slo"): Slo,
    ("classes", "*", "slices", "*"): Slice,
}
# A budget with more problems is not a budget with typos: the first ones say enough (and only
# they are worded: difflib over 10,000 unknown keys would take a second).
MAX_PROBLEMS = 20
_ABSENT = object()


class _Problem(NamedTuple):
    at: Loc  # the keys down to it
    line: int | None
    error: Any = None  # pydantic's, worded when it is shown
    words: str = ""  # a check across keys: worded already


def problem_lines(
    error: ValidationError, data: object, source: str, lines: Mapping[Loc, int]
) -> list[str]:
    """Each problem of the budget, one line, in the file's order; an unknown key first on its
    line, as it often explains the rest (`budgt:` -> `budget` is missing)."""
    found = sorted(
        _problems(error, data, lines),
        key=lambda p: (p.line or 0, p.error is None or p.error["type"] != "extra_forbidden"),
    )
    said = [
        f"{source}{f':{p.line}' if p.line else ''}: {_path(p.at)}: "
        + (p.words or _words(p.error, p.at, _given(data, p.at)))
        for p in found[:MAX_PROBLEMS]
    ]
    if len(found) > MAX_PROBLEMS:
        said.append(f"{source}: and {count(len(found) - MAX_PROBLEMS)} more problems")
    # each problem one line, whatever a key's name holds: the CLI prints one error per line
    return [s.replace("\n", "\\n").replace("\r", "\\r") for s in said]


def _problems(error: ValidationError, data: object, lines: Mapping[Loc, int]) -> Iterator[_Problem]:
    for err in error.errors(include_url=False):
        if err["type"] == "across_keys":
            yield from (_Problem(at, _line(lines, at), words=w) for at, w in err["ctx"]["all"])
            continue
        at: Loc = tuple(str(part) for part in err["loc"])
        short = not isinstance(_given(data, at[:-1]), Mapping)  # `decode: 4200`: no `budget:`
        if at[-1:] == ("budget",) and at[-3:-2] == ("slices",) and short:
            at = at[:-1]
        yield _Problem(at, _line(lines, at), err)


def _path(at: Loc) -> str:
    """`slo.ttft`; a wrong name (pydantic's `slices, NAME, [key]`) is placed at its mapping."""
    return ".".join(at[:-2] if at[-1:] == ("[key]",) else at)


def _words(err: Any, at: Loc, given: object) -> str:
    """A pydantic error said in the budget's terms: what is wrong and what to write."""
    kind, ctx = err["type"], err.get("ctx") or {}
    if at[-1:] == ("[key]",):
        at, template = at[:-1], _NAME
    elif kind not in _WORDS:
        return str(err["msg"])  # our validators' own sentences
    else:
        template = _WORDS[kind]
    key = at[-1] if at else ""
    words = {
        "key": key,
        "shown": _shown(err.get("input") if given is _ABSENT else given),
        "example": _EXAMPLES.get(key, "4200"),
        "number": "a number" if key in _PLAIN_NUMBERS else "a number of milliseconds",
        "unit": "" if key in _PLAIN_NUMBERS else " ms",
        "write": "; write `budget: MS`" if key == "budget" else "",
        "whose": "a class's" if at[-2:-1] == ("classes",) else "a slice's",
        "limit": next((schema_bound(float(ctx[b])) for b in _BOUNDS if b in ctx), ""),
        "choices": "",
        "hint": "",
    }
    if kind == "extra_forbidden":
        keys = budget_keys(_section(at[:-1]))
        words["hint"] = did_you_mean(key, keys) or f"; the keys here are {', '.join(keys)}"
    elif kind == "literal_error":
        choices = [a or b for a, b in re.findall(r"'([^']*)'|(\d+)", str(ctx["expected"]))]
        words["choices"] = ", ".join(choices)
        # only text is matched: a list stands for what it holds, which aliases may multiply
        words["hint"] = did_you_mean(given, choices) if isinstance(given, str) else ""
    return template.format(**words)


def _section(at: Loc) -> type[BaseModel]:
    """The model of the mapping at `at` (a slice's or a class's name read as `*`)."""
    pattern: list[str] = []
    for part in at:
        pattern.append("*" if pattern[-1:] in (["slices"], ["classes"]) else part)
    return _SECTIONS.get(tuple(pattern), Budget)


def _given(data: object, at: Loc) -> object:
    """What the user wrote at `at`; _ABSENT where nothing was."""
    for part in at:
        if isinstance(data, Mapping):
            if part in data:
                data = data[part]
            else:  # a key that is not text: `1: 100`
                data = next((v for k, v in data.items() if str(k) == part), _ABSENT)
        elif isinstance(data, list | tuple) and part.isdigit() and int(part) < len(data):
            data = data[int(part)]
        else:
            return _ABSENT
    return data


def _shown(value: object) -> str:
    """What the user wrote, short: `'8s'`, `-5`, `a list`, `nothing`."""
    if value is None:
        return "nothing"
    if isinstance(value, Mapping | list | tuple):
        return f"a {'dict' if isinstance(value, Mapping) else 'list'}"
    shown = repr(value)
    return shown if len(shown) <= 40 else shown[:37] + "..."


def _line(lines: Mapping[Loc, int], at: Loc) -> int | None:
    """The line of the key at `at`, or of the nearest key above it that the file has."""
    for end in range(len(at), 0, -1):
        if at[:end] in lines:
            return lines[at[:end]]
    return None
