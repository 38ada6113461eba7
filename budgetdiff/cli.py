"""The orchestrator: argv and environment in, exit code out. Reads top to bottom like the flow:
read -> budget -> prepare -> compare -> judge -> render -> publish."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from budgetdiff.errors import BudgetdiffError, InputError, UsageError

if TYPE_CHECKING:
    from budgetdiff.budget import Budget
    from budgetdiff.report import Report
    from budgetdiff.table import Run

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
    "schema": """example:
  budgetdiff schema > budget.schema.json""",
    "whatif": """example:
  budgetdiff whatif --budget budget.yml --ttft 900 --tpot 45 --tokens 120""",
}
FAIL_NEVER = "never"


def entry() -> None:
    sys.exit(main())


def main(argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None) -> int:
    env = os.environ if environ is None else environ
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        return int(args.run(args, env, sys.stdout))
    except BudgetdiffError as e:
        print(f"budgetdiff: error: {e}", file=sys.stderr)
        return e.exit_code


# ---- commands -------------------------------------------------------------------------------


def cmd_compare(args: argparse.Namespace, env: Mapping[str, str], out: TextIO) -> int:
    from budgetdiff.budget import load_budget

    budget = load_budget(Path(args.budget))
    fail_on = _fail_on(args.fail_on, budget)
    base_files, no_base = _base_files(args, env)
    head = _read_side(args.head, args.head_ref, args, budget, env)
    base = _read_side(base_files, args.base_ref, args, budget, env) if base_files else None
    report = _evaluate(base, head, budget, fail_on, args, no_base)
    return _finish(report, args, env, out)


def cmd_check(args: argparse.Namespace, env: Mapping[str, str], out: TextIO) -> int:
    from budgetdiff.budget import load_budget

    budget = load_budget(Path(args.budget))
    head = _read_side(args.head, args.head_ref, args, budget, env)
    report = _evaluate(None, head, budget, _fail_on(args.fail_on, budget), args, None)
    return _finish(report, args, env, out)


def cmd_demo(args: argparse.Namespace, env: Mapping[str, str], out: TextIO) -> int:
    from importlib.resources import as_file, files

    demo = files("budgetdiff") / "demo"
    with (
        as_file(demo / "base.csv") as base,
        as_file(demo / "head.csv") as head,
        as_file(demo / "budget.yml") as budget,
    ):
        args.base, args.head, args.budget = [str(base)], [str(head)], str(budget)
        # the words around the report go where they cannot spoil JSON or markdown output
        words = out if args.output == "table" else sys.stderr
        print(
            "budgetdiff demo: a chat service's benchmark before (base) and after (head) a "
            "batching change,\nchecked against a budget of p95 TTFT 1.2 s and p95 end to end "
            "6 s.\n",
            file=words,
        )
        code = cmd_compare(args, env, out)
    print(
        f"\nThe demo's verdict would make `compare` exit {code} (0 pass or warn, 1 fail); "
        "the demo itself exits 0.\nTry it on your own results:\n"
        "  budgetdiff compare --base base.csv --head head.csv --budget budget.yml",
        file=words,
    )
    return 0


def cmd_schema(args: argparse.Namespace, env: Mapping[str, str], out: TextIO) -> int:
    import json

    from budgetdiff.budget import json_schema

    out.write(json.dumps(json_schema(), indent=2) + "\n")
    return 0


def cmd_rebudget(args: argparse.Namespace, env: Mapping[str, str], out: TextIO) -> int:
    from budgetdiff import rebudget
    from budgetdiff.budget import load_budget

    budget = load_budget(Path(args.budget))
    if not budget.slices:
        raise UsageError(f"{args.budget}: has no `slices:` to re-split; add them first")
    head = _read_side(args.head, args.head_ref, args, budget, env)
    report = _evaluate(None, head, budget, [], args, None)
    c = report.main.comparison
    measured = {r.name: r.head_ms for r in c.slices if r.head_ms is not None}
    missing = rebudget.missing_slices(budget, measured)
    if missing:
        raise InputError(
            f"{args.head[0]}: no data for slice(s) {', '.join(missing)}; the data has: "
            f"{', '.join(measured)}"
        )
    proposal = c.rebudget
    if proposal is None:
        raise InputError(
            f"{args.head[0]}: re-budgeting needs one row per request (the tail contributions); "
            "this file holds only aggregates: pass the tool's per-request file"
        )
    from budgetdiff.render.numbers import ms
    from budgetdiff.render.text import plain

    out.write(f"re-budget at p{budget.percentile:g}: {ms(proposal.target_ms)} to split\n")
    for name, value in proposal.allocation.items():
        old = budget.slice_budget(name)
        out.write(f"  {plain(name):<20} {ms(old) if old else 'new':>10} -> {ms(float(value))}\n")
    for message in proposal.messages:
        out.write(f"{plain(message, 400)}\n")
    if args.write:
        if not proposal.fits:
            out.write("not written: the measured values do not fit the SLO (see above)\n")
            return 1
        rebudget.write_budget(Path(args.budget), proposal.allocation)
        out.write(f"wrote {args.budget}\n")
    return 0


def cmd_whatif(args: argparse.Namespace, env: Mapping[str, str], out: TextIO) -> int:
    from budgetdiff.budget import load_budget
    from budgetdiff.render.numbers import ms

    budget = load_budget(Path(args.budget))
    total = args.ttft + args.tpot * max(args.tokens - 1, 0)
    out.write(
        f"estimated end to end: TTFT {ms(args.ttft)} + {args.tokens - 1} tokens x "
        f"{ms(args.tpot)} = {ms(total)}\n"
    )
    for name, value, target in (
        ("TTFT", args.ttft, budget.slo.ttft),
        ("end to end", total, budget.slo.total),
        ("ITL", args.tpot, budget.slo.itl),
    ):
        if target is not None:
            verdict = "fits" if value <= target else "OVER"
            out.write(
                f"  {name}: {ms(value)} vs target {ms(target)}: {verdict} "
                f"({100 * (target - value) / target:+.0f}% headroom)\n"
            )
    if budget.slo.total is not None and args.tpot > 0:
        room = (budget.slo.total - args.ttft) / args.tpot + 1
        out.write(f"  the longest answer that fits the total at this rate: {room:.0f} tokens\n")
    return 0


# ---- the pipeline ---------------------------------------------------------------------------


def _read_side(
    paths: list[str],
    ref: str | None,
    args: argparse.Namespace,
    budget: Budget,
    env: Mapping[str, str],
) -> list[Run]:
    from budgetdiff import sources
    from budgetdiff.formats import ReadOptions, detect
    from budgetdiff.formats.combine import combine
    from budgetdiff.table import UNATTRIBUTED

    options = ReadOptions(
        slices=tuple(s for s in budget.slices if s != UNATTRIBUTED),  # computed, not read
        columns={
            n: (s.column or n, s.unit)
            for n, s in budget.slices.items()
            if s.column is not None or s.unit is not None
        },
    )
    limit = sources.max_bytes(env)
    per_file = []
    for path in paths:
        data = sources.read_bytes(path, ref, limit)
        label = f"{ref}:{path}" if ref else path
        per_file.append(detect.read(data, label, args.format, options))
    runs = combine(per_file, paths)  # one file passes through, after its own checks
    wanted = _scenarios(args)
    if wanted:
        runs = [r for r in runs if r.scenario in wanted]
        if not runs:
            raise UsageError(f"--scenario {','.join(wanted)}: none of these is in {paths[0]}")
    return runs


def _evaluate(
    base: list[Run] | None,
    head: list[Run],
    budget: Budget,
    fail_on: list[str],
    args: argparse.Namespace,
    no_base: str | None,
) -> Report:
    from budgetdiff.compare import compare, runs_match
    from budgetdiff.judge import judge
    from budgetdiff.prepare import prepare
    from budgetdiff.report import Report, Scenario

    pairs, base_only = (
        runs_match(base, head) if base is not None else ([(None, h) for h in head], [])
    )
    scenarios: list[Scenario] = []
    for b, h in pairs:
        missing = no_base
        if base is not None and b is None:
            missing = (
                f"scenario {h.scenario or 'default'!r} is in head but not in base: nothing to "
                "compare"
            )
        elif b is not None and b.n and not b.succeeded.any():
            missing = f"{b.source}: every base request failed: nothing to compare against"
            b = None
        if h.per_request and (b is None or b.per_request):
            c = compare(prepare(b, budget) if b is not None else None, prepare(h, budget), budget)
        else:  # a side holds only aggregates: rows from what the files hold
            from budgetdiff.aggregate import compare_aggregate

            sides = [
                None if r is None else prepare(r, budget) if r.per_request else r for r in (b, h)
            ]
            assert sides[1] is not None
            c = compare_aggregate(sides[0], sides[1], budget)
        gone = [r.scenario or "default" for r in base_only] if not scenarios else []
        findings, verdict = judge(c, budget, fail_on, no_base=missing, base_only=gone)
        scenarios.append(Scenario(c, tuple(findings), verdict))
    mode = "compare" if base is not None or no_base is not None else "check"
    return Report(id=args.id, mode=mode, scenarios=tuple(scenarios))


def _finish(report: Report, args: argparse.Namespace, env: Mapping[str, str], out: TextIO) -> int:
    """Write every output first, then publish; the exit code is the verdict's alone."""
    if args.json:
        _write_atomic(Path(args.json), _render("json", report))
    if args.markdown:
        _write_atomic(Path(args.markdown), _render("markdown", report))
    out.write(_render(args.output, report))
    out.flush()
    if args.github:
        _publish(report, args, env)
    return 1 if report.verdict == "fail" else 0


