"""`budgetdiff whatif`: the back-of-envelope estimate TTFT + tokens / rate + tail, or measured
requests with some slices scaled or shifted, against the SLO with its headroom. Exit 0 when it
fits, 1 when it does not."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from budgetdiff import numbers
from budgetdiff.budget.file import load_budget
from budgetdiff.budget.model import Budget
from budgetdiff.commands.edge import Edge
from budgetdiff.commands.options import WhatifOptions
from budgetdiff.commands.say import Check, Say, against_slo
from budgetdiff.commands.terminal import width
from budgetdiff.errors import UsageError
from budgetdiff.evaluate.orchestrator import ATTAINMENT, Files, Reading, WhatIf, what_if
from budgetdiff.measure import whatif
from budgetdiff.numbers import count, ms, pct, percentile, signed_ms
from budgetdiff.render.table import finding_line
from budgetdiff.render.text import plain

DEFAULT_BUDGET = "budget.yml"


@dataclass(frozen=True, slots=True)
class Targets:
    """The SLO a whatif is held to: the budget's, or the one given on the command line (which
    replaces the budget's targets it names), and the headroom the budget sets (none without)."""

    ttft: float | None = None
    total: float | None = None
    itl: float | None = None
    tpot: float | None = None
    headroom: float = 0.0


def run(o: WhatifOptions, edge: Edge) -> int:
    budget = _budget(o)
    say = Say(edge.out, width(edge.environ, edge.out))
    if o.steps is not None or o.step_ms is not None:  # an agent task
        from budgetdiff.commands import agent_whatif

        if budget is None:
            raise UsageError(
                "whatif --steps needs the budget's `agent:` section: pass --budget FILE"
            )
        return agent_whatif.run(o, budget, edge.environ, say)
    targets = _targets(o, budget)
    if o.head:
        if budget is None:
            raise UsageError("whatif --head FILE needs the budget's slices: pass --budget FILE")
        return _recompute(o, budget, edge.environ, say)
    return _estimate(o, targets, say)


def _budget(o: WhatifOptions) -> Budget | None:
    """The budget file: the one named, else budget.yml; with --slo-total or --slo-ttft an
    absent budget.yml is no budget."""
    given_slo = o.slo_total is not None or o.slo_ttft is not None
    if o.budget is None and given_slo and not Path(DEFAULT_BUDGET).is_file():
        return None
    return load_budget(Path(o.budget or DEFAULT_BUDGET))


def _targets(o: WhatifOptions, budget: Budget | None) -> Targets:
    for flag, value in (("--slo-total", o.slo_total), ("--slo-ttft", o.slo_ttft)):
        if value is not None and not whatif.positive(value):
            raise UsageError(f"whatif: {flag} {numbers.given(value)}: must be a number above 0")
    slo = budget.slo if budget is not None else None
    return Targets(
        ttft=o.slo_ttft if o.slo_ttft is not None else slo.ttft if slo else None,
        total=o.slo_total if o.slo_total is not None else slo.total if slo else None,
        itl=slo.itl if slo else None,
        tpot=slo.tpot if slo else None,
        headroom=budget.headroom if budget is not None else 0.0,
    )


# ---- the estimate ---------------------------------------------------------------------------


def _estimate(o: WhatifOptions, targets: Targets, say: Say) -> int:
    """TTFT + (tokens - 1) / rate + tail against the SLO with its headroom."""
    ttft, tokens, per_token = _estimate_numbers(o)
    est = whatif.Estimate(ttft, per_token, int(tokens), o.tail)
    rate = f"{ms(per_token)}/token"
    if o.tpot is None:
        assert o.tokens_per_s is not None  # _estimate_numbers asks for one of the two
        rate = f"{numbers.given(o.tokens_per_s)} tokens/s"
    say(
        f"estimated end to end: TTFT {ms(est.ttft_ms)} + {count(est.tokens - 1)} tokens after the "
        f"first at {rate} ({ms(est.decode_ms)}) + tail {ms(est.tail_ms)} = {ms(est.total_ms)}"
    )
    say(
        f"(the first token is in TTFT; counting all {count(est.tokens)} tokens at the rate: "
        f"{ms(est.total_all_tokens_ms)})",
        "  ",
    )
    checks: list[Check] = [
        ("TTFT", est.ttft_ms, targets.ttft),
        ("end to end", est.total_ms, targets.total),
        ("ITL", per_token, targets.itl),
        ("TPOT", per_token, targets.tpot),
    ]
    if all(target is None for _, _, target in checks):
        raise UsageError("whatif: no SLO to hold it to: pass --slo-total MS or --budget FILE")
    fits = against_slo(checks, targets.headroom, say, "estimate")
    if targets.total is not None:
        room = targets.total * (1 - targets.headroom) - est.ttft_ms - est.tail_ms
        longest = math.floor(room / per_token) + 1 if room > 0 else 0
        with_headroom = " with headroom" if targets.headroom else ""
        say(
            f"the longest answer that fits the end-to-end target{with_headroom} at this rate: "
            f"{count(longest)} tokens",
            "  ",
        )
    say("fits" if fits else "does not fit")
    return 0 if fits else 1


