"""The README cannot drift: its sections are docs/ verbatim, its quickstart is two commands."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from budgetdiff.cli import main
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


def test_tour_whatif_and_fix_first_outputs_are_current(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The tour's `whatif` commands, run on the demo's files, print what the README shows; its
    what-to-fix-first ranking is the demo's."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    tour = text[text.index("### What to fix first") : text.index("### The budget file")]
    for name in ("budget.yml", "head.csv"):
        (tmp_path / name).write_bytes((ROOT / "budgetdiff" / "demo" / name).read_bytes())
    monkeypatch.chdir(tmp_path)
    shown = re.findall(r"```sh\n(budgetdiff whatif [^\n]*)\n```\n\n```text\n(.*?)```", tour, re.S)
    assert len(shown) == 2
    for command, output in shown:
        code = main(shlex.split(command)[1:], environ={})
        out, _ = capsys.readouterr()
        assert out == output
        assert code == (1 if "does not fit" in out else 0)
    ranking = re.search(r"```text\n(what to fix first.*?)```", tour, re.S)
    assert ranking is not None
    main(["demo"], environ={})
    assert ranking.group(1) in capsys.readouterr().out
