"""Making attacker-controlled text safe: for terminals (no control characters) and for
GitHub-flavoured markdown (no table breaks, no HTML, no mentions, no formatting)."""

from __future__ import annotations

import re

MAX_NAME = 60
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]+")
# Every character that can start markup, a table cell, an HTML tag or entity, or a mention.
_MARKDOWN = {c: f"&#{ord(c)};" for c in "&<>|`\\*_~[]"}
# GitHub links mentions and issue references in the rendered text, entities decoded: a
# zero-width space after the sign keeps `@team` and `#12` plain text.
_MARKDOWN.update({"@": "&#64;&#8203;", "#": "&#35;&#8203;"})
_MD_RE = re.compile("[" + re.escape("".join(_MARKDOWN)) + "]")
# GFM turns `https://...` and `www.` into links in plain text too: break the pattern.
_AUTOLINK = re.compile(r"(?i)(://|www\.)")


def plain(text: str, limit: int | None = MAX_NAME) -> str:
    """One line, no control characters, at most `limit` characters."""
    # `::` at the start of a line of CI output is a workflow command: never let input form one
    s = _CONTROL.sub(" ", text).strip().replace("::", ":\u200b:")
    if limit is not None and len(s) > limit:
        s = s[: limit - 1] + "…"
    return s


def md(text: str, limit: int | None = MAX_NAME) -> str:
    """Plain text for a markdown table cell or line: every markup character as an entity."""
    s = _MD_RE.sub(lambda m: _MARKDOWN[m.group(0)], plain(text, limit))
    return _AUTOLINK.sub(lambda m: m.group(0)[0] + "&#8203;" + m.group(0)[1:], s)
