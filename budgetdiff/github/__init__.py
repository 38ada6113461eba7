"""Publishing a report to GitHub: step summary, outputs, the sticky comment, then annotations.

The order loses nothing: what the runner keeps locally (summary, outputs) is written before the
network is touched, and a comment that cannot be posted becomes a warning, never an exit code.
budgetdiff's own warnings are printed before the findings' annotations, so that the runner's
cap of 10 annotations per level never hides them.
"""

from __future__ import annotations

import contextlib
import re
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from budgetdiff.errors import PublishError, UsageError
from budgetdiff.github import actions, artifact, comment, event
from budgetdiff.github.api import ApiError, GitHubClient

__all__ = [
    "DEFAULT_AUTHOR",
    "Publication",
    "fetch_base_artifact",
    "fetch_results_artifact",
    "publish",
    "validate_report_id",
]

DEFAULT_AUTHOR = "github-actions[bot]"
_REPORT_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")


@dataclass(frozen=True)
class Publication:
    """One evaluated report, as publishing needs it."""

    report_id: str
    verdict: str  # pass | warn | fail
    regressions: list[str]
    findings: list[tuple[str, str, bool, str]]  # (kind, subject, fails, message); user text
    json_path: Path
    render_markdown: Callable[[int], str]  # the report in at most N characters
    # the same, headed "resolved": what an earlier comment becomes once nothing is found
    render_resolved: Callable[[int], str] | None = None


def validate_report_id(report_id: str) -> str:
    if not _REPORT_ID.fullmatch(report_id):
        raise UsageError(
            f"--id {report_id!r}: a report id is 1-64 letters, digits, '.', '_' or '-' "
            "(e.g. --id llama-8b.chat)"
        )
    return report_id


def _client(
    environ: Mapping[str, str],
    transport: httpx.BaseTransport | None,
    sleep: Callable[[float], None],
) -> GitHubClient:
    return GitHubClient(
        environ.get("GITHUB_API_URL", ""),
        environ.get("GITHUB_TOKEN", ""),
        transport=transport,
        sleep=sleep,
    )


class _Notes:
    """budgetdiff's own notices and warnings, token redacted, printed before the findings."""

    def __init__(self, token: str) -> None:
        self._token = token
        self.lines: list[str] = []
        self.warnings: list[str] = []

    def _redact(self, message: str) -> str:
        return message.replace(self._token, "***") if self._token else message

    def warning(self, message: str) -> None:
        message = self._redact(message)
        self.warnings.append(message)
        self.lines.append(actions.command("warning", message, title="budgetdiff"))

    def notice(self, message: str) -> None:
        self.lines.append(actions.command("notice", self._redact(message), title="budgetdiff"))


