"""The console script: argv -> options -> evaluate -> render and publish -> exit code.

`main` parses the arguments once into frozen option objects (`RunOptions`, ...), runs the
subcommand and turns an expected failure into its one-line message and exit code. The pipeline
itself (read, pair, compare, judge) is `budgetdiff.evaluate`; the commands that print words of
their own (whatif, rebudget, history, schema) are modules of `budgetdiff.commands`, imported
when they run.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import os
import sys
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, NoReturn, TextIO, TypeVar

from budgetdiff import __version__
from budgetdiff.errors import BUG_EXIT_CODE, BudgetdiffError, BudgetError, UsageError, bug_message
from budgetdiff.formats.registry import names as format_names
from budgetdiff.render.text import one_line

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

    from budgetdiff.budget import Budget
    from budgetdiff.commands.history import HistoryOptions
    from budgetdiff.history import Loaded
    from budgetdiff.report import Report
    from budgetdiff.results import Acceptance

EXAMPLES = {
    "compare": """example:
  budgetdiff compare --base base.csv --head head.csv --budget budget.yml
  budgetdiff compare --base results.json --base-ref origin/main --head results.json
  budgetdiff compare --base a.jsonl --head b.jsonl --output markdown --json report.json""",
    "check": """example:
  budgetdiff check --head results.csv --budget budget.yml""",
    "rebudget": """example:
  budgetdiff rebudget --head results.csv --budget budget.yml          # show the proposal
  budgetdiff rebudget --head results.csv --budget budget.yml --write  # update budget.yml""",
    "demo": """example:
  budgetdiff demo                   # compare the bundled example pair
  budgetdiff demo --output markdown""",
    "history": """example:
  budgetdiff history history.jsonl                    # the trend of every row, and drift
  budgetdiff history history.jsonl --html trend.html  # a page with a chart per row
  # build one from old results (oldest first): one JSON report per line
  for f in old/*.csv; do
    budgetdiff check --head "$f" --output json | jq -c . >> history.jsonl
  done""",
    "schema": """example:
  budgetdiff schema > budget.schema.json""",
    "init": """example:
  budgetdiff init            # budget.yml, .github/workflows/latency.yml, an example pair here
  budgetdiff init service/   # the same in service/; --force overwrites what is there""",
    "whatif": """example:
  budgetdiff whatif --ttft 850 --tokens-per-s 22 --tokens 1200 --tail 300 --budget budget.yml
  budgetdiff whatif --head results.csv --budget budget.yml --scale decode=0.8 --add queue=-50
  budgetdiff whatif --steps 6 --step-ms 450 --budget agent.yml [--head traces.json]""",
}
FAIL_NEVER = "never"


def entry() -> None:
    """The console script `budgetdiff`."""
    as_process(main)


def as_process(run: Callable[[], int]) -> NoReturn:
    """Run one command as the whole life of a process (the console script, the Action): what
    only a short-lived process wants, which tests and the Python API, calling `main`, do not get.
    """
    # A run's imports make some 65,000 objects that live until it ends (modules, classes,
    # functions): at the collector's default threshold, 700 new objects, it walks them some 80
    # times for no garbage (11 ms). Past start-up it still runs, every 200,000 objects; the
    # readers pause it anyway (detect).
    gc.set_threshold(200_000, 10, 10)
    sys.meta_path.insert(0, _NoPandas())
    code = run()
    # Everything is written and flushed: the interpreter's last collection would only walk and
    # tear down the objects of every import (20 ms), memory the OS takes back at exit anyway.
    gc.freeze()
    sys.exit(code)


class _NoPandas:
    """When pandas is installed, pyarrow imports it (0.4 s) the first time it converts a Python
    value, only to ask whether the value is a pandas object; the program never has one. (Only
    the Python API's Report.to_frame uses pandas.)"""

    def find_spec(self, name: str, path: object = None, target: object = None) -> None:
        if name.partition(".")[0] == "pandas":
            raise ModuleNotFoundError(f"budgetdiff's CLI does not use {name}", name=name)


