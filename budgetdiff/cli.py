"""The orchestrator: argv and environment in, exit code out. Reads top to bottom like the flow:
read -> budget -> prepare -> compare -> judge -> render -> publish."""

from __future__ import annotations

import argparse
import math
import os
import sys
import types
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn, TextIO

from budgetdiff.errors import BUG_EXIT_CODE, BudgetdiffError, InputError, UsageError, bug_message
from budgetdiff.render.text import one_line

if TYPE_CHECKING:
    from budgetdiff.budget import Budget
    from budgetdiff.formats import ReadOptions
    from budgetdiff.history import Loaded
    from budgetdiff.judge import Acceptance
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
    "history": """example:
  budgetdiff history history.jsonl                    # the trend of every row, and drift
  budgetdiff history history.jsonl --html trend.html  # a page with a chart per row
  # build one from old results (oldest first): one JSON report per line
  for f in old/*.csv; do
    budgetdiff check --head "$f" --output json | jq -c . >> history.jsonl
  done""",
    "schema": """example:
  budgetdiff schema > budget.schema.json""",
    "whatif": """example:
  budgetdiff whatif --ttft 850 --tokens-per-s 22 --tokens 1200 --tail 300 --budget budget.yml
  budgetdiff whatif --head results.csv --budget budget.yml --scale decode=0.8 --add queue=-50""",
}
FAIL_NEVER = "never"


def entry() -> None:
    sys.meta_path.insert(0, _NoPandas())
    _no_pydantic_plugins()
    sys.exit(main())


def _no_pydantic_plugins() -> None:
    """The CLI's models use no pydantic plugin. pydantic looks for plugins when it builds the
    first model, through importlib.metadata: 15 ms of imports (email, zipfile, csv) and a scan
    of every installed package's entry points. PYDANTIC_DISABLE_PLUGINS is pydantic's switch
    for that, but its loader imports importlib.metadata even when the switch is on; its answer
    under the switch (no plugins) is given here without it. A user who names plugins in the
    variable keeps pydantic's own loader."""
    if os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__") != "__all__":
        return
    loader = types.ModuleType("pydantic.plugin._loader", "no plugins: the CLI uses none")
    loader.get_plugins = lambda *args, **kwargs: ()  # type: ignore[attr-defined]
    sys.modules.setdefault(loader.__name__, loader)


class _NoPandas:
    """When pandas is installed, pyarrow imports it (0.4 s) the first time it converts a Python
    value, only to ask whether the value is a pandas object; the program never has one. (Only
    the Python API's Report.to_frame uses pandas.)"""

    def find_spec(self, name: str, path: object = None, target: object = None) -> None:
        if name.partition(".")[0] == "pandas":
            raise ModuleNotFoundError(f"budgetdiff's CLI does not use {name}", name=name)


if TYPE_CHECKING:  # main's seams for the GitHub API
    from collections.abc import Callable

    import httpx


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
    try:
        if getattr(args, "github", False):  # the runner's environment, read once
            from budgetdiff.github import GitHubContext, GitHubEnviron

            context = GitHubContext.from_environ(env, transport=transport, sleep=sleep)
            env = GitHubEnviron(env, context)
        with warnings.catch_warnings():
            # numpy's overflow and invalid-value warnings: every result is checked for
            # non-finite values where it matters, and a warning would put lines before the
            # one-line message of an exit 2
            warnings.simplefilter("ignore", RuntimeWarning)
            return int(args.run(args, env, sys.stdout))
    except BudgetdiffError as e:
        print(f"budgetdiff: error: {one_line(str(e))}", file=sys.stderr)
        return e.exit_code
    except Exception as e:  # not hidden: a bug, told apart from a verdict and from bad input
        print(f"budgetdiff: error: {one_line(bug_message(e))}", file=sys.stderr)
        return BUG_EXIT_CODE


# ---- commands -------------------------------------------------------------------------------


