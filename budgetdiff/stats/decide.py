"""The one place that turns changes into verdicts: regression, improvement, none or
inconclusive, significant over the rows of one family (the joint step-down's adjusted p-values,
or Holm's correction)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from budgetdiff.stats.change import Change
from budgetdiff.stats.joint import SideLayout, block_length, family_p_values
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
    `adjusted`: the changes' p-values already adjusted over their family (the joint step-down,
    `joint.family_p_values`), significant at 1 - confidence; without them, Holm's correction.
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


def joint_p_values(
    changes: Sequence[Change],
    base: Sequence[FloatArray],
    head: Sequence[FloatArray],
    *,
    base_runs: np.ndarray | None = None,
    head_runs: np.ndarray | None = None,
) -> list[float | None] | None:
    """The changes' p-values adjusted over their family by the joint step-down (one family:
    the changes given, with each row's values on each side, in arrival order, and each
    request's run on a side of several). The units resampled are requests, or blocks of
    sqrt(n) where a row of that side is autocorrelated. None when a change has a p-value
    but no tests to resample (from histograms): `decide` then takes Holm's correction."""
    if any(c.p_value is not None and not c.tests for c in changes):
        return None
    layouts = []
    for k, values, runs in ((0, base, base_runs), (1, head, head_runs)):
        n = max((len(v) for v in values), default=0)
        correlated = any(c.autocorrelated[k] for c in changes)
        layouts.append(SideLayout(runs=runs, block=block_length(n, correlated)))
    return family_p_values(
        [c.tests for c in changes], base, head, base_layout=layouts[0], head_layout=layouts[1]
    )
