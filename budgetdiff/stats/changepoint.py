"""Change points of a series of runs: E-Divisive with means (Matteson and James, 2014), as
MongoDB's CI, Hunter and Apache Otava use it on performance histories.

The statistic of a split at tau (left X, right Y, alpha = 1):
    Q(tau) = m n / (m + n) * (2 E|X - Y| - E|X - X'| - E|Y - Y'|)
is the energy distance between the two sides: large when their levels differ. The best split
is kept when a permutation test says it is larger than the best split of shuffled series would
be (p below `alpha`), and both halves are searched again (binary segmentation). Computes only:
takes values, returns indices. Deterministic: the permutations come from a fixed seed.
"""

from __future__ import annotations

import numpy as np

from budgetdiff.table import FloatArray

MIN_SEGMENT = 3  # runs on each side of a change point
PERMUTATIONS = 199
SEED = 20260514


def best_split(x: FloatArray, min_segment: int = MIN_SEGMENT) -> tuple[int, float]:
    """(tau, Q(tau)) maximising the divergence of x[:tau] and x[tau:]; (0, 0) if too short."""
    n = x.size
    if n < 2 * min_segment:
        return 0, 0.0
    d = np.abs(x[:, None] - x[None, :])
    # prefix sums: block(a, b) = sum of d[a:b, a:b]
    s = np.zeros((n + 1, n + 1))
    s[1:, 1:] = d.cumsum(0).cumsum(1)
    taus = np.arange(min_segment, n - min_segment + 1)
    total = s[n, n]
    within_left = s[taus, taus]
    within_right = total - s[taus, n] - s[n, taus] + within_left
    cross = (total - within_left - within_right) / 2.0
    m, k = taus.astype(float), (n - taus).astype(float)
    q = (m * k / n) * (
        2.0 * cross / (m * k) - within_left / (m * (m - 1)) - within_right / (k * (k - 1))
    )
    i = int(np.argmax(q))
    return int(taus[i]), float(q[i])


def significant(x: FloatArray, q: float, alpha: float, rng: np.random.Generator) -> bool:
    """Is Q as large as this rarely (p < alpha) among the best splits of shuffled series?"""
    allowed = alpha * (PERMUTATIONS + 1) - 1  # more shuffles at least as large: not significant
    larger = 0
    for _ in range(PERMUTATIONS):
        if best_split(rng.permutation(x))[1] >= q:
            larger += 1
            if larger >= allowed:
                return False  # decided: stop early (noise is the common case)
    return True


def change_points(values: FloatArray, alpha: float = 0.05) -> list[int]:
    """Indices i where the level changes between values[i - 1] and values[i], in order."""
    x = np.asarray(values, dtype=float)
    if x.size < 2 * MIN_SEGMENT or not np.isfinite(x).all() or np.ptp(x) == 0:
        return []
    rng = np.random.default_rng(SEED)
    found: list[int] = []
    pending = [(0, x.size)]
    while pending:
        start, stop = pending.pop()
        part = x[start:stop]
        tau, q = best_split(part)
        if tau and q > 0 and significant(part, q, alpha, rng):
            found.append(start + tau)
            pending += [(start, start + tau), (start + tau, stop)]
    return sorted(found)
