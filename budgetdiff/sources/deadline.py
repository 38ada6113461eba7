"""The one retry-and-deadline helper of every network client: Prometheus, the GitHub API, the
PR comment and the artifact download (the history store's `git` calls can take a `Deadline`
and give each call its `remaining()` as a timeout).

A network step is what a user waits for as one thing: reading one side from Prometheus,
posting the PR comment, finding and downloading the base artifact. Its `Deadline` covers
every request of the step, every read of a slow answer and every wait between tries: a
request's own timeouts are cut to what is left, and a wait that would pass the deadline is
not waited. `BUDGETDIFF_NETWORK_DEADLINE` (seconds, default 120: well under a CI step's
patience, far over a healthy step's few seconds) sets it; when it runs out the message names
the host and the step.

`Retry` is the one backoff: waits that double from the policy's first one up to its cap, each
drawn at random in its upper half (jitter, so jobs that failed together do not retry
together), a server's `retry-after` (or rate-limit reset) honoured up to `max_wait_s`.
"""

from __future__ import annotations

import contextlib
import math
import random
import socket
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from typing import Any

from budgetdiff.errors import UsageError
from budgetdiff.numbers import given

DEADLINE_ENV = "BUDGETDIFF_NETWORK_DEADLINE"
DEFAULT_DEADLINE_S = 120.0
MAX_DEADLINE_S = 3600.0  # an hour: past that a CI job is better off failing
# statuses worth another try: rate limited, or a server (or its proxy) that may answer later
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
# a timeout cut to what is left fires a hair before the deadline: that is the deadline too
SLACK_S = 0.05


@dataclass(frozen=True, slots=True)
class Policy:
    """How often and how long a client tries again: `attempts` tries in all; waits from
    `first_s`, doubling, at most `cap_s`; a server asking for more than `max_wait_s` is not
    waited for (a rate limit reset an hour away is an error now, not a stalled job)."""

    attempts: int
    first_s: float
    cap_s: float
    max_wait_s: float = 120.0
    # draw a wait anywhere below the backoff, not in its upper half: writers racing for one
    # git branch spread out (full jitter)
    full_jitter: bool = False

    def backoff_s(self, attempt: int) -> float:
        """The longest wait after try `attempt` (1 is the first); `Retry` draws below it."""
        return min(self.cap_s, self.first_s * 2.0 ** max(0, attempt - 1))


# every client's policy, in one place
PROMETHEUS = Policy(attempts=3, first_s=0.5, cap_s=2.0)
GITHUB_API = Policy(attempts=5, first_s=1.0, cap_s=8.0)
# a comment whose POST failed with a 5xx: look again and maybe post again, a few times
COMMENT = Policy(attempts=3, first_s=1.0, cap_s=4.0)
ARTIFACT = Policy(attempts=5, first_s=1.0, cap_s=8.0)
# the history branch: tried until the deadline (github/git.py); after a lost push race the branch
# is free again at once, so only the jitter matters
HISTORY = Policy(attempts=1_000_000, first_s=0.25, cap_s=5.0, full_jitter=True)
HISTORY_BEHIND = Policy(attempts=1_000_000, first_s=0.25, cap_s=1.0, full_jitter=True)


def deadline_seconds(environ: Mapping[str, str]) -> float:
    """The deadline of each network step: `BUDGETDIFF_NETWORK_DEADLINE`, else 120 s."""
    text = environ.get(DEADLINE_ENV, "").strip()
    if not text:
        return DEFAULT_DEADLINE_S
    try:
        seconds = float(text)
    except ValueError:
        seconds = math.nan
    if not (math.isfinite(seconds) and 0 < seconds <= MAX_DEADLINE_S):
        raise UsageError(
            f"{DEADLINE_ENV}={text[:40]!r}: give the seconds one network step may take in all, "
            f"more than 0 and at most {given(MAX_DEADLINE_S)} (default {given(DEFAULT_DEADLINE_S)})"
        )
    return seconds


