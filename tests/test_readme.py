"""The README cannot drift: its sections are docs/ verbatim, its quickstart is two commands."""

from __future__ import annotations

import re

from tests.conftest import ROOT
from tools.build_readme import build


def test_readme_is_assembled_from_docs() -> None:
    assert (ROOT / "README.md").read_text(encoding="utf-8") == build(), (
        "README.md is out of date: python tools/build_readme.py"
    )


def test_quickstart_is_exactly_make_demo_and_make_test() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"## Quickstart\n\n```sh\n(.*?)```", text, re.S)
    assert block is not None
    commands = [ln.split("#")[0].strip() for ln in block.group(1).splitlines()]
    assert commands == ["make demo", "make test"]
