"""Results from another workflow run: the base branch's latest artifact (the base of a compare),
or the artifact of the run that triggered a `workflow_run` job (the fork-PR flow).

The fetchers print nothing: the base fetcher returns where the results are or why there are
none, and the caller tells the user once; a results artifact that cannot be had is a
`UsageError`, and a hostile archive is an `InputError`, whichever fetched it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import httpx

from budgetdiff.errors import PublishError, UsageError
from budgetdiff.github import actions, artifact, event
from budgetdiff.github.api import ApiError, GitHubClient
from budgetdiff.github.context import GitHubContext


@dataclass(frozen=True)
class BaseResults:
    """The base results' folder, or None; and what to tell the user either way."""

    folder: Path | None  # None: no base results (expired, never uploaded, no access, ...)
    message: str  # where they came from, or why there are none; the token redacted
    level: Literal["notice", "warning"] = "warning"

    def annotation(self) -> str:
        """The message as one workflow command, for the runner's log and the run's page."""
        return actions.command(self.level, self.message, title="budgetdiff")


def fetch_base_artifact(name: str, context: GitHubContext, dest: Path) -> BaseResults:
    """Base results from artifact NAME of the latest successful run on the PR's base branch,
    extracted into `dest`.

    None found or none downloadable (expired: 410, storage or server errors) is a result with no
    folder and the reason; the caller reports it as `no_base`. A hostile or oversized archive is
    an `InputError` (exit 2).
    """
    if not context.repository or not context.token:
        return _none(
            context,
            f"base-artifact {name}: needs GITHUB_REPOSITORY and GITHUB_TOKEN "
            "(and `permissions: actions: read`)",
        )
    try:
        with context.client("fetching the base artifact") as client:
            return _fetch_base(name, context, client, dest)
    except (ApiError, PublishError) as exc:  # a bad API URL, an unreadable event, a 403
        return _none(context, f"base-artifact {name}: {exc}")


def _none(context: GitHubContext, why: str) -> BaseResults:
    return BaseResults(None, context.redact(f"{why}; no base results"))


def _fetch_base(name: str, context: GitHubContext, client: GitHubClient, dest: Path) -> BaseResults:
    repo = context.repository
    branch, base_sha, repo_id = _base_branch(context, client)
    if not branch:
        return _none(context, f"base-artifact {name}: no base branch in the event")
    found = artifact.find_base_artifact(
        client, repo, name, branch, prefer_sha=base_sha, repository_id=repo_id
    )
    if found is None:
        return _none(
            context,
            f"base-artifact {name}: no successful run on {branch} has this artifact "
            "(expired, never uploaded, or the branch's workflow has not run yet: run the "
            "workflow on the base branch first)",
        )
    try:
        folder = artifact.download(client, repo, found, dest)
    except (ApiError, httpx.HTTPError) as exc:
        # 410 (expired since it was listed), storage or server errors: no base, not a crash.
        # A hostile or oversized archive stays an InputError (exit 2).
        what = f"artifact {found.artifact_id} of run {found.run_id}"
        return _none(context, f"base-artifact {name}: could not download {what} ({exc})")
    message = (
        f"base results: artifact {name} of run {found.run_id} "
        f"(commit {found.head_sha[:12]} on {branch})"
    )
    if base_sha and found.head_sha != base_sha:
        message += f", not the PR's base commit {base_sha[:12]} (no run for it yet)"
        return BaseResults(folder, context.redact(message), "warning")
    return BaseResults(folder, context.redact(message), "notice")


def _base_branch(context: GitHubContext, client: GitHubClient) -> tuple[str, str, int | None]:
    """(branch, preferred commit, repository id) the base results should come from."""
    payload = context.payload
    repository = payload.get("repository")
    repo_id = repository.get("id") if isinstance(repository, dict) else None
    repo_id = repo_id if isinstance(repo_id, int) else None
    pr = event.pull_request_of(context.event_name, payload, client, context.repository)
    if pr is not None:
        return pr.base_ref, pr.base_sha, repo_id
    default = repository.get("default_branch", "") if isinstance(repository, dict) else ""
    return str(default or ""), str(payload.get("before") or ""), repo_id


def fetch_results_artifact(name: str, context: GitHubContext, dest: Path) -> Path:
    """In a `workflow_run` job: the artifact NAME of the triggering run, extracted as hostile
    into `dest`, which it returns.

    That run built a pull request's code (maybe a fork's), so everything in it is untrusted:
    sizes are capped, only plain data files are accepted, and budgetdiff parses and renders it
    anew; nothing from it is executed or shown unparsed.
    """
    if context.event_name != "workflow_run":
        raise UsageError(
            f"results-artifact {name}: only for `on: workflow_run` jobs "
            f"(this is {context.event_name or 'not a GitHub Actions run'})"
        )
    repo = context.repository
    run = context.payload.get("workflow_run")
    if not repo or not isinstance(run, dict) or not isinstance(run.get("id"), int):
        raise UsageError(f"results-artifact {name}: the event has no workflow_run.id")
    run_id = int(run["id"])
    try:
        with context.client("fetching the results artifact") as client:  # a bad URL: ApiError
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