def cmd_compare(args: argparse.Namespace, env: Mapping[str, str], out: TextIO) -> int:
    from budgetdiff.budget import load_budget

    budget = load_budget(Path(args.budget))
    fail_on = _fail_on(args.fail_on, budget)
    base_files, no_base = _base_files(args, env)
    sizes: dict[str, list[int]] = {"base": [], "head": []}
    head = _read_side(args.head, args.head_ref, args, budget, env, sizes["head"])
    base = (
        _read_side(base_files, args.base_ref, args, budget, env, sizes["base"])
        if base_files
        else None
    )
    same = None
    if base is not None and sizes["base"] == sizes["head"] and _same_bytes(base_files, args, env):
        same = (
            f"base ({', '.join(base_files)}) and head ({', '.join(args.head)}) are the same "
            "bytes: nothing was compared; point --base at the base commit's results"
        )
    accepted = _accepted(args, env)
    history = _history(args, env)
    report = evaluate(
        base,
        head,
        budget,
        fail_on,
        args.id,
        no_base,
        same_input=same,
        accepted=accepted,
        history=history,
    )
    _write_page(args, report, base, head, budget)
    return _finish(report, args, env, out)


def _accepted(args: argparse.Namespace, env: Mapping[str, str]) -> Acceptance | None:
    """With --github on a pull request: the accept label, if the PR carries it."""
    if not (args.github and args.accept_label):
        return None
    from budgetdiff.github import event

    return event.acceptance(event.load_event(env), args.accept_label)


def cmd_check(args: argparse.Namespace, env: Mapping[str, str], out: TextIO) -> int:
    from budgetdiff.budget import load_budget

    budget = load_budget(Path(args.budget))
    head = _read_side(args.head, args.head_ref, args, budget, env)
    fail_on = _fail_on(args.fail_on, budget)
    report = evaluate(None, head, budget, fail_on, args.id, None, history=_history(args, env))
    _write_page(args, report, None, head, budget)
    return _finish(report, args, env, out)


def cmd_history(args: argparse.Namespace, env: Mapping[str, str], out: TextIO) -> int:
    """The newest run of a history file against the ones before it: trends, change points,
    drift; `--html` draws them. A view: exit 0 whatever it shows."""
    from budgetdiff import history
    from budgetdiff.budget import Regression
    from budgetdiff.numbers import ms, pct
    from budgetdiff.render.text import plain

    args.history = args.file
    loaded = _history(args, env)
    assert loaded is not None
    h = history.latest(loaded, Regression())
    if h is None:
        raise InputError(f"{args.file}: no budgetdiff report in it: one JSON report per line")
    p = f"p{loaded.entries[-1].percentile:g}"
    out.write(
        f"{args.file}: {len({e.line for e in loaded.entries}):,} run(s); the newest against "
        f"the {h.window} before it since the budget last changed\n"
    )
    out.write(f"  {p:<16} {'trend':<20} {'cumulative':>11} {'vs reference':>13}  slower since\n")
    for t in h.trends:
        drift = " drift" if t.drift else ""
        out.write(
            f"  {plain(t.label, 16):<16} {t.sparkline:<20} {pct(t.cumulative_pct, signed=True):>11}"
            f" {pct(t.change_pct, signed=True):>13}  {plain(t.slower_since or '–', 40)}"
            f"{drift}  (last {ms(t.values[-1])})\n"
        )
    if args.html:
        from budgetdiff.render.page import render_page

        page = render_page(f"budgetdiff trend · {plain(args.file, 80)}", float(p[1:]), h, [])
        _write_atomic(Path(args.html), page)
        out.write(f"wrote {args.html}\n")
    return 0


