"""publish(): summary, outputs, annotations and the sticky comment, against a fake GitHub."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from budgetdiff.errors import UsageError
from budgetdiff.github import Publication, publish, validate_report_id
from budgetdiff.github.actions import command, format_outputs
from budgetdiff.github.api import ApiError, GitHubClient
from budgetdiff.github.comment import COMMENT_MAX_CHARS, fit, marker, text_length
from budgetdiff.measure.results import Finding
from tests.support import waits
from tests.support.fake_github import (
    BOT,
    PR,
    REPO,
    TOKEN,
    FakeGitHub,
    event_payload,
    make_env,
    parse_outputs,
)


def renderer(text: str) -> Any:
    """A stand-in for the lead's renderer: honours the limit and says what it cut."""

    def render(limit: int) -> str:
        if len(text) <= limit:
            return text
        note = "\n\n_(cut: per-slice details omitted to fit)_\n"
        return text[: max(0, limit - len(note))] + note

    return render


def make_pub(
    tmp_path: Path,
    report_id: str = "default",
    text: str | None = None,
    findings: list[Finding] | None = None,
) -> Publication:
    json_path = tmp_path / f"report-{report_id}.json"
    json_path.write_text("{}", encoding="utf-8")
    table = "| metric | base | head |\n|---|---|---|\n| ttft | 810 | 845 |\n"
    body = text or "## budgetdiff: **fail**\n\n" + table
    return Publication(
        report_id=report_id,
        verdict="fail",
        regressions=["decode", "total"],
        findings=findings
        if findings is not None
        else [Finding("regression", "decode", True, "decode p95 3900.1 -> 4480.7 ms (+14.9%)")],
        json_path=json_path,
        render_markdown=renderer(body),
    )


class Sleeps(list[float]):
    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def ops(gh: FakeGitHub, method: str) -> list[str]:
    return [r.path for r in gh.requests if r.method == method]


# -- the sticky comment ------------------------------------------------------------------


def test_first_run_creates_one_comment_after_summary_and_outputs(
    tmp_path: Path, gh: FakeGitHub, capsys: pytest.CaptureFixture[str]
) -> None:
    env = make_env(tmp_path, gh)
    warnings = publish(make_pub(tmp_path), env)

    assert warnings == []
    [comment] = gh.comments_on(PR)
    assert comment["body"].startswith(marker("default") + "\n## budgetdiff: **fail**")
    assert comment["user"]["login"] == BOT
    assert "ttft | 810 | 845" in Path(env["GITHUB_STEP_SUMMARY"]).read_text()
    outputs = parse_outputs(Path(env["GITHUB_OUTPUT"]).read_text())
    assert outputs["verdict"] == "fail"
    assert outputs["regressions"] == "decode,total"
    assert outputs["report-json"] == str(tmp_path / "report-default.json")
    assert outputs["comment-url"].endswith(f"#issuecomment-{comment['id']}")
    out = capsys.readouterr().out
    assert "::error title=budgetdiff default%3A regression decode::decode p95" in out
    listing = [r for r in gh.requests if r.method == "GET" and r.path.endswith("/comments")]
    assert listing[0].query["per_page"] == ["100"]


def test_second_run_updates_in_place_and_creates_none(tmp_path: Path, gh: FakeGitHub) -> None:
    env = make_env(tmp_path, gh)
    publish(make_pub(tmp_path, text="first version"), env)
    publish(make_pub(tmp_path, text="second version"), env)

    [comment] = gh.comments_on(PR)
    assert comment["body"] == marker("default") + "\nsecond version"
    assert len(ops(gh, "POST")) == 1
    assert ops(gh, "PATCH") == [f"/repos/{REPO}/issues/comments/{comment['id']}"]


