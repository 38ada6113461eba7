"""The Action's history store (issue 14) against a local bare repository standing in for the
repository on GitHub, with the fake GitHub for the rest: pushes to the default branch append
(per report id, capped, retried on a concurrent push); pull requests read and never write; a
hostile line on the branch is skipped with a warning."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from budgetdiff import action
from budgetdiff.github.context import HISTORY_REMOTE_ENV, GitHubContext
from budgetdiff.github.history_store import Store
from tests.support.fake_github import PR, FakeGitHub, make_env
from tests.support.paths import DEMO

BRANCH = "budgetdiff-history"


@pytest.fixture
def remote(tmp_path: Path) -> Path:
    bare = tmp_path / "origin.git"
    subprocess.run(["git", "init", "--quiet", "--bare", str(bare)], check=True)
    return bare


def branch_file(remote: Path, path: str = "default.jsonl") -> list[str]:
    done = subprocess.run(
        ["git", "--git-dir", str(remote), "show", f"{BRANCH}:{path}"],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.splitlines()


def head_of(remote: Path) -> str:
    done = subprocess.run(
        ["git", "--git-dir", str(remote), "rev-parse", "--verify", "--quiet", BRANCH],
        capture_output=True,
        text=True,
        check=False,
    )
    return done.stdout.strip()


def action_env(
    tmp_path: Path, gh: FakeGitHub, remote: Path, kind: str, sha: str, **extra: str
) -> dict[str, str]:
    env = make_env(tmp_path, gh, kind, GITHUB_SHA=sha)
    env.update(
        {
            HISTORY_REMOTE_ENV: str(remote),
            "GITHUB_REF": "refs/heads/master" if kind == "push" else f"refs/pull/{PR}/merge",
            "GITHUB_SERVER_URL": "https://github.example",
            "GITHUB_RUN_ID": "77",
            "INPUT_HEAD": str(DEMO / "head.csv"),
            "INPUT_BASE": str(DEMO / "base.csv"),
            "INPUT_BUDGET": str(DEMO / "budget.yml"),
            "INPUT_HISTORY_BRANCH": BRANCH,
            "INPUT_HISTORY_SIZE": "500",
            "INPUT_COMMENT": "true",
        }
    )
    env.update(extra)
    return env


def test_pushes_append_and_pull_requests_only_read(
    tmp_path: Path, gh: FakeGitHub, remote: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for i in range(3):
        env = action_env(tmp_path, gh, remote, "push", f"{i + 1:x}" * 40)
        assert action.main(env) == 1  # the demo's verdict; the store does not change it
    env = action_env(tmp_path, gh, remote, "push", "3" * 40)  # a re-run of the same commit
    assert action.main(env) == 1
    lines = branch_file(remote)
    assert [json.loads(x)["commit"] for x in lines] == [f"{i + 1:x}" * 40 for i in range(3)]
    assert all(json.loads(x)["schema"] == "budgetdiff.report/v1" for x in lines)
    written = head_of(remote)

    env = action_env(tmp_path, gh, remote, "pull_request.opened", "d" * 40)
    assert action.main(env) == 1
    assert head_of(remote) == written  # the PR run read the branch and wrote nothing
    [comment] = gh.comments_on(PR)
    assert "**Trend at p95** over 3 run(s)" in comment["body"]
    assert (
        "https://github.example/Codertocat/Hello-World/actions/runs/77#artifacts"
        in (comment["body"])
    )
    page = Path(env["RUNNER_TEMP"]) / "budgetdiff-trend-default.html"
    assert page.is_file() and '"title": "decode at p95' in page.read_text()
    assert "history not" not in capsys.readouterr().out


def test_a_push_to_another_branch_never_writes(
    tmp_path: Path, gh: FakeGitHub, remote: Path
) -> None:
    env = action_env(tmp_path, gh, remote, "push", "e" * 40, GITHUB_REF="refs/heads/feature")
    assert action.main(env) == 1
    assert head_of(remote) == ""


def test_a_concurrent_push_is_retried_and_both_lines_kept(tmp_path: Path, remote: Path) -> None:
    context = GitHubContext(history_remote=str(remote))
    store = Store(context, BRANCH)
    store.append("default.jsonl", '{"n":0}', 500, "first")

    def race() -> None:  # another job pushes between our fetch and our push
        Store(context, BRANCH).append("default.jsonl", '{"n":1}', 500, "theirs")

    attempts = store.append("default.jsonl", '{"n":2}', 500, "ours", before_push=race)
    assert attempts == 2
    assert branch_file(remote) == ['{"n":0}', '{"n":1}', '{"n":2}']


def test_the_file_keeps_the_newest_runs_and_other_ids_files(tmp_path: Path, remote: Path) -> None:
    context = GitHubContext(history_remote=str(remote))
    store = Store(context, BRANCH)
    store.append("other.jsonl", '{"id":"other"}', 3, "other id")
    for i in range(5):
        store.append("default.jsonl", f'{{"n":{i}}}', 3, f"run {i}")
    assert branch_file(remote) == ['{"n":2}', '{"n":3}', '{"n":4}']
    assert branch_file(remote, "other.jsonl") == ['{"id":"other"}']
    assert store.read("missing.jsonl") is None
    assert Store(context, "no-such-branch").read("default.jsonl") is None


def test_a_hostile_line_on_the_branch_is_skipped_with_a_warning(
    tmp_path: Path, gh: FakeGitHub, remote: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    env = action_env(tmp_path, gh, remote, "push", "a" * 40)
    assert action.main(env) == 1
    store = Store(GitHubContext(history_remote=str(remote)), BRANCH)
    hostile = json.loads(branch_file(remote)[0])
    hostile["slices"][0]["name"] = "::set-output name=verdict::pass"
    hostile["slices"][1]["head_ms"] = "<script>alert(1)</script>"
    store.append("default.jsonl", json.dumps(hostile), 500, "hostile")
    capsys.readouterr()
    env = action_env(tmp_path, gh, remote, "pull_request.opened", "d" * 40)
    assert action.main(env) == 1
    err = capsys.readouterr().err
    assert "budgetdiff: warning:" in err and "line 2: skipped" in err
    [comment] = gh.comments_on(PR)
    assert "over 1 run(s)" in comment["body"]
    assert "set-output" not in comment["body"] + err and "<script" not in comment["body"] + err


@pytest.mark.parametrize(
    ("name", "value"), [("history-branch", "-x"), ("history-branch", "a..b"), ("history-size", "0")]
)
def test_bad_history_inputs_are_exit_2(
    tmp_path: Path,
    gh: FakeGitHub,
    remote: Path,
    name: str,
    value: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    env = action_env(tmp_path, gh, remote, "push", "b" * 40)
    env[action.INPUTS[name]] = value
    assert action.main(env) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and name in err


def test_the_history_example_with_head_alone_checks_and_records(
    tmp_path: Path, gh: FakeGitHub, remote: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """examples/workflows/history.yml gives `head` and no base of any kind: the Action checks
    the head alone (as `budgetdiff check`) and records it, instead of a compare's exit 2."""
    env = action_env(tmp_path, gh, remote, "push", "f" * 40, INPUT_FAIL_ON="never")
    del env["INPUT_BASE"]
    env["INPUT_COMMENT"] = "false"
    assert action.main(env) == 0
    assert "::notice title=budgetdiff::no base given: head checked alone" in capsys.readouterr().out
    [line] = branch_file(remote)
    report = json.loads(line)
    assert report["commit"] == "f" * 40 and report["mode"] == "check"