def _write_page(
    args: argparse.Namespace,
    report: Report,
    base: list[Run] | None,
    head: list[Run],
    budget: Budget,
) -> None:
    """`--html PAGE`: the trend charts and the current run's base vs head CDFs."""
    if not getattr(args, "html", None):
        return
    from budgetdiff.compare import runs_match, slice_parts
    from budgetdiff.prepare import prepare
    from budgetdiff.render.page import Cdf, render_page
    from budgetdiff.render.text import plain

    main = report.main
    c = main.comparison
    pairs = runs_match(base, head)[0] if base is not None else [(None, h) for h in head]
    b, h = next(((b, h) for b, h in pairs if h.scenario == c.name), pairs[0])
    cdfs = []
    if h.per_request and (b is None or b.per_request):
        sides = [prepare(r, budget) if r is not None else None for r in (b, h)]
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
    _write_atomic(Path(args.html), render_page(title, c.percentile, main.history, cdfs))


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
    report = evaluate(None, head, budget, [], args.id, None)
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
    from budgetdiff.numbers import ms, num
    from budgetdiff.render.cells import budget_meaning, fix_first
    from budgetdiff.render.text import plain

    p = f"p{budget.percentile:g}"
    total = next((r.head_ms for r in c.slo if r.name == "total"), None)
    rows = {r.name: r for r in c.slices}
    out.write(
        f"re-budget at {p}: {ms(proposal.target_ms)} to split; {p} end to end {ms(total)}\n"
        f"  {'slice':<16} {'own ' + p:>9} {'part':>9} {'budget':>9} -> {'proposed':>9} {'use':>5}\n"
    )
    for name, value in proposal.allocation.items():
        old = budget.slice_budget(name)
        row = rows.get(name)
        part = row.part_ms if row is not None else None
        use = f"{100 * part / value:.0f}%" if part is not None and value else ""
        out.write(
            f"  {plain(name, 16):<16} {num(row.head_ms if row else None):>9} {num(part):>9} "
            f"{num(old) if old else 'new':>9} -> {value:>9,} {use:>5}\n"
        )
    out.write(f"{budget_meaning(c)}\n")
    for message in proposal.messages:
        out.write(f"{plain(message, 400)}\n")
    if not proposal.fits and c.fix_first:
        out.write("what to fix first (each slice 10% faster, the rest as measured):\n")
        for i, f in enumerate(c.fix_first, 1):
            out.write(f"  {i}. {plain(f.slice)}: {fix_first(f, budget.percentile)}\n")
    if args.write:
        if not proposal.fits:
            out.write("not written: it does not fit the SLO (see above)\n")
            return 1
        rebudget.write_budget(Path(args.budget), proposal.allocation)
        out.write(f"wrote {args.budget}\n")
    return 0


def cmd_whatif(args: argparse.Namespace, env: Mapping[str, str], out: TextIO) -> int:
    from budgetdiff.budget import load_budget

    budget = load_budget(Path(args.budget))
    if args.head:
        return _whatif_data(args, budget, env, out)
    return _whatif_estimate(args, budget, out)


