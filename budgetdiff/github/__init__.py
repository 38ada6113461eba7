"""budgetdiff's GitHub edge: the publisher (github/publish.py) and the artifact fetchers."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path

import httpx

from budgetdiff.errors import PublishError, UsageError
from budgetdiff.github import actions, artifact, event
from budgetdiff.github.api import ApiError, GitHubClient
from budgetdiff.github.publish import DEFAULT_AUTHOR, Publication, publish, validate_report_id

__all__ = [
    "DEFAULT_AUTHOR",
    "Publication",
    "fetch_base_artifact",
    "fetch_results_artifact",
    "publish",
    "validate_report_id",
]


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