def _estimate_numbers(o: WhatifOptions) -> tuple[float, float, float]:
    """TTFT, tokens and ms per token after the first, each checked (UsageError: exit 2)."""
    if o.scale or o.add:
        raise UsageError("--scale and --add change per-request data: pass it with --head FILE")
    given = {"--ttft": o.ttft, "--tokens": o.tokens}
    missing = [k for k, v in given.items() if v is None]
    if (o.tpot is None) == (o.tokens_per_s is None):
        missing.append("one of --tokens-per-s or --tpot")
    if o.ttft is None or o.tokens is None or missing:
        raise UsageError(
            f"whatif: give {', '.join(missing)} (or --head FILE to recompute measured requests)"
        )
    for flag, value in (
        ("--ttft", o.ttft),
        ("--tokens", o.tokens),
        ("--tokens-per-s", o.tokens_per_s),
        ("--tpot", o.tpot),
    ):
        if value is not None and not whatif.positive(value):
            raise UsageError(f"whatif: {flag} {numbers.given(value)}: must be a number above 0")
    if o.tokens != int(o.tokens):
        raise UsageError(
            f"whatif: --tokens {numbers.given(o.tokens)}: must be a whole number of tokens"
        )
    if not (whatif.positive(o.tail) or o.tail == 0):
        raise UsageError(f"whatif: --tail {numbers.given(o.tail)}: must be 0 ms or more")
    if o.tpot is not None:
        return o.ttft, o.tokens, o.tpot
    assert o.tokens_per_s is not None
    return o.ttft, o.tokens, whatif.per_token_ms(o.tokens_per_s)


# ---- measured requests, changed -------------------------------------------------------------


def _recompute(o: WhatifOptions, budget: Budget, env: Mapping[str, str], say: Say) -> int:
    """Per-request data with some slices scaled or shifted: percentiles, headroom, attainment."""
    changes = _changes(o)
    reading = Reading(budget=budget, environ=env, fmt=o.format, scenarios=o.scenario)
    head = reading.side(Files(o.head, o.head_ref)).runs
    if len(head) == 1:  # (what_if refuses more) a class of traffic is held to its own SLO
        budget = budget.for_scenario(head[0].scenario)
    targets = _targets(o, budget)
    result = what_if(head, budget, changes, source=o.head[0])
    for f in result.read.findings:  # what the reading found wrong in the data, as check says it
        say(finding_line(f))
    said = ", ".join(
        f"{plain(n)}"
        + (f" x {numbers.given(c.factor)}" if c.factor != 1 else "")
        + (f" {numbers.signed_given(c.add_ms)} ms" if c.add_ms else "")
        for n, c in changes.items()
    )
    say(f"what if, on {count(result.requests)} measured requests: {said or 'nothing changed'}")
    for name in result.after.clipped:
        say(
            f"{plain(name)}: held at 0 ms in the requests where "
            f"{numbers.signed_given(changes[name].add_ms)} ms would take it below",
            "  ",
        )
    for line in _before_after(result, percentile(budget.percentile)):
        say(line, "  ")
    checks: list[Check] = [
        ("TTFT", result.after.ttft_ms, targets.ttft),
        ("end to end", result.after.total_ms, targets.total),
    ]
    fits = against_slo(checks, targets.headroom, say, "what if", result.doubts)
    if result.read.fails:  # as check fails it: a fit of numbers in doubt is no fit
        say("in doubt: the data has findings that fail the check (see above)")
        return 1
    say("fits" if fits else "does not fit")
    return 0 if fits else 1


def _changes(o: WhatifOptions) -> dict[str, whatif.Change]:
    """--scale SLICE=F and --add SLICE=MS, one Change per slice (checked: UsageError)."""
    estimate_flags = [
        f
        for f, v in (("--ttft", o.ttft), ("--tpot", o.tpot), ("--tokens", o.tokens))
        if v is not None
    ]
    if estimate_flags or o.tokens_per_s is not None:
        raise UsageError(
            f"whatif: {', '.join(estimate_flags) or '--tokens-per-s'} is for the estimate "
            "without data; with --head FILE use --scale SLICE=F and --add SLICE=MS"
        )
    changes: dict[str, whatif.Change] = {}
    for flag, items in (("--scale", o.scale), ("--add", o.add)):
        for item in items:
            name, value = _slice_value(flag, item)
            old = changes.get(name, whatif.Change())
            if flag == "--scale":
                if not value >= 0:
                    raise UsageError(f"whatif: --scale {plain(item)}: the factor must be 0 or more")
                changes[name] = whatif.Change(value, old.add_ms)
            else:
                changes[name] = whatif.Change(old.factor, value)
    return changes


def _slice_value(flag: str, item: str) -> tuple[str, float]:
    name, sep, raw = item.partition("=")
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not sep or not name or not math.isfinite(value):
        raise UsageError(f"whatif: {flag} {plain(item)}: write SLICE=NUMBER, e.g. decode=0.8")
    return name, value


def _before_after(result: WhatIf, p: str) -> list[str]:
    """The percentiles and the SLO attainment, before -> after."""
    before, after = result.before, result.after
    lines = [
        f"{p} {label}: {ms(b)} -> {ms(a)} ({signed_ms(a - b)})"
        + (" - in doubt" if label in result.doubts else "")
        for label, b, a in (
            ("TTFT", before.ttft_ms, after.ttft_ms),
            ("end to end", before.total_ms, after.total_ms),
        )
        if b is not None and a is not None
    ]
    doubt = result.doubts.get(ATTAINMENT)
    if doubt is not None:
        lines.append(f"{ATTAINMENT}: doubtful ({doubt})")
    elif before.attainment_pct is not None and after.attainment_pct is not None:
        lines.append(f"{ATTAINMENT}: {pct(before.attainment_pct)} -> {pct(after.attainment_pct)}")
    return lines