def _whatif_estimate(args: argparse.Namespace, budget: Budget, out: TextIO) -> int:
    """TTFT + (tokens - 1) / rate + tail against the SLO with its headroom."""
    from budgetdiff import whatif
    from budgetdiff.numbers import ms

    if args.scale or args.add:
        raise UsageError("--scale and --add change per-request data: pass it with --head FILE")
    given = {"--ttft": args.ttft, "--tokens": args.tokens}
    missing = [k for k, v in given.items() if v is None]
    if (args.tpot is None) == (args.tokens_per_s is None):
        missing.append("one of --tokens-per-s or --tpot")
    if missing:
        raise UsageError(
            f"whatif: give {', '.join(missing)} (or --head FILE to recompute measured requests)"
        )
    for flag, value in (
        ("--ttft", args.ttft),
        ("--tokens", args.tokens),
        ("--tokens-per-s", args.tokens_per_s),
        ("--tpot", args.tpot),
    ):
        if value is not None and not whatif.positive(value):
            raise UsageError(f"whatif: {flag} {value:g}: must be a number above 0")
    if args.tokens != int(args.tokens):
        raise UsageError(f"whatif: --tokens {args.tokens:g}: must be a whole number of tokens")
    if not (whatif.positive(args.tail) or args.tail == 0):
        raise UsageError(f"whatif: --tail {args.tail:g}: must be 0 ms or more")
    per_token = args.tpot if args.tpot is not None else whatif.per_token_ms(args.tokens_per_s)
    est = whatif.Estimate(args.ttft, per_token, int(args.tokens), args.tail)
    rate = f"{args.tokens_per_s:g} tokens/s" if args.tpot is None else f"{ms(per_token)}/token"
    out.write(
        f"estimated end to end: TTFT {ms(est.ttft_ms)} + {est.tokens - 1:,} tokens after the "
        f"first at {rate} ({ms(est.decode_ms)}) + tail {ms(est.tail_ms)} = {ms(est.total_ms)}\n"
        f"  (the first token is in TTFT; counting all {est.tokens:,} tokens at the rate: "
        f"{ms(est.total_all_tokens_ms)})\n"
    )
    checks = [
        ("TTFT", est.ttft_ms, budget.slo.ttft),
        ("end to end", est.total_ms, budget.slo.total),
        ("ITL", per_token, budget.slo.itl),
        ("TPOT", per_token, budget.slo.tpot),
    ]
    fits = _against_slo(checks, budget, out)
    if budget.slo.total is not None:
        room = budget.slo.total * (1 - budget.headroom) - est.ttft_ms - est.tail_ms
        longest = math.floor(room / per_token) + 1 if room > 0 else 0
        out.write(
            f"  the longest answer that fits the end-to-end target with headroom at this rate: "
            f"{longest:,} tokens\n"
        )
    out.write("fits\n" if fits else "does not fit\n")
    return 0 if fits else 1


def _against_slo(
    checks: list[tuple[str, float | None, float | None]], budget: Budget, out: TextIO
) -> bool:
    """One line per SLO metric: value vs target with the budget's headroom; all fit?"""
    from budgetdiff.numbers import ms

    fits = True
    pct = f"{budget.headroom * 100:g}%"
    for name, value, target in checks:
        if target is None or value is None:
            continue
        limit = target * (1 - budget.headroom)
        ok = value <= limit
        fits &= ok
        word = "fits" if ok else "OVER" if value > target else "fits the SLO, not the headroom"
        out.write(
            f"  {name}: {ms(value)} vs target {ms(target)} ({ms(limit)} with {pct} headroom): "
            f"{word} ({100 * (target - value) / target:+.1f}% headroom)\n"
        )
    return fits


