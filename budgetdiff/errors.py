"""The one family of expected failures: each knows its exit code, caught in one place (cli)."""

from __future__ import annotations


class BudgetdiffError(Exception):
    """An expected failure: the message says what, where and how to fix it."""

    exit_code = 2


class UsageError(BudgetdiffError):
    """Bad command-line arguments."""


class InputError(BudgetdiffError):
    """A results file that cannot be read or does not make sense."""


class BudgetError(BudgetdiffError):
    """An invalid budget file."""


class GitError(BudgetdiffError):
    """`git show REF:FILE` failed."""


class PublishError(BudgetdiffError):
    """Publishing to GitHub failed; callers degrade this to a warning, never an exit code."""
