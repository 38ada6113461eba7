"""The runner's file and stdout protocols: step summary, outputs, and workflow commands."""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import TextIO

from budgetdiff.render.text import one_line

# GitHub caps one step's summary at 1 MiB; stay clearly below it.
SUMMARY_MAX_BYTES = 1_000_000
# The runner shows at most 10 annotations of each level per step: findings take at most 8 of
# them plus one "N more" line, and budgetdiff's own warnings are printed before the findings.
MAX_FINDING_ANNOTATIONS = 8
ANNOTATION_MAX_CHARS = 4000
# What an annotation never carries (besides CR and LF, which it escapes): the other C0 and C1
# controls (ESC starts a terminal sequence, BEL rings), DEL, the line and paragraph separators,
# the bidirectional marks, embeddings, overrides and isolates (U+202E turns the text around),
# the byte-order mark, and lone surrogates.
_UNSHOWN = re.compile(
    "[\x00-\x09\x0b\x0c\x0e-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029"
    "\u202a-\u202e\u2066-\u2069\ufeff\ud800-\udfff]"
)
# An output's value is at most this long (GitHub takes 1 MB per output).
OUTPUT_MAX_CHARS = 1_000_000


def append_summary(path: Path, markdown: str) -> None:
    """Append the report to `GITHUB_STEP_SUMMARY` (the caller keeps it under the cap)."""
    data = markdown.encode("utf-8")
    if len(data) > SUMMARY_MAX_BYTES:
        raise ValueError(f"step summary of {len(data)} bytes exceeds {SUMMARY_MAX_BYTES}")
    with path.open("ab") as fh:
        fh.write(data)
        if not data.endswith(b"\n"):
            fh.write(b"\n")


def output_value(text: str) -> str:
    """A step output's value, inert wherever a later step echoes it (`echo "$REGRESSIONS"`):
    one line, every control character (CR, LF, ESC, BEL, U+202E...) written as an escape
    (`\\n`, `\\x1b`), and `::` broken by a zero-width space, so that no part of it can start
    a workflow command."""
    return one_line(text, OUTPUT_MAX_CHARS).replace("::", ":\u200b:")


def format_outputs(values: Mapping[str, str]) -> str:
    """`GITHUB_OUTPUT` text: every value encoded (`output_value`), in heredoc form, with a
    delimiter it does not contain (GitHub's rule: the delimiter must not be a line of the
    value; here not even a part of it)."""
    parts = []
    for name, raw in values.items():
        value = output_value(raw)
        delimiter = f"ghadelimiter_{uuid.uuid4()}"
        while delimiter in value:  # pragma: no cover - a random UUID in the value
            delimiter = f"ghadelimiter_{uuid.uuid4()}"
        parts.append(f"{name}<<{delimiter}\n{value}\n{delimiter}\n")
    return "".join(parts)


def append_outputs(path: Path, values: Mapping[str, str]) -> None:
    with path.open("a", encoding="utf-8", newline="\n") as fh:
        fh.write(format_outputs(values))


def escape_data(text: str) -> str:
    """A workflow command's message as GitHub's toolkit encodes it (`%` -> %25, CR -> %0D,
    LF -> %0A), so it stays one line and one command; the controls that would act on a log
    viewer or turn the text around (`_UNSHOWN`: ESC, BEL, bidi controls) are removed."""
    text = _UNSHOWN.sub("", text)
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def command(level: str, message: str, *, title: str | None = None) -> str:
    """One `::error`/`::warning`/`::notice` line; user text inside it cannot start a command."""
    if len(message) > ANNOTATION_MAX_CHARS:
        message = message[: ANNOTATION_MAX_CHARS - 1] + "…"
    props = f" title={escape_property(title)}" if title else ""
    return f"::{level}{props}::{escape_data(message)}"


def print_commands(lines: list[str], out: TextIO) -> None:
    for line in lines:
        out.write(line + "\n")
    out.flush()
