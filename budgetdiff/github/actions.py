"""The runner's file and stdout protocols: step summary, outputs, and workflow commands."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import TextIO

# GitHub caps one step's summary at 1 MiB; stay clearly below it.
SUMMARY_MAX_BYTES = 1_000_000
# The runner shows at most 10 annotations of each level per step: findings take at most 8 of
# them plus one "N more" line, and budgetdiff's own warnings are printed before the findings.
MAX_FINDING_ANNOTATIONS = 8
ANNOTATION_MAX_CHARS = 4000


def append_summary(path: Path, markdown: str) -> None:
    """Append the report to `GITHUB_STEP_SUMMARY` (the caller keeps it under the cap)."""
    data = markdown.encode("utf-8")
    if len(data) > SUMMARY_MAX_BYTES:
        raise ValueError(f"step summary of {len(data)} bytes exceeds {SUMMARY_MAX_BYTES}")
    with path.open("ab") as fh:
        fh.write(data)
        if not data.endswith(b"\n"):
            fh.write(b"\n")


def format_outputs(values: Mapping[str, str]) -> str:
    """`GITHUB_OUTPUT` text: every value in heredoc form, with a delimiter it cannot contain."""
    parts = []
    for name, value in values.items():
        delimiter = f"ghadelimiter_{uuid.uuid4()}"
        while delimiter in value:  # pragma: no cover - a random UUID in the value
            delimiter = f"ghadelimiter_{uuid.uuid4()}"
        parts.append(f"{name}<<{delimiter}\n{value}\n{delimiter}\n")
    return "".join(parts)


def append_outputs(path: Path, values: Mapping[str, str]) -> None:
    with path.open("a", encoding="utf-8", newline="\n") as fh:
        fh.write(format_outputs(values))


def escape_data(text: str) -> str:
    """Escape a workflow command's message so it stays one line and one command."""
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
