"""The layout docs/development.md draws, checked: the root holds at most ten modules, each stage
imports only itself and earlier stages, no two modules import each other (directly or round a
circle), the native reader's modules import only its earlier stages, the map in
docs/development.md names every package and root module, no function grows past 60 lines, and
the package `__init__`s only re-export.

Every import counts, inside a function, under `if TYPE_CHECKING:` or not: a type-only import
that runs upward is a circle in the design all the same.
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
# the stages, in the order data flows; a module belongs to the stage naming its top name
STAGES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("core", ("errors", "numbers", "units", "table")),
    ("stats", ("stats",)),
    ("budget", ("budget",)),
    ("read", ("formats",)),
    ("sources", ("sources",)),
    ("measure", ("measure",)),
    ("judge", ("judge",)),
    ("report", ("report",)),
    ("render", ("render",)),
    ("github", ("github",)),
    ("evaluate", ("evaluate",)),
    ("edge", ("commands", "cli", "action", "api", "testing", "__main__", "")),
)  # fmt: skip
# the native reader's stages, in the order a table crosses them (formats/native/__init__.py)
NATIVE = (
    "names", "tables", "sniff", "load", "mapping", "columns", "times", "checks", "derive", "build"
)  # fmt: skip
MAX_ROOT_MODULES = 10
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


def _imports(source: str, module: str, is_package: bool = False) -> list[tuple[int, str]]:
    """(line, module) of every import in `source`, the text of `module`."""
    tree = ast.parse(source)
    package = module if is_package else module.rsplit(".", 1)[0]
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if not isinstance(node, (ast.Import, ast.ImportFrom)):
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


def test_the_root_keeps_only_the_entry_points_and_the_core_modules() -> None:
    modules = sorted(p.name for p in ROOT.glob("*.py"))
    assert len(modules) <= MAX_ROOT_MODULES, modules


def _graph() -> dict[str, set[str]]:
    """Each budgetdiff module -> the budgetdiff modules it imports: `from p import m` is the
    module p.m where m is one, else p (a package's `__init__`)."""
    names = {_name(p) for p in _modules()}
    graph: dict[str, set[str]] = {}
    for path in _modules():
        me = _name(path)
        package = me if path.name == "__init__.py" else me.rsplit(".", 1)[0]
        targets = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*up, *([base] if base else [])])
                subs = {f"{base}.{a.name}" for a in node.names}
                targets |= (subs & names) or {base}
        graph[me] = {t for t in targets if t in names and t not in (me, "budgetdiff")}
    return graph


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            step = next(edges, None)
            if step is not None:
                if step not in index:
                    index[step] = low[step] = len(index)
                    stack.append(step)
                    on_stack.add(step)
                    work.append((step, iter(sorted(graph.get(step, ())))))
                elif step in on_stack:
                    low[node] = min(low[node], index[step])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_import_circle() -> None:
    assert _circles(_graph()) == []


def test_the_circle_search_finds_a_circle() -> None:
    """Not vacuous: a circle of three and a pair are found, a chain is not."""
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"e"}, "e": {"d"}, "f": {"a"}}
    assert sorted(_circles(graph)) == [["a", "b", "c"], ["d", "e"]]


def test_the_native_reader_imports_only_its_earlier_stages() -> None:
    folder = ROOT / "formats" / "native"
    assert sorted(p.stem for p in folder.glob("*.py") if p.stem != "__init__") == sorted(NATIVE)
    back = []
    for path in folder.glob("*.py"):
        me = NATIVE.index(path.stem) if path.stem in NATIVE else -1
        for line, target in _imports_of(path):
            parts = target.split(".")
            if parts[:3] != ["budgetdiff", "formats", "native"] or len(parts) < 4:
                continue
            if parts[3] in NATIVE and NATIVE.index(parts[3]) >= me:
                back.append(f"{path.name}:{line} imports {target}")
    assert not back, "\n".join(back)


_MAP_ROW = re.compile(r"^\| `budgetdiff/([\w/]+?)(?:/|\.py)?` \|", re.M)


def test_the_map_in_the_docs_names_every_package_and_root_module() -> None:
    """docs/development.md opens with the packages in flow order and the root's modules: one
    row each, and nothing the tree does not have."""
    text = (paths.ROOT / "docs" / "development.md").read_text(encoding="utf-8")
    mapped = _MAP_ROW.findall(text)
    tree = [p.stem for p in ROOT.glob("*.py")] + [
        p.name for p in ROOT.iterdir() if (p / "__init__.py").exists()
    ]
    tree += [
        f"formats/{p.name}" for p in (ROOT / "formats").iterdir() if (p / "__init__.py").exists()
    ]
    assert sorted(mapped) == sorted(tree)
    order = [m for m in mapped if "/" not in m and (ROOT / m / "__init__.py").exists()]
    ranks = [RANK[m] for m in order]
    assert ranks == sorted(ranks), f"the docs list the packages out of flow order: {order}"


def test_no_function_is_longer_than_60_lines() -> None:
    long = []
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    long.append(f"{path.relative_to(ROOT.parent)}:{node.lineno} {node.name}")
    assert not long, "\n".join(long)


@pytest.mark.parametrize(
    "package", [p.name for p in sorted(ROOT.iterdir()) if (p / "__init__.py").exists()]
)
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
    """Not vacuous: absolute, relative, function-level and type-only imports are all seen."""
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
    assert (7, "budgetdiff.evaluate.orchestrator") in found  # a type-only import counts too
    assert _rank("budgetdiff.evaluate.orchestrator") > _rank("budgetdiff.render.markdown")  # type: ignore[operator]


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


def test_the_exception_tree_in_errors_docstring_is_the_real_one() -> None:
    """errors.py draws its family in its docstring: every exception class there, under its
    real parent (one level of indent in the drawing per level of inheritance)."""
    from budgetdiff import errors

    drawn: dict[str, int] = {}
    for line in (errors.__doc__ or "").splitlines():
        m = re.match(r"^(\s*(?:[│ ]\s*)*(?:[├└]── )?)([A-Z]\w+)\s", line)
        if m and hasattr(errors, m.group(2)):
            drawn[m.group(2)] = len(m.group(1))
    classes = {
        n: c for n, c in vars(errors).items() if isinstance(c, type) and issubclass(c, Exception)
    }
    assert set(drawn) == set(classes)
    for name, cls in classes.items():
        parent = cls.__mro__[1].__name__
        if parent in classes:
            assert drawn[name] > drawn[parent], (name, parent)
        else:
            assert drawn[name] == min(drawn.values()), name
