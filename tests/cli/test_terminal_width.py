"""The terminal report fits the terminal: the width comes from the environ dict `main` gets
(`COLUMNS`), else the terminal, else 80; tables fold and prose wraps, and nothing is dropped."""

from __future__ import annotations

import fcntl
import io
import json
import os
import re
import struct
import termios
from pathlib import Path

import numpy as np
import pytest

from budgetdiff.cli import main
from budgetdiff.commands.terminal import width
from budgetdiff.render.fit import Column, column, prose, table
from tests.support.helpers import write_table
from tests.support.paths import DEMO

COMPARE = [
    "compare",
    "--base",
    str(DEMO / "base.csv"),
    "--head",
    str(DEMO / "head.csv"),
    "--budget",
    str(DEMO / "budget.yml"),
]


def run(capsys: pytest.CaptureFixture[str], argv: list[str], columns: str) -> str:
    main(argv, {"COLUMNS": columns})
    return capsys.readouterr().out


def words(text: str) -> list[str]:
    """Every word of the report, rules of dashes left out, sorted: the same multiset whatever
    the layout, if no cell and no word of prose was dropped (headers repeat when folded: set)."""
    return sorted({w for line in text.splitlines() for w in line.split() if set(w) != {"-"}})


def test_compare_at_80_columns_prints_no_line_wider_than_80(
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = run(capsys, COMPARE, "80")
    assert out.startswith("budgetdiff: FAIL\n")
    assert max(len(line) for line in out.splitlines()) <= 80
    # the slice table is folded in two, each under the slice names
    assert len(re.findall(r"^slice\b", out, re.M)) == 2


def test_at_200_columns_every_table_is_whole_and_80_drops_nothing(
    capsys: pytest.CaptureFixture[str],
) -> None:
    wide = run(capsys, COMPARE, "200")
    narrow = run(capsys, COMPARE, "80")
    header = next(line for line in wide.splitlines() if line.startswith("slice p95"))
    assert header.split("  ")[0] == "slice p95"
    for name in ("budget", "base", "head", "change", "part of p95 total", "budget use"):
        assert name in header
    assert "tail share (change)" in header
    assert max(len(line) for line in wide.splitlines()) > 80  # it did use the room
    assert len(re.findall(r"^slice\b", wide, re.M)) == 1
    decode = next(line for line in wide.splitlines() if line.startswith("decode "))
    assert re.search(r"\+28\.3% \[\+\d+\.\d, \+\d+\.\d\] regression", decode), decode
    assert "91% (+1,099 ms)" in decode
    assert words(narrow) == words(wide)


def test_the_demo_fits_80_columns_words_and_all(capsys: pytest.CaptureFixture[str]) -> None:
    out = run(capsys, ["demo"], "80")
    assert "what to fix first" in out
    assert max(len(line) for line in out.splitlines()) <= 80


@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        ({"COLUMNS": "120"}, 120),
        ({"COLUMNS": " 100 "}, 100),
        ({"COLUMNS": "10"}, 40),  # laid out for 40 at the least
        ({"COLUMNS": "0"}, 80),
        ({"COLUMNS": "wide"}, 80),
        ({"COLUMNS": "-5"}, 80),
        ({}, 80),  # a pipe, a file or a CI log
    ],
)
def test_width_rule_off_a_terminal(environ: dict[str, str], expected: int) -> None:
    assert width(environ, io.StringIO()) == expected


def test_width_of_a_real_terminal() -> None:
    leader, follower = os.openpty()
    try:
        fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 97, 0, 0))
        with open(follower, "w", closefd=False) as out:
            assert width({}, out) == 97
            assert width({"COLUMNS": "132"}, out) == 132  # the user's word first
    finally:
        os.close(leader)
        os.close(follower)


def test_a_table_that_must_wrap_keeps_its_cells_as_given() -> None:
    """tabulate's own wrapping re-types cells (`False` -> `True`, `1,200` fails): not used."""
    name = "q" * 60
    key = column("slice", [name, "False", "1e5"])
    cols = [
        column("budget", ["1,200", "", "3"], right=True),
        column("a long header of words", ["one two three four five six seven", "", ""]),
        Column("change", (("+1.0% [-2.0, +4.0] ~", "(80% chance to catch ≥ 9%)"), (), ()), 1),
    ]
    lines = table(key, cols, 50)
    assert max(len(line) for line in lines) <= 50
    text = "\n".join(lines)
    assert "False" in text and "True" not in text and "1e5" in text and "1,200" in text
    first = text[: text.index("\n\n")]  # the first folded table; the second repeats the key
    assert "".join(re.findall("q+", first)) == name  # broken across lines, every character kept
    for word in ["one", "two", "three", "four", "five", "six", "seven", "≥", "9%)"]:
        assert word in text.split()


def test_prose_never_runs_over() -> None:
    lines = prose("read: " + "a/" * 100 + " and more words after it", 40, indent="  ")
    assert max(len(line) for line in lines) <= 40
    assert lines[0].startswith("  read: ") and all(ln.startswith("    ") for ln in lines[1:])
    assert prose("anything at all", None) == ["anything at all"]


def test_hostile_slice_names_fit_80_columns(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # a newline or ESC in a name is refused by the budget since issue 35 (test_budget_attacks)
    names = ["a|b", "x" * 10_000, "dec[31mode", "False"]
    rng = np.random.default_rng(3)
    columns = {f"c{i}": rng.lognormal(4, 0.3, 300).round(2) for i in range(len(names))}
    base = write_table(tmp_path / "base.csv", columns)
    head = write_table(tmp_path / "head.csv", {k: v * 1.2 for k, v in columns.items()})
    budget = {
        "version": 1,
        "slo": {"total": 900},
        "slices": {n[:100]: {"budget": 80, "column": f"c{i}"} for i, n in enumerate(names)},
    }
    (tmp_path / "budget.yml").write_text(json.dumps(budget))  # JSON is YAML
    argv = ["compare", "--base", str(base), "--head", str(head)]
    out = run(capsys, [*argv, "--budget", str(tmp_path / "budget.yml")], "80")
    assert "\x1b" not in out
    assert max(len(line) for line in out.splitlines()) <= 80
    assert re.search(r"^False ", out, re.M)  # as given, not re-typed