def _render(output: str, report: Report) -> str:
    """One output; only its renderer is imported (tabulate alone costs 5-30 ms of start-up)."""
    if output == "json":
        from budgetdiff.render.json import render_json

        return render_json(report)
    if output == "markdown":
        from budgetdiff.render.markdown import render_markdown

        return render_markdown(report)
    from budgetdiff.render.table import render_table

    return render_table(report)


def _publish(report: Report, args: argparse.Namespace, env: Mapping[str, str]) -> None:
    from budgetdiff import github
    from budgetdiff.render.json import render_json
    from budgetdiff.render.markdown import render_markdown

    json_path = Path(args.json) if args.json else _report_path(env, args.id)
    if not args.json:
        _write_atomic(json_path, render_json(report))
    pub = github.Publication(
        report_id=args.id,
        verdict=report.verdict,
        regressions=report.regressions,
        findings=[(f.kind, f.subject, f.fails, f.message) for f in report.findings],
        json_path=json_path,
        render_markdown=lambda limit: render_markdown(report, limit),
    )
    github.publish(pub, env, comment=args.comment, comment_author=args.comment_author)


def _base_files(args: argparse.Namespace, env: Mapping[str, str]) -> tuple[list[str], str | None]:
    """The base files to read, or none and why (a missing base is a finding, never a pass)."""
    from budgetdiff import sources

    if args.base_artifact:
        if not args.github:
            raise UsageError("--base-artifact needs --github (it downloads through the GitHub API)")
        from budgetdiff import github

        folder = github.fetch_base_artifact(
            args.base_artifact, env, Path(tempfile.mkdtemp(prefix="budgetdiff-base-"))
        )
        if folder is None:
            return [], (
                f"no artifact {args.base_artifact!r} from a successful run on the base "
                "branch: run the workflow on the base branch first"
            )
        names = [Path(p).name for p in (args.base or args.head)]
        found = [str(folder / n) for n in names if (folder / n).is_file()]
        if not found:
            return [], (f"artifact {args.base_artifact!r} has no {', '.join(names)}")
        args.base_ref = None
        return found, None
    if not args.base:
        raise UsageError(
            "compare needs --base FILE (or --base-artifact NAME with --github); "
            "to check one run alone use `budgetdiff check --head FILE`"
        )
    present = [p for p in args.base if sources.exists(p, args.base_ref)]
    if len(present) < len(args.base):
        gone = [p for p in args.base if p not in present]
        where = f" in {args.base_ref}" if args.base_ref else ""
        return [], f"the base results {', '.join(gone)} do not exist{where}"
    return args.base, None


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


