"""The tables of the Action's inputs and outputs, generated from action.yml.

README.md is written by hand and stays short; the depth lives in docs/ and is linked. The one
part of it that would drift is the Action's interface, so that part is generated: between the
two markers below, README.md has every input (its default and the first sentence of its
description) and every output, and docs/github.md the same with the whole descriptions (when
one would change an input). `python tools/build_readme.py` rewrites both; `--check` (and
tests/unit/test_readme.py) fails when either is out of date.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
BEGIN = "<!-- inputs and outputs: generated from action.yml by tools/build_readme.py -->"
END = "<!-- end of the generated table -->"
# a sentence ends at ". " before a capital or a backtick, not at "e.g. " or "(`x`). "
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z`])")


def first_sentence(text: str) -> str:
    return _SENTENCE_END.split(" ".join(text.split()), maxsplit=1)[0]


def cell(text: str) -> str:
    return text.replace("|", "\\|")


def table(action: dict[str, Any], *, whole: bool) -> str:
    def said(description: str) -> str:
        return cell(" ".join(description.split()) if whole else first_sentence(description))

    what = "what it is and when to change it" if whole else "what it is (more: `action.yml`)"
    rows = [f"| input | default | {what} |", "|---|---|---|"]
    for name, spec in action["inputs"].items():
        default = str(spec.get("default", ""))
        shown = "**required**" if spec.get("required") else (f"`{default}`" if default else "")
        rows.append(f"| `{name}` | {cell(shown)} | {said(spec['description'])} |")
    rows += ["", "| output | value |", "|---|---|"]
    for name, spec in action["outputs"].items():
        rows.append(f"| `{name}` | {said(spec['description'])} |")
    return "\n".join(rows) + "\n"


# each file with a generated table, and whether it has the whole descriptions
FILES = {"README.md": False, "docs/github.md": True}


def build(root: Path = ROOT) -> dict[str, str]:
    """Each file in FILES with its generated table made current."""
    action = yaml.safe_load((root / "action.yml").read_text(encoding="utf-8"))
    built = {}
    for name, whole in FILES.items():
        text = (root / name).read_text(encoding="utf-8")
        before, rest = text.split(BEGIN + "\n", 1)
        _, after = rest.split(END, 1)
        built[name] = before + BEGIN + "\n" + table(action, whole=whole) + END + after
    return built


if __name__ == "__main__":
    for name, text in build().items():
        current = (ROOT / name).read_text(encoding="utf-8")
        if "--check" in sys.argv and current != text:
            sys.exit(f"{name} is out of date: python tools/build_readme.py")
        if current != text:
            (ROOT / name).write_text(text, encoding="utf-8")
