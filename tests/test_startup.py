"""The start-up work a compare does not need stays undone (the time is measured by
`bench/bench_readers.py --startup`, not here): which modules a run imports, and that what
replaced the imported helpers gives the same values."""

from __future__ import annotations

import ast
import gc
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from budgetdiff.formats import ReadOptions, detect
from budgetdiff.stats import percentile, percentiles
from budgetdiff.table import repeated_ids
from tests.helpers import BUDGET, slices, write_table

# Run as the console script runs: budgetdiff.cli.entry, then the modules the run imported.
PROBE = """
import sys
from budgetdiff.cli import entry
sys.argv = ["budgetdiff", *sys.argv[1:]]
try:
    entry()
except SystemExit as e:
    code = e.code
print(code, sorted(sys.modules), file=sys.stderr)
"""
# Not imported by a compare of local files: pandas through pyarrow, pydantic (the budget is
# checked by budgetdiff.budget itself) and tabulate. (numpy.ma, importlib.metadata, email,
# subprocess, tempfile, numpy.typing and traceback arrive with scipy.special, the t and beta
# distributions of budgetdiff.stats since issue 25: the library, not a faster copy of it.)
UNNEEDED = ("pandas", "pydantic", "tabulate")


def imported(args: list[str], env: dict[str, str] | None = None) -> tuple[int, set[str]]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *args], capture_output=True, text=True, env=env, check=False
    )
    code, _, modules = done.stderr.strip().splitlines()[-1].partition(" ")
    return int(code), set(ast.literal_eval(modules))


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    folder = tmp_path_factory.mktemp("startup")
    base = write_table(folder / "base.csv", slices(1, 100))
    head = write_table(folder / "head.csv", slices(2, 100))
    (folder / "budget.yml").write_text(BUDGET, encoding="utf-8")
    return ["--base", str(base), "--head", str(head), "--budget", str(folder / "budget.yml")]


def test_a_compare_imports_only_what_it_uses(pair: list[str]) -> None:
    code, modules = imported(["compare", *pair, "--output", "json"])
    assert code in (0, 1)
    assert "budgetdiff.budget" in modules and "pyarrow" in modules  # the probe saw a real run
    assert not [m for m in UNNEEDED if m in modules]


def test_the_table_output_imports_its_renderer_alone(pair: list[str]) -> None:
    code, modules = imported(["compare", *pair])
    assert code in (0, 1)
    assert "budgetdiff.render.table" in modules
    assert not [m for m in UNNEEDED if m in modules]
    assert "budgetdiff.render.json" not in modules


def test_a_compare_imports_no_other_commands_code(pair: list[str]) -> None:
    """Each subcommand's module is imported when it runs; what a plain compare does not use
    (GitHub, a history, aggregate inputs, the page) stays unloaded."""
    code, modules = imported(["compare", *pair, "--output", "json"])
    assert code in (0, 1)
    assert "budgetdiff.evaluate" in modules  # the probe saw the pipeline run
    unused = (
        "budgetdiff.commands.",
        "budgetdiff.github",
        "budgetdiff.history",
        "budgetdiff.aggregate",
        "budgetdiff.render.page",
        "budgetdiff.render.markdown",
    )
    assert not [m for m in modules if m.startswith(unused)]


def test_detecting_a_table_imports_no_json_reader(pair: list[str]) -> None:
    """`--format auto` (the default) asks the JSON formats' sniffers only about a file that
    starts as JSON does: a CSV compare imports the native reader and Prometheus' alone."""
    from budgetdiff.formats.registry import READERS

    code, modules = imported(["compare", *pair, "--output", "json"])
    assert code in (0, 1)
    assert "budgetdiff.formats.native" in modules  # the probe saw the file read
    json_readers = [r.module_name for r in READERS if r.json]
    assert len(json_readers) >= 9
    assert not [m for m in json_readers if m in modules]


@pytest.mark.parametrize("args", [["--version"], ["--help"], ["compare", "--help"]])
def test_help_and_version_do_without_the_pipeline(args: list[str]) -> None:
    code, modules = imported(args)
    assert code == 0
    assert "budgetdiff.cli" in modules  # the probe ran the CLI
    assert not [m for m in ("budgetdiff.evaluate", "budgetdiff.budget", "yaml") if m in modules]


def test_percentile_is_numpys_exactly() -> None:
    rng = np.random.default_rng(5)
    for n in (1, 2, 7, 100, 1001):
        x = rng.lognormal(5, 1, n)
        x[rng.integers(0, n, n // 3)] = x[0]  # ties
        for p in (1.0, 50.0, 90.0, 95.0, 99.0, 99.9, 99.99):
            want = float(np.percentile(x, p))
            assert percentile(x, p) == want
            pool = x.copy()
            assert percentile(pool, p, in_place=True) == want
    x = np.array([3.0, np.nan, 1.0, 2.0])
    assert np.isnan(np.percentile(x, 50)) and np.isnan(percentile(x, 50))
    assert all(np.isnan(v) for v in percentiles(x, [50.0, 95.0]))


def test_repeated_ids_counts_what_np_unique_drops() -> None:
    rng = np.random.default_rng(6)
    for ids in (
        np.array([], dtype=str),
        np.array(["a"]),
        np.array(["a", "b", "a", "c", "a", "b"]),
        rng.integers(0, 50, 200).astype(str),
        np.array(["x", "y", "x"], dtype=object),
    ):
        assert repeated_ids(ids) == len(ids) - len(np.unique(ids))


@pytest.mark.parametrize("enabled", [True, False])
def test_reading_leaves_the_cycle_collector_as_it_found_it(tmp_path: Path, enabled: bool) -> None:
    path = write_table(tmp_path / "r.csv", slices(3, 50))
    was = gc.isenabled()
    try:
        gc.enable() if enabled else gc.disable()
        runs = detect.read(path.read_bytes(), str(path), "auto", ReadOptions())
        assert runs[0].n == 50
        assert gc.isenabled() is enabled
    finally:
        gc.enable() if was else gc.disable()