if TYPE_CHECKING:  # main's seams for the GitHub API, and the context it reads
    import httpx

    from budgetdiff.github import GitHubContext


def main(
    argv: Sequence[str] | None = None,
    environ: Mapping[str, str] | None = None,
    *,
    transport: httpx.BaseTransport | None = None,
    sleep: Callable[[float], None] | None = None,
) -> int:
    """Run one command; its exit code. `transport` and `sleep` are the GitHub API client's
    seams for tests (an httpx transport, and a stand-in for the waits between retries)."""
    env = os.environ if environ is None else environ
    parser = _parser()
    args = parser.parse_args(argv)
    github: GitHubContext | None = None
    try:
        if getattr(args, "github", False):  # the runner's environment, read once
            from budgetdiff.github import GitHubContext

            github = GitHubContext.from_environ(env, transport=transport, sleep=sleep)
        with warnings.catch_warnings():
            # numpy's overflow and invalid-value warnings: every result is checked for
            # non-finite values where it matters, and a warning would put lines before the
            # one-line message of an exit 2
            warnings.simplefilter("ignore", RuntimeWarning)
            return int(args.run(args, Edge(environ=env, out=sys.stdout, github=github)))
    except BudgetdiffError as e:
        for line in str(e).split("\n") if isinstance(e, BudgetError) else [str(e)]:
            print(f"budgetdiff: error: {one_line(line)}", file=sys.stderr)  # a budget's: each
        return e.exit_code
    except Exception as e:  # not hidden: a bug, told apart from a verdict and from bad input
        print(f"budgetdiff: error: {one_line(bug_message(e))}", file=sys.stderr)
        return BUG_EXIT_CODE


# ---- commands -------------------------------------------------------------------------------


def cmd_compare(o: RunOptions, edge: Edge) -> int:
    from budgetdiff import evaluate  # the pipeline: --help and --version do without it

    budget = _load_budget(o.budget)
    fail_on = _fail_on(o.fail_on, budget)
    base_files, no_base = _base_files(o, edge)
    base_ref = None if o.base_artifact else o.base_ref  # an artifact's files are local
    reading = evaluate.Reading(
        budget=budget, environ=edge.environ, fmt=o.format, scenarios=o.scenario
    )
    head = reading.side(o.head, o.head_ref)
    base = reading.side(base_files, base_ref) if base_files else None
    same = None
    if (
        base is not None
        and base.sizes == head.sizes
        and _same_bytes(base_files, base_ref, o, edge.environ)
    ):
        same = (
            f"base ({', '.join(base_files)}) and head ({', '.join(o.head)}) are the same "
            "bytes: nothing was compared; point --base at the base commit's results"
        )
    base_runs = base.runs if base is not None else None
    report = evaluate.evaluate(
        base_runs,
        head.runs,
        budget,
        fail_on=fail_on,
        report_id=o.id,
        no_base=no_base,
        same_input=same,
        accepted=_accepted(o, edge.github),
        history=_history(o.history, edge.environ),
    )
    if o.html:  # the trend charts and this run's base vs head distributions
        _write_atomic(Path(o.html), evaluate.trend_page(report, base_runs, head.runs, budget))
    return _finish(report, o, edge)


def _accepted(o: RunOptions, github: GitHubContext | None) -> Acceptance | None:
    """With --github on a pull request: the accept label, if the PR carries it."""
    if github is None or not o.accept_label:
        return None
    from budgetdiff.github import event  # GitHub's client only with --github (start-up)

    return event.acceptance(github.payload, o.accept_label)