def _scenarios(args: argparse.Namespace) -> list[str]:
    raw = getattr(args, "scenario", None)
    return [s for s in raw.split(",") if s] if raw else []


def _report_path(env: Mapping[str, str], report_id: str) -> Path:
    folder = Path(env.get("RUNNER_TEMP") or tempfile.gettempdir())
    return folder / f"budgetdiff-{report_id}.json"


def _write_atomic(path: Path, text: str) -> None:
    """Whole or not at all: a reader never sees half a report."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except OSError as e:
        raise UsageError(f"{path}: cannot write the report ({e.strerror})") from None


# ---- arguments ------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Cmd:
    name: str
    help: str
    run: object


def _parser() -> argparse.ArgumentParser:
    from budgetdiff import __version__

    parser = argparse.ArgumentParser(
        prog="budgetdiff",
        description="Latency budgets for LLM serving: base vs head benchmark results against "
        "an SLO budget.",
        epilog="example:\n  budgetdiff demo\n"
        "  budgetdiff compare --base base.csv --head head.csv --budget budget.yml\n\n"
        "exit codes: 0 pass or warn, 1 a finding that fail_on names, 2 could not evaluate",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"budgetdiff {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    cmds = [
        _Cmd("compare", "base vs head against the budget: report, verdict, exit code", cmd_compare),
        _Cmd("check", "one run against the SLO and slice budgets, no base", cmd_check),
        _Cmd("rebudget", "propose a new split of the SLO from measured data", cmd_rebudget),
        _Cmd("whatif", "estimate TTFT + tokens x TPOT against the SLO", cmd_whatif),
        _Cmd("demo", "run compare on bundled example data", cmd_demo),
        _Cmd("schema", "print the JSON Schema of the budget file", cmd_schema),
    ]
    for c in cmds:
        p = sub.add_parser(
            c.name,
            help=c.help,
            description=c.help,
            epilog=EXAMPLES[c.name],
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        p.set_defaults(run=c.run)
        if c.name in ("compare", "check", "rebudget", "demo"):
            _common(p, c.name)
        if c.name == "whatif":
            p.add_argument("--budget", default="budget.yml", metavar="FILE")
            p.add_argument("--ttft", type=float, required=True, metavar="MS")
            p.add_argument(
                "--tpot",
                type=float,
                required=True,
                metavar="MS",
                help="time per output token after the first, ms",
            )
            p.add_argument(
                "--tokens",
                type=int,
                required=True,
                metavar="N",
                help="answer length at the tail, tokens",
            )
    return parser


def _common(p: argparse.ArgumentParser, name: str) -> None:
    from budgetdiff.formats.detect import names

    if name == "compare":
        p.add_argument(
            "--base",
            action="append",
            metavar="FILE",
            help="base results; repeat for a run in several files",
        )
    if name != "demo":
        p.add_argument(
            "--head",
            action="append",
            required=True,
            metavar="FILE",
            help="head results; repeat for a run in several files",
        )
        p.add_argument("--budget", default="budget.yml", metavar="FILE")
    p.add_argument(
        "--format",
        default="auto",
        choices=[*names(), "csv", "tsv", "parquet", "jsonl", "json", "otlp-json"],
        metavar="NAME",
        help=f"input format: {', '.join(names())}",
    )
    p.add_argument("--base-ref", metavar="REF", help="read --base FILE as it is in git commit REF")
    p.add_argument("--head-ref", metavar="REF", help="read --head FILE as it is in git commit REF")
    p.add_argument("--scenario", metavar="NAMES", help="comma list of scenarios to compare")
    p.add_argument("--output", choices=["table", "markdown", "json"], default="table")
    p.add_argument("--json", metavar="FILE", help="also write the JSON report to FILE")
    p.add_argument("--markdown", metavar="FILE", help="also write the markdown report to FILE")
    p.add_argument("--fail-on", metavar="LIST", help="comma list overriding fail_on, or never")
    p.add_argument("--github", action="store_true", help="publish to GitHub (the Action does)")
    p.add_argument(
        "--id",
        default="default",
        metavar="NAME",
        type=_report_id,
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
        type=_boolean,
        metavar="true|false",
        help="with --github: post or update the PR comment (default true)",
    )
    if name == "rebudget":
        p.add_argument(
            "--write",
            action="store_true",
            help="update the budget file in place, keeping its comments",
        )


def _report_id(value: str) -> str:
    import re

    if not re.fullmatch(r"[A-Za-z0-9._-]{1,64}", value):
        raise argparse.ArgumentTypeError(
            f"{value[:80]!r}: use 1-64 letters, digits, '.', '_' or '-'"
        )
    return value


def _boolean(value: str) -> bool:
    v = value.strip().lower()
    if v in ("true", "1", "yes", "on"):
        return True
    if v in ("false", "0", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"{value[:40]!r}: write true or false")