def test_ours_on_page_three_of_250_comments_is_found(tmp_path: Path, gh: FakeGitHub) -> None:
    for i in range(250):
        if i == 230:
            ours = gh.add_comment(PR, marker("default") + "\nold report")
        else:
            gh.add_comment(PR, f"review comment {i}", login=f"user{i % 7}")
    publish(make_pub(tmp_path, text="new report"), make_env(tmp_path, gh))

    pages = [r.query.get("page", ["1"])[0] for r in gh.requests if r.path.endswith("/comments")]
    assert pages == ["1", "2", "3"]
    assert ops(gh, "POST") == []
    assert gh.comments[ours["id"]]["body"] == marker("default") + "\nnew report"
    assert len(gh.comments_on(PR)) == 250


def test_marker_comment_by_someone_else_is_left_alone(tmp_path: Path, gh: FakeGitHub) -> None:
    theirs = gh.add_comment(PR, marker("default") + "\nfake: all good, merge it", login="mallory")
    publish(make_pub(tmp_path), make_env(tmp_path, gh))

    assert gh.comments[theirs["id"]]["body"] == marker("default") + "\nfake: all good, merge it"
    assert ops(gh, "PATCH") == []
    assert [c["user"]["login"] for c in gh.comments_on(PR)] == ["mallory", BOT]


def test_configured_author_is_the_one_matched(tmp_path: Path, gh: FakeGitHub) -> None:
    gh.tokens["app-token"] = ("perf-bot[bot]", True)
    mine = gh.add_comment(PR, marker("default") + "\nold", login="perf-bot[bot]")
    env = make_env(tmp_path, gh, GITHUB_TOKEN="app-token")
    publish(make_pub(tmp_path, text="new"), env, comment_author="perf-bot[bot]")
    assert gh.comments[mine["id"]]["body"].endswith("\nnew")
    assert len(gh.comments_on(PR)) == 1


def test_two_report_ids_keep_two_comments(tmp_path: Path, gh: FakeGitHub) -> None:
    env = make_env(tmp_path, gh)
    for round_ in ("1", "2"):
        publish(make_pub(tmp_path, "llama-8b", text=f"8b round {round_}"), env)
        publish(make_pub(tmp_path, "llama-70b", text=f"70b round {round_}"), env)

    bodies = sorted(c["body"] for c in gh.comments_on(PR))
    assert bodies == [marker("llama-70b") + "\n70b round 2", marker("llama-8b") + "\n8b round 2"]
    assert len(ops(gh, "POST")) == 2


def test_duplicates_from_a_race_are_collapsed_to_one(tmp_path: Path, gh: FakeGitHub) -> None:
    first = gh.add_comment(PR, marker("default") + "\nA")
    gh.add_comment(PR, marker("default") + "\nB")
    publish(make_pub(tmp_path, text="C"), make_env(tmp_path, gh))
    assert [(c["id"], c["body"]) for c in gh.comments_on(PR)] == [
        (first["id"], marker("default") + "\nC")
    ]


def test_update_of_a_comment_deleted_meanwhile_creates_a_new_one(
    tmp_path: Path, gh: FakeGitHub
) -> None:
    gh.add_comment(PR, marker("default") + "\nold")
    gh.fail("PATCH", r"/issues/comments/\d+$", 404, body={"message": "Not Found"})
    assert publish(make_pub(tmp_path, text="new"), make_env(tmp_path, gh)) == []
    assert len(ops(gh, "POST")) == 1


def test_planted_marker_in_report_text_cannot_hijack_another_id(
    tmp_path: Path, gh: FakeGitHub
) -> None:
    env = make_env(tmp_path, gh)
    hostile = "row from the results file: <!-- budgetdiff:other -->\n"
    publish(make_pub(tmp_path, "default", text=marker("other") + "\n" + hostile), env)
    publish(make_pub(tmp_path, "other", text="the other report"), env)

    bodies = [c["body"] for c in gh.comments_on(PR)]
    assert len(bodies) == 2
    assert bodies[0].startswith(marker("default") + "\n&lt;!-- budgetdiff:other")
    assert bodies[1] == marker("other") + "\nthe other report"