def cmd_check(o: RunOptions, edge: Edge) -> int:
    from budgetdiff import evaluate  # the pipeline: --help and --version do without it

    budget = _load_budget(o.budget)
    reading = evaluate.Reading(
        budget=budget, environ=edge.environ, fmt=o.format, scenarios=o.scenario
    )
    head = reading.side(o.head, o.head_ref)
    report = evaluate.evaluate(
        None,
        head.runs,
        budget,
        fail_on=_fail_on(o.fail_on, budget),
        report_id=o.id,
        history=_history(o.history, edge.environ),
    )
    if o.html:  # the trend charts and this run's head distributions
        _write_atomic(Path(o.html), evaluate.trend_page(report, None, head.runs, budget))
    return _finish(report, o, edge)


def _load_budget(path: str) -> Budget:
    from budgetdiff.budget import load_budget

    return load_budget(Path(path))


def cmd_history(o: HistoryOptions, edge: Edge) -> int:
    """The newest run of a history file against the ones before it: trends, change points,
    drift; `--html` draws them. A view: exit 0 whatever it shows."""
    from budgetdiff.commands import history  # numpy and the change points (start-up)

    loaded = _history(o.file, edge.environ)
    assert loaded is not None
    trends = history.newest(o.file, loaded)
    from budgetdiff.terminal import width

    edge.out.write(history.trend_table(o.file, loaded, trends, width(edge.environ, edge.out)))
    if o.html:
        _write_atomic(Path(o.html), history.trend_page(o.file, loaded, trends))
        edge.out.write(f"wrote {o.html}\n")
    return 0


def cmd_demo(o: RunOptions, edge: Edge) -> int:
    from importlib.resources import as_file, files

    demo = files("budgetdiff") / "demo"
    # the words around the report go where they cannot spoil JSON or markdown output
    words = edge.out if o.output == "table" else sys.stderr
    with (
        as_file(demo / "base.csv") as base,
        as_file(demo / "head.csv") as head,
        as_file(demo / "budget.yml") as budget,
    ):
        print(
            "budgetdiff demo: a chat service's benchmark before (base) and after (head)\n"
            "a batching change, checked against a budget of p95 TTFT 1.2 s and p95 end to\n"
            "end 6 s.\n",
            file=words,
        )
        pair = replace(o, base=(str(base),), head=(str(head),), budget=str(budget))
        code = cmd_compare(pair, edge)
    print(
        f"\nThe demo's verdict would make `compare` exit {code} (0 pass or warn, 1 fail);\n"
        "the demo itself exits 0. Start your own: `budgetdiff init` writes a commented\n"
        "budget.yml, a workflow and an example base/head pair for `budgetdiff compare`.",
        file=words,
    )
    return 0


# ---- outputs --------------------------------------------------------------------------------


def _finish(report: Report, o: RunOptions, edge: Edge) -> int:
    """Write every output first, then publish; the exit code is the verdict's alone."""
    if o.json:
        _write_atomic(Path(o.json), _render("json", report))
    if o.markdown:
        _write_atomic(Path(o.markdown), _render("markdown", report))
    edge.out.write(_render(o.output, report, edge))
    edge.out.flush()
    if edge.github is not None:
        _publish(report, o, edge.github)
    return 1 if report.verdict == "fail" else 0


def _render(output: str, report: Report, edge: Edge | None = None) -> str:
    """One output; the Report imports only its renderer. On `edge` the table fits its width."""
    if output == "json":
        return report.to_json()
    if output == "markdown":
        return report.to_markdown()
    if edge is None:
        return report.to_text()
    from budgetdiff.terminal import width  # COLUMNS in the environ dict, or the terminal's

    return report.to_text(width(edge.environ, edge.out))


def _publish(report: Report, o: RunOptions, context: GitHubContext) -> None:
    from budgetdiff import github
    from budgetdiff.render.json import render_json
    from budgetdiff.render.markdown import render_markdown

    json_path = Path(o.json) if o.json else context.report_path(o.id)
    if not o.json:
        _write_atomic(json_path, render_json(report))
    pub = github.Publication(
        report_id=o.id,
        verdict=report.verdict,
        regressions=report.regressions,
        findings=report.findings,
        json_path=json_path,
        render_markdown=lambda limit: render_markdown(report, limit),
        render_resolved=lambda limit: render_markdown(report, limit, resolved=True),
    )
    github.publish(pub, context, comment=o.comment, comment_author=o.comment_author)