@dataclass(frozen=True, slots=True)
class Deadline:
    """When one network step must be done (`ends`, on `clock`), and what to say if not."""

    step: str  # what the user waits for, e.g. "reading the head side"
    host: str  # where it is asked, e.g. "prometheus.example.com:9090"
    seconds: float
    ends: float
    clock: Callable[[], float] = field(default=time.monotonic, repr=False, compare=False)

    @classmethod
    def start(
        cls,
        step: str,
        host: str,
        seconds: float,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> Deadline:
        return cls(step, host, seconds, clock() + seconds, clock)

    def remaining(self) -> float:
        """Seconds left (0 once passed): a subprocess's or a request's timeout."""
        return max(0.0, self.ends - self.clock())

    @property
    def expired(self) -> bool:
        return self.remaining() <= SLACK_S

    def cap(self, seconds: float) -> float:
        """A request's own timeout, cut to what is left (never 0, which would mean none)."""
        return max(0.001, min(seconds, self.remaining()))

    @contextlib.contextmanager
    def watch(self, hang_up: Callable[[], None]) -> Iterator[None]:
        """Call `hang_up` (from a timer thread) if the block still runs at the deadline: what
        ends a body that trickles in faster than any per-read timeout."""
        timer = threading.Timer(self.remaining(), hang_up)
        timer.daemon = True
        timer.start()
        try:
            yield
        finally:
            timer.cancel()

    def message(self, host: str | None = None) -> str:
        """One line for a step that ran out of time: the host asked (`host`, else the step's),
        the step, the fix."""
        return (
            f"{host or self.host}: {self.step} did not finish within its {given(self.seconds)} s "
            f"deadline ({DEADLINE_ENV} sets it)"
        )


@dataclass(frozen=True, slots=True)
class Retry:
    """The tries of one step: its policy and its deadline; `sleep` and `rng` are the seams
    tests fill (a list's append, a seeded generator)."""

    policy: Policy
    deadline: Deadline
    sleep: Callable[[float], None] = field(default=time.sleep, repr=False, compare=False)
    rng: random.Random = field(default_factory=random.Random, repr=False, compare=False)

    def wait(self, attempt: int, *, after: float | None = None) -> bool:
        """After try `attempt` failed: wait and say True, or say False (without waiting)
        when that was the last try, the server asks for a wait over `max_wait_s`, or the wait
        would end past the deadline. `after`: the server's `retry-after`, in seconds."""
        if attempt >= self.policy.attempts:
            return False
        seconds = self.delay_s(attempt, after)
        if seconds is None or seconds >= self.deadline.remaining():
            return False
        self.sleep(seconds)
        return True

    def delay_s(self, attempt: int, after: float | None = None) -> float | None:
        """The wait after try `attempt`: the server's, with up to a tenth more (at most 1 s);
        else the backoff, drawn in its upper half (anywhere below it with `full_jitter`).
        None: too long to wait."""
        if after is not None:
            if after > self.policy.max_wait_s:
                return None
            return after + self.rng.uniform(0.0, min(1.0, after / 10))
        longest = self.policy.backoff_s(attempt)
        return self.rng.uniform(0.0 if self.policy.full_jitter else longest / 2, longest)


def hang_up(response: Any) -> Callable[[], None]:
    """For `Deadline.watch`: shut an httpx response's socket, which wakes the read blocked on
    it (the read then fails, and the client says the deadline). No socket (a test's
    MockTransport): nothing to do."""

    def shut() -> None:
        stream = response.extensions.get("network_stream")
        sock = stream.get_extra_info("socket") if stream is not None else None
        if isinstance(sock, socket.socket):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    return shut


def retry_after(headers: Mapping[str, str], now: float) -> float | None:
    """Seconds a server asks to wait: `retry-after` (seconds or an HTTP date), or a GitHub
    rate limit's `x-ratelimit-reset` (epoch seconds) once `x-ratelimit-remaining` is 0."""
    value = headers.get("retry-after")
    if value is not None:
        try:
            return max(0.0, float(value))
        except ValueError:
            pass
        try:
            return max(0.0, parsedate_to_datetime(value).timestamp() - now)
        except (TypeError, ValueError, IndexError):
            return None
    reset = headers.get("x-ratelimit-reset")
    if reset is not None and headers.get("x-ratelimit-remaining") == "0":
        try:
            return max(0.0, float(reset) - now) + 1.0
        except ValueError:
            return None
    return None
