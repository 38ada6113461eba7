"""The sticky PR comment: one per report id, found by marker and author, updated in place."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from budgetdiff.github.api import ApiError, GitHubClient, json_object
from budgetdiff.sources.deadline import COMMENT

# GitHub refuses a comment body over 65,536 characters.
COMMENT_MAX_CHARS = 65_536
_MARKER_PREFIX = "<!-- budgetdiff:"
_PLANTED = re.compile(r"<!--\s*budgetdiff:", re.IGNORECASE)


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
    # Last resort (a renderer that ignores its limit): the longest prefix that fits with the
    # note. `measure` need not count code points (UTF-16 units, UTF-8 bytes), so search on it.
    note = "\n\n_(report cut to fit GitHub's size limit)_\n"
    text = neutralize(render(budget))
    room = limit - measure(note)
    low, high = 0, len(text)  # measure(text[:low]) <= room; text[:high + 1] does not fit
    while low < high:
        mid = (low + high + 1) // 2
        if measure(text[:mid]) <= room:
            low = mid
        else:
            high = mid - 1
    return text[:low] + note


def comment_body(report_id: str, render: Callable[[int], str]) -> str:
    """Marker line + the report, within GitHub's comment limit."""
    head = marker(report_id) + "\n"
    return head + fit(render, COMMENT_MAX_CHARS - text_length(head), text_length)


def is_ours(comment: dict[str, Any], report_id: str, author: str) -> bool:
    """Our comment: written by `author` and starting with this report id's marker."""
    body = comment.get("body")
    body = body if isinstance(body, str) else ""
    first_line = body.split("\n", 1)[0].strip()
    return (
        _comment_id(comment) is not None
        and first_line == marker(report_id)
        and login_of(comment).lower() == author.lower()
    )


def login_of(comment: dict[str, Any]) -> str:
    """The comment's author login ("" when the answer does not say)."""
    user = comment.get("user")
    login = user.get("login") if isinstance(user, dict) else None
    return login if isinstance(login, str) else ""


def _comment_id(comment: dict[str, Any]) -> int | None:
    value = comment.get("id")
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _url(comment: dict[str, Any]) -> str:
    value = comment.get("html_url")
    return value if isinstance(value, str) else ""


@dataclass(frozen=True)
class CommentResult:
    action: str  # created | updated
    comment_id: int
    url: str
    removed_duplicates: int = 0
    warnings: tuple[str, ...] = ()  # worth telling the user; the comment itself is fine


def find_ours(
    client: GitHubClient, repo: str, number: int, report_id: str, author: str
) -> list[dict[str, Any]]:
    """All of our comments for this id, oldest first, reading every page."""
    found: list[dict[str, Any]] = []
    for page in client.paginate(f"/repos/{repo}/issues/{number}/comments"):
        if not isinstance(page, list):
            raise ApiError(f"/repos/{repo}/issues/{number}/comments: expected a list")
        found.extend(c for c in page if isinstance(c, dict) and is_ours(c, report_id, author))
    # GitHub lists oldest first; ids grow with time, so sorting makes every run agree anyway.
    return sorted(found, key=lambda c: _comment_id(c) or 0)


def upsert(
    client: GitHubClient,
    repo: str,
    number: int,
    report_id: str,
    body: str,
    author: str,
    *,
    only_update: bool = False,
) -> CommentResult | None:
    """Create or update our comment; never leave more than one for this id. `only_update`:
    update one that exists, create none (None when there is none).

    A create that failed with a server error may still have happened, so its retry starts by
    looking again rather than posting again. (Reads are retried inside the client; all of it
    within the client's deadline.)
    """
    retry = client.retrying(COMMENT)
    for attempt in range(1, COMMENT.attempts + 1):
        try:
            return _upsert_once(client, repo, number, report_id, body, author, only_update)
        except ApiError as exc:
            if not (exc.transient and exc.method == "POST") or not retry.wait(attempt):
                raise
    raise AssertionError("unreachable")  # pragma: no cover


def _upsert_once(
    client: GitHubClient,
    repo: str,
    number: int,
    report_id: str,
    body: str,
    author: str,
    only_update: bool = False,
) -> CommentResult | None:
    ours = find_ours(client, repo, number, report_id, author)
    # Update first, then remove duplicates (left by a race or an older tool): a duplicate that a
    # concurrent run already deleted must not stop the update.
    for index, candidate in enumerate(ours):
        comment_id = _comment_id(candidate) or 0
        data = _patch(client, repo, comment_id, body)
        if data is None:
            continue  # deleted between listing and updating: try the next, else create
        removed, failed = _delete(client, repo, ours[index + 1 :])
        url = _url(data) or _url(candidate)
        return CommentResult("updated", comment_id, url, removed, failed)
    if only_update:
        return None

    response = client.request(
        "POST", f"/repos/{repo}/issues/{number}/comments", json_body={"body": body}
    )
    data = json_object(response)
    created = _comment_id(data)
    if created is None:
        raise ApiError(
            f"POST /repos/{repo}/issues/{number}/comments: the answer has no comment id",
            status=response.status_code,
            method="POST",
        )
    warnings: list[str] = []
    login = login_of(data)
    if login and login.lower() != author.lower():
        warnings.append(
            f"budgetdiff: the comment was written by {login!r}, not by the configured "
            f"comment author {author!r}, so later runs cannot find it and each run would add "
            f"another; set the input `comment-author: {login}` (CLI: --comment-author {login})"
        )
    # Two overlapping runs may both have listed none and both posted: keep the oldest of ours
    # (every run agrees on which that is), so the later poster moves its text there and
    # deletes its own. Comments written by the token's real identity are ours too.
    now = find_ours(client, repo, number, report_id, login or author)
    older = [c for c in now if (_comment_id(c) or 0) < created]
    for candidate in older:
        kept = _comment_id(candidate) or 0
        patched = _patch(client, repo, kept, body)
        if patched is None:
            continue
        removed, more = _delete(client, repo, [data])
        url = _url(patched) or _url(candidate)
        return CommentResult("updated", kept, url, removed, (*warnings, *more))
    return CommentResult("created", created, _url(data), 0, tuple(warnings))


def _patch(client: GitHubClient, repo: str, comment_id: int, body: str) -> dict[str, Any] | None:
    """Update a comment: its JSON ({} if the answer is not an object), None if it is gone."""
    try:
        response = client.request(
            "PATCH", f"/repos/{repo}/issues/comments/{comment_id}", json_body={"body": body}
        )
    except ApiError as exc:
        if exc.status == 404:
            return None
        raise
    try:
        return json_object(response)
    except ApiError:
        return {}  # updated all the same; only its URL is unknown


def _delete(
    client: GitHubClient, repo: str, comments: list[dict[str, Any]]
) -> tuple[int, tuple[str, ...]]:
    """Delete duplicates; one already gone (404) is fine, any other failure only warns."""
    removed = 0
    warnings: list[str] = []
    for comment in comments:
        comment_id = _comment_id(comment)
        if comment_id is None:
            continue
        try:
            client.request("DELETE", f"/repos/{repo}/issues/comments/{comment_id}")
        except ApiError as exc:
            if exc.status != 404:  # 404: a concurrent run deleted it first
                warnings.append(
                    f"budgetdiff: could not delete the duplicate comment {comment_id}: {exc}"
                )
                continue
        removed += 1
    return removed, tuple(warnings)