def _history(path: str | None, env: Mapping[str, str]) -> Loaded | None:
    """The runs of `--history FILE`, each line checked; a skipped line is a warning on stderr."""
    if path is None:
        return None
    from budgetdiff import history, sources

    empty = Path(path).is_file() and Path(path).stat().st_size == 0  # a history starts empty
    data = b"" if empty else sources.read_bytes(path, None, history.MAX_BYTES)
    loaded = history.parse(data, path, env.get("BUDGETDIFF_TREND_LINK") or None)
    for warning in loaded.warnings:
        print(f"budgetdiff: warning: {one_line(warning)}", file=sys.stderr)
    return loaded


def _base_files(o: RunOptions, edge: Edge) -> tuple[list[str], str | None]:
    """The base files to read, or none and why (a missing base is a finding, never a pass)."""
    from budgetdiff import sources

    if o.base_artifact:
        if edge.github is None:
            raise UsageError("--base-artifact needs --github (it downloads through the GitHub API)")
        import tempfile

        from budgetdiff import github

        fetched = github.fetch_base_artifact(
            o.base_artifact,
            edge.github,
            Path(tempfile.mkdtemp(prefix="budgetdiff-base-")),
        )
        folder = fetched.folder
        if folder is None:  # the no_base finding tells why: not found, no access, no download
            return [], fetched.message
        print(fetched.annotation(), flush=True)  # where the base came from
        names = [Path(p).name for p in (o.base or o.head)]
        found = [str(folder / n) for n in names if (folder / n).is_file()]
        if not found:
            return [], (f"artifact {o.base_artifact!r} has no {', '.join(names)}")
        return found, None
    if not o.base:
        raise UsageError(
            "compare needs --base FILE (or --base-artifact NAME with --github); "
            "to check one run alone use `budgetdiff check --head FILE`"
        )
    if o.base_ref is None and not o.allow_missing_base:
        return list(o.base), None  # a local path that is not there is a typo: exit 2, like head
    # absent by design: not committed in the base yet, or allowed (the PR adding a benchmark)
    present = [p for p in o.base if sources.exists(p, o.base_ref)]
    if len(present) < len(o.base):
        gone = [p for p in o.base if p not in present]
        where = f" in {o.base_ref}" if o.base_ref else ""
        return [], f"the base results {', '.join(gone)} do not exist{where}"
    return list(o.base), None


def _same_bytes(
    base: list[str], base_ref: str | None, o: RunOptions, env: Mapping[str, str]
) -> bool:
    """Base and head are the same bytes, file by file (asked only when the sizes match, so a
    real pair costs nothing; a second read is cheaper than holding both files in memory)."""
    from budgetdiff import sources

    limit = sources.max_bytes(env)
    return all(
        sources.read_bytes(b, base_ref, limit) == sources.read_bytes(h, o.head_ref, limit)
        for b, h in zip(base, o.head, strict=True)
    )


def _fail_on(raw: str | None, budget: Budget) -> list[str]:
    from budgetdiff.budget import FAIL_KINDS

    if raw is None:
        return list(budget.fail_on)
    kinds = [k.strip() for k in raw.split(",") if k.strip()]
    if kinds == [FAIL_NEVER]:
        return []
    bad = [k for k in kinds if k not in FAIL_KINDS]
    if bad or not kinds:
        raise UsageError(
            f"--fail-on {raw!r}: unknown kind {bad[0] if bad else '(empty)'!r}; use a comma "
            f"list of {', '.join(FAIL_KINDS)}, or {FAIL_NEVER}"
        )
    return kinds


def _write_atomic(path: Path, text: str) -> None:
    """Whole or not at all: a reader never sees half a report."""
    from budgetdiff.budget_file import write_atomically

    try:
        write_atomically(path, text.encode("utf-8"))
    except OSError as e:
        raise UsageError(f"{path}: cannot write the report ({e.strerror})") from None


