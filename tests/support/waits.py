"""The waits a client's retries took (its `sleep` seam's record), against what the one retry
helper (budgetdiff/sources/deadline.py) promises: a backoff drawn in the upper half of its
longest wait (jitter), a server's `retry-after` honoured with at most a tenth (1 s) more."""

from __future__ import annotations

from collections.abc import Sequence


def backoff(waits: Sequence[float], longest: Sequence[float]) -> bool:
    """Each wait in [longest / 2, longest], one for each."""
    return len(waits) == len(longest) and all(
        top / 2 <= w <= top for w, top in zip(waits, longest, strict=True)
    )


def honoured(waits: Sequence[float], asked: Sequence[float]) -> bool:
    """Each wait at least what the server asked, at most a tenth (1 s) more."""
    return len(waits) == len(asked) and all(
        a <= w <= a + min(1.0, a / 10) for w, a in zip(waits, asked, strict=True)
    )