def _whatif_data(
    args: argparse.Namespace, budget: Budget, env: Mapping[str, str], out: TextIO
) -> int:
    """Per-request data with some slices scaled or shifted: percentiles, headroom, attainment."""
    from budgetdiff import whatif
    from budgetdiff.compare import slice_parts
    from budgetdiff.numbers import ms, pct, signed_ms
    from budgetdiff.prepare import prepare
    from budgetdiff.render.text import plain

    estimate_flags = [
        f
        for f, v in (("--ttft", args.ttft), ("--tpot", args.tpot), ("--tokens", args.tokens))
        if v is not None
    ]
    if estimate_flags or args.tokens_per_s is not None:
        raise UsageError(
            f"whatif: {', '.join(estimate_flags) or '--tokens-per-s'} is for the estimate "
            "without data; with --head FILE use --scale SLICE=F and --add SLICE=MS"
        )
    changes: dict[str, whatif.Change] = {}
    for flag, items in (("--scale", args.scale or []), ("--add", args.add or [])):
        for item in items:
            name, value = _slice_value(flag, item)
            old = changes.get(name, whatif.Change())
            if flag == "--scale":
                if not value >= 0:
                    raise UsageError(f"whatif: --scale {plain(item)}: the factor must be 0 or more")
                changes[name] = whatif.Change(value, old.add_ms)
            else:
                changes[name] = whatif.Change(old.factor, value)
    head = _read_side(args.head, args.head_ref, args, budget, env)
    if len(head) != 1 or not head[0].per_request:
        raise InputError(
            f"{args.head[0]}: whatif needs one run with one row per request "
            "(pick one with --scenario)"
        )
    prep = prepare(head[0], budget)
    parts = slice_parts(prep)
    unknown = [s for s in changes if s not in parts]
    if unknown:
        raise UsageError(
            f"whatif: {plain(unknown[0])} is not a slice of {args.head[0]}; it has: "
            f"{', '.join(parts) or 'no slices'}"
        )
    if not len(prep.metrics["total"]):
        raise InputError(f"{args.head[0]}: no request succeeded: nothing to recompute")
    before = whatif.outcome(prep, budget, parts)
    after = whatif.outcome(prep, budget, parts, changes)
    p = f"p{budget.percentile:g}"
    said = ", ".join(
        f"{plain(n)}"
        + (f" x {c.factor:g}" if c.factor != 1 else "")
        + (f" {c.add_ms:+g} ms" if c.add_ms else "")
        for n, c in changes.items()
    )
    served = len(prep.metrics["total"])
    out.write(f"what if, on {served:,} measured requests: {said or 'nothing changed'}\n")
    for name in after.clipped:
        out.write(
            f"  {plain(name)}: held at 0 ms in the requests where {changes[name].add_ms:+g} ms "
            "would take it below\n"
        )
    for label, b, a in (
        ("TTFT", before.ttft_ms, after.ttft_ms),
        ("end to end", before.total_ms, after.total_ms),
    ):
        if b is not None and a is not None:
            out.write(f"  {p} {label}: {ms(b)} -> {ms(a)} ({signed_ms(a - b)})\n")
    if before.attainment_pct is not None and after.attainment_pct is not None:
        out.write(
            f"  SLO attainment: {pct(before.attainment_pct)} -> {pct(after.attainment_pct)}\n"
        )
    checks = [
        ("TTFT", after.ttft_ms, budget.slo.ttft),
        ("end to end", after.total_ms, budget.slo.total),
    ]
    fits = _against_slo(checks, budget, out)
    out.write("fits\n" if fits else "does not fit\n")
    return 0 if fits else 1


def _slice_value(flag: str, item: str) -> tuple[str, float]:
    from budgetdiff.render.text import plain

    name, sep, raw = item.partition("=")
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not sep or not name or not math.isfinite(value):
        raise UsageError(f"whatif: {flag} {plain(item)}: write SLICE=NUMBER, e.g. decode=0.8")
    return name, value


# ---- the pipeline ---------------------------------------------------------------------------


def _read_side(
    paths: list[str],
    ref: str | None,
    args: argparse.Namespace,
    budget: Budget,
    env: Mapping[str, str],
    sizes: list[int] | None = None,
) -> list[Run]:
    """The runs in `paths`; each file's size in bytes goes to `sizes`."""
    runs = read_files(paths, ref, args.format, budget, env, sizes)
    wanted = _scenarios(args)
    if wanted:
        runs = [r for r in runs if r.scenario in wanted]
        if not runs:
            raise UsageError(f"--scenario {','.join(wanted)}: none of these is in {paths[0]}")
    return runs


def read_options(budget: Budget) -> ReadOptions:
    """What the budget tells a reader: the slices it wants and where their columns are."""
    from budgetdiff.formats import ReadOptions
    from budgetdiff.table import UNATTRIBUTED

    return ReadOptions(
        slices=tuple(s for s in budget.slices if s != UNATTRIBUTED),  # computed, not read
        columns={
            n: (s.column or n, s.unit)
            for n, s in budget.slices.items()
            if s.column is not None or s.unit is not None
        },
        percentile=budget.percentile,
    )


