"""The same input through the three edges (the CLI, `budgetdiff.compare`, the Action's entry)
gives the same findings and verdict, or the same error: one orchestrator decides for all of
them (issue 25). Each case is run three times against the fake GitHub on 127.0.0.1."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

import budgetdiff
from budgetdiff import action
from budgetdiff.cli import main
from budgetdiff.errors import BudgetdiffError
from tests.support.fake_github import REPO, TOKEN, FakeGitHub, event_payload, make_zip
from tests.support.paths import DEMO

# (kind, message) of each finding and the verdict; or the error's message and exit code
Outcome = tuple[str, tuple[tuple[str, str], ...]] | tuple[str, int]


@dataclass(frozen=True)
class Case:
    """One input: base and head files, and where the base comes from."""

    base: str | None  # a file path; None with an artifact: the head's name inside it
    head: str
    allow_missing_base: bool = False
    base_artifact: str | None = None


def environ(tmp_path: Path, gh: FakeGitHub) -> dict[str, str]:
    """A pull request's run on the runner, against the fake API."""
    payload = event_payload("pull_request.opened")
    pull = payload["pull_request"]
    gh.add_pull(pull["number"], pull["head"]["sha"])
    (tmp_path / "event.json").write_text(json.dumps(payload), encoding="utf-8")
    runner = tmp_path / "runner"
    runner.mkdir(exist_ok=True)
    for name in ("summary.md", "output.txt"):
        (tmp_path / name).touch()
    return {
        "GITHUB_TOKEN": TOKEN,
        "GITHUB_API_URL": gh.api_url,
        "GITHUB_REPOSITORY": REPO,
        "GITHUB_EVENT_NAME": "pull_request",
        "GITHUB_EVENT_PATH": str(tmp_path / "event.json"),
        "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"),
        "GITHUB_OUTPUT": str(tmp_path / "output.txt"),
        "RUNNER_TEMP": str(runner),
    }


def from_report(doc: dict[str, object]) -> Outcome:
    findings = doc["findings"]
    assert isinstance(findings, list)
    return str(doc["verdict"]), tuple((f["kind"], f["message"]) for f in findings)


def from_error(err: str, code: int) -> Outcome:
    prefix = "budgetdiff: error: "
    assert err.startswith(prefix) and err.count("\n") == 1, err
    return err[len(prefix) :].strip(), code


def via_cli(case: Case, env: dict[str, str], capsys: pytest.CaptureFixture[str]) -> Outcome:
    argv = ["compare", "--head", case.head, "--budget", str(DEMO / "budget.yml")]
    written = Path(env["RUNNER_TEMP"]) / "cli.json"
    argv += ["--json", str(written), "--github", "--comment", "false"]
    argv += ["--base", case.base] if case.base else []
    argv += ["--allow-missing-base"] if case.allow_missing_base else []
    argv += ["--base-artifact", case.base_artifact] if case.base_artifact else []
    code = main(argv, environ=env)
    _, err = capsys.readouterr()
    if code == 2:
        return from_error(err, code)
    return from_report(json.loads(written.read_text(encoding="utf-8")))


def via_api(case: Case, env: dict[str, str], capsys: pytest.CaptureFixture[str]) -> Outcome:
    try:
        report = budgetdiff.compare(
            case.base,
            case.head,
            DEMO / "budget.yml",
            allow_missing_base=case.allow_missing_base,
            base_artifact=case.base_artifact,
            environ=env,
        )
    except BudgetdiffError as e:
        return str(e), e.exit_code
    return from_report(report.to_dict())


def via_action(case: Case, env: dict[str, str], capsys: pytest.CaptureFixture[str]) -> Outcome:
    inputs = {
        "INPUT_HEAD": case.head,
        "INPUT_BASE": case.base or "",
        "INPUT_BUDGET": str(DEMO / "budget.yml"),
        "INPUT_COMMENT": "false",
        "INPUT_ALLOW_MISSING_BASE": str(case.allow_missing_base).lower(),
        "INPUT_BASE_ARTIFACT": case.base_artifact or "",
        "INPUT_HISTORY_BRANCH": "",
        "INPUT_BUDGET_FROM": "head",  # as the CLI: the payload's base commit is not checked out
    }
    code = action.main({**env, **inputs})
    _, err = capsys.readouterr()
    if code == 2:
        return from_error(err, code)
    report = Path(env["RUNNER_TEMP"]) / "budgetdiff-default.json"
    return from_report(json.loads(report.read_text(encoding="utf-8")))


EDGES: dict[str, Callable[[Case, dict[str, str], pytest.CaptureFixture[str]], Outcome]] = {
    "cli": via_cli,
    "api": via_api,
    "action": via_action,
}


def cases(tmp_path: Path, gh: FakeGitHub) -> dict[str, tuple[Case, Callable[[Outcome], bool]]]:
    """name -> (the case, what its outcome must show, checked beside the agreement)."""
    head = tmp_path / "head.csv"
    shutil.copyfile(DEMO / "head.csv", head)
    base = tmp_path / "base.csv"
    shutil.copyfile(DEMO / "base.csv", base)
    payload = event_payload("pull_request.opened")  # the base branch's run uploaded it
    gh.add_artifact(
        "latency-results",
        make_zip({"head.csv": (DEMO / "base.csv").read_bytes()}),
        branch=payload["pull_request"]["base"]["ref"],
        head_sha=payload["pull_request"]["base"]["sha"],
        head_repository_id=payload["repository"]["id"],
    )

    def kinds(outcome: Outcome) -> list[str]:
        return [k for k, _ in outcome[1]] if isinstance(outcome[1], tuple) else []

    return {
        "files": (Case(str(base), str(head)), lambda o: "regression" in kinds(o)),
        "same-file": (Case(str(head), str(head)), lambda o: kinds(o)[:1] == ["same_input"]),
        "no-base": (
            Case(str(tmp_path / "gone.csv"), str(head), allow_missing_base=True),
            lambda o: kinds(o)[:1] == ["no_base"],
        ),
        "typo": (
            Case(str(tmp_path / "bsae.csv"), str(head)),
            lambda o: o[1] == 2 and "bsae.csv: no such file" in str(o[0]),
        ),
        "artifact": (
            Case(None, str(head), base_artifact="latency-results"),
            lambda o: "regression" in kinds(o),  # the artifact's base.csv bytes, as files
        ),
        "missing-artifact": (
            Case(None, str(head), base_artifact="no-such-artifact"),
            lambda o: kinds(o)[:1] == ["no_base"],
        ),
    }


@pytest.mark.parametrize(
    "name", ["files", "same-file", "no-base", "typo", "artifact", "missing-artifact"]
)
def test_the_cli_the_api_and_the_action_find_the_same(
    name: str, tmp_path: Path, gh: FakeGitHub, capsys: pytest.CaptureFixture[str]
) -> None:
    case, shows = cases(tmp_path, gh)[name]
    outcomes = {edge: run(case, environ(tmp_path, gh), capsys) for edge, run in EDGES.items()}
    assert shows(outcomes["cli"]), outcomes["cli"]
    assert outcomes["api"] == outcomes["cli"]
    assert outcomes["action"] == outcomes["cli"]
