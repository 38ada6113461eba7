"""The console script: argv -> options -> a command -> exit code.

`main` parses the arguments (`commands.parser`), runs the command (`budgetdiff.commands`) and
is, with `guarded`, the one place an expected failure becomes its message and exit code: each
of the error's lines (a budget's problems, one each) as a `budgetdiff: error:` line on stderr,
then 2 (or the error's own code); a bug is exit 3 with one line that says where to report it.
A reader that closes the pipe early (`budgetdiff demo | head -1`) ends the run quietly with
141, the shell's status for a process ended by SIGPIPE: never 1 (a verdict) nor a "bug".
"""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from budgetdiff.commands.edge import Edge
from budgetdiff.commands.parser import parse
from budgetdiff.errors import BROKEN_PIPE_EXIT_CODE, BUG_EXIT_CODE, BudgetdiffError, bug_message
from budgetdiff.render.text import one_line

if TYPE_CHECKING:
    import httpx

    from budgetdiff.github import GitHubContext


def entry() -> None:
    """The console script `budgetdiff`."""
    keep_freed_memory()
    sys.exit(main())


# glibc's mallopt parameters (malloc.h)
_M_TRIM_THRESHOLD = -1
_M_MMAP_MAX = -4


def keep_freed_memory() -> bool:
    """Let the process reuse the memory it frees instead of handing it back to the system and
    being given zeroed pages again: glibc serves an allocation past its mmap threshold (32 MB
    at most: a column of 4,000,000 values) with a fresh mapping, unmapped on free, so every
    temporary of a 10,000,000-row column costs the kernel 80 MB of page zeroing (38% of a
    compare's CPU time at that size, and about half its system time). Below the cap glibc
    already keeps freed blocks (its threshold rises to the largest block freed); this lifts
    the cap: every block from the heap, and up to 2 GB of freed heap kept. The console script
    only (the library leaves its caller's process as it is); True where it took (glibc)."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    try:
        libc = ctypes.CDLL(None)
        mallopt = libc.mallopt
        gnu = libc.gnu_get_libc_version  # glibc's own: musl has no such symbol
    except (OSError, AttributeError):
        return False
    del gnu
    return bool(mallopt(_M_MMAP_MAX, 0)) and bool(mallopt(_M_TRIM_THRESHOLD, 2**31 - 1))


def main(
    argv: Sequence[str] | None = None,
    environ: Mapping[str, str] | None = None,
    *,
    transport: httpx.BaseTransport | None = None,
    sleep: Callable[[float], None] | None = None,
) -> int:
    """Run one command; its exit code. `transport` and `sleep` are the GitHub API client's
    seams for tests (an httpx transport, and a stand-in for the waits between retries);
    `sleep` stands in for a live Prometheus' waits too."""
    env = os.environ if environ is None else environ

    def run() -> int:
        parsed = parse(None if argv is None else list(argv))
        github = None
        if parsed.github:  # the runner's environment, read once
            github = _context(env, transport, sleep)
        edge = Edge(environ=env, out=sys.stdout, github=github, sleep=sleep)
        return parsed.run(parsed.options, edge)

    return guarded(run)


def _context(
    env: Mapping[str, str],
    transport: httpx.BaseTransport | None,
    sleep: Callable[[float], None] | None,
) -> GitHubContext:
    from budgetdiff.github import GitHubContext  # the GitHub client only with --github

    return GitHubContext.from_environ(env, transport=transport, sleep=sleep)


def guarded(run: Callable[[], int]) -> int:
    """`run()`'s exit code; an expected failure's message on stderr and its exit code instead,
    a bug's one line and exit 3. (The Action's entry runs through here too.)"""
    try:
        with warnings.catch_warnings():
            # numpy's overflow and invalid-value warnings: every result is checked for
            # non-finite values where it matters, and a warning would put lines before the
            # message of an exit 2
            warnings.simplefilter("ignore", RuntimeWarning)
            return int(run())
    except BrokenPipeError:
        _quiet_stdout()
        return BROKEN_PIPE_EXIT_CODE
    except BudgetdiffError as e:
        for line in e.lines():  # a budget with three problems says three
            error(line)
        return e.exit_code
    except Exception as e:  # not hidden: a bug, told apart from a verdict and from bad input
        error(bug_message(e))
        return BUG_EXIT_CODE


def _quiet_stdout() -> None:
    """Point stdout at /dev/null, so that the interpreter's last flush at exit does not raise
    again on the closed pipe (the Python docs' "Note on SIGPIPE")."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # a test's captured stdout: nothing to do
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, fd)
    os.close(devnull)


def error(line: str) -> None:
    """One `budgetdiff: error:` line on stderr, whatever the text holds (control characters
    and line breaks of a hostile file made inert)."""
    print(f"budgetdiff: error: {one_line(line)}", file=sys.stderr)
