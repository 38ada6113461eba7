"""The layout docs/development.md draws, checked: each stage imports only itself and earlier
stages, no function grows past 60 lines, and the two package `__init__`s only re-export.

Imports under `if TYPE_CHECKING:` are types only (the renderers name `Report` that way, since
`Report.to_markdown` calls them); every other import counts, inside a function or not.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import paths

ROOT = paths.ROOT / "budgetdiff"
# the stages, in the order data flows; a module belongs to the first stage naming its top name
STAGES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("base", ("errors", "numbers", "units", "table", "stats", "changepoint", "report_id")),
    ("read", ("formats", "sources")),
    ("budget", ("budget", "budget_file", "budget_problems")),
    ("results", ("results", "agent_results")),
    ("compute", ("pairing", "prepare", "attribution", "whatif", "rebudget", "rows", "compare",
                 "aggregate", "history", "agent")),
    ("judge", ("judge", "agent_judge", "doubts")),
    ("render", ("render",)),
    ("report", ("report",)),
    ("github", ("github",)),
    ("evaluate", ("evaluate",)),
    ("edge", ("options", "commands", "parser", "terminal", "cli", "action", "api", "testing",
              "__main__", "")),
)  # fmt: skip
RANK = {name: i for i, (_, names) in enumerate(STAGES) for name in names}
MAX_FUNCTION_LINES = 60


def _modules() -> list[Path]:
    return sorted(p for p in ROOT.rglob("*.py") if "vendor" not in p.parts)


def _name(path: Path) -> str:
    parts = ["budgetdiff", *path.relative_to(ROOT).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _rank(module: str) -> int | None:
    """The stage of a budgetdiff module; None for anything outside budgetdiff."""
    parts = module.split(".")
    if parts[0] != "budgetdiff":
        return None
    return RANK.get(parts[1] if len(parts) > 1 else "")


def _type_only_lines(tree: ast.Module) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for inner in node.body:
                lines.update(n.lineno for n in ast.walk(inner) if hasattr(n, "lineno"))
    return lines


def _imports(source: str, module: str, is_package: bool = False) -> list[tuple[int, str]]:
    """(line, module) of every runtime import in `source`, the text of `module`."""
    tree = ast.parse(source)
    skip = _type_only_lines(tree)
    package = module if is_package else module.rsplit(".", 1)[0]
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if not isinstance(node, (ast.Import, ast.ImportFrom)) or node.lineno in skip:
            continue
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
            continue
        base = node.module or ""
        if node.level:
            up = package.split(".")[: len(package.split(".")) - node.level + 1]
            base = ".".join([*up, *([node.module] if node.module else [])])
        # `from budgetdiff import stats` imports budgetdiff.stats
        found += [(node.lineno, f"{base}.{a.name}" if base == "budgetdiff" else base)
                  for a in node.names]  # fmt: skip
    return found


def _imports_of(path: Path) -> list[tuple[int, str]]:
    return _imports(path.read_text(encoding="utf-8"), _name(path), path.name == "__init__.py")


def test_every_module_has_a_stage() -> None:
    unplaced = [_name(p) for p in _modules() if _rank(_name(p)) is None]
    assert not unplaced, f"add these to a stage in STAGES and docs/development.md: {unplaced}"


def test_no_module_imports_a_later_stage() -> None:
    upward = []
    for path in _modules():
        me = _rank(_name(path))
        for line, target in _imports_of(path):
            them = _rank(target)
            if me is not None and them is not None and them > me:
                upward.append(
                    f"{path.relative_to(ROOT.parent)}:{line} ({STAGES[me][0]}) imports "
                    f"{target} ({STAGES[them][0]})"
                )
    assert not upward, "\n".join(upward)


def test_no_function_is_longer_than_60_lines() -> None:
    long = []
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    long.append(f"{path.relative_to(ROOT.parent)}:{node.lineno} {node.name}")
    assert not long, "\n".join(long)


@pytest.mark.parametrize("package", ["github", "formats"])
def test_package_init_only_re_exports(package: str) -> None:
    tree = ast.parse((ROOT / package / "__init__.py").read_text(encoding="utf-8"))
    allowed = (ast.Import, ast.ImportFrom, ast.Expr, ast.Assign, ast.AnnAssign)
    logic = [type(n).__name__ for n in tree.body if not isinstance(n, allowed)]
    assign = [
        ast.unparse(n)
        for n in tree.body
        if isinstance(n, (ast.Assign, ast.AnnAssign)) and "__all__" not in ast.unparse(n)
    ]
    assert not logic and not assign, (logic, assign)


def test_the_import_walk_sees_what_it_must() -> None:
    """Not vacuous: absolute, relative, function-level and type-only imports are told apart."""
    source = (
        "from typing import TYPE_CHECKING\n"
        "from budgetdiff.report.model import Report\n"
        "from . import table\n"
        "def f():\n    from budgetdiff import github\n"
        "if TYPE_CHECKING:\n    from budgetdiff.evaluate.orchestrator import x\n"
    )
    found = _imports(source, "budgetdiff.render.markdown")
    assert (2, "budgetdiff.report.model") in found
    assert (3, "budgetdiff.render") in found
    assert (5, "budgetdiff.github") in found
    assert not any(target == "budgetdiff.evaluate.orchestrator" for _, target in found)
    assert _rank("budgetdiff.report.model") > _rank("budgetdiff.render.markdown")  # type: ignore[operator]


# a format spec inside an f-string: `{x:.1f}`, `{n:,}`, `{p:g}`, `{f:.0%}`
_FORMAT_SPEC = re.compile(r"\{[^{}\n]*:[,+]?\.?\d*[,fgde%]?\}")


def test_numbers_a_person_reads_go_through_numbers_py() -> None:
    """One formatter (issue 16): a number is worded by `budgetdiff.numbers`, nowhere else. A
    Mermaid chart's coordinates are positions, not text, and say so on their line."""
    found = []
    for path in _modules():
        if path.name == "numbers.py":
            continue
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if _FORMAT_SPEC.search(line) and "# coordinates" not in line:
                found.append(f"{path.relative_to(ROOT.parent)}:{i}: {line.strip()}")
    assert not found, "\n".join(found)


