"""The command line: each subcommand's arguments, and the options object they become.

`parse(argv)` returns the command to run and its options; turning a flag's text into a value
(`--fail-on`, `--id`, `--comment`, `--scenario`) is `commands.options`' job, shared with the
Python API and the Action.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from importlib import import_module
from typing import TYPE_CHECKING, Any, NoReturn

from budgetdiff import __version__
from budgetdiff.commands import options
from budgetdiff.commands.edge import Edge
from budgetdiff.commands.options import RunOptions
from budgetdiff.formats.registry import names as format_names
from budgetdiff.render.text import one_line

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

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
    "inspect": """example:
  budgetdiff inspect results.csv --budget budget.yml""",
    "init": """example:
  budgetdiff init            # budget.yml, .github/workflows/latency.yml, an example pair here
  budgetdiff init service/   # the same in service/; --force overwrites what is there""",
    "whatif": """example:
  budgetdiff whatif --ttft 850 --tokens-per-s 22 --tokens 1200 --tail 300 --slo-total 6000
  budgetdiff whatif --ttft 850 --tokens-per-s 22 --tokens 1200 --tail 300 --budget budget.yml
  budgetdiff whatif --head results.csv --budget budget.yml --scale decode=0.8 --add queue=-50
  budgetdiff whatif --steps 6 --step-ms 450 --budget agent.yml [--head traces.json]""",
}
# the flags whose text `commands.options` turns into a value (after argparse: its errors are
# the options' own one-line messages, the same as the API's and the Action's)
_VALUES: Mapping[str, tuple[str, Callable[[str, str], object]]] = {
    "fail_on": ("--fail-on", options.fail_on),
    "id": ("--id", options.report_id),
    "comment": ("--comment", options.comment_mode),
    "scenario": ("--scenario", lambda v, _: options.names(v)),
}

Run = Callable[[Any, Edge], int]


@dataclass(frozen=True, slots=True)
class Command:
    """A subcommand: its name, help and arguments, and the options they become."""

    name: str  # and the module in `budgetdiff.commands` whose `run` it is
    help: str
    arguments: tuple[Callable[[argparse.ArgumentParser], None], ...]
    options: type[DataclassInstance]

    def run(self) -> Run:
        """The command's `run`, imported once it is the one asked for: `--help` loads no
        command, a compare neither whatif nor history."""
        run: Run = import_module(f"budgetdiff.commands.{self.name}").run
        return run


@dataclass(frozen=True, slots=True)
class Parsed:
    """What the command line asks for: the command, its options, and whether to publish."""

    run: Run
    options: object
    github: bool


def parse(argv: list[str] | None) -> Parsed:
    """The command and its options (argparse exits 2 with one line on a bad flag; a bad value
    is the options' UsageError, which the caller maps)."""
    args = parser().parse_args(argv)
    command: Command = args.command_spec
    given = vars(args)
    values = {}
    for f in fields(command.options):
        value = given.get(f.name)
        if value is None:
            continue  # not given: the field's default
        if f.name in _VALUES and isinstance(value, str):
            flag, parse_value = _VALUES[f.name]
            value = parse_value(value, flag)
        values[f.name] = tuple(value) if isinstance(value, list) else value
    return Parsed(command.run(), command.options(**values), bool(given.get("github")))