def read_files(
    paths: list[str],
    ref: str | None,
    fmt: str,
    budget: Budget,
    env: Mapping[str, str],
    sizes: list[int] | None = None,
) -> list[Run]:
    """One side's runs from its files (work tree, or commit `ref`), in format `fmt` or detected."""
    from budgetdiff import sources
    from budgetdiff.formats import detect
    from budgetdiff.formats.combine import combine

    options = read_options(budget)
    limit = sources.max_bytes(env)
    per_file = []
    for path in paths:
        data = sources.read_bytes(path, ref, limit)
        if sizes is not None:
            sizes.append(len(data))
        label = f"{ref}:{path}" if ref else path
        per_file.append(detect.read(data, label, fmt, options))
    return combine(per_file, paths)  # one file passes through, after its own checks


def evaluate(
    base: list[Run] | None,
    head: list[Run],
    budget: Budget,
    fail_on: list[str],
    report_id: str,
    no_base: str | None,
    *,
    same_input: str | None = None,
    accepted: Acceptance | None = None,
    history: Loaded | None = None,
) -> Report:
    """Pair the scenarios, compare and judge each: the Report every renderer reads."""
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
        trends = None
        if history is not None:
            from budgetdiff.history import analyse

            trends = analyse(history, c, budget)
        findings, verdict = judge(
            c,
            budget,
            fail_on,
            no_base=missing,
            base_only=gone,
            same_input=same_input,
            accepted=accepted,
            history=trends,
        )
        scenarios.append(Scenario(c, tuple(findings), verdict, trends))
    mode = "compare" if base is not None or no_base is not None else "check"
    return Report(id=report_id, mode=mode, scenarios=tuple(scenarios), accepted=accepted)


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

    context = github.GitHubContext.of(env)
    json_path = Path(args.json) if args.json else _report_path(env, args.id)
    if not args.json:
        _write_atomic(json_path, render_json(report))
    pub = github.Publication(
        report_id=args.id,
        verdict=report.verdict,
        regressions=report.regressions,
        findings=report.findings,
        json_path=json_path,
        render_markdown=lambda limit: render_markdown(report, limit),
        render_resolved=lambda limit: render_markdown(report, limit, resolved=True),
    )
    github.publish(pub, context, comment=args.comment, comment_author=args.comment_author)


def _history(args: argparse.Namespace, env: Mapping[str, str]) -> Loaded | None:
    """The runs of `--history FILE`, each line checked; a skipped line is a warning on stderr."""
    path = getattr(args, "history", None)
    if path is None:
        return None
    from budgetdiff import history, sources

    empty = Path(path).is_file() and Path(path).stat().st_size == 0  # a history starts empty
    data = b"" if empty else sources.read_bytes(path, None, history.MAX_BYTES)
    loaded = history.parse(data, path, env.get("BUDGETDIFF_TREND_LINK") or None)
    for warning in loaded.warnings:
        print(f"budgetdiff: warning: {one_line(warning)}", file=sys.stderr)
    return loaded


def _base_files(args: argparse.Namespace, env: Mapping[str, str]) -> tuple[list[str], str | None]:
    """The base files to read, or none and why (a missing base is a finding, never a pass)."""
    from budgetdiff import sources

    if args.base_artifact:
        if not args.github:
            raise UsageError("--base-artifact needs --github (it downloads through the GitHub API)")
        import tempfile

        from budgetdiff import github

        fetched = github.fetch_base_artifact(
            args.base_artifact,
            github.GitHubContext.of(env),
            Path(tempfile.mkdtemp(prefix="budgetdiff-base-")),
        )
        print(fetched.annotation(), flush=True)  # where the base came from, or why none
        folder = fetched.folder
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
    if args.base_ref is None and not getattr(args, "allow_missing_base", False):
        return args.base, None  # a local path that is not there is a typo: exit 2, like head
    # absent by design: not committed in the base yet, or allowed (the PR adding a benchmark)
    present = [p for p in args.base if sources.exists(p, args.base_ref)]
    if len(present) < len(args.base):
        gone = [p for p in args.base if p not in present]
        where = f" in {args.base_ref}" if args.base_ref else ""
        return [], f"the base results {', '.join(gone)} do not exist{where}"
    return args.base, None


