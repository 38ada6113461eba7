"""The budget's `agent` section (issue 28): steps x ms per step, its problems said like every
other key's (`file:line: agent.KEY: what`), and in the JSON Schema."""

from __future__ import annotations

import jsonschema
import pytest
import yaml

from budgetdiff.budget.file import parse_budget
from budgetdiff.budget.model import json_schema
from budgetdiff.errors import BudgetError

AGENT_BUDGET = """\
percentile: 95
slo: {total: 2500}
agent:
  steps: 5
  step: 500
  model: 300
  tool: '180'
"""


def test_the_agent_section_reads_steps_and_ms_per_step() -> None:
    b = parse_budget(AGENT_BUDGET, "agent.yml")
    assert b.agent is not None
    assert (b.agent.steps, b.agent.step) == (5, 500.0)
    assert b.agent.parts() == {"model": 300.0, "tool": 180.0}
    assert b.slo.total == 2500.0
    jsonschema.validate(
        {"slo": {"total": 2500}, "agent": {"steps": 5, "step": 500, "tool": "180"}},
        json_schema(),
    )


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("agent:\n  steps: 5.5\n", "agent.yml:2: agent.steps: must be a whole number, e.g. "
         "`steps: 5`, not 5.5"),
        ("agent:\n  steps: 0\n", "agent.yml:2: agent.steps: must be at least 1, not 0"),
        ("agent:\n  step: -3\n", "agent.yml:2: agent.step: must be more than 0 ms, not -3"),
        ("agent:\n  tol: 4\n", "agent.yml:2: agent.tol: unknown key; did you mean `tool`?"),
        ("agent: 5\n", "agent.yml:1: agent: must be a mapping of keys (`agent: {...}`), not 5"),
    ],
)  # fmt: skip
def test_a_wrong_agent_key_is_said_with_its_line(text: str, said: str) -> None:
    with pytest.raises(BudgetError) as e:
        parse_budget(text, "agent.yml")
    assert str(e.value) == said
    schema = jsonschema.Draft202012Validator(json_schema())
    assert not schema.is_valid(yaml.safe_load(text))
