"""`budgetdiff schema` accepts every budget that `compare` accepts: each budget written in the
README, docs/, examples/ and tests/, checked with a real JSON Schema validator (jsonschema)."""

from __future__ import annotations

import ast
import json
import re
from typing import Any

import jsonschema
import pytest
import yaml

from budgetdiff.budget.file import parse_budget
from budgetdiff.budget.model import budget_keys
from budgetdiff.errors import BudgetError
from tests.support.helpers import budgets_shown_with_errors, run
from tests.support.paths import DEMO, ROOT

FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.M | re.S)
KEYS = set(budget_keys())


def schema(capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    code, out, _ = run(["schema"], capsys)
    assert code == 0
    document: dict[str, Any] = json.loads(out)
    jsonschema.Draft202012Validator.check_schema(document)
    return document


def as_budget(text: str) -> dict[str, Any] | None:
    """The YAML mapping `text` holds when it reads as a budget file (its keys are budget keys,
    with `slo` or `slices`), else None (a workflow, a table, any other string)."""
    if len(text) > 5000 or ":" not in text:
        return None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError:
        return None
    if not isinstance(data, dict) or not data or not set(data) & {"slo", "slices"}:
        return None
    return data if all(isinstance(k, str) for k in data) and set(data) <= KEYS else None


def python_strings(source: str) -> list[str]:
    if source.lstrip().startswith(">>>"):  # a doctest session: its statements only
        source = "\n".join(
            line[4:] for line in source.splitlines() if line.startswith((">>> ", "... "))
        )
    return [
        node.value
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    ]


def written_budgets() -> dict[str, list[str]]:
    """Every budget text in the documentation and examples, and every one in the tests."""
    docs: list[str] = [(DEMO / "budget.yml").read_text()]
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        markdown = path.read_text(encoding="utf-8")
        wrong = {yml for yml, _ in budgets_shown_with_errors(markdown)}  # shown with errors
        for lang, body in FENCE.findall(markdown):
            if body not in wrong:
                docs += python_strings(body) if lang == "python" else [body]
    docs += [p.read_text() for p in sorted((ROOT / "examples").rglob("*.yml"))]
    tests = [p.read_text() for p in sorted((ROOT / "tests").rglob("*.yml"))]
    for path in sorted((ROOT / "tests").rglob("*.py")):  # every folder of tests/
        if "node_modules" in path.parts:
            continue
        tests += python_strings(path.read_text(encoding="utf-8"))
    return {
        "docs": [t for t in docs if as_budget(t) is not None],
        "tests": [t for t in tests if as_budget(t) is not None],
    }


def test_every_budget_in_the_docs_is_valid_for_compare_and_for_the_schema(
    capsys: pytest.CaptureFixture[str],
) -> None:
    validator = jsonschema.Draft202012Validator(schema(capsys))
    budgets = written_budgets()["docs"]
    assert len(budgets) >= 3  # the demo's, the README's budget file, docs/rebudget.md's
    for text in budgets:
        parse_budget(text, "doc")  # raises on a budget compare would refuse
        validator.validate(as_budget(text))


def test_the_schema_accepts_every_budget_in_the_tests_that_compare_accepts(
    capsys: pytest.CaptureFixture[str],
) -> None:
    validator = jsonschema.Draft202012Validator(schema(capsys))
    accepted = 0
    for text in written_budgets()["tests"]:
        try:
            parse_budget(text, "test")
        except BudgetError:
            continue  # a test of a bad budget
        validator.validate(as_budget(text))
        accepted += 1
    assert accepted >= 10


@pytest.mark.parametrize(
    "text",
    [
        "version: 1\nslices: {decode: 4200, app: 300.5}\n",
        "version: 1\nslo: {total: 6000}\nheadroom: 10%\n",
        "version: 1\nslo: {total: 6000}\nheadroom: 0.1\n",
        "version: 1\nslo: {total: 6000}\nregression: {min_change: 5%, metrics: [total, tpot]}\n",
        "version: 1\nslices: {decode: {budget: 4, column: decode_time, unit: s}}\n",
        "version: 1\nslo: {ttft: 900}\nfail_on: [breach, unmeasured, no_base]\n",
    ],
)
def test_short_forms_and_percentages_are_in_the_schema(
    text: str, capsys: pytest.CaptureFixture[str]
) -> None:
    parse_budget(text, "b.yml")
    jsonschema.validate(yaml.safe_load(text), schema(capsys))


@pytest.mark.parametrize(
    "text",
    [
        "version: 1\npercentil: 95\nslo: {total: 1}\n",
        "version: 1\nslices: {llm: 8s}\n",
        "version: 1\nslices: {llm: -5}\n",
        "version: 1\nslo: {total: 1}\nheadroom: lots\n",
        "version: 1\nslo: {total: 1}\nfail_on: [breech]\n",
    ],
)
def test_the_schema_refuses_what_compare_refuses(
    text: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(BudgetError):
        parse_budget(text, "b.yml")
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(yaml.safe_load(text), schema(capsys))