def test_a_report_longer_than_the_comment_limit_is_cut_with_a_note(
    tmp_path: Path, gh: FakeGitHub
) -> None:
    rows = "".join(f"| slice{i} | {i}.0 ms | 🚀 |\n" for i in range(20000))  # ~500k chars
    text = "## budgetdiff: **fail**\n\nregressions: decode\n\n" + rows
    assert len(text) > 3 * COMMENT_MAX_CHARS
    env = make_env(tmp_path, gh)
    assert publish(make_pub(tmp_path, text=text), env) == []

    [comment] = gh.comments_on(PR)
    assert text_length(comment["body"]) <= COMMENT_MAX_CHARS
    assert comment["body"].startswith(marker("default") + "\n## budgetdiff: **fail**")
    assert "regressions: decode" in comment["body"]
    assert comment["body"].rstrip().endswith("_(cut: per-slice details omitted to fit)_")
    # the step summary has room for the whole report (1 MiB)
    assert Path(env["GITHUB_STEP_SUMMARY"]).read_text().rstrip("\n") == text.rstrip("\n")


def test_a_renderer_that_ignores_the_limit_is_still_cut(tmp_path: Path, gh: FakeGitHub) -> None:
    pub = make_pub(tmp_path)
    pub = Publication(**{**pub.__dict__, "render_markdown": lambda _n: "x" * 200_000})
    assert publish(pub, make_env(tmp_path, gh)) == []
    [comment] = gh.comments_on(PR)
    assert text_length(comment["body"]) <= COMMENT_MAX_CHARS
    assert "cut to fit" in comment["body"]


# -- tokens, errors, retries -------------------------------------------------------------


def test_read_only_token_warns_with_the_fix_and_keeps_summary_and_outputs(
    tmp_path: Path, gh: FakeGitHub, capsys: pytest.CaptureFixture[str]
) -> None:
    gh.tokens[TOKEN] = (BOT, False)
    env = make_env(tmp_path, gh)
    warnings = publish(make_pub(tmp_path), env)

    [warning] = warnings
    assert "HTTP 403 Resource not accessible by integration" in warning
    assert "pull-requests: write" in warning and "workflow_run" in warning
    assert gh.comments_on(PR) == []
    assert "ttft" in Path(env["GITHUB_STEP_SUMMARY"]).read_text()
    assert parse_outputs(Path(env["GITHUB_OUTPUT"]).read_text())["verdict"] == "fail"
    captured = capsys.readouterr()
    assert "::warning title=budgetdiff::budgetdiff: could not comment" in captured.out
    assert TOKEN not in captured.out + captured.err + warning


def test_two_502s_then_success(tmp_path: Path, gh: FakeGitHub) -> None:
    gh.fail("GET", r"/comments$", 502, times=2)
    sleeps = Sleeps()
    assert publish(make_pub(tmp_path), make_env(tmp_path, gh), sleep=sleeps) == []
    assert len(gh.comments_on(PR)) == 1
    assert waits.backoff(sleeps, [1.0, 2.0])


def test_a_create_that_failed_with_502_after_posting_is_not_duplicated(
    tmp_path: Path, gh: FakeGitHub
) -> None:
    gh.fail("POST", r"/comments$", 502, after=True)  # GitHub created it, then the proxy failed
    assert publish(make_pub(tmp_path), make_env(tmp_path, gh), sleep=Sleeps()) == []
    assert len(gh.comments_on(PR)) == 1
    assert len(ops(gh, "POST")) == 1
    assert len(ops(gh, "PATCH")) == 1


def test_429_with_retry_after_is_honoured(tmp_path: Path, gh: FakeGitHub) -> None:
    gh.fail(
        "POST",
        r"/comments$",
        429,
        headers={"retry-after": "7"},
        body={"message": "You have exceeded a secondary rate limit"},
    )
    sleeps = Sleeps()
    assert publish(make_pub(tmp_path), make_env(tmp_path, gh), sleep=sleeps) == []
    assert waits.honoured(sleeps, [7.0])
    assert len(gh.comments_on(PR)) == 1