# ---- options --------------------------------------------------------------------------------


class Edge(NamedTuple):
    """What a command touches besides its options: the environment, its output stream and,
    with --github, the runner's context (read from the environment once, by `main`)."""

    environ: Mapping[str, str]
    out: TextIO
    github: GitHubContext | None = None


@dataclass(frozen=True)
class RunOptions:
    """compare, check, rebudget and demo: what to read, what to write, where to publish. The
    names are the flags' (`--fail-on` is `fail_on`)."""

    head: tuple[str, ...] = ()
    budget: str = "budget.yml"
    base: tuple[str, ...] = ()
    allow_missing_base: bool = False
    history: str | None = None  # JSON Lines of earlier reports
    html: str | None = None  # the page to write
    format: str = "auto"
    base_ref: str | None = None
    head_ref: str | None = None
    scenario: tuple[str, ...] = ()
    output: str = "table"
    json: str | None = None
    markdown: str | None = None
    fail_on: str | None = None  # as given: what it means depends on the budget
    github: bool = False
    id: str = "default"
    base_artifact: str | None = None
    comment_author: str = "github-actions[bot]"
    comment: bool | str = True  # or "on-findings"
    accept_label: str = "budgetdiff:accept"
    write: bool = False  # rebudget: update the budget file


_Options = TypeVar("_Options", bound="DataclassInstance")
_T = TypeVar("_T")


def _parsed(kind: type[_Options], args: argparse.Namespace) -> _Options:
    """argparse's values for the fields of `kind` (a flag not given keeps the field's default);
    a repeated flag's list becomes a tuple."""
    given = vars(args)
    return kind(
        **{f.name: _frozen(given[f.name]) for f in fields(kind) if given.get(f.name) is not None}
    )


def _frozen(value: object) -> object:
    return tuple(value) if isinstance(value, list) else value


# ---- arguments ------------------------------------------------------------------------------


class _Command(NamedTuple):
    """A subcommand: its help, its arguments, the options they become and what runs it."""

    name: str
    help: str
    arguments: tuple[Callable[[argparse.ArgumentParser], None], ...]
    # "module:name" is imported only when the command runs (start-up: `budgetdiff compare`
    # does not import what `whatif` needs)
    options: type[DataclassInstance] | str
    run: Callable[[Any, Edge], int] | str

    def __call__(self, args: argparse.Namespace, edge: Edge) -> int:
        options = _named(self.options)
        return int(_named(self.run)(_parsed(options, args), edge))


def _named(value: _T | str) -> _T:
    """`value`, or the name a "module:name" string names, its module imported now."""
    if not isinstance(value, str):
        return value
    module, _, name = value.partition(":")
    found: _T = getattr(importlib.import_module(module), name)
    return found


class _Parser(argparse.ArgumentParser):
    """argparse, with its errors on one line like every other exit 2 (the usage is in --help)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {one_line(message)} (see {self.prog} --help)\n")


class _CommandParser(_Parser):
    """A subcommand's parser, which adds its arguments when its command is the one given: the
    seven commands' arguments take 2 ms to build, and a run parses one. (argparse hands the
    rest of the command line to the chosen subcommand's `parse_known_args`, --help included.)"""

    def __init__(
        self, *args: Any, arguments: Sequence[Callable[[_Parser], None]] = (), **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self._arguments = arguments

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        for add in self._arguments:
            add(self)
        self._arguments = ()
        return super().parse_known_args(args, namespace)


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="budgetdiff",
        description="Latency budgets for LLM serving: base vs head benchmark results against "
        "an SLO budget.",
        epilog="example:\n  budgetdiff demo\n"
        "  budgetdiff compare --base base.csv --head head.csv --budget budget.yml\n\n"
        "exit codes: 0 pass or warn, 1 a finding that fail_on names, 2 could not evaluate, "
        "3 a bug in budgetdiff",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"budgetdiff {__version__}")
    sub = parser.add_subparsers(
        dest="command", required=True, metavar="COMMAND", parser_class=_CommandParser
    )
    for c in _COMMANDS:
        p = sub.add_parser(
            c.name,
            help=c.help,
            description=c.help,
            epilog=EXAMPLES[c.name],
            formatter_class=argparse.RawDescriptionHelpFormatter,
            arguments=c.arguments,
        )
        p.set_defaults(run=c)
    return parser


