"""action.yml, the workflows and docs/github.md agree with each other and with the code."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from budgetdiff import action
from tests.support.paths import ROOT

ACTION = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
EXAMPLES = sorted((ROOT / "examples" / "workflows").glob("*.yml"))
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
CONTRACT_INPUTS = {
    "base", "head", "budget", "format", "fail-on", "comment", "id", "github-token",
    "base-ref", "head-ref", "base-artifact", "comment-author",
}  # fmt: skip
SHA_PIN = re.compile(r"^[\w.-]+/[\w.-]+(/[\w./-]+)?@[0-9a-f]{40}$")
OURS = "budgetdiff/budgetdiff@v1"  # what the examples show users (docs/releases.md)


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
        if uses == OURS:
            assert path in EXAMPLES, f"{path.name}: our own workflows test `./`, not a release"
        elif uses and uses != "./":
            assert SHA_PIN.match(uses), f"{path.name}: {uses} is not pinned to a commit SHA"
            assert not uses.endswith("@" + "0" * 40), f"{path.name}: {uses} is a placeholder"


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_examples_use_only_declared_inputs_and_appear_verbatim_in_the_docs(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    document = yaml.safe_load(text)
    ours = [s for s in steps(document) if s.get("uses") == OURS]
    assert ours, f"{path.name} does not use the action"
    for step in ours:
        assert set(step.get("with", {})) <= set(ACTION["inputs"])
        assert {"head", "results-artifact", "prometheus-url"} & set(step["with"])
    # the deploy gate's workflow is on its own page (issue 27)
    docs = ("github.md", "deploy-gate.md") if path.name == "deploy-gate.yml" else ("github.md",)
    assert any(text in (ROOT / "docs" / d).read_text(encoding="utf-8") for d in docs)


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


def test_the_entry_runs_in_isolated_mode() -> None:
    [run] = [s for s in ACTION["runs"]["steps"] if s.get("id") == "run"]
    assert run["run"] == '"$BUDGETDIFF_PYTHON" -I -m budgetdiff.action'
    [install] = [s for s in ACTION["runs"]["steps"] if s.get("id") == "install"]
    assert '"$PYTHON" -I -m pip install' in install["run"] and '"$VPY" -I -c' in install["run"]


@pytest.mark.parametrize("path", [*WORKFLOWS, *EXAMPLES], ids=lambda p: p.name)
def test_workflows_cancel_superseded_runs_and_never_mask_a_check(path: Path) -> None:
    document = yaml.safe_load(path.read_text(encoding="utf-8"))
    concurrency = document.get("concurrency")
    assert isinstance(concurrency, dict), f"{path.name}: no workflow-level concurrency group"
    assert "${{" in concurrency["group"]  # per PR or ref, not one group for everything
    assert concurrency.get("cancel-in-progress") not in (None, False)
    for step in steps(document):
        assert "|| true" not in step.get("run", ""), f"{path.name}: a check that cannot fail"


def test_selftest_exercises_a_missing_base_artifact_on_pull_requests() -> None:
    selftest = yaml.safe_load((ROOT / ".github/workflows/selftest.yml").read_text())
    job = selftest["jobs"]["selftest"]
    assert job["permissions"]["actions"] == "read"
    [step] = [s for s in job["steps"] if s.get("id") == "noartifact"]
    assert step["if"] == "github.event_name == 'pull_request'"
    assert step["with"]["fail-on"] == "no_base" and "base" not in step["with"]
    assert step["with"]["base-artifact"] and step.get("continue-on-error") is True
    asserts = job["steps"][-1]
    assert asserts["env"]["NOARTIFACT_JSON"] == "${{ steps.noartifact.outputs.report-json }}"
    assert 'check "$NOARTIFACT_JSON" fail no_base' in asserts["run"]
    assert "GITHUB_STEP_SUMMARY" not in asserts["run"]  # that is this step's own, empty file


def test_no_file_pins_an_all_zero_sha() -> None:
    """A placeholder SHA in an example is a workflow that cannot run: pin `@v1` or a real SHA."""
    tracked = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout.split(b"\0")
    placeholder = re.compile(rb"@0{40}(?![0-9a-f])")
    found = [
        name.decode()
        for name in tracked
        if name
        and (ROOT / name.decode()).is_file()
        and placeholder.search((ROOT / name.decode()).read_bytes())
    ]
    assert not found, f"all-zero SHA pins in {found}"


def test_the_minimal_workflow_reruns_when_the_accept_label_is_added() -> None:
    minimal = yaml.safe_load((ROOT / "examples/workflows/minimal.yml").read_text())
    on = minimal[True] if True in minimal else minimal["on"]
    assert "labeled" in on["pull_request"]["types"]
    assert {"opened", "synchronize", "reopened"} <= set(on["pull_request"]["types"])
