"""`budgetdiff compare`: base vs head against the budget; and the Request its options (the
flags, or the Action's inputs) become, which `check` and `demo` share."""

from __future__ import annotations

from pathlib import Path

from budgetdiff import evaluate
from budgetdiff.budget import load_budget
from budgetdiff.commands.output import Edge, finish, write_atomic
from budgetdiff.evaluate import Base, Files, Request
from budgetdiff.options import RunOptions


def run(o: RunOptions, edge: Edge) -> int:
    return evaluate_and_finish(request(o, edge, compare=True), o, edge)


def request(o: RunOptions, edge: Edge, *, compare: bool) -> Request:
    """The Request of a compare (with its base) or a check (without)."""
    base = None
    if compare:
        base = Base(
            source=Files(o.base, None if o.base_artifact else o.base_ref),
            artifact=o.base_artifact,
            allow_missing=o.allow_missing_base,
        )
    return Request(
        head=Files(o.head, o.head_ref),
        budget=load_budget(Path(o.budget)),
        base=base,
        fail_on=o.fail_on,
        report_id=o.id,
        fmt=o.format,
        scenarios=o.scenario,
        history=o.history,
        accept_label=o.accept_label,
        pair=o.pair,
        environ=edge.environ,
        github=edge.github,
    )


def evaluate_and_finish(req: Request, o: RunOptions, edge: Edge) -> int:
    """Evaluate, write the page if asked, then every output and the GitHub publication."""
    done = evaluate.run(req)
    if o.html:  # the trend charts and this run's distributions
        write_atomic(Path(o.html), done.page())
    return finish(done.report, o, edge)