def _base_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--base",
        action="append",
        metavar="FILE",
        help="base results; repeat for a run in several files",
    )
    p.add_argument(
        "--allow-missing-base",
        action="store_true",
        help="a --base FILE that does not exist is the no_base finding, not an error "
        "(the PR that adds the benchmark)",
    )


def _head_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--head",
        action="append",
        required=True,
        metavar="FILE",
        help="head results; repeat for a run in several files",
    )
    p.add_argument("--budget", default="budget.yml", metavar="FILE")


def _page_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--history",
        metavar="FILE",
        help="JSON Lines of earlier runs' JSON reports, oldest first: trends and drift",
    )
    p.add_argument(
        "--html",
        metavar="PAGE",
        help="write a page with the history's charts and base vs head distributions",
    )


def _read_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--format",
        default="auto",
        choices=[*format_names(), "csv", "tsv", "parquet", "jsonl", "json", "otlp-json"],
        metavar="NAME",
        help=f"input format: {', '.join(format_names())}",
    )
    p.add_argument("--base-ref", metavar="REF", help="read --base FILE as it is in git commit REF")
    p.add_argument("--head-ref", metavar="REF", help="read --head FILE as it is in git commit REF")
    p.add_argument(
        "--scenario", type=_names, metavar="NAMES", help="comma list of scenarios to compare"
    )


def _output_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--output", choices=["table", "markdown", "json"], default="table")
    p.add_argument("--json", metavar="FILE", help="also write the JSON report to FILE")
    p.add_argument("--markdown", metavar="FILE", help="also write the markdown report to FILE")
    p.add_argument("--fail-on", metavar="LIST", help="comma list overriding fail_on, or never")


def _github_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--github", action="store_true", help="publish to GitHub (the Action does)")
    p.add_argument(
        "--id",
        default="default",
        metavar="NAME",
        type=report_id,
        help="names this report: one PR comment per id",
    )
    p.add_argument(
        "--base-artifact",
        metavar="NAME",
        help="with --github: base results from artifact NAME on the base branch",
    )
    p.add_argument("--comment-author", default="github-actions[bot]", metavar="LOGIN")
    p.add_argument(
        "--comment",
        default=True,
        type=_comment_mode,
        metavar="true|false|on-findings",
        help="with --github: post or update the PR comment (default true); on-findings: only "
        "once something is found, and mark it resolved when nothing is found any more",
    )
    p.add_argument(
        "--accept-label",
        default="budgetdiff:accept",
        metavar="LABEL",
        help="with --github: a PR with this label accepts its regressions (verdict warn); "
        "empty disables",
    )


def _write_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--write",
        action="store_true",
        help="update the budget file in place, keeping its comments",
    )


def _history_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", metavar="FILE", help="JSON Lines: one JSON report per run")
    p.add_argument("--html", metavar="PAGE", help="also write the trend page")


def _init_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("dir", nargs="?", default=".", metavar="DIR", help="where (default: .)")
    p.add_argument("--force", action="store_true", help="overwrite files that are there")


