"""The one family of expected failures: each knows its exit code, caught in one place (cli).

    BudgetdiffError          exit 2: an expected failure, its message says what, where, the fix
    ├── UsageError           bad command-line arguments or options (CLI, API, Action inputs)
    ├── InputError           a results file or source that cannot be read or makes no sense
    │   └── ReadError        a reader refuses a file: format, file, line or field, the fix
    ├── BudgetError          an invalid budget: every problem, one line each
    ├── GitError             `git show REF:FILE` failed
    └── PublishError         GitHub publishing failed: degraded to a warning, never an exit code
    ReaderBug                not a BudgetdiffError: a reader's unexpected exception, exit 3
                             (BUG_EXIT_CODE) with `bug_message`, like any other bug

A failing verdict is exit 1 and no exception.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterable

# A crash inside budgetdiff is a bug, not bad input: its own exit code, never 1 (a failing
# verdict) or 2 (bad input), and one line that says where to report it.
BUG_EXIT_CODE = 3
# 128 + SIGPIPE: what a shell reports for a writer whose reader went away (`| head -1`), so
# that `set -o pipefail` (GitHub's bash) tells it apart from a failing verdict (1)
BROKEN_PIPE_EXIT_CODE = 141
BUG_REPORT_URL = "https://github.com/budgetdiff/budgetdiff/issues"


class BudgetdiffError(Exception):
    """An expected failure: the message says what, where and how to fix it."""

    exit_code = 2

    def lines(self) -> list[str]:
        """The message as the lines to print: one, whatever a file's text put in it (a newline
        inside a value quoted from a results file must not start a line of its own), with any
        `Bearer`/`Basic` credential in it redacted."""
        return [redact(str(self))]


class UsageError(BudgetdiffError):
    """Bad command-line arguments."""


class InputError(BudgetdiffError):
    """A results file that cannot be read or does not make sense."""


class ReadError(InputError):
    """A reader refuses a results file: the message names the format and the file, and where
    it knows them the line or the field, and says how to fix it."""

    def __init__(
        self, message: str, *, file: str, line: int | None = None, field: str | None = None
    ) -> None:
        super().__init__(message)
        self.file = file
        self.line = line
        self.field = field

    @classmethod
    def at(cls, fmt: str, file: str, message: str) -> ReadError:
        """The one-line error of a reader: `<format>: <file>: <what, where, how to fix>`."""
        return cls(f"{fmt}: {file}: {message}", file=file)


class ReaderBug(Exception):
    """An exception a reader did not expect: a bug in budgetdiff, not bad input. Not a
    BudgetdiffError: it ends as `BUG_EXIT_CODE` with `bug_message`, never as exit 2."""

    def __init__(self, file: str, format: str, original: BaseException) -> None:
        super().__init__(f"{type(original).__name__} in the {format} reader reading {file}")
        self.file = file
        self.format = format
        self.original = original


class BudgetError(BudgetdiffError):
    """An invalid budget file: every problem found, one per line of the message."""

    def lines(self) -> list[str]:
        lines = [line for line in str(self).split("\n") if line.strip()] or [str(self)]
        return [redact(line) for line in lines]


class GitError(BudgetdiffError):
    """`git show REF:FILE` failed."""


class PublishError(BudgetdiffError):
    """Publishing to GitHub failed; callers degrade this to a warning, never an exit code."""


def bug_message(exc: BaseException) -> str:
    """One line for an unexpected exception: what it is, where it was raised, where to report.
    A reader's bug names the file and the format, and the frame in the reader that raised it."""
    if isinstance(exc, ReaderBug):
        return _bug_line(
            exc.original, f"the {exc.format} reader failed on {exc.file}, not your input"
        )
    return _bug_line(exc, "not in your input")


def _bug_line(exc: BaseException, whose: str) -> str:
    import traceback  # a bug's line only: every run imports this module

    frames = traceback.extract_tb(exc.__traceback__)
    ours = [(f, name) for f in frames if (name := _in_package(f.filename)) is not None]
    at = ""
    if ours:  # the innermost frame of budgetdiff's own code
        at = f" at {ours[-1][1]}:{ours[-1][0].lineno}"
    elif frames:  # none of ours: the file's name alone, no path of the user's machine
        last = frames[-1]
        at = f" at {last.filename.replace(chr(92), '/').rsplit('/', 1)[-1]}:{last.lineno}"
    return redact(
        f"a bug in budgetdiff, {whose} ({type(exc).__name__}{at}: {exc}); please "
        f"report it with this line and the command at {BUG_REPORT_URL}"
    )


def _in_package(filename: str) -> str | None:
    """`budgetdiff/formats/registry.py` for a file of the installed package (the folder this
    module is in), else None: a clone in a folder named `budgetdiff` holds its tests under
    `budgetdiff/tests/`, which are not the tool's code."""
    from pathlib import Path

    package = Path(__file__).resolve().parent
    try:
        inside = Path(filename).resolve().relative_to(package)
    except (ValueError, OSError):
        return None
    return "/".join((package.name, *inside.parts))


# `Bearer <token>` and `Basic <base64 of user:password>` as an Authorization header writes them
_BEARER = re.compile(r"(?i)\b(bearer\s+)([A-Za-z0-9._~+/=-]{8,})")
_BASIC = re.compile(r"(?i)\b(basic\s+)([A-Za-z0-9+/]{4,}={0,2})")
REDACTED = "***"


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """`text` with every credential written `***`: each of `secrets` (longest first, so no part
    of one shows), and whatever follows `Bearer` or a `Basic` that is base64 of `user:password`
    (a header an error or a server's answer echoes). Every message that may quote a request or
    an answer is worded through here: errors, log lines, annotations."""
    for secret in sorted({s for s in secrets if s}, key=len, reverse=True):
        text = text.replace(secret, REDACTED)
    text = _BEARER.sub(lambda m: m.group(1) + REDACTED, text)
    return _BASIC.sub(
        lambda m: m.group(1) + REDACTED if _is_basic(m.group(2)) else m.group(0), text
    )


def _is_basic(word: str) -> bool:
    try:
        return b":" in base64.b64decode(word, validate=True)
    except ValueError:  # binascii.Error is one
        return False
