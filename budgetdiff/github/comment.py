"""The sticky PR comment: one per report id, found by marker and author, updated in place."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from budgetdiff.github.api import ApiError, GitHubClient

# GitHub refuses a comment body over 65,536 characters.
COMMENT_MAX_CHARS = 65_536
_MARKER_PREFIX = "<!-- budgetdiff:"
_PLANTED = re.compile(r"<!--\s*budgetdiff:", re.IGNORECASE)
MAX_ATTEMPTS = 3


def marker(report_id: str) -> str:
    return f"{_MARKER_PREFIX}{report_id} -->"


def text_length(text: str) -> int:
    """Length as GitHub may count it: UTF-16 code units (an emoji counts 2), never less."""
    return len(text.encode("utf-16-le")) // 2


def neutralize(markdown: str) -> str:
    """Stop report text (which quotes user data) from carrying another report's marker."""
    return _PLANTED.sub("&lt;!-- budgetdiff:", markdown)


def fit(render: Callable[[int], str], limit: int, measure: Callable[[str], int]) -> str:
    """The largest rendering whose `measure` is within `limit` (the renderer cuts by chars)."""
    budget = limit
    for _ in range(8):
        text = neutralize(render(budget))
        size = measure(text)
        if size <= limit:
            return text
        budget = max(0, int(budget * limit / size * 0.98) - 16)
    note = "\n\n_(report cut to fit GitHub's size limit)_\n"
    text = neutralize(render(budget))
    while measure(text) + measure(note) > limit and text:
        text = text[: max(0, len(text) - max(1, measure(text) + measure(note) - limit))]
    return text + note


def comment_body(report_id: str, render: Callable[[int], str]) -> str:
    """Marker line + the report, within GitHub's comment limit."""
    head = marker(report_id) + "\n"
    return head + fit(render, COMMENT_MAX_CHARS - text_length(head), text_length)


def is_ours(comment: dict[str, Any], report_id: str, author: str) -> bool:
    """Our comment: written by `author` and starting with this report id's marker."""
    body = comment.get("body") or ""
    user = comment.get("user") or {}
    login = str(user.get("login", "")) if isinstance(user, dict) else ""
    first_line = body.split("\n", 1)[0].strip()
    return first_line == marker(report_id) and login.lower() == author.lower()


@dataclass(frozen=True)
class CommentResult:
    action: str  # created | updated
    comment_id: int
    url: str
    removed_duplicates: int = 0


def find_ours(
    client: GitHubClient, repo: str, number: int, report_id: str, author: str
) -> list[dict[str, Any]]:
    """All of our comments for this id, oldest first, reading every page."""
    found: list[dict[str, Any]] = []
    for page in client.paginate(f"/repos/{repo}/issues/{number}/comments"):
        if not isinstance(page, list):
            raise ApiError(f"/repos/{repo}/issues/{number}/comments: expected a list")
        found.extend(c for c in page if isinstance(c, dict) and is_ours(c, report_id, author))
    return found


def upsert(
    client: GitHubClient, repo: str, number: int, report_id: str, body: str, author: str
) -> CommentResult:
    """Create or update our comment; never leave more than one for this id.

    A create that failed with a server error may still have happened, so its retry starts by
    looking again rather than posting again. (Reads are retried inside the client.)
    """
    for attempt in range(1, MAX_ATTEMPTS + 1):
        try:
            return _upsert_once(client, repo, number, report_id, body, author)
        except ApiError as exc:
            if not (exc.transient and exc.method == "POST") or attempt == MAX_ATTEMPTS:
                raise
            client.backoff(attempt)
    raise AssertionError("unreachable")  # pragma: no cover


def _upsert_once(
    client: GitHubClient, repo: str, number: int, report_id: str, body: str, author: str
) -> CommentResult:
    ours = find_ours(client, repo, number, report_id, author)
    removed = 0
    for extra in ours[1:]:  # left by a race or an older tool: keep the oldest
        client.request("DELETE", f"/repos/{repo}/issues/comments/{extra['id']}")
        removed += 1
    if ours:
        comment_id = int(ours[0]["id"])
        try:
            response = client.request(
                "PATCH", f"/repos/{repo}/issues/comments/{comment_id}", json_body={"body": body}
            )
            data = response.json()
            return CommentResult("updated", comment_id, str(data.get("html_url", "")), removed)
        except ApiError as exc:
            if exc.status != 404:  # deleted between listing and updating: create instead
                raise
    response = client.request(
        "POST", f"/repos/{repo}/issues/{number}/comments", json_body={"body": body}
    )
    data = response.json()
    return CommentResult("created", int(data["id"]), str(data.get("html_url", "")), removed)