def _same_bytes(base: list[str], args: argparse.Namespace, env: Mapping[str, str]) -> bool:
    """Base and head are the same bytes, file by file (asked only when the sizes match, so a
    real pair costs nothing; a second read is cheaper than holding both files in memory)."""
    from budgetdiff import sources

    limit = sources.max_bytes(env)
    return all(
        sources.read_bytes(b, args.base_ref, limit) == sources.read_bytes(h, args.head_ref, limit)
        for b, h in zip(base, args.head, strict=True)
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


def _scenarios(args: argparse.Namespace) -> list[str]:
    raw = getattr(args, "scenario", None)
    return [s for s in raw.split(",") if s] if raw else []


def _report_path(env: Mapping[str, str], report_id: str) -> Path:
    from budgetdiff.github import GitHubContext

    return GitHubContext.of(env).report_path(report_id)


def _write_atomic(path: Path, text: str) -> None:
    """Whole or not at all: a reader never sees half a report."""
    import tempfile

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


class _Parser(argparse.ArgumentParser):
    """argparse, with its errors on one line like every other exit 2 (the usage is in --help)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {one_line(message)} (see {self.prog} --help)\n")


def _parser() -> argparse.ArgumentParser:
    from budgetdiff import __version__

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
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    cmds = [
        _Cmd("compare", "base vs head against the budget: report, verdict, exit code", cmd_compare),
        _Cmd("check", "one run against the SLO and slice budgets, no base", cmd_check),
        _Cmd("rebudget", "propose a new split of the SLO from measured data", cmd_rebudget),
        _Cmd(
            "whatif",
            "estimate TTFT + tokens / rate + tail, or recompute data, vs the SLO",
            cmd_whatif,
        ),
        _Cmd("history", "trends and drift of a history file (JSON Lines of reports)", cmd_history),
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
        if c.name == "history":
            p.add_argument("file", metavar="FILE", help="JSON Lines: one JSON report per run")
            p.add_argument("--html", metavar="PAGE", help="also write the trend page")
        if c.name == "whatif":
            p.add_argument("--budget", default="budget.yml", metavar="FILE")
            p.add_argument("--ttft", type=_number, metavar="MS", help="time to first token, ms")
            p.add_argument(
                "--tokens-per-s",
                type=_number,
                metavar="N",
                help="decode rate after the first token",
            )
            p.add_argument(
                "--tpot",
                type=_number,
                metavar="MS",
                help="time per output token after the first, ms (instead of --tokens-per-s)",
            )
            p.add_argument(
                "--tokens", type=_number, metavar="N", help="answer length at the tail, tokens"
            )
            p.add_argument(
                "--tail", type=_number, default=0.0, metavar="MS", help="time after the last token"
            )
            p.add_argument(
                "--head", action="append", metavar="FILE", help="recompute these measured requests"
            )
            p.add_argument("--head-ref", metavar="REF", help="read --head FILE at git commit REF")
            p.add_argument("--format", default="auto", metavar="NAME", help="input format")
            p.add_argument("--scenario", metavar="NAMES", help="the scenario to recompute")
            p.add_argument(
                "--scale",
                action="append",
                metavar="SLICE=F",
                help="multiply a slice, e.g. decode=0.8",
            )
            p.add_argument(
                "--add",
                action="append",
                metavar="SLICE=MS",
                help="add ms to a slice, e.g. queue=-50",
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
        p.add_argument(
            "--allow-missing-base",
            action="store_true",
            help="a --base FILE that does not exist is the no_base finding, not an error "
            "(the PR that adds the benchmark)",
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
    if name in ("compare", "check"):
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
