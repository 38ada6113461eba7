"""What the triggering event says: which pull request, which base branch and commit."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from budgetdiff.errors import PublishError
from budgetdiff.github.api import ApiError, GitHubClient

PR_EVENTS = ("pull_request", "pull_request_target")


@dataclass(frozen=True)
class PullRequest:
    number: int
    base_ref: str  # the branch the PR merges into
    base_sha: str  # that branch's commit the PR's merge commit is built on
    head_sha: str


def load_event(environ: Mapping[str, str]) -> dict[str, Any]:
    """The event payload at `GITHUB_EVENT_PATH` ({} when absent, e.g. outside Actions)."""
    path = environ.get("GITHUB_EVENT_PATH", "")
    if not path:
        return {}
    try:
        payload = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise PublishError(f"{path}: cannot read the event payload ({exc})") from None
    return payload if isinstance(payload, dict) else {}


def _pr(data: Mapping[str, Any]) -> PullRequest:
    base = data.get("base") or {}
    head = data.get("head") or {}
    return PullRequest(
        number=int(data["number"]),
        base_ref=str(base.get("ref", "")),
        base_sha=str(base.get("sha", "")),
        head_sha=str(head.get("sha", "")),
    )


def pull_request_of(
    event_name: str, payload: Mapping[str, Any], client: GitHubClient | None, repo: str
) -> PullRequest | None:
    """The PR this run reports on, or None (a push, a schedule, a run with no open PR).

    For `workflow_run` (the fork-PR comment workflow) the PR is looked up from the triggering
    run's head commit: `workflow_run.pull_requests` is empty for PRs from forks. Only a PR whose
    head is exactly that commit counts, so a stale run never comments on a newer push.
    """
    if event_name in PR_EVENTS and isinstance(payload.get("pull_request"), dict):
        return _pr(payload["pull_request"])
    if event_name != "workflow_run":
        return None
    run = payload.get("workflow_run")
    if not isinstance(run, dict):
        return None
    head_sha = str(run.get("head_sha", ""))
    listed = [p for p in run.get("pull_requests") or [] if isinstance(p, dict)]
    for candidate in listed:
        if (candidate.get("head") or {}).get("sha") == head_sha:
            return _pr(candidate)
    if client is None or not head_sha:
        return None
    try:
        pulls = client.get_json(f"/repos/{repo}/commits/{head_sha}/pulls", {"per_page": 100})
    except ApiError as exc:
        if exc.status in (404, 422):
            return None
        raise
    for candidate in pulls if isinstance(pulls, list) else []:
        base_repo = ((candidate.get("base") or {}).get("repo") or {}).get("full_name", "")
        if (
            candidate.get("state") == "open"
            and (candidate.get("head") or {}).get("sha") == head_sha
            and str(base_repo).lower() == repo.lower()
        ):
            return _pr(candidate)
    return None
