"""The one place that turns changes into verdicts: regression, improvement, none or
inconclusive, significant over the rows of one family (the permutation step-down's adjusted
p-values, or Holm's correction)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from budgetdiff import numbers
from budgetdiff.stats import permutation
from budgetdiff.stats.change import Change
from budgetdiff.stats.permutation import Pairs
from budgetdiff.table import FloatArray


def holm(p_values: Sequence[float | None], alpha: float) -> list[bool]:
    """Which p-values are significant after Holm's step-down correction at family level alpha.

    None entries are never significant and do not count in the family.
    """
    tested = sorted((pv, i) for i, pv in enumerate(p_values) if pv is not None)
    m = len(tested)
    out = [False] * len(p_values)
    for rank, (pv, i) in enumerate(tested):
        if pv > alpha / (m - rank):
            break
        out[i] = True
    return out


def large_enough(c: Change, min_change: float, min_ms: float) -> bool:
    """The change is at least `min_change` of base and `min_ms`, either way: the size half of
    the rule, which `decide` combines with significance."""
    return c.delta != 0.0 and abs(c.delta) >= max(min_change * abs(c.base), min_ms)


def interval_agrees(c: Change) -> bool:
    """The change's interval lies wholly on the side of 0 its estimate is on, or there is no
    interval to disagree (a change tested on histogram buckets alone)."""
    if c.ci is None:
        return True
    return c.ci[0] > 0.0 if c.delta > 0.0 else c.ci[1] < 0.0


def decide(
    changes: Sequence[Change],
    *,
    min_change: float,
    min_ms: float | Sequence[float],
    confidence: float,
    adjusted: Sequence[float | None] | None = None,
) -> list[str]:
    """The one place that decides, per change: regression, improvement, none or inconclusive.

    A regression (improvement) is at least max(min_change * |base|, min_ms) up (down),
    significant after Holm over `changes` at 1 - confidence, and its interval lies above
    (below) 0: a row never reads "regression" beside an interval that says "maybe no change".
    Too few requests -> inconclusive.
    `min_ms` may be one floor per change (per-token rows take none: 5 ms is a whole token).
    `adjusted`: the changes' p-values already adjusted over their family (the permutation
    step-down, `family_test`), significant at 1 - confidence; without them, Holm's correction.
    """
    alpha = 1.0 - confidence
    significant = (
        holm([c.p_value for c in changes], alpha)
        if adjusted is None
        else [a is not None and a <= alpha for a in adjusted]
    )
    floors = [float(min_ms)] * len(changes) if isinstance(min_ms, int | float) else list(min_ms)
    out: list[str] = []
    for c, sig, floor in zip(changes, significant, floors, strict=True):
        if c.needed is not None or c.p_value is None:
            out.append("inconclusive")
            continue
        if sig and large_enough(c, min_change, floor) and interval_agrees(c):
            out.append("regression" if c.delta > 0.0 else "improvement")
        else:
            out.append("none")
    return out


@dataclass(frozen=True, slots=True)
class FamilyTest:
    """How one family's rows were tested together: by the permutation step-down, with each
    row's adjusted p-value (None: a row without a test), or by Holm's correction, and why."""

    method: str  # PERMUTATION or HOLM
    adjusted: list[float | None] | None  # None with Holm: `decide` corrects the p-values
    why: str | None = None  # why not by permutation


PERMUTATION = "permutation"
HOLM = "holm"


def family_test(
    changes: Sequence[Change],
    base: Sequence[FloatArray],
    head: Sequence[FloatArray],
    p: float,
    *,
    requests: tuple[int, int],
    pairs: Sequence[Pairs | None] | None = None,
    several_runs: bool = False,
    level: float | None = None,
) -> FamilyTest:
    """The test of one family (the changes given, each row's values on each side in arrival
    order, `pairs` as `compare_percentile` took them): the permutation step-down over whole
    requests (`stats.permutation`) where the requests are exchangeable, else Holm's correction.
    Only rows of one value per request (`requests`: each side's count) are dealt as requests;
    rows of other values (pooled inter-token gaps, which cluster within their requests) are
    tested by Holm's correction, the two parts splitting the level by their share of the rows
    (Bonferroni), and each row's adjusted p-value is scaled so that it is still held to the
    whole level. Rows without a test (too few requests) stay out of the family. `level`: the
    family's, at which the permutations may stop early (`permutation.step_down`)."""
    rows = [i for i, c in enumerate(changes) if c.p_value is not None and c.needed is None]
    dealt = [i for i in rows if (len(base[i]), len(head[i])) == requests]
    if not dealt:
        return FamilyTest(HOLM, None, _why_not(requests, several_runs, False) if rows else None)
    autocorrelated = any(any(changes[i].autocorrelated) for i in rows)
    if not permutation.applies(requests, several_runs=several_runs, autocorrelated=autocorrelated):
        return FamilyTest(HOLM, None, _why_not(requests, several_runs, autocorrelated))
    chosen = [pairs[i] for i in dealt] if pairs is not None else None
    share = len(rows) / len(dealt)  # the dealt rows' part of the level is 1 / share of it
    adjusted = permutation.step_down(
        [base[i] for i in dealt],
        [head[i] for i in dealt],
        p,
        pairs=chosen,
        level=level / share if level is not None else None,
    ).bounded()
    out: list[float | None] = [None] * len(changes)
    for i, a in zip(dealt, adjusted, strict=True):
        out[i] = min(1.0, a * share)
    pooled = [i for i in rows if i not in dealt]
    if pooled:
        holm = holm_adjusted([changes[i].p_value for i in pooled])
        for i, h in zip(pooled, holm, strict=True):
            out[i] = None if h is None else min(1.0, h * len(rows) / len(pooled))
    return FamilyTest(PERMUTATION, out)


def _why_not(requests: tuple[int, int], several_runs: bool, autocorrelated: bool) -> str:
    """Why a family's requests are not dealt by permutation (`permutation.applies`)."""
    if several_runs:
        return "several runs a side: their drift is in the intervals, not in a permutation"
    if autocorrelated:
        return "requests correlated in arrival order: a permutation would understate the noise"
    n = sum(requests)
    if n > permutation.MAX_REQUESTS:
        most = numbers.count(permutation.MAX_REQUESTS)
        return f"{numbers.count(n)} requests, more than the {most} it permutes"
    return "no row of one value per request (pooled inter-token gaps cluster in their requests)"


def holm_adjusted(p_values: Sequence[float | None]) -> list[float | None]:
    """Holm's adjusted p-values (significant where at most the family level, as `holm`)."""
    tested = sorted((pv, i) for i, pv in enumerate(p_values) if pv is not None)
    m = len(tested)
    out: list[float | None] = [None] * len(p_values)
    running = 0.0
    for rank, (pv, i) in enumerate(tested):
        running = max(running, min(1.0, (m - rank) * pv))
        out[i] = running
    return out