class _Parser(argparse.ArgumentParser):
    """argparse, with its errors on one line like every other exit 2 (the usage is in --help)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {one_line(message)} (see {self.prog} --help)\n")


def parser() -> argparse.ArgumentParser:
    top = _Parser(
        prog="budgetdiff",
        description="Latency budgets for LLM serving: base vs head benchmark results against "
        "an SLO budget.",
        epilog="example:\n  budgetdiff demo\n"
        "  budgetdiff compare --base base.csv --head head.csv --budget budget.yml\n\n"
        "exit codes: 0 pass or warn, 1 a finding that fail_on names, 2 could not evaluate, "
        "3 a bug in budgetdiff",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    top.add_argument("--version", action="version", version=f"budgetdiff {__version__}")
    sub = top.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=_Parser)
    for c in COMMANDS:
        p = sub.add_parser(
            c.name,
            help=c.help,
            description=c.help,
            epilog=EXAMPLES[c.name],
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        for add in c.arguments:
            add(p)
        p.set_defaults(command_spec=c)
    return top


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
    p.add_argument("--base-ref", metavar="REF", help="read --base FILE as it is in git commit REF")
    p.add_argument(
        "--base-artifact",
        metavar="NAME",
        help="with --github: base results from artifact NAME on the base branch",
    )
    p.add_argument(
        "--engine",
        choices=("duckdb",),  # sources.engine.ENGINES
        help="read --base/--head (Parquet or CSV files, globs too) through this embedded engine, "
        "in bounded memory, for tables of any size (docs/performance.md)",
    )
    by_id = p.add_mutually_exclusive_group()
    by_id.add_argument(
        "--pair",
        action="store_const",
        const=True,
        dest="pair",
        help="pair requests by request id even when nothing shows they asked the same",
    )
    by_id.add_argument(
        "--no-pair",
        action="store_const",
        const=False,
        dest="pair",
        help="never pair requests by id (default: where their token counts agree)",
    )


def _no_base_arguments(p: argparse.ArgumentParser) -> None:
    """check's: the base flags, taken only to be refused with the right words."""
    for flag in ("--base", "--base-ref", "--base-artifact"):
        p.add_argument(flag, action="append", metavar="-", help=argparse.SUPPRESS)
    p.add_argument("--allow-missing-base", action="store_true", help=argparse.SUPPRESS)


def _head_arguments(p: argparse.ArgumentParser, *, required: bool = True) -> None:
    p.add_argument(
        "--head",
        action="append",
        required=required,
        metavar="FILE",
        help="head results; repeat for a run in several files",
    )
    p.add_argument("--budget", default="budget.yml", metavar="FILE")


def _live_arguments(p: argparse.ArgumentParser) -> None:
    """compare and check: --head FILE, or the sides from a live Prometheus (issue 27)."""
    _head_arguments(p, required=False)
    p.add_argument(
        "--budget-ref",
        metavar="REF",
        help="read --budget as it is in git commit REF (a PR's base: the PR cannot loosen its "
        "own budget); a work tree budget that differs is the budget_change finding",
    )
    g = p.add_argument_group("a live Prometheus instead of files (docs/deploy-gate.md)")
    g.add_argument("--prometheus", metavar="URL", help="read the sides from this server")
    g.add_argument("--base-match", metavar="{L=V}", help='base series, e.g. {version="stable"}')
    g.add_argument("--head-match", metavar="{L=V}", help='head series, e.g. {version="canary"}')
    g.add_argument("--window", metavar="DURATION", help="the range of increase() (default 30m)")
    g.add_argument("--at", metavar="TIME", help="RFC 3339 or Unix seconds ending both windows")
    g.add_argument("--base-at", metavar="TIME", help="end of the base's window (before)")
    g.add_argument("--head-at", metavar="TIME", help="end of the head's window (after)")
    _sql_arguments(
        p,
        "a SQL engine instead of files (docs/deploy-gate.md)",
        "read the requests from duckdb:FILE, chdb:DIR or clickhouse://USER@HOST:PORT/DB "
        "(password: CLICKHOUSE_PASSWORD); the sides are --base-match/--head-match and --window",
    )


def _sql_arguments(
    p: argparse.ArgumentParser, title: str, connection: str
) -> argparse._ArgumentGroup:
    """`--sql CONNECTION` and the flags that name its rows (compare, check and inspect)."""
    q = p.add_argument_group(title)
    q.add_argument("--sql", metavar="CONNECTION", help=connection)
    q.add_argument("--sql-table", metavar="NAME", help="the table of requests, one row each")
    q.add_argument("--sql-query", metavar="SQL", help="or a query giving one row per request")
    q.add_argument("--sql-time", metavar="COLUMN", help="the time column --window filters on")
    return q


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
    p.add_argument("--head-ref", metavar="REF", help="read --head FILE as it is in git commit REF")
    p.add_argument("--scenario", metavar="NAMES", help="comma list of scenarios to compare")


def _output_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--output", choices=["table", "markdown", "json"], default="table")
    p.add_argument("--json", metavar="FILE", help="also write the JSON report to FILE")
    p.add_argument("--markdown", metavar="FILE", help="also write the markdown report to FILE")
    p.add_argument("--fail-on", metavar="LIST", help="comma list overriding fail_on, or never")


