"""The CLI and the Action entry end to end against a fake GitHub: comments, base artifacts,
and the fork-PR workflow_run flow with a hostile results artifact."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from budgetdiff import action
from budgetdiff.cli import main
from budgetdiff.commands.options import RunOptions
from budgetdiff.errors import InputError, UsageError
from budgetdiff.github import GitHubContext, fetch_base_artifact
from budgetdiff.github.artifact import Limits, extract
from budgetdiff.github.comment import marker
from tests.support import waits
from tests.support.fake_github import (
    BOT,
    PR,
    REPO,
    TOKEN,
    FakeGitHub,
    event_payload,
    make_env,
    make_zip,
    parse_outputs,
)
from tests.support.paths import DEMO


def outputs(env: dict[str, str]) -> dict[str, str]:
    return parse_outputs(Path(env["GITHUB_OUTPUT"]).read_text())


def demo_args(*extra: str) -> list[str]:
    return [
        "compare",
        "--base",
        str(DEMO / "base.csv"),
        "--head",
        str(DEMO / "head.csv"),
        "--budget",
        str(DEMO / "budget.yml"),
        "--github",
        *extra,
    ]


# -- the CLI ------------------------------------------------------------------------------------


def test_cli_comments_once_and_updates_on_the_next_run(
    tmp_path: Path, gh: FakeGitHub, capsys: pytest.CaptureFixture[str]
) -> None:
    env = make_env(tmp_path, gh)
    assert main(demo_args("--id", "x"), environ=env) == 1
    assert main(demo_args("--id", "x"), environ=env) == 1

    [comment] = gh.comments_on(PR)
    assert comment["body"].startswith(marker("x") + "\n")
    assert "decode" in comment["body"]
    comments = f"/repos/{REPO}/issues/{PR}/comments"
    assert [(r.method, r.path) for r in gh.requests] == [
        ("GET", f"/repos/{REPO}/pulls/{PR}"),  # is this run's head still the PR's head?
        ("GET", comments),
        ("POST", comments),
        ("GET", comments),  # a concurrent run's comment? none
        ("GET", f"/repos/{REPO}/pulls/{PR}"),
        ("GET", comments),
        ("PATCH", f"/repos/{REPO}/issues/comments/{comment['id']}"),
    ]
    values = outputs(env)
    assert values["verdict"] == "fail"
    assert "decode" in values["regressions"].split(",")
    assert json.loads(Path(values["report-json"]).read_text())["schema"] == "budgetdiff.report/v1"
    assert "decode" in Path(env["GITHUB_STEP_SUMMARY"]).read_text()
    out = capsys.readouterr().out
    assert "::error title=budgetdiff x%3A regression decode::" in out


def test_cli_read_only_token_keeps_the_exit_code_summary_and_outputs(
    tmp_path: Path, gh: FakeGitHub, capsys: pytest.CaptureFixture[str]
) -> None:
    gh.tokens[TOKEN] = (BOT, False)
    env = make_env(tmp_path, gh)
    assert main(demo_args(), environ=env) == 1
    assert main(demo_args("--fail-on", "never"), environ=env) == 0
    assert gh.comments_on(PR) == []
    assert outputs(env)["verdict"] == "warn"  # the second run's outputs are appended last
    assert Path(env["GITHUB_STEP_SUMMARY"]).read_text().count("budgetdiff") >= 2
    captured = capsys.readouterr()
    assert captured.out.count("::warning title=budgetdiff::budgetdiff: could not comment") == 2
    assert "Resource not accessible by integration" in captured.out
    assert TOKEN not in captured.out + captured.err


def test_cli_report_ids_keep_separate_comments_behind_an_api_v3_prefix(tmp_path: Path) -> None:
    with FakeGitHub(prefix="/api/v3", repo=REPO) as ghes:
        env = make_env(tmp_path, ghes)
        main(demo_args("--id", "llama-8b"), environ=env)
        main(demo_args("--id", "llama-70b"), environ=env)
        main(demo_args("--id", "llama-8b"), environ=env)
        firsts = sorted(c["body"].split("\n", 1)[0] for c in ghes.comments_on(PR))
    assert ghes.errors == []
    assert firsts == [marker("llama-70b"), marker("llama-8b")]


def test_cli_base_artifact_from_main_not_from_a_forks_main(
    tmp_path: Path, gh: FakeGitHub, capsys: pytest.CaptureFixture[str]
) -> None:
    base_data = (DEMO / "base.csv").read_bytes()
    head = tmp_path / "results.csv"
    head.write_bytes((DEMO / "head.csv").read_bytes())
    payload = event_payload("pull_request.opened")
    branch = payload["pull_request"]["base"]["ref"]
    repo_id = payload["repository"]["id"]
    gh.add_artifact(
        "latency-results",
        make_zip({"results.csv": base_data}),
        branch=branch,
        head_repository_id=repo_id,
        created_at="2024-01-01T00:00:00Z",
    )
    # newer, same branch name, but a pull_request run from a fork: must not be the base
    gh.add_artifact(
        "latency-results",
        make_zip({"results.csv": head.read_bytes()}),
        branch=branch,
        event="pull_request",
        head_repository_id=999,
        created_at="2024-02-01T00:00:00Z",
    )
    env = make_env(tmp_path, gh)
    code = main(base_artifact_args(head), environ=env)
    assert code == 1
    assert "decode" in outputs(env)["regressions"].split(",")
    assert len(gh.storage_requests) == 1  # the archive came from storage, without the token
    out = capsys.readouterr().out
    assert "not the PR's base commit" in out  # it is main's latest, and says so


def test_cli_missing_base_artifact_is_the_no_base_finding(
    tmp_path: Path, gh: FakeGitHub, capsys: pytest.CaptureFixture[str]
) -> None:
    env = make_env(tmp_path, gh)
    code = main(
        [
            "compare",
            "--head",
            str(DEMO / "head.csv"),
            "--budget",
            str(DEMO / "budget.yml"),
            "--github",
            "--base-artifact",
            "latency-results",
            "--fail-on",
            "no_base",
        ],
        environ=env,
    )
    assert code == 1
    assert outputs(env)["verdict"] == "fail"
    report = json.loads(Path(outputs(env)["report-json"]).read_text())
    [no_base] = [f for f in report["findings"] if f["kind"] == "no_base"]
    assert no_base["fails"] is True
    assert no_base["message"].startswith(
        "base-artifact latency-results: no successful run on master has this artifact"
    )
    [comment] = gh.comments_on(PR)
    assert "run the workflow on the base branch first" in comment["body"]
    out = capsys.readouterr().out
    # the reason, told once among the workflow commands: by the no_base finding's annotation
    commands = [line for line in out.splitlines() if line.startswith("::")]
    told = [line for line in commands if "no successful run on master" in line]
    assert len(told) == 1 and told[0].startswith("::error title=budgetdiff default%3A no_base")


def test_cli_main_takes_the_api_transport_and_the_sleep_as_seams(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    seen: list[str] = []

    def unavailable(request: httpx.Request) -> httpx.Response:
        seen.append(request.url.path)
        return httpx.Response(503, json={"message": "Service Unavailable"})

    event = tmp_path / "event.json"
    event.write_text(json.dumps(event_payload("pull_request.opened")), encoding="utf-8")
    env = {
        "GITHUB_TOKEN": TOKEN,
        "GITHUB_API_URL": "https://ghes.example/api/v3",
        "GITHUB_REPOSITORY": REPO,
        "GITHUB_EVENT_NAME": "pull_request",
        "GITHUB_EVENT_PATH": str(event),
        "RUNNER_TEMP": str(tmp_path),
    }
    sleeps: list[float] = []
    transport = httpx.MockTransport(unavailable)
    assert main(demo_args(), environ=env, transport=transport, sleep=sleeps.append) == 1
    pull = f"/api/v3/repos/{REPO}/pulls/{PR}"
    comments = f"/api/v3/repos/{REPO}/issues/{PR}/comments"
    assert seen == [pull] * 5 + [comments] * 5  # every attempt, none of them waited for
    assert waits.backoff(sleeps, [1.0, 2.0, 4.0, 8.0] * 2)  # jittered
    assert f"GET {comments}: HTTP 503 Service Unavailable" in capsys.readouterr().out


def test_fetch_base_artifact_prefers_the_exact_base_commit(tmp_path: Path, gh: FakeGitHub) -> None:
    payload = event_payload("pull_request.opened")
    base_sha = payload["pull_request"]["base"]["sha"]
    gh.add_artifact(
        "r",
        make_zip({"results.csv": b"exact"}),
        branch="master",
        head_sha=base_sha,
        created_at="2024-01-01T00:00:00Z",
        head_repository_id=payload["repository"]["id"],
    )
    gh.add_artifact(
        "r",
        make_zip({"results.csv": b"newer"}),
        branch="master",
        created_at="2024-03-01T00:00:00Z",
        head_repository_id=payload["repository"]["id"],
    )
    gh.add_artifact(
        "r",
        make_zip({"results.csv": b"failed"}),
        branch="master",
        head_sha=base_sha,
        conclusion="failure",
        created_at="2024-04-01T00:00:00Z",
    )
    context = GitHubContext.from_environ(make_env(tmp_path, gh))
    fetched = fetch_base_artifact("r", context, tmp_path / "base")
    assert fetched.folder == tmp_path / "base"
    assert (fetched.folder / "results.csv").read_bytes() == b"exact"
    assert fetched.level == "notice"  # the PR's base commit itself: nothing to warn about
    assert fetched.message.startswith("base results: artifact r of run ")
    assert fetched.message.endswith(f"(commit {base_sha[:12]} on master)")


# -- the Action entry and the fork-PR workflow_run flow -------------------------------------------


def test_action_builds_argv_without_any_shell_and_options_cannot_be_smuggled() -> None:
    o, env = action.build(
        {
            "INPUT_HEAD": "results/head.csv\n--fail-on=never\n",
            "INPUT_BASE": "results/base with space.csv",
            "INPUT_ID": "llama-8b",
            "INPUT_GITHUB_TOKEN": "tok",
            "INPUT_COMMENT": "false",
            "INPUT_FAIL_ON": "breach,regression",
        }
    )
    # no argument list at all: a line that looks like a flag is a file name
    assert o == RunOptions(
        github=True,
        id="llama-8b",
        head=("results/head.csv", "--fail-on=never"),
        base=("results/base with space.csv",),
        fail_on=("breach", "regression"),
        comment=False,
    )
    assert env["GITHUB_TOKEN"] == "tok"


def test_action_without_head_is_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert action.main({}) == 2
    assert "input `head` is required" in capsys.readouterr().err


def workflow_run_env(tmp_path: Path, gh: FakeGitHub, artifact: bytes) -> dict[str, str]:
    payload = event_payload("workflow_run.completed.no_pr")
    run = payload["workflow_run"]
    gh.add_pull(17, run["head_sha"])
    uploaded = gh.add_artifact("latency-results", artifact, branch="feature", event="pull_request")
    run["id"] = uploaded["workflow_run"]["id"]
    env = make_env(tmp_path, gh, "workflow_run.completed.no_pr", payload=payload)
    env.update(
        {
            "INPUT_RESULTS_ARTIFACT": "latency-results",
            "INPUT_BASE": "base.csv",
            "INPUT_HEAD": "head.csv",
            "INPUT_BUDGET": str(DEMO / "budget.yml"),
            "INPUT_ID": "fork",
            "INPUT_GITHUB_TOKEN": TOKEN,
        }
    )
    return env


def test_workflow_run_flow_comments_on_the_fork_pr(tmp_path: Path, gh: FakeGitHub) -> None:
    archive = make_zip(
        {"base.csv": (DEMO / "base.csv").read_bytes(), "head.csv": (DEMO / "head.csv").read_bytes()}
    )
    env = workflow_run_env(tmp_path, gh, archive)
    assert action.main(env) == 1
    [comment] = gh.comments_on(17)
    assert comment["body"].startswith(marker("fork") + "\n")
    assert outputs(env)["verdict"] == "fail"


def bomb() -> bytes:
    return make_zip({"base.csv": b"0" * (60 * 1024 * 1024), "head.csv": b"x"})


@pytest.mark.parametrize(
    ("archive", "message"),
    [
        (make_zip({"../../evil.csv": b"x", "head.csv": b"x"}), "not a plain relative path"),
        (make_zip({"/etc/evil.csv": b"x"}), "not a plain relative path"),
        (make_zip({"head.csv": b"x"}, symlinks={"base.csv": "/etc/passwd"}), "not a regular file"),
        (make_zip({"base.csv": b"x", "budget.yml": b"fail_on: []"}), "not a results file"),
        (make_zip({f"f{i}.csv": b"1" for i in range(40)}), "more than the cap of 32"),
        (b"PK\x03\x04 not really a zip", "not a zip archive"),
    ],
    ids=["traversal", "absolute", "symlink", "budget-inside", "too-many", "not-zip"],
)
def test_workflow_run_flow_refuses_a_hostile_artifact(
    tmp_path: Path,
    gh: FakeGitHub,
    capsys: pytest.CaptureFixture[str],
    archive: bytes,
    message: str,
) -> None:
    env = workflow_run_env(tmp_path, gh, archive)
    assert action.main(env) == 2
    assert message in capsys.readouterr().err
    assert gh.comments_on(17) == []
    assert not (tmp_path / "evil.csv").exists() and not Path("/etc/evil.csv").exists()


def test_workflow_run_flow_refuses_a_zip_bomb(
    tmp_path: Path, gh: FakeGitHub, capsys: pytest.CaptureFixture[str]
) -> None:
    archive = bomb()
    assert len(archive) < 1024 * 1024  # tiny on the wire, 60 MiB inflated
    env = workflow_run_env(tmp_path, gh, archive)
    assert action.main(env) == 2
    assert "inflates past the" in capsys.readouterr().err
    extracted = list((tmp_path / "runner").rglob("base.csv"))
    assert all(p.stat().st_size <= 50 * 1024 * 1024 for p in extracted)


def test_workflow_run_flow_non_numeric_results_are_exit_2_not_rendered(
    tmp_path: Path, gh: FakeGitHub, capsys: pytest.CaptureFixture[str]
) -> None:
    hostile = (
        b"request_id,queue_ms,prefill_ms,decode_ms\n"
        b"r1,12,<!-- budgetdiff:fork -->,4000\n::set-output name=x::y,1,2,3\n"
    )
    archive = make_zip({"base.csv": hostile, "head.csv": hostile})
    env = workflow_run_env(tmp_path, gh, archive)
    assert action.main(env) == 2
    err = capsys.readouterr().err
    assert err.startswith("budgetdiff: error:")
    assert gh.comments_on(17) == []


def test_workflow_run_flow_artifact_names_cannot_leave_the_folder(
    tmp_path: Path, gh: FakeGitHub, capsys: pytest.CaptureFixture[str]
) -> None:
    env = workflow_run_env(tmp_path, gh, make_zip({"head.csv": b"x"}))
    env["INPUT_HEAD"] = "../../etc/passwd"
    assert action.main(env) == 2
    assert "must be a path inside the results artifact" in capsys.readouterr().err


def test_extract_counts_inflated_bytes_not_declared_sizes(tmp_path: Path) -> None:
    data = make_zip({"a.csv": b"1" * 5000})
    with pytest.raises(InputError, match="inflates past the 4096-byte cap"):
        extract(data, tmp_path / "x", "artifact", Limits(file_bytes=4096))
    folder = extract(data, tmp_path / "y", "artifact", Limits(file_bytes=8192))
    assert (folder / "a.csv").read_bytes() == b"1" * 5000


# -- review fixes: base artifacts that cannot be downloaded are no_base, not exit 2 ------------


def base_artifact_args(head: Path, *extra: str) -> list[str]:
    return [
        "compare",
        "--head",
        str(head),
        "--budget",
        str(DEMO / "budget.yml"),
        "--github",
        "--base-artifact",
        "latency-results",
        "--comment",
        "false",
        *extra,
    ]


def add_base(gh: FakeGitHub, files: dict[str, bytes]) -> dict[str, object]:
    payload = event_payload("pull_request.opened")
    return gh.add_artifact(
        "latency-results",
        make_zip(files),
        branch=payload["pull_request"]["base"]["ref"],
        head_sha=payload["pull_request"]["base"]["sha"],
        head_repository_id=payload["repository"]["id"],
    )


@pytest.mark.parametrize("failure", ["expired-410", "storage-503", "api-502"])
def test_cli_base_artifact_that_cannot_be_downloaded_is_the_no_base_finding(
    tmp_path: Path,
    gh: FakeGitHub,
    capsys: pytest.CaptureFixture[str],
    failure: str,
) -> None:
    uploaded = add_base(gh, {"head.csv": (DEMO / "base.csv").read_bytes()})
    zip_path = rf"/actions/artifacts/{uploaded['id']}/zip$"
    if failure == "expired-410":
        gh.fail("GET", zip_path, 410, body={"message": "Artifact has expired"})
    elif failure == "storage-503":
        gh.storage_failures.extend([503] * 5)
    else:
        gh.fail("GET", zip_path, 502, times=5)
    env = make_env(tmp_path, gh)
    sleeps: list[float] = []
    # the retries as they are, without their waits
    argv = base_artifact_args(DEMO / "head.csv", "--fail-on", "no_base")
    code = main(argv, environ=env, sleep=sleeps.append)
    assert waits.backoff(sleeps, [] if failure == "expired-410" else [1.0, 2.0, 4.0, 8.0])
    assert code == 1  # the no_base finding failed it, not exit 2
    assert outputs(env)["verdict"] == "fail"
    out = capsys.readouterr().out
    assert f"could not download artifact {uploaded['id']}" in out
    assert "no base results" in out


def test_fetch_base_artifact_keeps_refusing_a_hostile_archive(
    tmp_path: Path, gh: FakeGitHub
) -> None:
    add_base(gh, {"../../evil.csv": b"x"})
    context = GitHubContext.from_environ(make_env(tmp_path, gh))
    with pytest.raises(InputError, match="not a plain relative path"):
        fetch_base_artifact("latency-results", context, tmp_path / "base")


def test_action_base_artifact_defaults_the_base_name_to_the_heads(
    tmp_path: Path, gh: FakeGitHub
) -> None:
    add_base(gh, {"head.csv": (DEMO / "base.csv").read_bytes()})
    env = make_env(tmp_path, gh)
    env.update(
        {
            "INPUT_HEAD": str(DEMO / "head.csv"),
            "INPUT_BUDGET": str(DEMO / "budget.yml"),
            "INPUT_BASE_ARTIFACT": "latency-results",
            "INPUT_COMMENT": "false",
        }
    )
    assert action.build(env)[0].base == ()  # the orchestrator takes the head's name in it
    assert action.main(env) == 1  # compared against the artifact's head.csv: the regression
    assert "decode" in outputs(env)["regressions"].split(",")


def test_action_results_artifact_without_base_is_refused_before_any_download(
    tmp_path: Path, gh: FakeGitHub, capsys: pytest.CaptureFixture[str]
) -> None:
    env = workflow_run_env(tmp_path, gh, make_zip({"head.csv": b"x"}))
    env["INPUT_BASE"] = ""
    assert action.main(env) == 2
    assert "input `base` is required with `results-artifact`" in capsys.readouterr().err
    assert gh.requests == [] and list((tmp_path / "runner").iterdir()) == []


def test_action_results_and_base_artifacts_together_need_no_base_input(
    tmp_path: Path, gh: FakeGitHub
) -> None:
    env = workflow_run_env(tmp_path, gh, make_zip({"head.csv": (DEMO / "head.csv").read_bytes()}))
    env.update({"INPUT_BASE": "", "INPUT_BASE_ARTIFACT": "base-results"})
    o, _env = action.build(env)
    assert o.base == () and o.base_artifact == "base-results"  # the head's name inside it
    [head] = o.head
    assert head.endswith("head.csv") and str(tmp_path / "runner") in head


def test_action_validates_the_id_before_making_a_folder_with_it(tmp_path: Path) -> None:
    runner = tmp_path / "runner"
    runner.mkdir()
    env = {
        "INPUT_HEAD": "head.csv",
        "INPUT_BASE": "base.csv",
        "INPUT_ID": "../../escape",
        "INPUT_RESULTS_ARTIFACT": "latency-results",
        "RUNNER_TEMP": str(runner),
    }
    with pytest.raises(UsageError, match="letters, digits"):
        action.build(env)
    assert list(runner.iterdir()) == [] and list(tmp_path.iterdir()) == [runner]


def test_the_action_entry_in_isolated_mode_ignores_a_shadowing_workspace(tmp_path: Path) -> None:
    shadow = tmp_path / "budgetdiff"
    shadow.mkdir()
    (shadow / "__init__.py").write_text("import sys\nsys.exit(99)\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("INPUT_", "PYTHON"))}
    env["INPUT_BUDGET"] = "budget.yml"  # an input still arrives through the environment

    def run(*flags: str) -> subprocess.CompletedProcess[str]:
        argv = [sys.executable, *flags, "-m", "budgetdiff.action"]
        return subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True)

    assert run().returncode == 99  # what action.yml's `-I` prevents
    isolated = run("-I")
    assert isolated.returncode == 2
    assert "input `head` is required" in isolated.stderr


# -- review fixes: which PR a workflow_run belongs to ------------------------------------------


def test_workflow_run_pull_requests_of_another_repository_are_not_trusted(
    tmp_path: Path, gh: FakeGitHub, capsys: pytest.CaptureFixture[str]
) -> None:
    payload = event_payload("workflow_run.completed.with_pr")
    listed = payload["workflow_run"]["pull_requests"][0]
    # this sample lists a PR whose base is another repository than the payload's own
    assert listed["base"]["repo"]["id"] != payload["repository"]["id"]
    env = make_env(tmp_path, gh, "workflow_run.completed.with_pr", payload=payload)
    assert main(demo_args("--fail-on", "never"), environ=env) == 0
    assert gh.comments_on(listed["number"]) == []
    head_sha = payload["workflow_run"]["head_sha"]
    assert [r.path for r in gh.requests] == [f"/repos/{REPO}/commits/{head_sha}/pulls"]
    out = capsys.readouterr().out
    assert "::notice title=budgetdiff::budgetdiff: no open pull request of" in out
    assert head_sha[:12] in out


def test_workflow_run_pull_requests_of_this_repository_are_used(
    tmp_path: Path, gh: FakeGitHub
) -> None:
    payload = event_payload("workflow_run.completed.with_pr")
    listed = payload["workflow_run"]["pull_requests"][0]
    payload["repository"]["id"] = listed["base"]["repo"]["id"]
    payload["workflow_run"]["head_sha"] = listed["head"]["sha"]  # the run built the PR's head
    gh.add_pull(listed["number"], listed["head"]["sha"])
    env = make_env(tmp_path, gh, "workflow_run.completed.with_pr", payload=payload)
    assert main(demo_args("--fail-on", "never"), environ=env) == 0
    assert len(gh.comments_on(listed["number"])) == 1
    assert not any("/commits/" in r.path for r in gh.requests)


# -- on-findings and the accept label (issue 13) -------------------------------------------------


def _pair(tmp_path: Path, regressed: bool) -> list[str]:
    """compare args for a seeded pair against its budget: a pass, or decode regressed (fail)."""
    from tests.support.comment_states import BUDGET, _data
    from tests.support.helpers import write_table

    base = write_table(tmp_path / "base.csv", _data(1))
    head = write_table(tmp_path / "head.csv", _data(2, decode_tail=1.3 if regressed else 1.0))
    budget = tmp_path / "budget.yml"
    budget.write_text(json.dumps(BUDGET))
    return ["compare", "--base", str(base), "--head", str(head), "--budget", str(budget)]


def test_on_findings_posts_nothing_on_a_pass(tmp_path: Path, gh: FakeGitHub) -> None:
    env = make_env(tmp_path, gh)
    argv = [*_pair(tmp_path, regressed=False), "--github", "--comment", "on-findings"]
    assert main(argv, environ=env) == 0
    assert gh.comments_on(PR) == []
    assert not any(r.method in ("POST", "PATCH") for r in gh.requests)
    assert outputs(env)["verdict"] == "pass"  # the summary and outputs are written all the same
    assert Path(env["GITHUB_STEP_SUMMARY"]).read_text().startswith("### ✅ End to end p95")


def test_on_findings_comments_a_failure_then_marks_it_resolved(
    tmp_path: Path, gh: FakeGitHub
) -> None:
    env = make_env(tmp_path, gh)
    (tmp_path / "a").mkdir()
    failing = _pair(tmp_path / "a", regressed=True)
    assert main([*failing, "--github", "--comment", "on-findings"], environ=env) == 1
    [first] = gh.comments_on(PR)
    assert first["body"].split("\n")[1].startswith("### ❌ End to end p95 +")
    (tmp_path / "b").mkdir()
    fixed = _pair(tmp_path / "b", regressed=False)
    assert main([*fixed, "--github", "--comment", "on-findings"], environ=env) == 0
    [after] = gh.comments_on(PR)  # the same comment, updated: not left stale, not a new one
    assert after["id"] == first["id"]
    assert after["body"].split("\n")[1].startswith("### ✅ Resolved: End to end p95")
    assert "this run finds none" in after["body"]


def _labeled(label: str) -> dict[str, object]:
    payload = event_payload("pull_request.labeled")  # GitHub's own example: label `bug`
    added = dict(payload["label"], name=label)
    payload["label"] = added
    payload["pull_request"] = dict(payload["pull_request"], labels=[added])
    return payload


def test_accept_label_turns_a_failing_regression_into_warn(
    tmp_path: Path, gh: FakeGitHub, capsys: pytest.CaptureFixture[str]
) -> None:
    env = make_env(tmp_path, gh, "pull_request.labeled", _labeled("budgetdiff:accept"))
    assert main([*_pair(tmp_path, regressed=True), "--github"], environ=env) == 0
    assert outputs(env)["verdict"] == "warn"
    [comment] = gh.comments_on(PR)
    body = comment["body"]
    assert body.split("\n")[1].startswith("### ⚠️ Accepted by &#64;&#8203;Codertocat: End to end")
    assert "accepted the regression of decode with the label `budgetdiff:accept`" in body
    assert "budgetdiff rebudget --head FILE --write" in body
    report = json.loads(Path(outputs(env)["report-json"]).read_text())
    regression = [f for f in report["findings"] if f["kind"] == "regression"]
    assert [(f["fails"], f["accepted"]) for f in regression] == [(False, True)]
    assert report["accepted"] == {"label": "budgetdiff:accept", "by": "@Codertocat"}
    out = capsys.readouterr().out
    assert "::error" not in out  # nothing fails, so no error annotation


def test_another_label_or_none_accepts_nothing(tmp_path: Path, gh: FakeGitHub) -> None:
    env = make_env(tmp_path, gh, "pull_request.labeled", _labeled("bug"))
    assert main([*_pair(tmp_path, regressed=True), "--github"], environ=env) == 1
    env = make_env(tmp_path, gh, "pull_request.labeled", _labeled("budgetdiff:accept"))
    argv = [*_pair(tmp_path, regressed=True), "--github", "--accept-label", ""]
    assert main(argv, environ=env) == 1  # disabled
