"""`budgetdiff whatif --steps N --step-ms MS [--head FILE]`: an agent task's estimate, steps x
ms per step, against the task's SLO (`slo.total`); with measured tasks (`--head`), their
percentile as measured and with one step more or fewer. Exit 0 when the estimate fits, 1 when
not."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from budgetdiff import numbers
from budgetdiff.commands.say import Say, against_slo
from budgetdiff.errors import UsageError
from budgetdiff.evaluate.orchestrator import Files, Reading
from budgetdiff.measure.agent import step_moves
from budgetdiff.numbers import count, ms, percentile, steps

if TYPE_CHECKING:
    from budgetdiff.budget.model import Budget
    from budgetdiff.commands.options import WhatifOptions


def run(o: WhatifOptions, budget: Budget, env: Mapping[str, str], say: Say) -> int:
    if o.ttft is not None or o.tokens is not None or o.scale or o.add:
        raise UsageError("whatif: --steps and --step-ms estimate an agent task; give them alone")
    n, step = _numbers(o)
    estimate = n * step
    say(f"estimated task: {steps(n)} steps x {ms(step)} per step = {ms(estimate)}")
    a = budget.agent
    if a is not None and a.steps is not None and a.step is not None:
        planned = a.steps * a.step
        say(f"(budgeted: {steps(a.steps)} steps x {ms(a.step)} = {ms(planned)})", "  ")
    fits = against_slo(
        [("task end to end", estimate, budget.slo.total)], budget.headroom, say, "estimate"
    )
    if o.head:  # information: the estimate decides
        against_slo(_measured(o, budget, env, say), budget.headroom, say, "what if")
    say("fits" if fits else "does not fit")
    return 0 if fits else 1


def _numbers(o: WhatifOptions) -> tuple[float, float]:
    if o.steps is None or o.step_ms is None:
        raise UsageError("whatif: give both --steps N and --step-ms MS")
    if o.steps != int(o.steps) or o.steps < 1:
        raise UsageError(f"whatif: --steps {numbers.given(o.steps)}: must be a whole number >= 1")
    if not o.step_ms > 0:
        raise UsageError(f"whatif: --step-ms {numbers.given(o.step_ms)}: must be above 0 ms")
    return o.steps, o.step_ms


def _measured(
    o: WhatifOptions, budget: Budget, env: Mapping[str, str], say: Say
) -> list[tuple[str, float | None, float | None]]:
    """The measured tasks' percentile, and with one step more and fewer."""
    reading = Reading(budget=budget, environ=env, fmt=o.format, scenarios=o.scenario)
    runs = reading.side(Files(o.head, o.head_ref)).runs
    agent = runs[0].agent if len(runs) == 1 else None
    if agent is None:
        raise UsageError(
            f"whatif --steps: {o.head[0]} holds no agent tasks (a step table or GenAI traces)"
        )
    moves = step_moves(agent.of_tasks(runs[0].succeeded), budget.percentile)
    p = percentile(budget.percentile)
    say(f"the {count(moves.tasks)} measured tasks at {p}:")
    target = budget.slo.total
    return [
        ("as measured", moves.measured_ms, target),
        ("one step more", moves.one_more_ms, target),
        ("one step fewer", moves.one_fewer_ms, target),
    ]
