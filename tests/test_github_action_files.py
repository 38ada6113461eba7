"""action.yml, the workflows and docs/github.md agree with each other and with the code."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from budgetdiff import action

ROOT = Path(__file__).resolve().parents[1]
ACTION = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
EXAMPLES = sorted((ROOT / "examples" / "workflows").glob("*.yml"))
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
CONTRACT_INPUTS = {
    "base", "head", "budget", "format", "fail-on", "comment", "id", "github-token",
    "base-ref", "head-ref", "base-artifact", "comment-author",
}  # fmt: skip
SHA_PIN = re.compile(r"^[\w.-]+/[\w.-]+(/[\w./-]+)?@[0-9a-f]{40}$")


def steps(document: dict[str, Any]) -> list[dict[str, Any]]:
    if "runs" in document:
        return list(document["runs"]["steps"])
    return [step for job in document["jobs"].values() for step in job.get("steps", [])]


def test_action_inputs_are_the_contracts_and_each_reaches_the_entry_through_env() -> None:
    inputs = set(ACTION["inputs"])
    assert inputs >= CONTRACT_INPUTS
    assert inputs - {"python-version"} == set(action.INPUTS)
    [run] = [s for s in ACTION["runs"]["steps"] if s.get("id") == "run"]
    for name, var in action.INPUTS.items():
        assert run["env"][var] == f"${{{{ inputs.{name} }}}}"
    assert {"verdict", "regressions", "report-json", "comment-url"} <= set(ACTION["outputs"])
    assert ACTION["runs"]["using"] == "composite" and ACTION["branding"]


@pytest.mark.parametrize("path", [ROOT / "action.yml", *WORKFLOWS, *EXAMPLES], ids=lambda p: p.name)
def test_no_expression_inside_run_and_every_action_pinned_to_a_sha(path: Path) -> None:
    document = yaml.safe_load(path.read_text(encoding="utf-8"))
    for step in steps(document):
        assert "${{" not in step.get("run", ""), f"{path.name}: expression inside run:"
        uses = step.get("uses")
        if uses and uses != "./":
            assert SHA_PIN.match(uses), f"{path.name}: {uses} is not pinned to a commit SHA"


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_examples_use_only_declared_inputs_and_appear_verbatim_in_the_docs(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    document = yaml.safe_load(text)
    ours = [s for s in steps(document) if s.get("uses", "").startswith("budgetdiff/budgetdiff@")]
    assert ours, f"{path.name} does not use the action"
    for step in ours:
        assert set(step.get("with", {})) <= set(ACTION["inputs"])
        assert "head" in step["with"] or "results-artifact" in step["with"]
    assert text in (ROOT / "docs" / "github.md").read_text(encoding="utf-8")


def test_the_fork_pair_gives_write_only_where_no_pr_code_runs() -> None:
    bench = yaml.safe_load((ROOT / "examples/workflows/pr-benchmark.yml").read_text())
    comment = yaml.safe_load((ROOT / "examples/workflows/pr-comment.yml").read_text())
    assert bench["permissions"] == {} and bench["jobs"]["benchmark"]["permissions"] == {
        "contents": "read"
    }
    on = comment[True] if True in comment else comment["on"]  # YAML 1.1 reads `on` as True
    assert on["workflow_run"]["workflows"] == [bench["name"]]
    job = comment["jobs"]["comment"]
    assert job["permissions"]["pull-requests"] == "write"
    checkout = next(s for s in job["steps"] if s.get("uses", "").startswith("actions/checkout"))
    assert "ref" not in checkout.get("with", {})  # the default branch, never the PR's head
