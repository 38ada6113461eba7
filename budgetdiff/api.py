"""The Python API: `compare` and `check` on files or tables in memory, returning the Report the
CLI renders. The same pipeline as the CLI (`budgetdiff.evaluate`); only the edges
differ: results may be DataFrames, pyarrow Tables or dicts of arrays, the budget a dict.

Importing this module is cheap (it is imported with the package); the work starts at the call.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from budgetdiff.errors import BudgetError, InputError, UsageError

if TYPE_CHECKING:
    from typing import TypeAlias

    import pandas
    import pyarrow

    from budgetdiff.budget import Budget
    from budgetdiff.evaluate import Reading
    from budgetdiff.report import Report
    from budgetdiff.table import Run

    PathLike: TypeAlias = str | os.PathLike[str]
    # one row per request in memory, or the file(s) of one run
    Results: TypeAlias = (
        PathLike | Sequence[PathLike] | pandas.DataFrame | pyarrow.Table | Mapping[str, Any]
    )
    BudgetLike: TypeAlias = PathLike | Mapping[str, Any] | Budget


def compare(
    base: Results,
    head: Results,
    budget: BudgetLike,
    *,
    fail_on: Iterable[str] | None = None,
    format: str = "auto",
    id: str = "default",
) -> Report:
    """Base vs head against the budget, as `budgetdiff compare` does.

    `base` and `head`: a results file (any format the CLI reads; several files for one run as a
    list), or one row per request in memory: a pandas DataFrame, a pyarrow Table or a dict of
    equal-length arrays, with the native table's columns (`decode_ms`, `ttft_ms`, ...).
    `budget`: a budget file, YAML text, a dict with the file's keys, or a Budget.
    `fail_on`: overrides the budget's `fail_on` (empty: never fail).
    Bad input raises `budgetdiff.errors.BudgetdiffError` (InputError, BudgetError, UsageError)
    with the message the CLI would print.
    """
    b = load_budget(budget)
    kinds = _fail_on(fail_on, b)
    reading = _reading(b, format)
    return _evaluate(_runs(base, "base", reading), _runs(head, "head", reading), b, kinds, id)


def check(
    head: Results,
    budget: BudgetLike,
    *,
    fail_on: Iterable[str] | None = None,
    format: str = "auto",
    id: str = "default",
) -> Report:
    """One run against the SLO and the slice budgets, no base, as `budgetdiff check` does.
    Takes `compare`'s arguments less `base`."""
    b = load_budget(budget)
    head_runs = _runs(head, "head", _reading(b, format))
    return _evaluate(None, head_runs, b, _fail_on(fail_on, b), id)


def _reading(budget: Budget, fmt: str) -> Reading:
    """How the API reads files: as the CLI does, with the process's environment."""
    from budgetdiff.evaluate import Reading  # the pipeline: `import budgetdiff` stays cheap

    return Reading(budget=budget, environ=os.environ, fmt=fmt)


def _evaluate(
    base: list[Run] | None, head: list[Run], budget: Budget, fail_on: list[str], report_id: str
) -> Report:
    """The CLI's pipeline on the runs the API has read."""
    from budgetdiff.evaluate import evaluate

    _check_id(report_id)
    return evaluate(base, head, budget, fail_on=fail_on, report_id=report_id)


def load_budget(budget: BudgetLike) -> Budget:
    """A Budget from a file, YAML text, a dict or a Budget.

    A str is a file name when it is one line ending in .yml, .yaml or .json, or names a file
    that exists; any other str is YAML text.
    """
    from budgetdiff import budget as budgets

    if isinstance(budget, budgets.Budget):
        return budget
    if isinstance(budget, Mapping):
        return budgets.validate_budget(budget, "budget")
    if isinstance(budget, os.PathLike) or _names_a_file(budget):
        return budgets.load_budget(Path(budget))
    if isinstance(budget, str):
        return budgets.parse_budget(budget, "budget")
    raise BudgetError(
        f"budget: a {type(budget).__name__} is not a budget; pass a file name, YAML text or a dict"
    )


def _names_a_file(value: object) -> bool:
    if not isinstance(value, str) or "\n" in value:
        return False
    return value.strip().endswith((".yml", ".yaml", ".json")) or Path(value).is_file()


def _check_id(report_id: str) -> None:
    from budgetdiff.report import REPORT_ID_RULE, is_report_id

    if not is_report_id(report_id):
        raise UsageError(f"id: {report_id[:80]!r}: use {REPORT_ID_RULE}")


def _fail_on(kinds: Iterable[str] | None, budget: Budget) -> list[str]:
    from budgetdiff.budget import FAIL_KINDS

    if kinds is None:
        return list(budget.fail_on)
    if isinstance(kinds, str):  # the CLI's spelling: a comma list, or never
        kinds = [k.strip() for k in kinds.split(",") if k.strip() and k.strip() != "never"]
    out = list(kinds)
    bad = [k for k in out if k not in FAIL_KINDS]
    if bad:
        raise UsageError(
            f"fail_on: unknown kind {bad[0]!r}; use some of {', '.join(FAIL_KINDS)} "
            "(an empty list never fails)"
        )
    return out


def _runs(results: Results, side: str, reading: Reading) -> list[Run]:
    """One side's runs: files through the CLI's readers, tables through the native reader."""
    if isinstance(results, (str, os.PathLike)):
        return reading.side([os.fspath(results)]).runs
    if isinstance(results, (list, tuple)):
        paths = [os.fspath(p) for p in results if isinstance(p, (str, os.PathLike))]
        if paths and len(paths) == len(results):  # several files of one run
            return reading.side(paths).runs
    return _read_table(results, side, reading.budget)


def _read_table(results: object, side: str, budget: Budget) -> list[Run]:
    import pyarrow as pa

    from budgetdiff.evaluate import read_options
    from budgetdiff.formats import detect

    pandas = sys.modules.get("pandas")  # a DataFrame means pandas is imported already
    kind = type(results).__name__
    source = f"{side} ({kind})"
    try:
        if isinstance(results, pa.Table):
            table = results
        elif pandas is not None and isinstance(results, pandas.DataFrame):
            table = pa.Table.from_pandas(results, preserve_index=False)
        elif hasattr(results, "__arrow_c_stream__"):  # polars and other Arrow-speaking frames
            table = pa.table(results)
        elif isinstance(results, Mapping):
            table = pa.table({str(k): _column(v) for k, v in results.items()})
        else:
            raise InputError(
                f"{side}: a {kind} is not results; pass a file name, a list of them, a pandas "
                "DataFrame, a pyarrow Table or a dict of arrays (one row per request)"
            )
    except (pa.ArrowException, ValueError, TypeError) as e:
        what = str(e).splitlines()[0][:200] if str(e) else type(e).__name__
        raise InputError(
            f"{source}: not a table of one row per request ({what}); give every column the "
            "same length and plain numbers"
        ) from None
    # the reader's errors sorted as for a file: its own ReadError, or a bug of the reader's
    return detect.read_arrow(table, source, read_options(budget))


def _column(values: Any) -> Any:
    import pyarrow as pa

    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        return values
    # from_pandas: NaN is a missing value, as in a DataFrame (a text column with blanks)
    return pa.array(values, from_pandas=True)
