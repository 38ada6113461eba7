"""The GitHub steps against hostile servers on 127.0.0.1 (issue 35): the PR comment and the base
artifact each end by their deadline naming the host and the step, a token's trailing newline is
dropped, and credentials a server echoes are never printed. A failed comment stays a warning
(the exit code is the verdict's)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from budgetdiff.errors import UsageError
from budgetdiff.github import Publication, publish
from budgetdiff.github.context import GitHubContext
from budgetdiff.github.fetch import fetch_base_artifact, fetch_results_artifact
from budgetdiff.measure.results import Finding
from budgetdiff.sources.deadline import DEADLINE_ENV
from tests.support.fake_github import (
    PR,
    REPO,
    TOKEN,
    FakeGitHub,
    event_payload,
    make_env,
    make_zip,
)
from tests.support.hostile_http import Answer, HostileServer, Seen, json_answer


def publication(tmp_path: Path) -> Publication:
    json_path = tmp_path / "report.json"
    json_path.write_text("{}", encoding="utf-8")
    return Publication(
        report_id="default",
        verdict="fail",
        regressions=["decode"],
        findings=[Finding("regression", "decode", True, "decode p95 3900 -> 4480 ms")],
        json_path=json_path,
        render_markdown=lambda limit: "## budgetdiff: **fail**\n"[:limit],
    )


def pr_env(tmp_path: Path, api_url: str, **extra: str) -> dict[str, str]:
    event = tmp_path / "event.json"
    event.write_text(
        json.dumps({"pull_request": {"number": PR, "head": {"sha": "a" * 40},
                                     "base": {"ref": "main", "sha": "b" * 40}}}),
        encoding="utf-8",
    )  # fmt: skip
    return {"GITHUB_TOKEN": TOKEN, "GITHUB_API_URL": api_url, "GITHUB_REPOSITORY": REPO,
            "GITHUB_EVENT_NAME": "pull_request", "GITHUB_EVENT_PATH": str(event),
            "RUNNER_TEMP": str(tmp_path), **extra}  # fmt: skip


def test_a_dribbling_api_ends_the_comment_step_by_its_deadline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def dribble(seen: Seen) -> Answer:
        return Answer(200, b"[]" + b" " * 60, {"Content-Type": "application/json"}, gap_s=3.0)

    with HostileServer(dribble) as server:
        env = pr_env(tmp_path, server.url, **{DEADLINE_ENV: "2"})
        warnings = publish(publication(tmp_path), env)
        took = time.monotonic() - server.seen[0].at
    capsys.readouterr()
    [warning] = warnings
    assert server.host in warning
    assert "posting the PR comment did not finish within its 2 s deadline" in warning
    assert took < 2.8  # the first byte comes at 3 s: the deadline, not the byte, ends it


def test_a_stalled_artifact_download_ends_by_the_deadline_as_no_base(
    gh: FakeGitHub, tmp_path: Path
) -> None:
    """The archive's URL answers nothing for 4 s: the read's own timeout (30 s) is cut to what
    is left of the step's 1.5 s."""
    payload = event_payload("pull_request.opened")
    gh.add_artifact(
        "bench",
        make_zip({"base.csv": b"total_ms\n1\n"}),
        branch=payload["pull_request"]["base"]["ref"],
        head_sha=payload["pull_request"]["base"]["sha"],
        head_repository_id=payload["repository"]["id"],
    )
    gh.on("GET", r"/actions/artifacts/\d+/zip", lambda: time.sleep(4))
    env = make_env(tmp_path, gh, **{DEADLINE_ENV: "1.5"})
    context = GitHubContext.from_environ(env, sleep=lambda s: None)
    started = time.monotonic()
    found = fetch_base_artifact("bench", context, tmp_path / "base")
    assert time.monotonic() - started < 3.5
    assert found.folder is None
    assert gh.root.removeprefix("http://") in found.message
    assert "fetching the base artifact did not finish within its 1.5 s deadline" in found.message


def test_a_token_with_a_trailing_newline_is_sent_stripped(gh: FakeGitHub, tmp_path: Path) -> None:
    env = make_env(tmp_path, gh, GITHUB_TOKEN=TOKEN + "\n")
    warnings = publish(publication(tmp_path), env)
    assert warnings == []
    assert {r.headers.get("authorization") for r in gh.requests} == {f"Bearer {TOKEN}"}
    assert len(gh.comments_on(PR)) == 1


def test_a_server_echoing_the_token_has_it_redacted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def echo(seen: Seen) -> Answer:
        said = f"bad credentials: {seen.headers.get('authorization')} ({TOKEN})"
        return json_answer({"message": said}, 422)

    with HostileServer(echo) as server:
        warnings = publish(publication(tmp_path), pr_env(tmp_path, server.url))
    printed = capsys.readouterr().out
    assert warnings and all(TOKEN not in w for w in warnings)
    assert TOKEN not in printed and "Bearer ***" in printed


def test_a_stalled_results_artifact_ends_by_the_deadline(gh: FakeGitHub, tmp_path: Path) -> None:
    """The fork-PR flow's `workflow_run` job: the triggering run's artifact, within 1.5 s."""
    uploaded = gh.add_artifact(
        "results", make_zip({"head.csv": b"total_ms\n1\n"}), branch="feature", event="pull_request"
    )
    run_id = uploaded["workflow_run"]["id"]
    gh.on("GET", r"/actions/artifacts/\d+/zip", lambda: time.sleep(4))
    payload = {"workflow_run": {"id": run_id}}
    env = make_env(tmp_path, gh, kind="workflow_run.completed", payload=payload)
    context = GitHubContext.from_environ({**env, DEADLINE_ENV: "1.5"}, sleep=lambda s: None)
    said = "fetching the results artifact did not finish within its 1.5 s deadline"
    with pytest.raises(UsageError, match=said):
        fetch_results_artifact("results", context, tmp_path / "head")


def test_json_nested_a_million_deep_is_a_warning_not_a_crash(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def deep(seen: Seen) -> Answer:
        return Answer(200, b"[" * 1_000_000, {"Content-Type": "application/json"})

    with HostileServer(deep) as server:
        [warning] = publish(publication(tmp_path), pr_env(tmp_path, server.url))
    capsys.readouterr()
    assert "the answer is not JSON" in warning
