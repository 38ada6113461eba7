"""The one orchestrator: a Request in, the Report every renderer reads.

    run         where the base comes from (files, a git ref, a GitHub artifact) or why there is
                none -> read both sides -> same input? -> the history and the accept label
    evaluate    pair the scenarios of base and head -> rows for each pair -> judge -> Report

Every decision between reading and rendering is made here. The CLI, the Python API and the
Action build a `Request`, call `run` and render what it returns, so the same input gives the
same findings through all three. `rebudget_for`, `what_if` and `trend_page` are the same steps
for the commands and the page that are not a Report.
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Literal, TypeAlias

from budgetdiff import numbers
from budgetdiff.budget.model import Budget, did_you_mean
from budgetdiff.errors import InputError, UsageError
from budgetdiff.formats import ReadOptions, detect
from budgetdiff.formats.combine import combine
from budgetdiff.judge import doubts
from budgetdiff.judge.findings import READ_KINDS, judge
from budgetdiff.measure import agent, history, pairing, rebudget, rows, whatif
from budgetdiff.measure.aggregate import compare_aggregate
from budgetdiff.measure.end_to_end import prepare_alike
from budgetdiff.measure.history import History, Loaded, analyse
from budgetdiff.measure.prepare import Prepared, prepare
from budgetdiff.measure.results import METRIC_LABELS, Acceptance, Comparison, Finding
from budgetdiff.measure.rows import runs_match, slice_parts
from budgetdiff.render.page import Cdf, render_page
from budgetdiff.render.text import one_line, plain
from budgetdiff.report.model import Report, Scenario
from budgetdiff.sources import files as sources
from budgetdiff.table import UNATTRIBUTED, Run

if TYPE_CHECKING:
    from budgetdiff.github import GitHubContext
    from budgetdiff.sources.prometheus import LiveQuery
    from budgetdiff.sources.sql import SqlQuery

TREND_LINK_ENV = "BUDGETDIFF_TREND_LINK"  # where the comment links the trend page


# ---- the request ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Files:
    """The results files of one run, from the work tree or as they are in git commit `ref`."""

    paths: tuple[str, ...]
    ref: str | None = None


@dataclass(frozen=True, slots=True)
class Tables:
    """Runs read from tables in memory (the Python API's DataFrames and Arrow tables)."""

    runs: tuple[Run, ...]


@dataclass(frozen=True, slots=True)
class Live:
    """One side read from a live Prometheus (issue 27, `--prometheus URL`): `query` names the
    server, the window, and each side's matchers and end (the families are the budget's, bound
    when the side is read). `sleep` waits between retries (None: really wait; tests pass a
    stand-in)."""

    query: LiveQuery
    side: Literal["base", "head"]
    sleep: Callable[[float], None] | None = None


@dataclass(frozen=True, slots=True)
class Sql:
    """One side read from a SQL engine (issue 36, `--sql CONNECTION`): `query` names the
    engine, the table or query, and each side's filter."""

    query: SqlQuery
    side: Literal["base", "head"]


Source: TypeAlias = Files | Tables | Live | Sql


@dataclass(frozen=True, slots=True)
class Base:
    """Where the base comes from: `source`, or the artifact `artifact` of the base branch's
    latest run (then `source`'s paths are file names inside it; none: the head's names).
    `allow_missing`: base files that are not there are the `no_base` finding, not exit 2."""

    source: Source | None = None
    artifact: str | None = None
    allow_missing: bool = False


@dataclass(frozen=True)
class Request:
    """One evaluation as every edge asks for it: head (and for a compare, the base) against the
    budget. `fail_on` None keeps the budget's; `history` is a JSON Lines file of earlier
    reports; `accept_label` is looked for on the pull request of `github`'s event; `environ`
    holds the size limit and the trend page's link."""

    head: Source
    budget: Budget
    base: Base | None = None  # None: a check of head alone
    fail_on: tuple[str, ...] | None = None
    report_id: str = "default"
    fmt: str = "auto"
    scenarios: tuple[str, ...] = ()
    history: str | None = None
    accept_label: str = ""
    pair: bool | None = None  # --pair / --no-pair: force pairing by request id, or never
    environ: Mapping[str, str] = field(default_factory=dict)
    budget_change: str | None = None  # what a pull request changed in its budget (issue 38)
    github: GitHubContext | None = None


@dataclass(frozen=True, slots=True)
class Evaluation:
    """The Report, and the runs and budget it was made from (the page draws their data)."""

    report: Report
    base: list[Run] | None
    head: list[Run]
    budget: Budget

    def page(self) -> str:
        """`--html PAGE`: the history's charts and the main scenario's distributions."""
        return trend_page(self.report, self.base, self.head, self.budget)


def run(request: Request) -> Evaluation:
    """Read the sides the request names, decide what the comparison is, evaluate it."""
    budget = request.budget
    reading = Reading(budget, request.environ, request.fmt, request.scenarios)
    base_source, no_base = _base_source(request)  # a compare without a base stops here
    head = reading.side(request.head)
    if base_source is not None:  # pairing asks whether head's ids repeat: counted meanwhile
        for run in head.runs:
            if run.request_id is not None:
                run.request_id.count_early()
    base = reading.side(base_source) if base_source is not None else None
    same = None
    if base is not None and base.sizes == head.sizes and _same_bytes(base_source, request):
        same = _same_input_message(base_source, request.head)
    base_runs = base.runs if base is not None else None
    report = evaluate(
        base_runs,
        head.runs,
        budget,
        fail_on=budget.fail_on if request.fail_on is None else request.fail_on,
        report_id=request.report_id,
        no_base=no_base or None,
        same_input=same,
        accepted=_accepted(request),
        history=load_history(request.history, request.environ),
        pair=request.pair,
        budget_change=request.budget_change,
    )
    return Evaluation(report, base_runs, head.runs, budget)


# ---- where the base comes from --------------------------------------------------------------


def _base_source(request: Request) -> tuple[Source | None, str]:
    """The base to read, or None and why there is none (a missing base is the `no_base`
    finding, never a pass)."""
    base = request.base
    if base is None:
        return None, ""
    if base.artifact:
        return _artifact_base(base, request)
    if not isinstance(base.source, Files) or not base.source.paths:
        if isinstance(base.source, (Tables, Live, Sql)):
            return base.source, ""
        raise UsageError(
            "compare needs --base FILE (or --base-artifact NAME with --github); "
            "to check one run alone use `budgetdiff check --head FILE`"
        )
    files = base.source
    if files.ref is None and not base.allow_missing:
        return files, ""  # a local path that is not there is a typo: exit 2, like head
    # absent by design: not committed in the base yet, or allowed (the PR adding a benchmark)
    gone = [p for p in files.paths if not sources.exists(p, files.ref)]
    if gone:
        where = f" in {files.ref}" if files.ref else ""
        return None, f"the base results {', '.join(gone)} do not exist{where}"
    return files, ""


def _artifact_base(base: Base, request: Request) -> tuple[Source | None, str]:
    """The base files inside the artifact of the base branch's latest run, downloaded."""
    if request.github is None:
        raise UsageError("--base-artifact needs --github (it downloads through the GitHub API)")
    from budgetdiff import github  # the GitHub client only for an artifact

    fetched = github.fetch_base_artifact(
        base.artifact or "", request.github, Path(tempfile.mkdtemp(prefix="budgetdiff-base-"))
    )
    folder = fetched.folder
    if folder is None:  # the no_base finding tells why: not found, no access, no download
        return None, fetched.message
    print(fetched.annotation(), flush=True)  # where the base came from, in the run's log
    given = base.source.paths if isinstance(base.source, Files) and base.source.paths else ()
    names = [Path(p.replace("\\", "/")).name for p in (given or _paths(request.head))]
    found = tuple(str(folder / n) for n in names if (folder / n).is_file())
    if not found:
        return None, f"artifact {base.artifact!r} has no {', '.join(names)}"
    return Files(found), ""


def _paths(source: Source) -> tuple[str, ...]:
    return source.paths if isinstance(source, Files) else ()


def _same_bytes(base: Source | None, request: Request) -> bool:
    """Base and head are the same bytes, file by file (asked only when the sizes match, so a
    real pair costs nothing; a second read is cheaper than holding both files in memory)."""
    head = request.head
    if not isinstance(base, Files) or not isinstance(head, Files):
        return False
    limit = sources.max_bytes(request.environ)
    return all(
        sources.read_bytes(b, base.ref, limit) == sources.read_bytes(h, head.ref, limit)
        for b, h in zip(base.paths, head.paths, strict=True)
    )


def _same_input_message(base: Source | None, head: Source) -> str:
    return (
        f"base ({', '.join(_paths(base) if base else ())}) and head ({', '.join(_paths(head))}) "
        "are the same bytes: nothing was compared; point --base at the base commit's results"
    )


def _accepted(request: Request) -> Acceptance | None:
    """On a pull request: the accept label, if the PR carries it."""
    if request.github is None or not request.accept_label:
        return None
    from budgetdiff.github import event  # the GitHub client only with a GitHub context

    return event.acceptance(request.github.payload, request.accept_label)


def load_history(path: str | None, environ: Mapping[str, str]) -> Loaded | None:
    """The runs of a history file, each line checked; a skipped line is a warning on stderr."""
    if path is None:
        return None
    empty = Path(path).is_file() and Path(path).stat().st_size == 0  # a history starts empty
    data = b"" if empty else sources.read_bytes(path, None, history.MAX_BYTES)
    loaded = history.parse(data, path, environ.get(TREND_LINK_ENV) or None)
    for warning in loaded.warnings:
        print(f"budgetdiff: warning: {one_line(warning)}", file=sys.stderr)
    return loaded


# ---- read -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Side:
    """One side's runs, and each of its files' size in bytes (equal sizes: maybe equal bytes)."""

    runs: list[Run]
    sizes: tuple[int, ...]


def read_options(budget: Budget) -> ReadOptions:
    """What the budget tells a reader: the slices it wants (in every class of traffic) and
    where their columns are."""
    return ReadOptions(
        slices=tuple(s for s in budget.all_slices if s != UNATTRIBUTED),  # computed, not read
        columns={
            n: (s.column or n, s.unit)
            for n, s in budget.all_slices.items()
            if s.column is not None or s.unit is not None
        },
        percentile=budget.percentile,
    )


@dataclass(frozen=True, slots=True)
class Reading:
    """How the sides of one comparison are read: one format, one budget, one size limit, and
    the scenarios wanted (none named: all of them)."""

    budget: Budget
    environ: Mapping[str, str]
    fmt: str = "auto"
    scenarios: Sequence[str] = ()

    def side(self, source: Source) -> Side:
        """One side's runs: from its files (the work tree, or a commit), from a Prometheus, or
        as read already."""
        if isinstance(source, Tables):
            return Side(self._wanted(list(source.runs), "the table"), ())
        if isinstance(source, Live):
            from budgetdiff.sources.prometheus import read_side  # httpx only when live

            # the families the budget maps (`prometheus.metrics`), whoever built the query
            query = replace(source.query, families=self.budget.prometheus.metrics)
            run = read_side(query, source.side, self.environ, sleep=source.sleep)
            return Side(self._wanted([run], source.query.url), ())
        options = read_options(self.budget)
        if isinstance(source, Sql):
            from budgetdiff.sources.sql import read_side as read_sql  # the engine only when asked

            runs = read_sql(source.query, source.side, options)
            return Side(self._wanted(runs, source.query.connection.shown), ())
        limit = sources.max_bytes(self.environ)
        per_file, sizes = [], []
        for path in source.paths:
            label = f"{source.ref}:{path}" if source.ref else path
            seen = sources.head_of(path, source.ref, limit, detect.SNIFF_BYTES)
            if seen is not None and detect.parquet_reader(seen[0], label, self.fmt, options):
                sizes.append(seen[1])  # pyarrow reads it: no bytes held
                runs = detect.read_parquet(path, label, options)
            else:
                data = sources.read_bytes(path, source.ref, limit)
                sizes.append(len(data))
                runs = detect.read(data, label, self.fmt, options)
            per_file.append(_with_companion(runs, path, source.ref, limit))
        runs = combine(per_file, list(source.paths))  # one file passes through, after its checks
        return Side(self._wanted(runs, source.paths[0]), tuple(sizes))

    def _wanted(self, runs: list[Run], where: str) -> list[Run]:
        if not self.scenarios:
            return runs
        runs = [r for r in runs if r.scenario in self.scenarios]
        if not runs:
            raise UsageError(f"--scenario {','.join(self.scenarios)}: none of these is in {where}")
        return runs


def _with_companion(runs: list[Run], path: str, ref: str | None, limit: int) -> list[Run]:
    """The runs with the tool's own percentiles from the file its reader names as their
    companion, looked for in the same folder as `path` only (evalscope's
    `benchmark_percentile.json` beside `benchmark_data.db`); where it is not there, the runs."""
    name = detect.companion(runs)
    if name is None:
        return runs
    beside = str(Path(path).parent / name)  # the same folder, never a path guessed elsewhere
    if beside == path or not sources.exists(beside, ref):
        return runs
    try:
        data: bytes | InputError = sources.read_bytes(beside, ref, limit)
    except InputError as e:  # said in a note: the database itself was read
        data = e
    return detect.with_companion(runs, data, f"{ref}:{beside}" if ref else beside)


# ---- evaluate -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Pair:
    """A head run and the base run it is compared with; without one, `missing` says why."""

    base: Run | None
    head: Run
    missing: str | None


def evaluate(
    base: list[Run] | None,
    head: list[Run],
    budget: Budget,
    *,
    fail_on: Sequence[str],
    report_id: str = "default",
    no_base: str | None = None,
    same_input: str | None = None,
    accepted: Acceptance | None = None,
    history: Loaded | None = None,
    pair: bool | None = None,
    budget_change: str | None = None,
) -> Report:
    """Pair the scenarios, compare and judge each: the Report every renderer reads. `base` None
    is a check of head alone, unless `no_base` says why a compare has no base. `pair`: pair
    requests by id where they agree on what they asked (None), always (True), never (False)."""
    pairs, base_only = pair_runs(base, head, no_base)
    compared = sum(1 for p in pairs if p.base is not None)  # they share the gate's level
    scenarios: list[Scenario] = []
    for p in pairs:
        held_to = budget.for_scenario(p.head.scenario)  # its class's SLO and slices, if any
        c = compare_pair(p, held_to, pair, comparisons=compared)
        c = agent.attach(c, p.base, p.head, held_to)
        c = doubts.mark(c, held_to, p.head, p.base)  # no pass mark on a number in doubt
        if not scenarios and budget.classes:  # said once, with the first
            c = replace(c, notes=(*c.notes, *_unmatched_classes(budget, head)))
        if not scenarios and compared > 1:
            c = replace(c, notes=(*c.notes, _shared_level(compared, budget)))
        trends = _trends(history, c, held_to)
        findings, verdict = judge(
            c,
            held_to,
            fail_on,
            doubts=[*(p.base.doubts if p.base is not None else ()), *p.head.doubts],
            no_base=p.missing,
            base_only=base_only if not scenarios else [],  # said once, with the first
            same_input=same_input,
            accepted=accepted,
            history=trends,
            budget_change=budget_change if not scenarios else None,  # said once, first
        )
        scenarios.append(Scenario(c, tuple(findings), verdict, trends))
    mode = "compare" if base is not None or no_base is not None else "check"
    return Report(id=report_id, mode=mode, scenarios=tuple(scenarios), accepted=accepted)


def _shared_level(compared: int, budget: Budget) -> str:
    """How the comparisons of one report share the gate's level (`rows.share_level`)."""
    alpha = 1.0 - budget.regression.confidence
    each = rows.share_level(alpha, compared)
    return (
        f"the {compared} comparisons of this report share its {numbers.pct(100 * alpha)} "
        f"false-alarm level: each tests its rows at {numbers.pct(100 * each)} (Sidak: they are "
        "of different requests), so that any row of any of them flags a chance change at most "
        f"{numbers.pct(100 * alpha)} of the time"
    )


def _unmatched_classes(budget: Budget, head: list[Run]) -> list[str]:
    """A class that names no scenario of head holds nothing: said, as a typo would be silent."""
    names = [r.scenario for r in head if r.scenario is not None]
    unmatched = [c for c in budget.classes if c not in names]
    if not unmatched:
        return []
    which = "class " if len(unmatched) == 1 else "classes "
    match = " matches" if len(unmatched) == 1 else " match"
    return [
        f"the budget's {which}{', '.join(map(repr, unmatched))}{match} no scenario (the data "
        f"has: {', '.join(names) or 'one, unnamed'}){did_you_mean(unmatched[0], names)}; a "
        "class holds the scenario of its name, the others are held to the top level"
    ]


def pair_runs(
    base: list[Run] | None, head: list[Run], no_base: str | None = None
) -> tuple[list[Pair], list[str]]:
    """Each head run with its base run (by scenario), and the base scenarios head lacks."""
    if base is None:
        return [Pair(None, h, no_base) for h in head], []
    matched, base_only = runs_match(base, head)
    pairs = []
    for b, h in matched:
        missing = no_base
        if b is None:
            missing = (
                f"scenario {h.scenario or 'default'!r} is in head but not in base: nothing to "
                "compare"
            )
        elif b.n and not b.succeeded.any():
            missing = f"{b.source}: every base request failed: nothing to compare against"
            b = None
        pairs.append(Pair(b, h, missing))
    return pairs, [r.scenario or "default" for r in base_only]


def compare_pair(
    pair: Pair, budget: Budget, by_id: bool | None = None, *, comparisons: int = 1
) -> Comparison:
    """The rows of one pair: request by request when both sides hold one row per request (the
    requests both ran, paired by id where that is proven: see `pairing`), else from what the
    files hold (percentiles, histograms, means). `comparisons`: how many the report holds
    (they share the gate's level)."""
    b, h = pair.base, pair.head
    if h.per_request and (b is None or b.per_request):
        if b is None:
            return rows.compare(None, prepare(h, budget), budget)
        m = pairing.match(b, h, by_id)
        base, head, alike = prepare_alike(m.base, m.head, budget)  # one end-to-end definition
        base, head = counted(base, b), counted(head, h)  # failures: of every row (issue 38)
        notes = (*m.notes, *alike)
        return rows.compare(base, head, budget, pair=m.paired, notes=notes, comparisons=comparisons)

    def side(r: Run) -> Run | Prepared:
        return prepare(r, budget) if r.per_request else r

    return compare_aggregate(
        side(b) if b is not None else None, side(h), budget, comparisons=comparisons
    )


def counted(prep: Prepared, run: Run) -> Prepared:
    """`prep` (of the requests pairing kept) with the request and failure counts of every row
    of `run`: a failure is counted whatever the pairing left out (issue 38)."""
    return replace(prep, requests=run.n, failed=int(run.n - run.succeeded.sum()))


def _trends(history: Loaded | None, c: Comparison, budget: Budget) -> History | None:
    if history is None:
        return None
    return analyse(history, c, budget)


# ---- the commands that are not a Report -----------------------------------------------------


@dataclass(frozen=True)
class Read:
    """A command's data as `check` judges it, for the commands that are not a Report
    (`rebudget`, `whatif`): the comparison of head alone, and what the reading found wrong in
    the data (`judge.READ_KINDS`: units, impossible rows, failures, time in no slice), each
    failing as it fails `check`."""

    comparison: Comparison
    findings: tuple[Finding, ...]

    @property
    def fails(self) -> bool:
        return any(f.fails for f in self.findings)


def read_as_check(head: list[Run], budget: Budget) -> Read:
    """`head` evaluated as `check` evaluates it (the budget's `fail_on`): its main scenario,
    with the findings about the data itself."""
    s = evaluate(None, head, budget, fail_on=budget.fail_on).main
    return Read(s.comparison, tuple(f for f in s.findings if f.kind in READ_KINDS))


def rebudget_for(head: list[Run], budget: Budget, *, source: str) -> Read:
    """The comparison of `head` alone whose `rebudget` holds the proposal (None when the parts
    are in doubt: the findings say why); an InputError when the data cannot support one
    (`source` names the file in the message)."""
    read = read_as_check(head, budget)
    c = read.comparison
    measured = {r.name: r.head_ms for r in c.slices if r.head_ms is not None}
    missing = rebudget.missing_slices(budget, measured)
    if missing:
        raise InputError(
            f"{source}: no data for slice(s) {', '.join(missing)}; the data has: "
            f"{', '.join(measured)}"
        )
    if c.rebudget is None and not any(r.doubt for r in c.slices):
        raise InputError(
            f"{source}: re-budgeting needs one row per request (the tail contributions); "
            "this file holds only aggregates: pass the tool's per-request file"
        )
    return read


ATTAINMENT = "SLO attainment"  # `WhatIf.doubts`' key for the attainment


@dataclass(frozen=True)
class WhatIf:
    """One run recomputed with some slices changed: its percentiles before and after, what the
    reading found wrong in the data, and why a metric's values are in doubt (its label ->
    why: `end to end` -> `head: the unit of total_ms`)."""

    requests: int  # the requests that succeeded: what was recomputed
    before: whatif.Outcome
    after: whatif.Outcome
    read: Read
    doubts: Mapping[str, str] = field(default_factory=dict)


def what_if(
    head: list[Run], budget: Budget, changes: Mapping[str, whatif.Change], *, source: str
) -> WhatIf:
    """The SLO metrics of `head` (one run, one row per request) with `changes` applied."""
    if len(head) != 1 or not head[0].per_request:
        raise InputError(
            f"{source}: whatif needs one run with one row per request (pick one with --scenario)"
        )
    prep = prepare(head[0], budget)
    parts = slice_parts(prep)
    unknown = [s for s in changes if s not in parts]
    if unknown:
        raise UsageError(
            f"whatif: {plain(unknown[0])} is not a slice of {source}; it has: "
            f"{', '.join(parts) or 'no slices'}"
        )
    if not len(prep.metrics["total"]):
        raise InputError(f"{source}: no request succeeded: nothing to recompute")
    read = read_as_check(head, budget)
    c = read.comparison
    doubts = {r.label: r.doubt for r in c.slo if r.doubt is not None}
    changed = [r.doubt for r in c.slices if r.name in changes and r.doubt is not None]
    if changed:  # a changed slice in doubt moves the total (and TTFT) by a doubtful amount
        for label in ("end to end", *(["TTFT"] if set(changes) & set(prep.ttft_slices) else [])):
            doubts.setdefault(label, changed[0])
    labels = [METRIC_LABELS.get(n, n) for n in c.head.held_to]
    held = [doubts[label] for label in labels if label in doubts]
    if held:  # it holds each request to a metric in doubt
        doubts[ATTAINMENT] = held[0]
    return WhatIf(
        requests=len(prep.metrics["total"]),
        before=whatif.outcome(prep, budget, parts),
        after=whatif.outcome(prep, budget, parts, changes),
        read=read,
        doubts=doubts,
    )


def trend_page(report: Report, base: list[Run] | None, head: list[Run], budget: Budget) -> str:
    """`--html PAGE`: the history's charts and the main scenario's base vs head distributions."""
    main = report.main
    c = main.comparison
    pairs = pair_runs(base, head)[0]
    shown = next((p for p in pairs if p.head.scenario == c.name), pairs[0])
    b, h = shown.base, shown.head
    cdfs = []
    if h.per_request and (b is None or b.per_request):
        sides = [None, prepare(h, budget)] if b is None else prepare_alike(b, h, budget)[:2]
        values = [
            {**{r.name: s.metrics.get(r.name) for r in c.slo}, **slice_parts(s)}
            if s is not None
            else {}
            for s in sides
        ]
        for r in (*c.slo, *c.slices):
            hv = values[1].get(r.name)
            if hv is None or not len(hv):
                continue
            bv = values[0].get(r.name)
            cdfs.append(Cdf(r.label, tuple(bv) if bv is not None else (), tuple(hv)))
    title = "budgetdiff" if report.id == "default" else f"budgetdiff · {plain(report.id)}"
    return render_page(title, c.percentile, main.history, cdfs)