def _github_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--github", action="store_true", help="publish to GitHub (the Action does)")
    p.add_argument("--id", metavar="NAME", help="names this report: one PR comment per id")
    p.add_argument("--comment-author", default="github-actions[bot]", metavar="LOGIN")
    p.add_argument(
        "--comment",
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
        "--write", action="store_true", help="update the budget file in place, keeping its comments"
    )


def _history_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", metavar="FILE", help="JSON Lines: one JSON report per run")
    p.add_argument("--html", metavar="PAGE", help="also write the trend page")


def _init_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("dir", nargs="?", default=".", metavar="DIR", help="where (default: .)")
    p.add_argument("--force", action="store_true", help="overwrite files that are there")
    p.add_argument(
        "--head",
        metavar="FILE",
        help="write a budget that fits this results file (its SLO a little above its p95s, "
        "its own slices), and no example pair",
    )


def _whatif_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--budget", metavar="FILE", help="the SLO and headroom (default budget.yml)")
    p.add_argument("--slo-total", type=_number, metavar="MS", help="end-to-end target, ms")
    p.add_argument("--slo-ttft", type=_number, metavar="MS", help="time-to-first-token target, ms")
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
    p.add_argument("--steps", type=_number, metavar="N", help="an agent task's steps")
    p.add_argument("--step-ms", type=_number, metavar="MS", help="an agent task's ms per step")
    p.add_argument(
        "--head", action="append", metavar="FILE", help="recompute these measured requests"
    )
    p.add_argument("--head-ref", metavar="REF", help="read --head FILE at git commit REF")
    p.add_argument("--format", default="auto", metavar="NAME", help="input format")
    p.add_argument("--scenario", metavar="NAMES", help="the scenario to recompute")
    p.add_argument(
        "--scale", action="append", metavar="SLICE=F", help="multiply a slice, e.g. decode=0.8"
    )
    p.add_argument(
        "--add", action="append", metavar="SLICE=MS", help="add ms to a slice, e.g. queue=-50"
    )


def _number(value: str) -> float:
    """A number for argparse; the command says which ones must be positive (one line, exit 2)."""
    try:
        return float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value[:40]!r}: write a number") from None


def _inspect_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "file", nargs="?", default="", metavar="FILE", help="a results file (any format)"
    )
    p.add_argument(
        "--budget", metavar="FILE", help="apply this budget's slices and column: / unit: mappings"
    )
    p.add_argument("--format", default="auto", metavar="NAME", help="input format")
    q = _sql_arguments(
        p,
        "the rows of a SQL engine instead of FILE (the query is shown)",
        "duckdb:FILE, chdb:DIR, clickhouse://...",
    )
    q.add_argument("--head-match", metavar="{L=V}", help='the rows, e.g. {version="canary"}')
    q.add_argument("--window", metavar="DURATION")
    q.add_argument("--at", metavar="TIME", help="RFC 3339 or Unix seconds ending the window")


_REPORT = (_read_arguments, _output_arguments, _github_arguments)
COMMANDS = (
    Command(
        "compare",
        "base vs head against the budget: report, verdict, exit code",
        (_base_arguments, _live_arguments, _page_arguments, *_REPORT),
        RunOptions,
    ),
    Command(
        "check",
        "one run against the SLO and slice budgets, no base",
        (_no_base_arguments, _live_arguments, _page_arguments, *_REPORT),
        RunOptions,
    ),
    Command(
        "rebudget",
        "propose a new split of the SLO from measured data",
        (_head_arguments, *_REPORT, _write_argument),
        RunOptions,
    ),
    Command(
        "whatif",
        "estimate TTFT + tokens / rate + tail, or recompute data, vs the SLO",
        (_whatif_arguments,),
        options.WhatifOptions,
    ),
    Command(
        "history",
        "trends and drift of a history file (JSON Lines of reports)",
        (_history_arguments,),
        options.HistoryOptions,
    ),
    Command("demo", "run compare on bundled example data", _REPORT, RunOptions),
    Command(
        "inspect",
        "show how a file is read: each column's role and unit, counts, the first rows",
        (_inspect_arguments,),
        options.InspectOptions,
    ),
    Command(
        "init",
        "write a commented budget.yml, a workflow and an example pair to start from",
        (_init_arguments,),
        options.InitOptions,
    ),
    Command("schema", "print the JSON Schema of the budget file", (), options.NoOptions),
)