def _whatif_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--budget", default="budget.yml", metavar="FILE")
    p.add_argument("--ttft", type=_number, metavar="MS", help="time to first token, ms")
    p.add_argument(
        "--tokens-per-s", type=_number, metavar="N", help="decode rate after the first token"
    )
    p.add_argument(
        "--tpot",
        type=_number,
        metavar="MS",
        help="time per output token after the first, ms (instead of --tokens-per-s)",
    )
    p.add_argument("--tokens", type=_number, metavar="N", help="answer length at the tail, tokens")
    p.add_argument(
        "--tail", type=_number, default=0.0, metavar="MS", help="time after the last token"
    )
    p.add_argument(
        "--head", action="append", metavar="FILE", help="recompute these measured requests"
    )
    p.add_argument("--head-ref", metavar="REF", help="read --head FILE at git commit REF")
    p.add_argument("--format", default="auto", metavar="NAME", help="input format")
    p.add_argument("--scenario", type=_names, metavar="NAMES", help="the scenario to recompute")
    p.add_argument(
        "--scale", action="append", metavar="SLICE=F", help="multiply a slice, e.g. decode=0.8"
    )
    p.add_argument(
        "--add", action="append", metavar="SLICE=MS", help="add ms to a slice, e.g. queue=-50"
    )
    p.add_argument("--steps", type=_number, metavar="N", help="an agent task's steps")
    p.add_argument("--step-ms", type=_number, metavar="MS", help="an agent task's ms per step")


def report_id(value: str) -> str:
    """A report's name (`--id`): what tells its PR comment apart."""
    from budgetdiff.report import REPORT_ID_RULE, is_report_id

    if not is_report_id(value):
        raise argparse.ArgumentTypeError(f"{value[:80]!r}: use {REPORT_ID_RULE}")
    return value


def _names(value: str) -> tuple[str, ...]:
    """A comma list: `--scenario c=8,c=16`."""
    return tuple(s for s in value.split(",") if s)


def _boolean(value: str) -> bool:
    v = value.strip().lower()
    if v in ("true", "1", "yes", "on"):
        return True
    if v in ("false", "0", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"{value[:40]!r}: write true or false")


def _comment_mode(value: str) -> bool | str:
    if value.strip().lower() == "on-findings":
        return "on-findings"
    try:
        return _boolean(value)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(
            f"{value[:40]!r}: write true, false or on-findings"
        ) from None


def _number(value: str) -> float:
    """A number for argparse; the command says which ones must be positive (one line, exit 2)."""
    try:
        return float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value[:40]!r}: write a number") from None


_REPORT = (_read_arguments, _output_arguments, _github_arguments)
_COMMANDS = (
    _Command(
        "compare",
        "base vs head against the budget: report, verdict, exit code",
        (_base_arguments, _head_arguments, _page_arguments, *_REPORT),
        RunOptions,
        cmd_compare,
    ),
    _Command(
        "check",
        "one run against the SLO and slice budgets, no base",
        (_head_arguments, _page_arguments, *_REPORT),
        RunOptions,
        cmd_check,
    ),
    _Command(
        "rebudget",
        "propose a new split of the SLO from measured data",
        (_head_arguments, *_REPORT, _write_argument),
        RunOptions,
        "budgetdiff.commands.rebudget:run",
    ),
    _Command(
        "whatif",
        "estimate TTFT + tokens / rate + tail, or recompute data, vs the SLO",
        (_whatif_arguments,),
        "budgetdiff.commands.whatif:WhatifOptions",
        "budgetdiff.commands.whatif:run",
    ),
    _Command(
        "history",
        "trends and drift of a history file (JSON Lines of reports)",
        (_history_arguments,),
        "budgetdiff.commands.history:HistoryOptions",
        cmd_history,
    ),
    _Command("demo", "run compare on bundled example data", _REPORT, RunOptions, cmd_demo),
    _Command(
        "init",
        "write a commented budget.yml, a workflow and an example pair to start from",
        (_init_arguments,),
        "budgetdiff.commands.init:InitOptions",
        "budgetdiff.commands.init:run",
    ),
    _Command(
        "schema",
        "print the JSON Schema of the budget file",
        (),
        "budgetdiff.commands.schema:NoOptions",
        "budgetdiff.commands.schema:run",
    ),
)