def test_403_primary_rate_limit_waits_until_reset(gh: FakeGitHub) -> None:
    gh.fail(
        "GET",
        r"/comments$",
        403,
        headers={"x-ratelimit-remaining": "0", "x-ratelimit-reset": "1000030"},
        body={"message": "API rate limit exceeded"},
    )
    sleeps = Sleeps()
    client = GitHubClient(gh.api_url, TOKEN, sleep=sleeps, clock=lambda: 1_000_000.0)
    with client:
        pages = list(client.paginate(f"/repos/{REPO}/issues/{PR}/comments"))
    assert pages == [[]]
    assert waits.honoured(sleeps, [31.0])


def test_a_rate_limit_too_far_away_gives_up_with_the_reset_time(gh: FakeGitHub) -> None:
    gh.fail(
        "GET",
        r"/comments$",
        403,
        headers={"x-ratelimit-remaining": "0", "x-ratelimit-reset": "1003600"},
        body={"message": "API rate limit exceeded"},
    )
    client = GitHubClient(gh.api_url, TOKEN, sleep=Sleeps(), clock=lambda: 1_000_000.0)
    with client, pytest.raises(ApiError, match="resets at epoch 1003600") as info:
        list(client.paginate(f"/repos/{REPO}/issues/{PR}/comments"))
    assert not info.value.forbidden


def test_server_errors_exhausted_become_a_warning_without_the_token(
    tmp_path: Path, gh: FakeGitHub, capsys: pytest.CaptureFixture[str]
) -> None:
    gh.fail("GET", r"/comments$", 503, times=100)
    sleeps = Sleeps()
    [warning] = publish(make_pub(tmp_path), make_env(tmp_path, gh), sleep=sleeps)
    assert "HTTP 503" in warning
    assert waits.backoff(sleeps, [1.0, 2.0, 4.0, 8.0])  # 5 attempts, then give up
    captured = capsys.readouterr()
    assert TOKEN not in captured.out + captured.err + warning


def test_connection_refused_is_a_warning(tmp_path: Path, gh: FakeGitHub) -> None:
    env = make_env(tmp_path, gh, GITHUB_API_URL="http://127.0.0.1:9")
    [warning] = publish(make_pub(tmp_path), env, sleep=Sleeps())
    assert "no answer (ConnectError)" in warning
    assert TOKEN not in warning


def test_base_url_with_api_v3_prefix(tmp_path: Path) -> None:
    with FakeGitHub(prefix="/api/v3") as ghes:
        for i in range(120):
            ghes.add_comment(PR, f"c{i}", login="someone")
        env = make_env(tmp_path, ghes)
        assert env["GITHUB_API_URL"].endswith("/api/v3")
        assert publish(make_pub(tmp_path), env) == []
        assert len(ghes.comments_on(PR)) == 121
        listings = [r for r in ghes.requests if r.method == "GET" and r.path.endswith("comments")]
        # one listing before the create, one after it (a concurrent run's comment?)
        assert [r.query.get("page", ["1"]) for r in listings] == [["1"], ["2"], ["1"], ["2"]]
    assert ghes.errors == []


def test_no_comment_and_non_pr_events_send_no_request(tmp_path: Path, gh: FakeGitHub) -> None:
    publish(make_pub(tmp_path), make_env(tmp_path, gh), comment=False)
    publish(make_pub(tmp_path), make_env(tmp_path, gh, GITHUB_EVENT_NAME="push"))
    assert gh.requests == []


def test_missing_token_is_a_warning_not_a_crash(tmp_path: Path, gh: FakeGitHub) -> None:
    env = make_env(tmp_path, gh, GITHUB_TOKEN="")
    [warning] = publish(make_pub(tmp_path), env)
    assert "no GITHUB_TOKEN" in warning
    assert gh.requests == []


def test_token_is_never_sent_off_the_api_host(gh: FakeGitHub) -> None:
    with GitHubClient(gh.api_url, TOKEN) as client, pytest.raises(ApiError) as info:
        client.request("GET", "https://evil.example/repos/x/y/issues/1/comments")
    assert "refusing to send the token" in str(info.value)


