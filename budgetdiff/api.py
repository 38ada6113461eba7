"""The Python API: `compare` and `check` on files or tables in memory, returning the Report the
CLI renders. The same orchestrator as the CLI and the Action (`evaluate.orchestrator.run`); only
the edge differs: results may be DataFrames, pyarrow Tables or dicts of arrays, the budget a
dict, and the options are keyword arguments parsed by `budgetdiff.commands.options`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

import pyarrow as pa

from budgetdiff.budget import file as budgets
from budgetdiff.budget.model import Budget
from budgetdiff.commands import options
from budgetdiff.errors import BudgetError, InputError, UsageError
from budgetdiff.evaluate import orchestrator as evaluate
from budgetdiff.evaluate.orchestrator import (
    Base,
    Files,
    Live,
    Request,
    Source,
    Tables,
    read_options,
)
from budgetdiff.formats import detect
from budgetdiff.render.frame import render_frame
from budgetdiff.render.json import render_json, report_dict
from budgetdiff.render.markdown import render_markdown
from budgetdiff.render.table import render_table
from budgetdiff.report import model
from budgetdiff.table import Run

if TYPE_CHECKING:
    import pandas

PathLike: TypeAlias = "str | os.PathLike[str]"
# one row per request in memory, the file(s) of one run, or a side of a live Prometheus
Results: TypeAlias = (
    "PathLike | Sequence[PathLike] | pandas.DataFrame | pa.Table | Mapping[str, Any] | Live"
)
BudgetLike: TypeAlias = "PathLike | Mapping[str, Any] | Budget"


@dataclass(frozen=True)
class Report(model.Report):
    """What `compare` and `check` return: the report every renderer reads, with its renderings
    (the CLI and the Action call the renderers themselves)."""

    @classmethod
    def of(cls, report: model.Report) -> Report:
        return cls(report.id, report.mode, report.scenarios, report.accepted)

    def to_text(self, width: int | None = 80) -> str:
        """The terminal report (`--output table`), folded to `width` columns (None: no limit)."""
        return render_table(self, width)

    def to_markdown(self) -> str:
        """The markdown report: the PR comment and the step summary."""
        return render_markdown(self)

    def to_json(self) -> str:
        """The JSON report (`budgetdiff.report/v1`), as `--output json` prints it."""
        return render_json(self)

    def to_dict(self) -> dict[str, Any]:
        """The JSON report as Python values."""
        return report_dict(self)

    def to_frame(self) -> pandas.DataFrame:
        """One row per SLO metric, slice and agent row (of every scenario), as a pandas
        DataFrame (`budgetdiff.render.frame.FRAME_COLUMNS`)."""
        return render_frame(self)

    def _repr_markdown_(self) -> str:
        """A notebook shows the report as the PR comment looks."""
        return self.to_markdown()


def compare(
    base: Results | None,
    head: Results,
    budget: BudgetLike,
    *,
    fail_on: str | Iterable[str] | None = None,
    format: str = "auto",
    id: str = "default",
    scenarios: Iterable[str] = (),
    base_ref: str | None = None,
    head_ref: str | None = None,
    allow_missing_base: bool = False,
    base_artifact: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> Report:
    """Base vs head against the budget, as `budgetdiff compare` does.

    `base` and `head`: a results file (any format the CLI reads; several files for one run as a
    list), or one row per request in memory: a pandas DataFrame, a pyarrow Table or a dict of
    equal-length arrays, with the native table's columns (`decode_ms`, `ttft_ms`, ...).
    `budget`: a budget file, YAML text, a dict with the file's keys, or a Budget.
    `fail_on`: overrides the budget's `fail_on` (a list, or the CLI's comma list; empty or
    "never": never fail). `base_ref`/`head_ref`: read the files as they are in that git commit.
    `allow_missing_base`: base files that do not exist are the `no_base` finding.
    `base_artifact`: the base from that artifact of the base branch's latest run, through the
    GitHub API as `environ` (default: the process's) describes it; `base` then names the files
    inside it (None: the head's names).
    Bad input raises `budgetdiff.errors.BudgetdiffError` (InputError, BudgetError, UsageError)
    with the message the CLI would print.
    """
    env = os.environ if environ is None else environ
    b = load_budget(budget)
    base_source = None if base is None and base_artifact else _source(base, "base", b, base_ref)
    github = None
    if base_artifact:
        from budgetdiff.github import GitHubContext  # the GitHub client only for an artifact

        github = GitHubContext.from_environ(env)
    request = replace(
        _request(head, b, fail_on, format, id, scenarios, head_ref, env),
        base=Base(base_source, base_artifact, allow_missing_base),
        github=github,
    )
    return Report.of(evaluate.run(request).report)


def check(
    head: Results,
    budget: BudgetLike,
    *,
    fail_on: str | Iterable[str] | None = None,
    format: str = "auto",
    id: str = "default",
    scenarios: Iterable[str] = (),
    head_ref: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> Report:
    """One run against the SLO and the slice budgets, no base, as `budgetdiff check` does.
    Takes `compare`'s arguments less the base's."""
    env = os.environ if environ is None else environ
    b = load_budget(budget)
    request = _request(head, b, fail_on, format, id, scenarios, head_ref, env)
    return Report.of(evaluate.run(request).report)


def _request(
    head: Results,
    budget: Budget,
    fail_on: str | Iterable[str] | None,
    fmt: str,
    report_id: str,
    scenarios: Iterable[str],
    head_ref: str | None,
    environ: Mapping[str, str],
) -> Request:
    wanted = options.names(scenarios) if isinstance(scenarios, str) else tuple(scenarios)
    return Request(
        head=_source(head, "head", budget, head_ref),
        budget=budget,
        fail_on=options.fail_on(fail_on, "fail_on"),
        report_id=options.report_id(report_id, "id"),
        fmt=fmt,
        scenarios=wanted,
        environ=environ,
    )


def live(
    url: str,
    *,
    base_match: str | None = None,
    head_match: str | None = None,
    window: str | None = None,
    at: str | None = None,
    base_at: str | None = None,
    head_at: str | None = None,
) -> tuple[Live | None, Live]:
    """(base, head) read from a live Prometheus, as `--prometheus URL` reads them (issue 27):
    pass them to `compare`, or the head alone to `check` (base None: neither `base_match` nor
    `base_at` given). The arguments are the flags' (docs/deploy-gate.md); credentials come
    from `compare`'s `environ` (PROMETHEUS_TOKEN, ...)."""
    from budgetdiff.sources.prometheus import LiveQuery  # httpx only when live

    query = LiveQuery.parse(
        url,
        base_match=base_match,
        head_match=head_match,
        window=window,
        at=at,
        base_at=base_at,
        head_at=head_at,
        compare=base_match is not None or base_at is not None,
    )
    return (Live(query, "base") if query.base else None), Live(query, "head")


def load_budget(budget: BudgetLike) -> Budget:
    """A Budget from a file, YAML text, a dict or a Budget.

    A str is a file name when it is one line ending in .yml, .yaml or .json, or names a file
    that exists; any other str is YAML text.
    """
    if isinstance(budget, Budget):
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


def _source(results: Results | None, side: str, budget: Budget, ref: str | None) -> Source:
    """One side's results: files (read by the orchestrator, as the CLI's are), or a table in
    memory, read here through the native reader."""
    if results is None:
        raise UsageError(f"{side}: None is not results; pass a file name or a table")
    if isinstance(results, Live):
        return results  # read by the orchestrator, from the server
    if isinstance(results, (str, os.PathLike)):
        return Files((os.fspath(results),), ref)
    if isinstance(results, (list, tuple)):
        paths = [os.fspath(p) for p in results if isinstance(p, (str, os.PathLike))]
        if paths and len(paths) == len(results):  # several files of one run
            return Files(tuple(paths), ref)
    if ref is not None:
        raise UsageError(f"{side}_ref: a table in memory has no git commit; pass file names")
    return Tables(tuple(_read_table(results, side, budget)))


def _read_table(results: object, side: str, budget: Budget) -> list[Run]:
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
    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        return values
    # from_pandas: NaN is a missing value, as in a DataFrame (a text column with blanks)
    return pa.array(values, from_pandas=True)
