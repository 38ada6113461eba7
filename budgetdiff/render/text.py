"""Making attacker-controlled text safe: for terminals (no control characters) and for
GitHub-flavoured markdown (no table breaks, no HTML, no mentions, no formatting)."""

from __future__ import annotations

import re

MAX_NAME = 60
# Control characters, line and paragraph separators, bidirectional overrides, and lone
# surrogates (a file name's undecodable bytes), which no output stream can encode. Compiled
# when first used (`re` keeps it): the class takes 0.5 ms to compile, and printable ASCII,
# nearly every name and message, never needs it.
_CONTROL_CHAR = r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
_CONTROL = _CONTROL_CHAR + "+"
# Every character that can start markup, a table cell, an HTML tag or entity, or a mention.
_MARKDOWN = {c: f"&#{ord(c)};" for c in "&<>|`\\*_~[]"}
# GitHub links mentions and issue references in the rendered text, entities decoded: a
# zero-width space after the sign keeps `@team` and `#12` plain text.
_MARKDOWN.update({"@": "&#64;&#8203;", "#": "&#35;&#8203;"})
_MD_RE = re.compile("[" + re.escape("".join(_MARKDOWN)) + "]")
# GFM turns `https://...` and `www.` into links in plain text too: break the pattern.
_AUTOLINK = re.compile(r"(?i)(://|www\.)")


# A message line that repeats input text: longer than this is cut (a file name, a key, a value
# list of 10,000 columns would otherwise make one line of megabytes).
MESSAGE_MAX = 1000
_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def one_line(text: str, limit: int = MESSAGE_MAX) -> str:
    """A message for stderr or a CI log, inert whatever input text it repeats: one line, every
    control character shown as an escape (`\\n`, `\\x1b`) rather than acted on, so that no
    line of it can start `::` (a workflow command to the runner) or move the cursor."""

    def escape(m: re.Match[str]) -> str:
        c = m.group(0)
        return _ESCAPES.get(c) or (f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}")

    s = (text if _printable_ascii(text) else re.sub(_CONTROL_CHAR, escape, text)).strip()
    if len(s) > limit:
        s = s[: limit - 1] + "…"
    return s


def plain(text: str, limit: int | None = MAX_NAME) -> str:
    """One line, no control characters, at most `limit` characters."""
    # `::` at the start of a line of CI output is a workflow command: never let input form one
    s = text if _printable_ascii(text) else re.sub(_CONTROL, " ", text)
    s = s.strip().replace("::", ":\u200b:")
    if limit is not None and len(s) > limit:
        s = s[: limit - 1] + "…"
    return s


def _printable_ascii(text: str) -> bool:
    """No control character in it: in ASCII those are exactly the unprintable ones."""
    return text.isascii() and text.isprintable()


def md(text: str, limit: int | None = MAX_NAME) -> str:
    """Plain text for a markdown table cell or line: every markup character as an entity."""
    s = _MD_RE.sub(lambda m: _MARKDOWN[m.group(0)], plain(text, limit))
    return _AUTOLINK.sub(lambda m: m.group(0)[0] + "&#8203;" + m.group(0)[1:], s)
