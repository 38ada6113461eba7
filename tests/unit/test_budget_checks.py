"""The budget's checks, key by key: every kind of mistake in every key of a full budget gives
its message (a golden file, `make golden`), and the JSON Schema (`budgetdiff schema`) accepts
what the checks accept and refuses what they refuse."""

from __future__ import annotations

import copy
import math
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from budgetdiff.budget.file import validate_budget
from budgetdiff.budget.model import json_schema
from budgetdiff.errors import BudgetError
from tests.support.helpers import run, slices, write_table
from tests.support.paths import GOLDEN

MESSAGES = GOLDEN / "budget-messages.txt"
FULL: dict[str, Any] = {
    "version": 1,
    "percentile": 95,
    "slo": {"ttft": 1200, "total": 6000, "itl": 50, "tpot": 60},
    "slices": {"queue": 200, "prefill": {"budget": 700, "column": "prefill_s", "unit": "s"}},
    "first_token_after": "prefill",
    "headroom": "10%",
    "regression": {"min_change": "5%", "min_ms": 5, "confidence": 0.95, "metrics": ["ttft"]},
    "fail_on": ["breach", "regression"],
}
# What people get wrong: signs, bounds, units in the value, percentages, types, nothing at all.
WRONG: list[Any] = [
    -5, 0, 0.5, 1, 100, 86_400_001, "8s", "10%", "150%", "-5%", " 7 ", "1e3", "abc", "",
    True, None, float("inf"), float("nan"), [1], ["breach"], {"a": 1}, 10**40, 10**400,
]  # fmt: skip


def paths(node: dict[str, Any], above: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    for name, value in node.items():
        yield (*above, name)
        if isinstance(value, dict):
            yield from paths(value, (*above, name))


def with_value(path: tuple[str, ...], value: Any) -> dict[str, Any]:
    budget = copy.deepcopy(FULL)
    parent = budget
    for name in path[:-1]:
        parent = parent[name]
    if value is KeyError:
        del parent[path[-1]]
    else:
        parent[path[-1]] = value
    return budget


def named(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:12]}... ({len(text)} characters)"


def cases() -> Iterator[tuple[str, dict[str, Any], Any]]:
    """Each key of the full budget given each wrong value, left out, and misspelt: a name, the
    budget, and the value given (None when the key is left out or misspelt)."""
    for path in paths(FULL):
        where = ".".join(path)
        for value in WRONG:
            yield f"{where} = {named(value)}", with_value(path, value), value
        yield f"{where} left out", with_value(path, KeyError), None
        typo = with_value(path, KeyError)
        parent = typo
        for name in path[:-1]:
            parent = parent[name]
        parent[path[-1][:-1]] = 1
        yield f"{where} misspelt {path[-1][:-1]}", typo, None


def outcome(budget: dict[str, Any]) -> str:
    try:
        validate_budget(budget, "b.yml")
    except BudgetError as e:
        return str(e).replace("\n", "\n    ")  # each problem on a line of its own
    return "accepted"


def test_every_mistake_in_every_key_gives_its_message(golden: Callable[[Path, str], None]) -> None:
    lines = [f"{name}\n    {outcome(budget)}" for name, budget, _ in cases()]
    assert len(lines) > 400
    golden(MESSAGES, "\n".join(lines) + "\n")


# What a schema cannot say: that a name is one of the slices (or a row of the report), the bounds
# of a number written in quotes, and NaN (which JSON, the schema's language, cannot hold).
ACROSS_KEYS = ("is not one of the slices", "is not a row of the report")
QUOTED = re.compile(r"^\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*$")
SCHEMA = json_schema()


def beyond_a_schema(value: Any, message: str) -> bool:
    if isinstance(value, float) and math.isnan(value):
        return True
    across_keys = any(words in message for words in ACROSS_KEYS)
    return bool(isinstance(value, str) and QUOTED.match(value)) or across_keys


@pytest.mark.parametrize("name, budget, value", list(cases()), ids=[c[0] for c in cases()])
def test_the_schema_agrees_with_the_checks(name: str, budget: dict[str, Any], value: Any) -> None:
    """What compare accepts, the schema accepts; what compare refuses, the schema refuses, but
    for what a schema cannot say."""
    message = outcome(budget)
    valid = jsonschema.Draft202012Validator(SCHEMA).is_valid(budget)
    if message == "accepted":
        assert valid, name
    elif not beyond_a_schema(value, message):
        assert not valid, message


# Four mistakes on four lines (and two right keys between them): each is named, with its line.
FOUR_MISTAKES = """\
version: 1
percentile: 101
slo:
  ttft: fast
  totl: 6000
slices:
  queue: 250
  decode: -5
"""


def test_every_problem_of_a_budget_is_a_line_of_its_own(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    head = write_table(tmp_path / "head.csv", slices(2, n=100))
    budget = tmp_path / "budget.yml"
    budget.write_text(FOUR_MISTAKES)
    code, out, err = run(["check", "--head", str(head), "--budget", str(budget)], capsys)
    assert code == 2 and out == ""
    assert err.splitlines() == [
        f"budgetdiff: error: {budget}:2: percentile: must be at most 99.99, not 101",
        f"budgetdiff: error: {budget}:4: slo.ttft: must be a number of milliseconds, "
        "e.g. `ttft: 4200`, not 'fast'",
        f"budgetdiff: error: {budget}:5: slo.totl: unknown key; did you mean `total`?",
        f"budgetdiff: error: {budget}:8: slices.decode: must be more than 0 ms, not -5",
    ]


def test_a_budget_from_python_names_every_problem_without_lines() -> None:
    with pytest.raises(BudgetError) as e:
        validate_budget({"slo": {"ttft": 0}, "headroom": "150%", "fail_on": ["breech"]}, "b")
    assert str(e.value).split("\n") == [
        "b: slo.ttft: must be more than 0 ms, not 0",
        "b: headroom: write a percentage from 0% to under 100%, not 150%",
        "b: fail_on.0: 'breech' is not one of breach, regression, low_headroom, over_budget, "
        "overallocated, no_base, unmeasured, drift, agent_steps; did you mean `breach`?",
    ]