def publish(
    pub: Publication,
    environ: Mapping[str, str],
    *,
    comment: bool | str = True,
    comment_author: str = DEFAULT_AUTHOR,
    transport: httpx.BaseTransport | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> list[str]:
    """Summary, outputs, the PR comment, then annotations; returns the warnings it printed.

    `comment="on-findings"`: no comment while the verdict is pass; an earlier comment is
    updated to say the problem is resolved rather than left stale."""
    validate_report_id(pub.report_id)
    notes = _Notes(environ.get("GITHUB_TOKEN", ""))

    summary_path = environ.get("GITHUB_STEP_SUMMARY", "")
    if summary_path:
        markdown = _fit_summary(pub.render_markdown)
        try:
            actions.append_summary(Path(summary_path), markdown)
        except OSError as exc:
            notes.warning(f"budgetdiff: could not write the step summary {summary_path}: {exc}")

    output_path = environ.get("GITHUB_OUTPUT", "")
    if output_path:
        values = {
            "verdict": pub.verdict,
            "regressions": ",".join(pub.regressions),
            "report-json": str(pub.json_path),
        }
        try:
            actions.append_outputs(Path(output_path), values)
        except OSError as exc:
            notes.warning(f"budgetdiff: could not write the outputs {output_path}: {exc}")

    if comment:
        url: str | None = None
        try:
            only_update = comment == "on-findings" and pub.verdict == "pass"
            url = _comment(pub, environ, comment_author, transport, sleep, notes, only_update)
        except PublishError as exc:
            notes.warning(_explain(exc, environ))
        except Exception as exc:
            # The one deliberate broad catch. The contract: a comment that cannot be posted never
            # changes the exit code and never shows a traceback. This step depends on a remote
            # service's answers (a 2xx that is not JSON, odd shapes, a malformed
            # GITHUB_API_URL) and runs after the summary and outputs are written, so any failure
            # here is reported as a warning naming the exception type (bugs stay visible),
            # with the token redacted.
            notes.warning(
                f"budgetdiff: could not comment ({type(exc).__name__}: {exc}). The report is "
                "in the job summary and the outputs, and the exit code is unchanged"
            )
        if url and output_path:
            # the comment is posted; its URL is a convenience
            with contextlib.suppress(OSError):
                actions.append_outputs(Path(output_path), {"comment-url": url})

    actions.print_commands(notes.lines + _annotations(pub), sys.stdout)
    return notes.warnings


def _fit_summary(render: Callable[[int], str]) -> str:
    def utf8_len(text: str) -> int:
        return len(text.encode("utf-8"))

    return comment.fit(render, actions.SUMMARY_MAX_BYTES, utf8_len)


def _annotations(pub: Publication) -> list[str]:
    lines: list[str] = []
    cap = actions.MAX_FINDING_ANNOTATIONS
    for level, fails in (("error", True), ("warning", False)):
        chosen = [f for f in pub.findings if f[2] is fails]
        for kind, subject, _fails, message in chosen[:cap]:
            title = f"budgetdiff {pub.report_id}: {kind} {subject}".strip()
            lines.append(actions.command(level, message, title=title))
        if len(chosen) > cap:
            more = len(chosen) - cap
            lines.append(
                actions.command(level, f"{more} more; see the job summary", title="budgetdiff")
            )
    return lines


def _comment(
    pub: Publication,
    environ: Mapping[str, str],
    author: str,
    transport: httpx.BaseTransport | None,
    sleep: Callable[[float], None],
    notes: _Notes,
    only_update: bool = False,
) -> str | None:
    event_name = environ.get("GITHUB_EVENT_NAME", "")
    if event_name not in (*event.PR_EVENTS, "workflow_run"):
        return None  # a push or a schedule: nothing to comment on
    repo = environ.get("GITHUB_REPOSITORY", "")
    if not repo or "/" not in repo:
        raise PublishError("GITHUB_REPOSITORY is not set (owner/name); cannot comment")
    if not environ.get("GITHUB_TOKEN"):
        raise PublishError(
            "budgetdiff: no GITHUB_TOKEN, so no PR comment; pass `github-token` "
            "(the default `${{ github.token }}` works with `permissions: pull-requests: write`)"
        )
    payload = event.load_event(environ)
    with _client(environ, transport, sleep) as client:
        pr = event.pull_request_of(event_name, payload, client, repo)
        if pr is None:
            if event_name == "workflow_run":
                notes.notice(_no_pr_found(payload, repo))
            return None
        if pr.from_event and pr.head_sha:
            # The event may be stale: a newer push has its own run, which owns the comment now.
            current = event.current_head_sha(client, repo, pr.number)
            if current is not None and current != pr.head_sha:
                notes.notice(
                    f"budgetdiff: PR #{pr.number} is now at commit {current[:12]}, not this "
                    f"run's {pr.head_sha[:12]}; leaving the comment to the newer run"
                )
                return None
        render = pub.render_markdown
        if only_update and pub.render_resolved is not None:
            render = pub.render_resolved
        body = comment.comment_body(pub.report_id, render)
        try:
            result = comment.upsert(
                client, repo, pr.number, pub.report_id, body, author, only_update=only_update
            )
        except ApiError as exc:
            exc.args = (f"PR #{pr.number}: {exc}",)
            raise
    if result is None:
        print("budgetdiff: nothing found and no earlier comment: no comment", file=sys.stderr)
        return None
    for message in result.warnings:
        notes.warning(message)
    print(f"budgetdiff: {result.action} comment {result.url}", file=sys.stderr)
    return result.url


def _no_pr_found(payload: Mapping[str, Any], repo: str) -> str:
    run = payload.get("workflow_run")
    run = run if isinstance(run, dict) else {}
    sha = str(run.get("head_sha") or "?")
    return (
        f"budgetdiff: no open pull request of {repo} has the triggering run's head commit "
        f"{sha[:12]} (looked up with GET /repos/{repo}/commits/{{sha}}/pulls, which can miss a "
        "commit that exists only in a fork), so no comment; the report is in the job summary"
    )


def _explain(exc: PublishError, environ: Mapping[str, str]) -> str:
    text = str(exc)
    if not text.startswith("budgetdiff"):
        text = f"budgetdiff: could not comment: {text}"
    if isinstance(exc, ApiError) and exc.forbidden:
        text += (
            ". The token may not write comments here. The report is in the job summary and the "
            "outputs, and the exit code is unchanged. Fix: give the job `permissions: "
            "pull-requests: write`; on pull requests from forks GitHub never grants write, so "
            "use the two-workflow pattern (pull_request uploads the results, workflow_run "
            "comments; budgetdiff's docs/github.md, 'Pull requests from forks')"
        )
    token = environ.get("GITHUB_TOKEN", "")
    return text.replace(token, "***") if token else text


def _base_branch(
    environ: Mapping[str, str], client: GitHubClient, repo: str
) -> tuple[str, str, int | None]:
    """(branch, preferred commit, repository id) the base results should come from."""
    payload = event.load_event(environ)
    repository = payload.get("repository")
    repo_id = repository.get("id") if isinstance(repository, dict) else None
    repo_id = repo_id if isinstance(repo_id, int) else None
    pr = event.pull_request_of(environ.get("GITHUB_EVENT_NAME", ""), payload, client, repo)
    if pr is not None:
        return pr.base_ref, pr.base_sha, repo_id
    default = repository.get("default_branch", "") if isinstance(repository, dict) else ""
    return str(default or ""), str(payload.get("before") or ""), repo_id


def fetch_base_artifact(
    name: str,
    environ: Mapping[str, str],
    dest: Path,
    *,
    transport: httpx.BaseTransport | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> Path | None:
    """Base results from artifact NAME of the latest successful run on the PR's base branch.

    Returns the folder it was extracted into, or None when there is none or it cannot be
    downloaded (expired: 410, storage or server errors); the caller reports that as `no_base`
    and the reason is printed as a warning. A hostile or oversized archive is an `InputError`.
    """
    repo = environ.get("GITHUB_REPOSITORY", "")
    if not repo or not environ.get("GITHUB_TOKEN"):
        _print(
            "warning",
            f"base-artifact {name}: needs GITHUB_REPOSITORY and GITHUB_TOKEN "
            "(and `permissions: actions: read`); no base results",
            environ,
        )
        return None
    try:
        with _client(environ, transport, sleep) as client:
            branch, base_sha, repo_id = _base_branch(environ, client, repo)
            if not branch:
                _print(
                    "warning",
                    f"base-artifact {name}: no base branch in the event; no base results",
                    environ,
                )
                return None
            found = artifact.find_base_artifact(
                client, repo, name, branch, prefer_sha=base_sha, repository_id=repo_id
            )
            if found is None:
                _print(
                    "warning",
                    f"base-artifact {name}: no successful run on {branch} has this artifact "
                    "(expired, never uploaded, or the branch's workflow has not run yet); "
                    "no base results",
                    environ,
                )
                return None
            what = f"artifact {found.artifact_id} of run {found.run_id}"
            try:
                folder = artifact.download(client, repo, found, dest)
            except (ApiError, httpx.HTTPError) as exc:
                # 410 (expired since it was listed), storage or server errors: no base, not a
                # crash. A hostile or oversized archive stays an InputError (exit 2).
                _print(
                    "warning",
                    f"base-artifact {name}: could not download {what} ({exc}); no base results",
                    environ,
                )
                return None
    except (ApiError, PublishError) as exc:
        _print("warning", f"base-artifact {name}: {exc}; no base results", environ)
        return None
    note = (
        f"base results: artifact {name} of run {found.run_id} "
        f"(commit {found.head_sha[:12]} on {branch})"
    )
    level = "notice"
    if base_sha and found.head_sha != base_sha:
        level = "warning"
        note += f", not the PR's base commit {base_sha[:12]} (no run for it yet)"
    _print(level, note, environ)
    return folder


def _print(level: str, message: str, environ: Mapping[str, str]) -> None:
    token = environ.get("GITHUB_TOKEN", "")
    if token:
        message = message.replace(token, "***")
    actions.print_commands([actions.command(level, message, title="budgetdiff")], sys.stdout)


def fetch_results_artifact(
    name: str,
    environ: Mapping[str, str],
    dest: Path,
    *,
    transport: httpx.BaseTransport | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> Path:
    """In a `workflow_run` job: the artifact NAME of the triggering run, extracted as hostile.

    That run built a pull request's code (maybe a fork's), so everything in it is untrusted:
    sizes are capped, only plain data files are accepted, and budgetdiff parses and renders it
    anew; nothing from it is executed or shown unparsed.
    """
    if environ.get("GITHUB_EVENT_NAME") != "workflow_run":
        raise UsageError(
            f"results-artifact {name}: only for `on: workflow_run` jobs "
            f"(this is {environ.get('GITHUB_EVENT_NAME') or 'not a GitHub Actions run'})"
        )
    repo = environ.get("GITHUB_REPOSITORY", "")
    run = event.load_event(environ).get("workflow_run")
    if not repo or not isinstance(run, dict) or not isinstance(run.get("id"), int):
        raise UsageError(f"results-artifact {name}: the event has no workflow_run.id")
    run_id = int(run["id"])
    try:
        with _client(environ, transport, sleep) as client:  # a bad GITHUB_API_URL: ApiError
            found = artifact.find_run_artifact(client, repo, run_id, name)
            if found is None:
                raise UsageError(
                    f"results-artifact {name}: run {run_id} uploaded no artifact of that name; "
                    "check the name in the pull_request workflow's upload step"
                )
            return artifact.download(client, repo, found, dest)
    except ApiError as exc:
        raise UsageError(
            f"results-artifact {name}: {exc} (the job needs `permissions: actions: read`)"
        ) from None
