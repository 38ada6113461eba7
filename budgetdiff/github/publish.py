"""Publishing a report to GitHub: step summary, outputs, the sticky comment, then annotations.

The order loses nothing: what the runner keeps locally (summary, outputs) is written before the
network is touched, and a comment that cannot be posted becomes a warning, never an exit code.
budgetdiff's own warnings are printed before the findings' annotations, so that the runner's
cap of 10 annotations per level never hides them.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from budgetdiff.errors import PublishError, UsageError
from budgetdiff.github import actions, comment, event
from budgetdiff.github.api import ApiError, GitHubClient
from budgetdiff.github.context import GitHubContext
from budgetdiff.report.ids import REPORT_ID_RULE, is_report_id

if TYPE_CHECKING:
    import httpx

    from budgetdiff.measure.results import Finding

DEFAULT_AUTHOR = "github-actions[bot]"


@dataclass(frozen=True)
class Publication:
    """One evaluated report, as publishing needs it."""

    report_id: str
    verdict: str  # pass | warn | fail
    regressions: list[str]
    findings: Sequence[Finding]  # their messages are user text
    json_path: Path
    render_markdown: Callable[[int], str]  # the report in at most N characters
    # the same, headed "resolved": what an earlier comment becomes once nothing is found
    render_resolved: Callable[[int], str] | None = None


def validate_report_id(report_id: str) -> str:
    if not is_report_id(report_id):
        raise UsageError(
            f"--id {report_id!r}: a report id is {REPORT_ID_RULE} (e.g. --id llama-8b.chat)"
        )
    return report_id


class _Notes:
    """budgetdiff's own notices and warnings, token redacted, printed before the findings."""

    def __init__(self, context: GitHubContext) -> None:
        self._context = context
        self.lines: list[str] = []
        self.warnings: list[str] = []

    def warning(self, message: str) -> None:
        message = self._context.redact(message)
        self.warnings.append(message)
        self.lines.append(actions.command("warning", message, title="budgetdiff"))

    def notice(self, message: str) -> None:
        message = self._context.redact(message)
        self.lines.append(actions.command("notice", message, title="budgetdiff"))


def publish(
    pub: Publication,
    environ: GitHubContext | Mapping[str, str],
    *,
    comment: bool | str = True,
    comment_author: str = DEFAULT_AUTHOR,
    transport: httpx.BaseTransport | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> list[str]:
    """Summary, outputs, the PR comment, then annotations; returns the warnings it printed.

    `environ`: the run's context, or the environment to read it from (with `transport` and
    `sleep` as the API client's seams). `comment="on-findings"`: no comment while the verdict is
    pass; an earlier comment is updated to say the problem is resolved rather than left stale."""
    validate_report_id(pub.report_id)
    context = (
        environ
        if isinstance(environ, GitHubContext)
        else GitHubContext.from_environ(environ, transport=transport, sleep=sleep)
    )
    notes = _Notes(context)
    _write_summary(pub, context, notes)
    _write_outputs(pub, context, notes)
    if comment:
        only_update = comment == "on-findings" and pub.verdict == "pass"
        url = _try_comment(pub, context, comment_author, notes, only_update)
        if url and context.output:
            # the comment is posted; its URL is a convenience
            with contextlib.suppress(OSError):
                actions.append_outputs(Path(context.output), {"comment-url": url})
    actions.print_commands(notes.lines + _annotations(pub), sys.stdout)
    return notes.warnings


def _write_summary(pub: Publication, context: GitHubContext, notes: _Notes) -> None:
    if not context.step_summary:
        return
    markdown = comment.fit(pub.render_markdown, actions.SUMMARY_MAX_BYTES, _utf8_len)
    try:
        actions.append_summary(Path(context.step_summary), markdown)
    except OSError as exc:
        notes.warning(f"budgetdiff: could not write the step summary {context.step_summary}: {exc}")


def _utf8_len(text: str) -> int:
    return len(text.encode("utf-8"))


def _write_outputs(pub: Publication, context: GitHubContext, notes: _Notes) -> None:
    if not context.output:
        return
    values = {
        "verdict": pub.verdict,
        "regressions": ",".join(pub.regressions),
        "report-json": str(pub.json_path),
    }
    try:
        actions.append_outputs(Path(context.output), values)
    except OSError as exc:
        notes.warning(f"budgetdiff: could not write the outputs {context.output}: {exc}")


def _annotations(pub: Publication) -> list[str]:
    lines: list[str] = []
    cap = actions.MAX_FINDING_ANNOTATIONS
    for level, fails in (("error", True), ("warning", False)):
        chosen = [f for f in pub.findings if f.fails == fails]
        for finding in chosen[:cap]:
            title = f"budgetdiff {pub.report_id}: {finding.kind} {finding.subject}".strip()
            lines.append(actions.command(level, finding.message, title=title))
        if len(chosen) > cap:
            more = len(chosen) - cap
            lines.append(
                actions.command(level, f"{more} more; see the job summary", title="budgetdiff")
            )
    return lines


# -- the sticky comment ---------------------------------------------------------------------


def _try_comment(
    pub: Publication, context: GitHubContext, author: str, notes: _Notes, only_update: bool
) -> str | None:
    """The comment's URL, or None; whatever goes wrong is a warning (see the except below)."""
    try:
        return _comment(pub, context, author, notes, only_update)
    except PublishError as exc:
        notes.warning(_explain(exc))
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
    return None


def _comment(
    pub: Publication, context: GitHubContext, author: str, notes: _Notes, only_update: bool
) -> str | None:
    if context.event_name not in (*event.PR_EVENTS, "workflow_run"):
        return None  # a push or a schedule: nothing to comment on
    repo = context.repository
    if not repo or "/" not in repo:
        raise PublishError("GITHUB_REPOSITORY is not set (owner/name); cannot comment")
    if not context.token:
        raise PublishError(
            "budgetdiff: no GITHUB_TOKEN, so no PR comment; pass `github-token` "
            "(the default `${{ github.token }}` works with `permissions: pull-requests: write`)"
        )
    payload = context.payload
    with context.client("posting the PR comment") as client:
        pr = _pull_request(context, payload, client, notes)
        if pr is None:
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


def _pull_request(
    context: GitHubContext, payload: Mapping[str, Any], client: GitHubClient, notes: _Notes
) -> event.PullRequest | None:
    """The PR to comment on; None, with a notice saying why, when there is none to touch."""
    repo = context.repository
    pr = event.pull_request_of(context.event_name, payload, client, repo)
    if pr is None:
        if context.event_name == "workflow_run":
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
    return pr


def _no_pr_found(payload: Mapping[str, Any], repo: str) -> str:
    run = payload.get("workflow_run")
    run = run if isinstance(run, dict) else {}
    sha = str(run.get("head_sha") or "?")
    return (
        f"budgetdiff: no open pull request of {repo} has the triggering run's head commit "
        f"{sha[:12]} (looked up with GET /repos/{repo}/commits/{{sha}}/pulls, which can miss a "
        "commit that exists only in a fork), so no comment; the report is in the job summary"
    )


def _explain(exc: PublishError) -> str:
    """The warning for a comment that could not be written: what failed, and the fix."""
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
    return text
