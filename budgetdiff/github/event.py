"""What the triggering event says: which pull request, which base branch and commit."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from budgetdiff.errors import PublishError
from budgetdiff.github.api import ApiError, GitHubClient
from budgetdiff.measure.results import Acceptance

PR_EVENTS = ("pull_request", "pull_request_target")


@dataclass(frozen=True)
class PullRequest:
    number: int
    base_ref: str  # the branch the PR merges into
    base_sha: str  # that branch's commit the PR's merge commit is built on
    head_sha: str
    from_event: bool = True  # read from the event payload (may be stale), not looked up now


def read_event(path: str) -> dict[str, Any]:
    """The event payload in the file `path` ({} when there is none, e.g. outside Actions)."""
    if not path:
        return {}
    try:
        payload = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise PublishError(f"{path}: cannot read the event payload ({exc})") from None
    return payload if isinstance(payload, dict) else {}


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _pr(data: Mapping[str, Any], *, from_event: bool) -> PullRequest | None:
    number = data.get("number")
    if not isinstance(number, int) or isinstance(number, bool) or number <= 0:
        return None
    base = _dict(data.get("base"))
    head = _dict(data.get("head"))
    return PullRequest(
        number=number,
        base_ref=str(base.get("ref") or ""),
        base_sha=str(base.get("sha") or ""),
        head_sha=str(head.get("sha") or ""),
        from_event=from_event,
    )


def _same_repository(entry: Mapping[str, Any], repository: Mapping[str, Any]) -> bool:
    """`entry` (a PR's base.repo) is the repository this workflow runs in (by id, else URL)."""
    ours, theirs = repository.get("id"), entry.get("id")
    if isinstance(ours, int) and isinstance(theirs, int):
        return ours == theirs
    ours, theirs = repository.get("url"), entry.get("url")
    return (
        isinstance(ours, str)
        and isinstance(theirs, str)
        and bool(ours)
        and ours.rstrip("/").lower() == theirs.rstrip("/").lower()
    )


def pull_request_of(
    event_name: str, payload: Mapping[str, Any], client: GitHubClient | None, repo: str
) -> PullRequest | None:
    """The PR this run reports on, or None (a push, a schedule, a run with no open PR).

    For `workflow_run` (the fork-PR comment workflow) the PR is looked up from the triggering
    run's head commit: `workflow_run.pull_requests` is empty for PRs from forks, and may list
    PRs of other repositories (a fork's own PRs), so an entry counts only if its base is this
    repository. Only a PR whose head is exactly that commit counts, so a stale run never
    comments on a newer push.
    """
    if event_name in PR_EVENTS:
        return _pr(_dict(payload.get("pull_request")), from_event=True)
    if event_name != "workflow_run":
        return None
    run = _dict(payload.get("workflow_run"))
    head_sha = run.get("head_sha")
    if not isinstance(head_sha, str) or not head_sha:
        return None
    repository = _dict(payload.get("repository"))
    listed = run.get("pull_requests")
    for candidate in listed if isinstance(listed, list) else []:
        if not isinstance(candidate, dict):
            continue
        base_repo = _dict(_dict(candidate.get("base")).get("repo"))
        if _dict(candidate.get("head")).get("sha") == head_sha and _same_repository(
            base_repo, repository
        ):
            found = _pr(candidate, from_event=True)
            if found is not None:
                return found
    if client is None:
        return None
    try:
        pulls = client.get_json(f"/repos/{repo}/commits/{head_sha}/pulls", {"per_page": 100})
    except ApiError as exc:
        if exc.status in (404, 409, 422):
            return None
        raise
    for candidate in pulls if isinstance(pulls, list) else []:
        if not isinstance(candidate, dict):
            continue
        base_repo = _dict(_dict(candidate.get("base")).get("repo")).get("full_name", "")
        if (
            candidate.get("state") == "open"
            and _dict(candidate.get("head")).get("sha") == head_sha
            and str(base_repo).lower() == repo.lower()
        ):
            found = _pr(candidate, from_event=False)
            if found is not None:
                return found
    return None


def current_head_sha(client: GitHubClient, repo: str, number: int) -> str | None:
    """The PR's head commit now (GET /repos/{repo}/pulls/{number}); None if it cannot be read."""
    try:
        data = client.get_object(f"/repos/{repo}/pulls/{number}")
    except ApiError:
        # Only a guard against overwriting a newer run's comment: when it cannot be read, the
        # comment write itself will succeed or fail on its own terms.
        return None
    sha = _dict(data.get("head")).get("sha")
    return sha if isinstance(sha, str) and sha else None


def acceptance(payload: Mapping[str, Any], label: str) -> Acceptance | None:
    """The accept label, when the event's pull request carries it (names compared as GitHub
    does, ignoring case), and who set it when the event says so (a `labeled` event)."""
    labels = _dict(payload.get("pull_request")).get("labels")
    names = [_dict(entry).get("name") for entry in (labels if isinstance(labels, list) else [])]
    wanted = label.casefold()
    if not any(isinstance(n, str) and n.casefold() == wanted for n in names):
        return None
    by = "a reviewer"
    sender = _dict(payload.get("sender")).get("login")
    added = _dict(payload.get("label")).get("name")
    if (
        payload.get("action") == "labeled"
        and isinstance(added, str)
        and added.casefold() == wanted
        and isinstance(sender, str)
        and sender
    ):
        by = f"@{sender}"
    return Acceptance(label=label, by=by)
