"""What if: the SLO metrics recomputed with some slices changed, request by request, and the
back-of-envelope estimate TTFT + tokens / rate + tail.

Pure numpy, no I/O: `outcome` and `fix_first` take prepared per-request values, `estimate` takes
numbers.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from budgetdiff import stats
from budgetdiff.budget.model import Budget
from budgetdiff.measure.prepare import Prepared, good_with
from budgetdiff.table import FloatArray

FASTER = 0.9  # "what to fix first" asks what 10% faster would buy


@dataclass(frozen=True)
class Change:
    """One slice changed in every request: new = max(0, old x factor + add_ms)."""

    factor: float = 1.0
    add_ms: float = 0.0


@dataclass(frozen=True)
class Outcome:
    """The total's and TTFT's p-th percentile and the SLO attainment of one (changed) run."""

    total_ms: float
    ttft_ms: float | None
    attainment_pct: float | None  # good requests / all requests, percent
    clipped: tuple[str, ...] = ()  # slices that `add_ms` would have taken below 0 ms


@dataclass(frozen=True)
class FixFirst:
    """What making one slice 10% faster buys, on the measured requests."""

    slice: str
    total_change_ms: float  # change of the total's p-th percentile (negative: faster)
    attainment_change_pct: float | None  # change of SLO attainment, percentage points


class Scratch:
    """Arrays of one run's length that the what-ifs of that run borrow and give back: each of
    `fix_first`'s outcomes wrote three or four arrays of every request, and fresh ones cost
    their pages each time (fix_first at ten million requests: 0.58 -> 0.50 s, a fifth of the
    page faults)."""

    def __init__(self, n: int) -> None:
        self._n = n
        self._free: list[FloatArray] = []
        self._lent: list[FloatArray] = []

    def take(self) -> FloatArray:
        """An array of the run's length, its values not set."""
        a = self._free.pop() if self._free else np.empty(self._n)
        self._lent.append(a)
        return a

    def add(self, a: FloatArray, b: FloatArray) -> FloatArray:
        """a + b: into `a` when it is lent (this what-if's own), else into one taken."""
        mine = any(a is x for x in self._lent)
        return np.add(a, b, out=a if mine else self.take())

    def give_back(self) -> None:
        """Every array taken since the last `give_back`: the what-if holds none of them now."""
        self._free.extend(self._lent)
        self._lent.clear()


def outcome(
    prep: Prepared,
    budget: Budget,
    parts: Mapping[str, FloatArray],
    changes: Mapping[str, Change] | None = None,
    scratch: Scratch | None = None,
) -> Outcome:
    """Recompute the run with `changes` applied to the slices in `parts` (per request, adding
    up to the total); TTFT changes with the slices before the first token (`prep.ttft_slices`).
    `scratch`: the arrays to work in (the run's what-ifs one after another share one)."""
    p = budget.percentile
    total = prep.metrics["total"]
    ttft = prep.metrics.get("ttft")
    work = scratch if scratch is not None else Scratch(len(total))
    clipped = []
    slices = dict(prep.slices)
    for name, ch in (changes or {}).items():
        old = parts[name]
        # the same operations as old * factor + add_ms, clipped at 0, in an array of our own
        new = np.multiply(old, ch.factor, out=work.take())
        np.add(new, ch.add_ms, out=new)
        if np.fmin.reduce(new, initial=np.inf) < 0:  # a value below 0 (NaN aside), no mask
            clipped.append(name)
            np.maximum(new, 0.0, out=new)
        if name in slices:  # the change in the same array: `new` is not kept
            diff = np.subtract(new, old, out=new)
            slices[name] = work.add(slices[name], diff)
        else:
            diff = np.subtract(new, old, out=work.take())
            slices[name] = new
        total = work.add(total, diff)
        if ttft is not None and name in prep.ttft_slices:
            ttft = work.add(ttft, diff)
    good = good_with(prep, budget, total, ttft, slices)
    out = Outcome(
        total_ms=stats.percentile(total, p),
        ttft_ms=stats.percentile(ttft, p) if ttft is not None and len(ttft) else None,
        attainment_pct=100.0 * float(good.sum()) / prep.requests
        if good is not None and prep.requests
        else None,
        clipped=tuple(clipped),
    )
    work.give_back()
    return out


def fix_first(
    prep: Prepared, budget: Budget, parts: Mapping[str, FloatArray]
) -> tuple[FixFirst, ...]:
    """Each slice 10% faster in every request, the rest as measured: how much the total's p-th
    percentile and the attainment improve; the largest improvement of the percentile first
    (then of the attainment, then the slice order)."""
    if not parts or not len(prep.metrics["total"]):
        return ()
    scratch = Scratch(len(prep.metrics["total"]))
    now = outcome(prep, budget, parts, scratch=scratch)
    out = []
    for name in parts:
        after = outcome(prep, budget, parts, {name: Change(factor=FASTER)}, scratch)
        att = (
            after.attainment_pct - now.attainment_pct
            if after.attainment_pct is not None and now.attainment_pct is not None
            else None
        )
        out.append(FixFirst(name, after.total_ms - now.total_ms, att))
    order = list(parts)
    return tuple(
        sorted(
            out,
            key=lambda f: (
                f.total_change_ms,
                -(f.attainment_change_pct or 0.0),
                order.index(f.slice),
            ),
        )
    )


@dataclass(frozen=True, slots=True)
class Estimate:
    """TTFT + (tokens - 1) / rate + tail: the first token is in TTFT."""

    ttft_ms: float
    per_token_ms: float
    tokens: int
    tail_ms: float

    @property
    def decode_ms(self) -> float:
        return (self.tokens - 1) * self.per_token_ms

    @property
    def total_ms(self) -> float:
        return self.ttft_ms + self.decode_ms + self.tail_ms

    @property
    def total_all_tokens_ms(self) -> float:
        """The same with every token at the rate (the first one counted twice)."""
        return self.total_ms + self.per_token_ms


def per_token_ms(tokens_per_s: float) -> float:
    return 1000.0 / tokens_per_s


def positive(value: float) -> bool:
    return math.isfinite(value) and value > 0
