"""Assemble README.md: the hand-written top (up to the marker) and the sections in docs/.

The sections live in docs/ so that their examples run as tests; the README carries them
verbatim (headings one level down). `python tools/build_readme.py` rewrites README.md;
tests/test_readme.py fails when it is out of date.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MARKER = "<!-- sections below are assembled from docs/ by tools/build_readme.py -->"
SECTIONS = (
    "formats-client.md",
    "formats-server.md",
    "statistics.md",
    "rebudget.md",
    "history.md",
    "github.md",
    "python.md",
    "performance.md",
    "security.md",
    "development.md",
)


def demote(text: str) -> str:
    """One heading level down, outside code fences."""
    out, fenced = [], False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and re.match(r"#{1,5} ", line):
            line = "#" + line
        out.append(line)
    return "\n".join(out).strip() + "\n"


def build(root: Path = ROOT) -> str:
    top = (root / "README.md").read_text(encoding="utf-8").split(MARKER)[0].rstrip() + "\n"
    parts = [top, MARKER + "\n"]
    parts += [demote((root / "docs" / name).read_text(encoding="utf-8")) for name in SECTIONS]
    return "\n".join(parts)


if __name__ == "__main__":
    text = build()
    if "--check" in sys.argv:
        current = (ROOT / "README.md").read_text(encoding="utf-8")
        sys.exit(0 if current == text else "README.md is out of date: python tools/build_readme.py")
    (ROOT / "README.md").write_text(text, encoding="utf-8")
