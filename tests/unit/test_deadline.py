"""The one retry-and-deadline helper (sources/deadline.py), on a clock the test moves: the
deadline cuts every wait and timeout, the backoff doubles with jitter in its upper half, a
server's retry-after is honoured up to the policy's bound, and the setting is checked."""

from __future__ import annotations

import random
from datetime import datetime, timezone
from email.utils import format_datetime

import numpy as np
import pytest

from budgetdiff.errors import UsageError
from budgetdiff.sources.deadline import (
    DEADLINE_ENV,
    DEFAULT_DEADLINE_S,
    Deadline,
    Policy,
    Retry,
    deadline_seconds,
    retry_after,
)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def retry(policy: Policy, seconds: float = 60.0, seed: int = 7) -> tuple[Retry, Clock]:
    clock = Clock()
    deadline = Deadline.start("posting the PR comment", "api.example.com", seconds, clock=clock)
    return Retry(policy, deadline, sleep=clock.sleep, rng=random.Random(seed)), clock


def test_the_deadline_counts_down_and_cuts_timeouts() -> None:
    clock = Clock()
    d = Deadline.start("reading the head side", "prom.example:9090", 10.0, clock=clock)
    assert d.remaining() == 10.0 and d.cap(30.0) == 10.0 and d.cap(5.0) == 5.0
    clock.now += 7.5
    assert d.remaining() == 2.5 and d.cap(30.0) == 2.5 and not d.expired
    clock.now += 5
    assert d.remaining() == 0.0 and d.expired and d.cap(30.0) > 0  # 0 would mean no timeout
    assert d.message() == (
        "prom.example:9090: reading the head side did not finish within its 10 s deadline "
        f"({DEADLINE_ENV} sets it)"
    )


def test_the_backoff_doubles_to_its_cap_with_jitter_in_the_upper_half() -> None:
    policy = Policy(attempts=6, first_s=1.0, cap_s=8.0)
    assert [policy.backoff_s(a) for a in range(1, 6)] == [1.0, 2.0, 4.0, 8.0, 8.0]
    r, _ = retry(policy)
    for attempt in (1, 3, 5):
        draws = np.array([r.delay_s(attempt) for _ in range(2000)])
        longest = policy.backoff_s(attempt)
        assert draws.min() >= longest / 2 and draws.max() <= longest
        # spread over the whole upper half, not one value: jobs that failed together part
        assert np.quantile(draws, 0.1) < 0.6 * longest < 0.9 * longest < np.quantile(draws, 0.9)


def test_no_wait_after_the_last_try() -> None:
    r, clock = retry(Policy(attempts=3, first_s=1.0, cap_s=8.0))
    assert r.wait(1) and r.wait(2)
    assert not r.wait(3)
    assert 1.5 <= clock.now - 1000.0 <= 3.0  # 0.5-1 s, then 1-2 s


def test_a_wait_past_the_deadline_is_not_waited() -> None:
    r, clock = retry(Policy(attempts=10, first_s=4.0, cap_s=4.0), seconds=5.0)
    assert r.wait(1, after=3.0)  # 3-3.3 s of the 5
    assert not r.wait(2)  # another 2-4 s would end past it
    assert clock.now - 1000.0 <= 3.3


def test_retry_after_is_honoured_up_to_the_policys_bound() -> None:
    r, clock = retry(Policy(attempts=5, first_s=1.0, cap_s=8.0, max_wait_s=30.0), seconds=100)
    assert r.wait(1, after=20.0)
    assert 20.0 <= clock.now - 1000.0 <= 21.0  # the server's wait, a little jitter on top
    assert not r.wait(2, after=31.0)  # longer than the policy waits for


def test_retry_after_in_seconds_as_a_date_and_as_a_rate_limit_reset() -> None:
    now = 1_800_000_000.0
    assert retry_after({"retry-after": "7"}, now) == 7.0
    date = format_datetime(datetime.fromtimestamp(now + 42, timezone.utc), usegmt=True)
    assert retry_after({"retry-after": date}, now) == pytest.approx(42.0)
    reset = {"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(int(now) + 9)}
    assert retry_after(reset, now) == 10.0  # the reset, and a second for the clocks
    assert retry_after({"x-ratelimit-remaining": "3", "x-ratelimit-reset": "1"}, now) is None
    assert retry_after({"retry-after": "soon"}, now) is None


def test_the_setting() -> None:
    assert deadline_seconds({}) == DEFAULT_DEADLINE_S == 120.0
    assert deadline_seconds({DEADLINE_ENV: " 2.5 "}) == 2.5
    for bad in ("0", "-1", "nan", "inf", "3601", "two"):
        with pytest.raises(UsageError, match=DEADLINE_ENV):
            deadline_seconds({DEADLINE_ENV: bad})