def test_the_api_headers_are_sent_via_mock_transport() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json=[])

    with GitHubClient("", TOKEN, transport=httpx.MockTransport(handler)) as client:
        client.get_json("/rate_limit")
    [request] = seen
    assert str(request.url) == "https://api.github.com/rate_limit"
    assert request.headers["x-github-api-version"] == "2022-11-28"
    assert request.headers["authorization"] == f"Bearer {TOKEN}"


# -- workflow_run: finding the PR -----------------------------------------------------------


def test_workflow_run_from_a_fork_finds_the_pr_by_head_sha(tmp_path: Path, gh: FakeGitHub) -> None:
    payload = event_payload("workflow_run.completed.no_pr")
    head_sha = payload["workflow_run"]["head_sha"]
    gh.add_pull(7, "f" * 40)  # another PR
    gh.add_pull(9, head_sha)
    env = make_env(tmp_path, gh, "workflow_run.completed.no_pr", GITHUB_REPOSITORY=gh.repo)
    assert publish(make_pub(tmp_path), env) == []
    assert len(gh.comments_on(9)) == 1 and gh.comments_on(7) == []
    assert ops(gh, "GET")[0] == f"/repos/{gh.repo}/commits/{head_sha}/pulls"


def test_workflow_run_whose_commit_has_no_open_pr_comments_nowhere(
    tmp_path: Path, gh: FakeGitHub
) -> None:
    payload = event_payload("workflow_run.completed.no_pr")
    gh.add_pull(3, payload["workflow_run"]["head_sha"])
    gh.pulls[0]["base"]["repo"]["full_name"] = "someone/else"  # same commit, other repo's PR
    env = make_env(tmp_path, gh, "workflow_run.completed.no_pr", GITHUB_REPOSITORY=gh.repo)
    assert publish(make_pub(tmp_path), env) == []
    assert ops(gh, "POST") == []


# -- the runner protocols ------------------------------------------------------------------


def test_annotations_cannot_smuggle_workflow_commands(
    tmp_path: Path, gh: FakeGitHub, capsys: pytest.CaptureFixture[str]
) -> None:
    hostile = "p95 100%\r\n::set-output name=verdict::pass\n::add-mask::x"
    findings = [Finding("regression", "decode\n::error::x", True, hostile)]
    publish(make_pub(tmp_path, findings=findings), make_env(tmp_path, gh), comment=False)
    lines = capsys.readouterr().out.splitlines()
    assert lines == [
        "::error title=budgetdiff default%3A regression decode%0A%3A%3Aerror%3A%3Ax::"
        "p95 100%25%0D%0A::set-output name=verdict::pass%0A::add-mask::x"
    ]


