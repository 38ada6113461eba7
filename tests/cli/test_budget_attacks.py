"""A budget file cannot attack the job (issue 35, items 4 and 5), through the CLI in a fresh
interpreter and through the Action's entry point with GITHUB_OUTPUT set:

- a 480-byte "billion laughs" (the issue's 470 bytes, anchors named `l1`..`l9`: nine levels
  under `fail_on`, 9**9 values if expanded) is refused before validation: exit 2, one line,
  in a second or two and well under 300 MB;
- a slice's or a class's name with a character outside the name rule (a newline and
  `::add-mask::`, ESC, BEL, U+202E) is refused with the rule said.
"""

from __future__ import annotations

import itertools
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from budgetdiff import action
from tests.support.fake_github import REPO, FakeGitHub, make_env
from tests.support.helpers import run
from tests.support.paths import DEMO

LEVELS = [f"l{i}" for i in range(1, 10)]
# Nine anchors, each nine aliases of the one before: 9**9 = 387,420,489 values when expanded.
BOMB = (
    "version: 1\nslo: {total: 6000}\nfail_on:\n"
    + "  - &l1 [breach,breach,breach,breach,breach,breach,breach,breach,breach]\n"
    + "".join(
        f"  - &{x} [{','.join(f'*{prev}' for _ in range(9))}]\n"
        for prev, x in itertools.pairwise(LEVELS)
    )
)
# The child reports its own peak RSS; the address-space cap keeps a regression from taking
# the machine's memory (13 GB before the fix). Its own: Linux carries ru_maxrss across
# exec, so a child of a large pytest process would report the parent's; /proc's VmHWM is the
# peak of the child's own address space.
CHILD = """
import re, resource, sys
resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
from budgetdiff.cli import main
try:
    code = main(sys.argv[1:])
finally:
    try:
        with open("/proc/self/status") as f:
            peak = int(re.search(r"VmHWM:\\s*(\\d+) kB", f.read()).group(1))
    except OSError:
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(f"maxrss_kb={peak}", file=sys.stderr)
sys.exit(code)
"""
ALLOWED = "1 to 100 characters of visible text: no control character"


@pytest.fixture
def gh() -> Iterator[FakeGitHub]:
    with FakeGitHub(repo=REPO) as server:
        yield server
    assert server.errors == []


def run_cli(*args: str) -> tuple[int, list[str], int, float]:
    """(exit code, stderr lines without the RSS line, peak RSS in kB, seconds)."""
    began = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", CHILD, *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    took = time.monotonic() - began
    lines = done.stderr.splitlines()
    rss = [int(x.split("=")[1]) for x in lines if x.startswith("maxrss_kb=")]
    return done.returncode, [x for x in lines if not x.startswith("maxrss_kb=")], rss[0], took


def test_the_bomb_is_480_bytes_and_nine_levels() -> None:
    assert 450 <= len(BOMB.encode()) <= 500
    assert BOMB.count("*") == 8 * 9


def test_a_billion_laughs_budget_is_one_line_exit_2_fast_and_small(tmp_path: Path) -> None:
    budget = tmp_path / "bomb.yml"
    budget.write_text(BOMB)
    code, err, rss_kb, took = run_cli(
        "check", "--head", str(DEMO / "head.csv"), "--budget", str(budget)
    )
    assert code == 2
    assert len(err) == 1, err
    assert err[0].startswith(f"budgetdiff: error: {budget}:") and "alias" in err[0]
    assert len(err[0]) < 400
    assert took < 20  # a fresh interpreter on a busy machine; the refusal itself is ms
    assert rss_kb < 300 * 1024


def test_a_billion_laughs_budget_through_the_action(
    tmp_path: Path, gh: FakeGitHub, capsys: pytest.CaptureFixture[str]
) -> None:
    budget = tmp_path / "bomb.yml"
    budget.write_text(BOMB)
    env = make_env(tmp_path, gh, INPUT_HEAD=str(DEMO / "head.csv"), INPUT_BUDGET=str(budget))
    began = time.monotonic()
    assert action.main(env) == 2
    assert time.monotonic() - began < 10
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "alias" in err


def hostile_budget(tmp_path: Path, name: str, where: str) -> Path:
    quoted = name.encode("unicode_escape").decode().replace('"', '\\"')
    value = "100" if where == "slices" else "{slo: {total: 10}}"
    budget = tmp_path / "b.yml"
    budget.write_text(f'version: 1\nslo: {{total: 6000}}\n{where}:\n  "{quoted}": {value}\n')
    return budget


@pytest.mark.parametrize("where", ["slices", "classes"])
def test_a_newline_and_add_mask_in_a_name_is_refused_in_a_fresh_interpreter(
    tmp_path: Path, where: str
) -> None:
    budget = hostile_budget(tmp_path, "decode\n::add-mask::secret", where)
    code, err, _, _ = run_cli("check", "--head", str(DEMO / "head.csv"), "--budget", str(budget))
    assert code == 2
    assert len(err) == 1, err
    assert f"{budget}:4: {where}:" in err[0] and ALLOWED in err[0]
    assert "decode\\n::add-mask::secret" in err[0]  # shown escaped, on its one line


@pytest.mark.parametrize(
    "name",
    ["decode\x1b[2J", "decode\x07", "edoc\u202edecode", "de\u200bcode", "de\tcode", "  decode"],
)
@pytest.mark.parametrize("where", ["slices", "classes"])
def test_a_name_outside_the_rule_is_refused_with_the_rule(
    tmp_path: Path, name: str, where: str, capsys: pytest.CaptureFixture[str]
) -> None:
    budget = hostile_budget(tmp_path, name, where)
    code, _, err = run(["check", "--head", str(DEMO / "head.csv"), "--budget", str(budget)], capsys)
    assert code == 2
    assert err.count("\n") == 1, err
    assert f"{budget}:4: {where}:" in err and ALLOWED in err
    assert "\x1b" not in err and "\x07" not in err and "\u202e" not in err


@pytest.mark.parametrize(
    "name",
    [
        "decode",
        "chat 8k",
        "concurrency=8, rate=10.0/s",
        "rate=inf #2",
        "llama-3.1:8b",
        "stage (1) [warm]",
        "café_ü+@",
    ],
)
def test_names_inside_the_rule_are_taken(tmp_path: Path, name: str) -> None:
    from budgetdiff.budget.file import parse_budget

    text = f'version: 1\nslo: {{total: 6000}}\nclasses:\n  "{name}": {{slo: {{total: 10}}}}\n'
    assert list(parse_budget(text, "b.yml").classes) == [name]


def test_a_hostile_name_through_the_action_writes_no_output(
    tmp_path: Path, gh: FakeGitHub, capsys: pytest.CaptureFixture[str]
) -> None:
    budget = tmp_path / "b.yml"
    budget.write_text('version: 1\nslo: {total: 6000}\nslices:\n  "a\\n::add-mask::x": 100\n')
    env = make_env(tmp_path, gh, INPUT_HEAD=str(DEMO / "head.csv"), INPUT_BUDGET=str(budget))
    assert action.main(env) == 2
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1 and ALLOWED in captured.err
    lines = Path(env["GITHUB_OUTPUT"]).read_text().splitlines() + captured.out.splitlines()
    assert not any(x.startswith("::add-mask") for x in lines)