def test_the_format_spec_pattern_sees_the_shapes_it_must() -> None:
    for shape in ('f"{x:.1f} ms"', 'f"{n:,} rows"', 'f"p{p:g}"', 'f"{f:.0%}"', 'f"{d:+g}"'):
        assert _FORMAT_SPEC.search(shape), shape
    assert not _FORMAT_SPEC.search("f\"{ms(x)} and {d['k']}\"")


# which modules a console-script run leaves loaded (a fresh interpreter: this one has them all)
_LOADED = """
import contextlib, io, sys
from budgetdiff.cli import main
with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):
    main(sys.argv[1:])
print(" ".join(m for m in sys.modules if m.startswith(("budgetdiff", "scipy"))))
"""


def _loaded(*argv: str) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-c", _LOADED, *argv], capture_output=True, text=True, check=True
    )
    return set(done.stdout.split())


def test_a_command_loads_only_what_it_runs() -> None:
    """The parser knows every command by name; a command's module (and what it needs) is loaded
    when it runs: `--help` and `schema` read no results, so they load neither the readers nor
    the statistics, and a compare loads no other command."""
    for argv in (["--help"], ["schema"], ["compare", "--help"]):
        loaded = _loaded(*argv)
        assert (
            not {"scipy", "budgetdiff.evaluate.orchestrator", "budgetdiff.formats.detect"} & loaded
        ), argv
    assert "budgetdiff.commands.schema" in _loaded("schema")
    compare = _loaded("demo", "--output", "json")
    assert {"budgetdiff.commands.demo", "budgetdiff.evaluate.orchestrator", "scipy"} <= compare
    others = {f"budgetdiff.commands.{c}" for c in ("whatif", "history", "init", "inspect")}
    assert not others & compare
