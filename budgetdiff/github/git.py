"""Running `git` against a remote within a deadline: every call has a timeout (what is left of
the total, at most `CALL_TIMEOUT_S`), runs in a process group of its own so that a stalled
`git-remote-https` helper dies with it, and fails as a `GitFailure` that says whether trying
again may help (a concurrent push, a 5xx, a rate limit, a stall) and names the host and step.

`retry` is the loop around it, on the one `Deadline` and the `HISTORY` policies of
`budgetdiff.sources.deadline` (what every HTTP client uses too): backoff with full jitter
until the deadline.
"""

from __future__ import annotations

import os
import random
import re
import signal
import subprocess
import time
from collections.abc import Callable, Mapping
from typing import TypeVar
from urllib.parse import urlsplit

from budgetdiff.errors import PublishError
from budgetdiff.numbers import given
from budgetdiff.sources.deadline import HISTORY, HISTORY_BEHIND, Deadline, Retry

# The default of the whole history read or write: well under a CI step's patience (GitHub's
# default step timeout is 6 hours; a job's summary waits on this step), well over the few
# seconds a push takes. `history-timeout` sets it.
DEFAULT_DEADLINE_S = 60.0
CALL_TIMEOUT_S = 30.0  # one git call, within the deadline
MIN_CALL_S = 1.0  # no attempt starts with less than this left

# What a rejected push or a failed transfer prints, when trying again may help.
_BEHIND = re.compile(
    r"non-fast-forward|fetch first|\[rejected\]|stale info|cannot lock ref|failed to update ref"
    r"|incorrect old value|reference already exists"
)
_HTTP_STATUS = re.compile(r"(?:returned error:|HTTP) (\d{3})")
_TRANSIENT = re.compile(
    r"RPC failed|early EOF|unexpected disconnect|remote end hung up|Connection reset|"
    r"Failed to connect|Couldn't connect|Operation timed out|SSL_read|GnuTLS recv error"
)
T = TypeVar("T")


class GitFailure(PublishError):
    """A git call that failed; `retryable` when the same call a little later may succeed."""

    def __init__(self, message: str, *, retryable: bool, behind: bool = False) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.behind = behind  # a push that lost a race: fetch again, then push


def where(remote: str) -> str:
    """The host a remote is on (`github.com`), or the remote itself when it is a path."""
    host = urlsplit(remote).hostname if "://" in remote else None
    return host or remote


def classify(step: str, stderr: str) -> GitFailure:
    """A failed git call as a GitFailure: `step` ("git push to github.com") and git's last
    line, retryable when it lost a race, hit a 5xx, a 403/429 (GitHub's rate limits) or a
    broken connection."""
    lines = [x.strip() for x in stderr.strip().splitlines() if x.strip()]
    last = lines[-1] if lines else "unknown error"
    if _BEHIND.search(stderr):
        return GitFailure(f"{step}: another run pushed first ({last})", retryable=True, behind=True)
    status = _HTTP_STATUS.search(stderr)
    code = int(status.group(1)) if status else 0
    if code >= 500 or code in (403, 429):
        said = f"HTTP {code}" + (
            " (a rate limit, or the token may not write)" if code == 403 else ""
        )
        return GitFailure(f"{step}: {said}: {last}", retryable=True)
    return GitFailure(f"{step}: {last}", retryable=code == 0 and bool(_TRANSIENT.search(stderr)))


def run(
    args: list[str],
    *,
    cwd: str,
    env: Mapping[str, str],
    timeout: float,
    stdin: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """`git ARGS` in `cwd`; on `timeout` its whole process group is killed and
    `subprocess.TimeoutExpired` raised (the helpers git starts hold no pipe open after it)."""
    with subprocess.Popen(
        ["git", *args],
        cwd=cwd,
        stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        errors="surrogateescape",
        env=dict(env),
        start_new_session=True,
    ) as proc:
        try:
            out, err = proc.communicate(stdin, timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            raise
        return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def retry(
    attempt: Callable[[int], T],
    deadline: Deadline,
    what: str,
    *,
    sleep: Callable[[float], None] = time.sleep,
    rng: random.Random | None = None,
) -> tuple[T, int]:
    """(`attempt(n)`'s result, n): called again after a retryable GitFailure, with backoff
    and full jitter, while the deadline leaves time; else a PublishError naming `what`, how
    many attempts in how long, and the last failure."""
    rng = rng or random.Random()
    n = 0
    while True:
        n += 1
        try:
            return attempt(n), n
        except GitFailure as failure:
            if not failure.retryable:
                raise
            policy = HISTORY_BEHIND if failure.behind else HISTORY
            wait = Retry(policy, deadline, sleep, rng).delay_s(n) or 0.0
            if deadline.remaining() < wait + MIN_CALL_S:
                spent = deadline.seconds - deadline.remaining()
                raise PublishError(
                    f"{what}: gave up after {n} attempts in {given(round(spent))} s "
                    f"(the deadline is {given(deadline.seconds)} s, input `history-timeout`); "
                    f"last: {failure}"
                ) from None
            sleep(wait)
