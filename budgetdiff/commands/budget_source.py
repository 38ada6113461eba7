"""Which budget holds a run (issue 38): the budget file as it is in a git commit (`--budget-ref
REF`; in the Action, the pull request's base commit by default), so that a pull request cannot
loosen its own gate; and, when the work tree's differs, the `budget_change` finding's words,
which say what changed and which of the two holds."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from budgetdiff.budget.changes import budget_changes, said_briefly
from budgetdiff.budget.file import load_budget, parse_budget
from budgetdiff.budget.model import Budget
from budgetdiff.errors import BudgetError, GitError
from budgetdiff.render.text import plain
from budgetdiff.sources import files as sources

if TYPE_CHECKING:
    from collections.abc import Mapping

    from budgetdiff.commands.options import RunOptions


@dataclass(frozen=True, slots=True)
class Held:
    """The budget the run is held to, and the `budget_change` finding's message (None: the
    budget did not change, or no commit was asked to compare with)."""

    budget: Budget
    change: str | None = None


def held_budget(o: RunOptions, environ: Mapping[str, str]) -> Held:
    """`o.budget` as `o.budget_ref` has it (the work tree's without a ref, or with
    `o.budget_own`, the reason the pull request's own budget holds), and what changed."""
    path, ref = o.budget, o.budget_ref
    if ref is None:
        return Held(load_budget(Path(path)))
    name = o.budget_ref_name or ref
    if o.budget_own is not None and not _has_commit(ref):
        return Held(load_budget(Path(path)))  # asked for its own: no base to compare with
    if not _in_commit(path, ref, name):
        own = load_budget(Path(path))
        where = "this pull request" if o.budget_ref_name else "the work tree"
        return Held(own, f"{plain(path)} is new in {where} (not in {name}): held to it")
    data = sources.read_bytes(path, ref, sources.max_bytes(environ))
    base = parse_budget(data.decode("utf-8", "replace"), f"{ref}:{path}")
    if not Path(path).is_file():
        return Held(base)
    work = load_budget(Path(path))
    changes = budget_changes(base, work)
    if not changes:
        return Held(base)
    said = f"{plain(path)} differs from {name}'s: {plain(said_briefly(changes), 600)}"
    if o.budget_own is not None:
        own_words = "the pull request's own budget" if o.budget_ref_name else "the work tree's"
        return Held(work, f"{said}; held to {own_words} ({plain(o.budget_own, 120)})")
    how = (
        "to hold the pull request to its own: budget-from: head, or the budget-label a "
        "maintainer sets"
        if o.budget_ref_name
        else "without --budget-ref the work tree's holds"
    )
    return Held(base, f"{said}; held to {name}'s budget ({how})")


def _has_commit(ref: str) -> bool:
    try:
        sources.exists(".", ref)
    except GitError:
        return False
    return True


def _in_commit(path: str, ref: str, name: str) -> bool:
    """Is the budget file in commit `ref`? A commit this checkout lacks is an error that says
    how to get it, never a silent fall back to the work tree's budget."""
    try:
        return sources.exists(path, ref)
    except GitError:
        raise BudgetError(
            f"{path}: the budget is read as it is in {name} ({ref[:40]}), which this checkout "
            "does not have: check out the history (fetch-depth: 0 in actions/checkout), or hold "
            "the run to the work tree's budget (budget-from: head in the Action; no --budget-ref "
            "on the command line)"
        ) from None
