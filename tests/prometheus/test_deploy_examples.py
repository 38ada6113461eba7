"""examples/: the deployment workflow and the Argo Rollouts AnalysisTemplate are valid YAML
that say what budgetdiff takes, and the template's Job command, run as Argo would fill it
in, gates the real Prometheus: the canary aborts the rollout, a stable replica passes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from budgetdiff import action
from budgetdiff.cli import main
from tests.prometheus.conftest import BUDGET, Server
from tests.prometheus.vllm_openmetrics import POD_TEMPLATE_HASH
from tests.support.paths import ROOT

TEMPLATE = ROOT / "examples" / "argo" / "analysis-template.yml"
WORKFLOW = ROOT / "examples" / "workflows" / "deploy-gate.yml"
ACTION = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))


def job_container(document: dict[str, Any]) -> dict[str, Any]:
    [metric] = document["spec"]["metrics"]
    [container] = metric["provider"]["job"]["spec"]["template"]["spec"]["containers"]
    return dict(container)


def filled(command: list[str], args: dict[str, str]) -> list[str]:
    """The command as Argo fills in `{{args.NAME}}`."""
    out = []
    for word in command:
        for name, value in args.items():
            word = word.replace(f"{{{{args.{name}}}}}", value)
        assert "{{" not in word, word
        out.append(word)
    return out


def test_the_analysis_template_is_a_job_metric_that_runs_budgetdiff() -> None:
    document = yaml.safe_load(TEMPLATE.read_text(encoding="utf-8"))
    assert document["apiVersion"] == "argoproj.io/v1alpha1"
    assert document["kind"] == "AnalysisTemplate"
    [metric] = document["spec"]["metrics"]
    assert metric["failureLimit"] == 0 and metric["count"] == 1
    job = metric["provider"]["job"]["spec"]
    assert job["backoffLimit"] == 0 and job["template"]["spec"]["restartPolicy"] == "Never"
    container = job_container(document)
    assert container["command"][:2] == ["budgetdiff", "compare"]
    assert "args" not in container  # no shell, no splicing
    declared = {a["name"] for a in document["spec"]["args"]}
    used = {w.split("{{args.")[1].split("}}")[0] for w in container["command"] if "{{args." in w}
    assert used <= declared


@pytest.mark.parametrize(("head", "code"), [("canary", 1), ("stable-b", 0)])
def test_the_templates_job_gates_the_real_prometheus(
    prometheus: Server, tmp_path: Path, head: str, code: int, capsys: pytest.CaptureFixture[str]
) -> None:
    container = job_container(yaml.safe_load(TEMPLATE.read_text(encoding="utf-8")))
    args = {
        "prometheus-url": prometheus.url,
        "stable-hash": POD_TEMPLATE_HASH["stable"],
        "canary-hash": POD_TEMPLATE_HASH[head],
        "window": "30m",
    }
    (tmp_path / "budget.yml").write_text(BUDGET, encoding="utf-8")
    argv = filled(container["command"], args)[1:]
    argv = [w.replace("/budget/budget.yml", str(tmp_path / "budget.yml")) for w in argv]
    # the Job's window ends when it runs; this one at the end of the backfilled data
    assert main([*argv, f"--at={prometheus.end}"], environ={}) == code
    assert ("regression" in capsys.readouterr().out) == (code == 1)


def test_the_deploy_workflow_gates_with_the_actions_inputs() -> None:
    text = WORKFLOW.read_text(encoding="utf-8")
    document = yaml.safe_load(text)
    steps = [s for job in document["jobs"].values() for s in job["steps"]]
    [gate] = [s for s in steps if s.get("uses", "").startswith("budgetdiff/budgetdiff@")]
    assert set(gate["with"]) <= set(ACTION["inputs"])
    assert "PROMETHEUS_TOKEN" in gate["env"]  # credentials through env:, never an input
    env = {action.INPUTS[k]: str(v) for k, v in gate["with"].items()}
    o, _ = action.build({**env, "INPUT_HISTORY_BRANCH": ""})
    assert o.github and not o.head
    assert o.prometheus == gate["with"]["prometheus-url"]
    assert o.head_match == gate["with"]["head-match"]
    assert o.base_match == gate["with"]["base-match"]
    after = steps[steps.index(gate) + 1 :]
    assert any(s.get("if") == "failure() || cancelled()" for s in after)  # the rollback
    assert text in (ROOT / "docs" / "deploy-gate.md").read_text(encoding="utf-8")


def test_action_live_inputs_go_together() -> None:
    with pytest.raises(action.UsageError, match="goes with `prometheus-url`"):
        action.build({"INPUT_HEAD_MATCH": '{version="canary"}'})