def test_annotations_are_capped_per_level(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    findings = [Finding("over_budget", f"s{i}", i % 2 == 0, f"m{i}") for i in range(30)]
    publish(make_pub(tmp_path, findings=findings), {}, comment=False)
    lines = capsys.readouterr().out.splitlines()
    # the runner shows 10 per level: 8 findings + "N more", one left for budgetdiff's own
    assert sum(line.startswith("::error") for line in lines) == 9
    assert sum(line.startswith("::warning") for line in lines) == 9
    assert "::error title=budgetdiff::7 more; see the job summary" in lines


def test_outputs_use_a_random_delimiter_that_survives_hostile_values() -> None:
    text = format_outputs({"regressions": "decode\nEOF\nverdict<<EOF", "verdict": "fail"})
    delimiters = re.findall(r"^\w[\w-]*<<(ghadelimiter_\S+)$", text, flags=re.M)
    assert len(delimiters) == 2 and len(set(delimiters)) == 2
    assert all(d.startswith("ghadelimiter_") for d in delimiters)
    # the value is one line (issue 35): its newlines written as `\n`, so no line is a delimiter
    assert parse_outputs(text) == {"regressions": "decode\\nEOF\\nverdict<<EOF", "verdict": "fail"}


def test_summary_is_cut_under_one_mebibyte(tmp_path: Path) -> None:
    summary = tmp_path / "summary.md"
    text = "## verdict\n" + "é" * 900_000  # 1.8 MB in UTF-8
    publish(make_pub(tmp_path, text=text), {"GITHUB_STEP_SUMMARY": str(summary)}, comment=False)
    written = summary.read_bytes()
    assert 900_000 < len(written) <= 1_000_001
    assert written.decode().startswith("## verdict\n")


@pytest.mark.parametrize("bad", ["", "has space", "a/b", "<!--", "x" * 65, "new\nline"])
def test_report_ids_are_validated(bad: str) -> None:
    with pytest.raises(UsageError, match="letters, digits"):
        validate_report_id(bad)


def test_command_escapes_title_properties() -> None:
    assert command("warning", "a,b:c", title="x,y:z") == "::warning title=x%2Cy%3Az::a,b:c"


# -- review fixes: a failed comment never changes the outcome ---------------------------------


def test_a_2xx_create_answer_that_is_not_json_is_a_warning_not_a_traceback(
    tmp_path: Path, gh: FakeGitHub, capsys: pytest.CaptureFixture[str]
) -> None:
    gh.fail("POST", r"/comments$", 201, raw=b"<html>created</html>", after=True)
    env = make_env(tmp_path, gh)
    [warning] = publish(make_pub(tmp_path), env, sleep=Sleeps())
    assert "the answer is not JSON" in warning
    assert len(gh.comments_on(PR)) == 1  # it was created: the next run finds and updates it
    assert parse_outputs(Path(env["GITHUB_OUTPUT"]).read_text())["verdict"] == "fail"
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err and TOKEN not in captured.out + captured.err


@pytest.mark.parametrize(
    ("body", "message"),
    [([], "expected a JSON object, got list"), ({"html_url": "x"}, "has no comment id")],
    ids=["list", "no-id"],
)
def test_a_create_answer_of_the_wrong_shape_is_a_warning(
    tmp_path: Path, gh: FakeGitHub, body: Any, message: str
) -> None:
    gh.fail("POST", r"/comments$", 201, body=body)
    [warning] = publish(make_pub(tmp_path), make_env(tmp_path, gh), sleep=Sleeps())
    assert message in warning


def test_an_update_answer_that_is_not_json_still_counts_as_updated(
    tmp_path: Path, gh: FakeGitHub
) -> None:
    ours = gh.add_comment(PR, marker("default") + "\nold")
    gh.fail("PATCH", r"/issues/comments/\d+$", 200, raw=b"OK", after=True)
    env = make_env(tmp_path, gh)
    assert publish(make_pub(tmp_path, text="new"), env) == []
    assert gh.comments[ours["id"]]["body"] == marker("default") + "\nnew"
    assert parse_outputs(Path(env["GITHUB_OUTPUT"]).read_text())["comment-url"] == ours["html_url"]


@pytest.mark.parametrize(
    "url", ["not-a-url", "ftp://example.com", "http://[::1", "https://x:99999"]
)
def test_a_malformed_api_url_is_a_warning(tmp_path: Path, gh: FakeGitHub, url: str) -> None:
    env = make_env(tmp_path, gh, GITHUB_API_URL=url)
    [warning] = publish(make_pub(tmp_path), env, sleep=Sleeps())
    assert "is not an http(s) URL" in warning
    assert parse_outputs(Path(env["GITHUB_OUTPUT"]).read_text())["verdict"] == "fail"


def test_any_error_in_the_comment_step_is_a_redacted_warning_naming_its_type(
    tmp_path: Path, gh: FakeGitHub, capsys: pytest.CaptureFixture[str]
) -> None:
    def render(limit: int) -> str:
        if limit <= COMMENT_MAX_CHARS:  # the comment's rendering, not the summary's
            raise RuntimeError(f"renderer bug near {TOKEN}")
        return "## budgetdiff: **fail**\n"

    pub = Publication(**{**make_pub(tmp_path).__dict__, "render_markdown": render})
    env = make_env(tmp_path, gh)
    [warning] = publish(pub, env)
    assert "could not comment (RuntimeError: renderer bug near ***)" in warning
    assert "budgetdiff: **fail**" in Path(env["GITHUB_STEP_SUMMARY"]).read_text()
    captured = capsys.readouterr()
    assert TOKEN not in captured.out + captured.err and "Traceback" not in captured.err


# -- review fixes: duplicates, races, stale runs, the author --------------------------------


def test_duplicates_are_deleted_after_the_update_and_a_404_delete_is_fine(
    tmp_path: Path, gh: FakeGitHub
) -> None:
    first = gh.add_comment(PR, marker("default") + "\nA")
    gh.add_comment(PR, marker("default") + "\nB")
    gh.fail("DELETE", r"/issues/comments/\d+$", 404, body={"message": "Not Found"})
    assert publish(make_pub(tmp_path, text="C"), make_env(tmp_path, gh)) == []
    assert gh.comments[first["id"]]["body"] == marker("default") + "\nC"
    writes = [r.method for r in gh.requests if r.method in ("PATCH", "DELETE")]
    assert writes == ["PATCH", "DELETE"]


def test_a_delete_that_fails_otherwise_only_warns(tmp_path: Path, gh: FakeGitHub) -> None:
    first = gh.add_comment(PR, marker("default") + "\nA")
    second = gh.add_comment(PR, marker("default") + "\nB")
    gh.fail("DELETE", r"/issues/comments/\d+$", 500, times=100)
    env = make_env(tmp_path, gh)
    [warning] = publish(make_pub(tmp_path, text="C"), env, sleep=Sleeps())
    assert f"could not delete the duplicate comment {second['id']}" in warning
    assert gh.comments[first["id"]]["body"] == marker("default") + "\nC"
    assert (
        parse_outputs(Path(env["GITHUB_OUTPUT"]).read_text())["comment-url"] == (first["html_url"])
    )


def test_a_concurrent_runs_earlier_comment_is_kept_and_ours_deleted(
    tmp_path: Path, gh: FakeGitHub
) -> None:
    theirs: list[dict[str, Any]] = []
    # the other run listed none too, and posted just before us
    gh.on("POST", r"/comments$", lambda: theirs.append(gh.add_comment(PR, marker("default"))))
    env = make_env(tmp_path, gh)
    assert publish(make_pub(tmp_path, text="ours"), env) == []

    [comment] = gh.comments_on(PR)
    assert comment["id"] == theirs[0]["id"]
    assert comment["body"] == marker("default") + "\nours"
    [deleted] = ops(gh, "DELETE")
    assert deleted != f"/repos/{REPO}/issues/comments/{theirs[0]['id']}"
    assert (
        parse_outputs(Path(env["GITHUB_OUTPUT"]).read_text())["comment-url"]
        == (theirs[0]["html_url"])
    )


def test_a_concurrent_runs_later_comment_is_left_to_that_run(
    tmp_path: Path, gh: FakeGitHub
) -> None:
    listings: list[int] = []

    def after_our_post() -> None:  # the other run posts between our create and our check
        listings.append(1)
        if len(listings) == 2:
            gh.add_comment(PR, marker("default") + "\ntheirs")

    gh.on("GET", r"/comments$", after_our_post, times=2)
    assert publish(make_pub(tmp_path, text="ours"), make_env(tmp_path, gh)) == []
    bodies = [c["body"] for c in gh.comments_on(PR)]
    assert bodies == [marker("default") + "\nours", marker("default") + "\ntheirs"]
    assert ops(gh, "DELETE") == [] and ops(gh, "PATCH") == []  # theirs deletes itself


def test_two_overlapping_runs_that_both_listed_none_leave_one_comment(
    tmp_path: Path, gh: FakeGitHub
) -> None:
    barrier = threading.Barrier(2, timeout=10)
    # each run's first listing waits for the other's: both see no comment, both post
    gh.on("GET", r"/comments$", barrier.wait, times=2)
    results: dict[str, list[str]] = {}

    def run(name: str) -> None:
        folder = tmp_path / name
        folder.mkdir()
        results[name] = publish(make_pub(folder, text=name), make_env(folder, gh))

    threads = [threading.Thread(target=run, args=(name,)) for name in ("one", "two")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert results == {"one": [], "two": []}
    assert len(ops(gh, "POST")) == 2
    [comment] = gh.comments_on(PR)
    assert comment["body"] in (marker("default") + "\none", marker("default") + "\ntwo")


def test_a_run_for_an_older_head_leaves_the_comment_alone(
    tmp_path: Path, gh: FakeGitHub, capsys: pytest.CaptureFixture[str]
) -> None:
    env = make_env(tmp_path, gh)
    gh.pulls[0]["head"]["sha"] = "d" * 40  # a newer push; its own run reports it
    assert publish(make_pub(tmp_path), env) == []
    assert [r.path for r in gh.requests] == [f"/repos/{REPO}/pulls/{PR}"]
    assert "comment-url" not in parse_outputs(Path(env["GITHUB_OUTPUT"]).read_text())
    out = capsys.readouterr().out
    assert f"::notice title=budgetdiff::budgetdiff: PR #{PR} is now at commit dddddddddddd" in out


def test_a_pr_that_cannot_be_read_does_not_stop_the_comment(tmp_path: Path, gh: FakeGitHub) -> None:
    env = make_env(tmp_path, gh)
    gh.pulls.clear()  # 404 on GET /pulls/{n}: the write decides on its own
    assert publish(make_pub(tmp_path), env) == []
    assert len(gh.comments_on(PR)) == 1


def test_a_token_whose_login_is_not_the_comment_author_is_told_to_set_it(
    tmp_path: Path, gh: FakeGitHub
) -> None:
    gh.tokens["pat"] = ("alice", True)
    env = make_env(tmp_path, gh, GITHUB_TOKEN="pat")
    [first] = publish(make_pub(tmp_path, text="one"), env)
    [second] = publish(make_pub(tmp_path, text="two"), env)
    assert "written by 'alice', not by the configured comment author" in first
    assert "`comment-author: alice`" in first and second == first
    # the post-create check knows the real login: no pile-up meanwhile
    [comment] = gh.comments_on(PR)
    assert comment["body"] == marker("default") + "\ntwo"


def test_a_secondary_rate_limit_without_headers_waits_a_minute(
    tmp_path: Path, gh: FakeGitHub
) -> None:
    message = {"message": "You have exceeded a secondary rate limit. Please wait a few minutes."}
    gh.fail("POST", r"/comments$", 403, body=message)
    gh.fail("GET", r"/comments$", 429, body=message)
    sleeps = Sleeps()
    assert publish(make_pub(tmp_path), make_env(tmp_path, gh), sleep=sleeps) == []
    assert waits.honoured(sleeps, [60.0, 60.0])
    assert len(gh.comments_on(PR)) == 1


def test_our_own_warnings_come_before_the_findings(
    tmp_path: Path, gh: FakeGitHub, capsys: pytest.CaptureFixture[str]
) -> None:
    gh.tokens[TOKEN] = (BOT, False)
    findings = [Finding("over_budget", f"s{i}", i % 2 == 0, f"m{i}") for i in range(30)]
    publish(make_pub(tmp_path, findings=findings), make_env(tmp_path, gh))
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("::warning title=budgetdiff::budgetdiff: could not comment")
    assert "pull-requests: write" in lines[0]
    assert sum(line.startswith("::warning") for line in lines) == 10  # all shown by the runner


def test_the_last_resort_cut_keeps_non_bmp_text() -> None:
    emoji = "😀" * 50_000  # 2 UTF-16 units each

    def cut(limit: int, measure: Callable[[str], int]) -> str:
        return fit(lambda _n: emoji, limit, measure)

    text = cut(1000, text_length)
    note = "\n\n_(report cut to fit GitHub's size limit)_\n"
    assert text.endswith(note)
    assert text_length(text) <= 1000
    assert text.count("😀") == (1000 - text_length(note)) // 2  # as many as fit, not none
    in_bytes = cut(1000, lambda t: len(t.encode("utf-8")))
    assert in_bytes.count("😀") == (1000 - len(note.encode("utf-8"))) // 4
