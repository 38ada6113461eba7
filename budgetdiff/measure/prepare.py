"""From a Run and the budget to the per-request values every row is computed from.

Derives what the input lacks (TTFT and total from the slices, the `unattributed` remainder,
TPOT, the longest stall) and puts requests in arrival order. Pure: values in, values out.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

import numpy as np

from budgetdiff import numbers
from budgetdiff.budget.model import Budget
from budgetdiff.errors import InputError
from budgetdiff.table import (
    CHUNK,
    KNOWN_SLICES,
    UNATTRIBUTED,
    FloatArray,
    Ids,
    Run,
    all_finite,
    chunks,
    repeated_ids,
)

_A = TypeVar("_A", "np.ndarray[Any, Any]", Ids)

# The remainder `total - sum(slices)` is a slice of its own only when it is more than rounding.
UNATTRIBUTED_MIN_MS = 1.0
UNATTRIBUTED_MIN_SHARE = 0.005


@dataclass(frozen=True, slots=True)
class Prepared:
    """Per-request values of the succeeded requests of one run, in arrival order."""

    run: Run
    slices: dict[str, FloatArray]  # budget slices (+ unattributed), succeeded requests only
    metrics: dict[str, FloatArray]  # ttft, total, tpot, max_stall (per request), itl (pooled)
    request_id: Ids | None
    requests: int  # all requests, failed included
    failed: int
    good: np.ndarray | None = None  # per request (all, arrival order): met every target
    duration_s: float | None = None  # benchmark time: the input's, or first start to last end
    notes: tuple[str, ...] = ()
    held_to: tuple[str, ...] = ()  # the SLO targets `good` holds each request to
    tpot_from: str | None = None  # what TPOT is taken from: "tool", "decode", "total - TTFT"
    kept: np.ndarray | None = None  # the run's index of each request in `slices` / `metrics`
    # the slices before the first token (they move TTFT), and the data's slices the budget
    # leaves out (shown as slices without a budget: their time is in the total)
    ttft_slices: tuple[str, ...] = ()
    unbudgeted: tuple[str, ...] = ()
    total_from: str = (
        "measured"  # "measured" | "timestamps" | "slices" | "ttft + slices" | "ttft + tpot"
    )
    # where a side is several runs: the run of each value of a row (slice or metric name ->
    # labels as long as its values); empty for one run
    runs: dict[str, np.ndarray] = field(default_factory=dict)
    run_count: int = 1  # how many runs the kept requests come from


def prepare(run: Run, budget: Budget) -> Prepared:
    """Check the run has the budget's slices, derive the rest, keep the succeeded requests."""
    wanted = _wanted_slices(run, budget)
    kept = _Kept.of(run)
    slices = {s: kept.pick(run.slices[s]) for s in wanted if s in run.slices}
    unbudgeted = [s for s in run.slices if s not in slices and s != UNATTRIBUTED]
    slices |= {s: kept.pick(run.slices[s]) for s in unbudgeted}  # their time is in the total
    if run.total is None and not slices and _decoding(run) is None:
        raise InputError(
            f"{run.source}: no end-to-end time: neither a total nor any slice (it has: "
            f"{', '.join(run.available()) or 'nothing budgetdiff reads'}); add a total_ms column "
            "or slice columns, or pick the tool's --format"
        )
    notes: list[str] = []
    before = _before_first_token(budget, slices)
    if slices and not before and run.ttft is not None:  # TTFT stands for the slices before it
        slices = {"first_token": kept.pick(run.ttft), **slices}
        before, unbudgeted = ["first_token"], ["first_token", *unbudgeted]
    total, ttft, total_from = _total_and_ttft(run, budget, kept, slices, before)
    notes += _total_notes(run, kept, total_from)
    rest = _unattributed(total_from, budget, total, slices)
    if rest is not None:
        slices[UNATTRIBUTED] = rest
        if UNATTRIBUTED not in budget.slices:
            notes.append(_missing_note(total_from))
    _check_finite(run, kept, [*slices.items(), ("total", total), ("ttft", ttft)])
    metrics: dict[str, FloatArray] = {"total": total} | ({} if ttft is None else {"ttft": ttft})
    tpot_from = _tpot_source(run, slices, ttft)
    tpot_kept = None
    if tpot_from is not None:
        metrics["tpot"], tpot_kept, note = _tpot_row(run, kept, slices, total, ttft)
        notes += [note] if note else []
    if run.itl is not None:
        metrics["itl"], metrics["max_stall"] = _itl_rows(run, kept)
    notes += _run_notes(run, kept.order is None and run.start_time is not None)
    good, held_to, why = _good(run, budget, kept.rows, metrics, slices)
    if good is not None and kept.order is not None:
        good = good[kept.order]  # arrival order: attainment's interval reads its autocorrelation
    if why:
        notes.append(why)
    return Prepared(
        duration_s=_duration(run, kept, total),
        run=run,
        slices=slices,
        metrics=metrics,
        request_id=kept.pick(run.request_id) if run.request_id is not None else None,
        requests=run.n,
        failed=int(run.n - run.succeeded.sum()),
        good=good,
        notes=tuple(notes),
        held_to=held_to,
        tpot_from=tpot_from,
        kept=kept.rows,
        ttft_slices=tuple(before),
        unbudgeted=tuple(unbudgeted) if budget.slices else (),
        total_from=total_from,
        runs=_runs(run, kept, [*slices, *metrics], tpot_kept),
        run_count=_run_count(run, kept),
    )


def _run_count(run: Run, kept: _Kept) -> int:
    if run.run is None or not len(kept.rows):
        return 1
    labels = np.sort(kept.pick(run.run))  # distinct by a sort: np.unique imports numpy.ma
    return int(np.count_nonzero(labels[1:] != labels[:-1])) + 1


def _runs(
    run: Run, kept: _Kept, names: list[str], tpot_kept: np.ndarray | None
) -> dict[str, np.ndarray]:
    """The run of each value of every row, cut as `prepare` cuts the values (per request; TPOT
    without the requests it leaves out; ITL per gap; the longest stall of requests with gaps)."""
    if run.run is None:
        return {}
    per_request = kept.pick(run.run)
    out = {name: per_request for name in names}
    if tpot_kept is not None:
        out["tpot"] = per_request[tpot_kept]
    if run.itl is not None:
        lengths = np.diff(run.itl.offsets)
        out["itl"] = np.repeat(run.run, lengths)[np.repeat(run.succeeded, lengths)]
        out["max_stall"] = per_request[np.isfinite(kept.pick(run.itl.per_request_max()))]
    return out


@dataclass(frozen=True, slots=True)
class _Kept:
    """The succeeded requests of a run, in arrival order."""

    rows: np.ndarray  # the run's index of each kept request (`index` is tuple's method)
    order: np.ndarray | None = None  # the run's requests in arrival order; None: as they are
    everything: bool = False  # every request, already in order: `pick` gives arrays as they are

    @classmethod
    def of(cls, run: Run) -> _Kept:
        ok = run.succeeded  # every request may have failed: that is a finding, not bad input
        order = _arrival_order(run)
        keep = ok if order is None else ok[order]
        index = np.arange(run.n) if order is None else order
        everything = order is None and bool(keep.all())
        return cls(rows=index[keep], order=order, everything=everything)

    def pick(self, values: _A) -> _A:
        """The kept requests in arrival order (the array itself when that is all of them)."""
        if self.everything:
            return values
        picked: Any = values[self.rows]  # an array's or the Ids' own indexing
        return cast(_A, picked)


def _wanted_slices(run: Run, budget: Budget) -> list[str]:
    """The budget's slices (the data's own without any); a per-request run must have them."""
    # `unattributed` is computed, never read: a budget may name it (rebudget --write adds it)
    wanted = [s for s in budget.slices if s != UNATTRIBUTED] or list(run.slices)
    missing = [s for s in wanted if s not in run.slices]
    if missing and run.per_request:
        raise InputError(
            f"{run.source}: the budget's slice {missing[0]!r} is not in this data; it has: "
            f"{', '.join(run.available()) or 'no slices'}. Rename the slice in the budget, map "
            f"it with `{missing[0]}: {{budget: ..., column: NAME}}`, or pick another --format"
        )
    return wanted


def _missing_note(total_from: str) -> str:
    """Why some of the total is in no slice, by where the total is from."""
    whole = {
        "measured": "the measured total",
        "timestamps": "the span between start_time and end_time",
        "ttft + slices": "the measured TTFT with the slices after the first token",
    }[total_from]
    return (
        f"total over, slices under: the slices explain less than {whole}; the rest is shown "
        f"as {UNATTRIBUTED!r} (a slice is missing from the data or the budget)"
    )


def _span_note(run: Run, kept: _Kept) -> str:
    """Why the timestamps do not give the total: a request ends before it starts, or lacks one."""
    assert run.end_time is not None and run.start_time is not None
    span = kept.pick(run.end_time) - kept.pick(run.start_time)
    bad = ~np.isfinite(span) | (span < 0)
    first = int(kept.rows[int(np.flatnonzero(bad)[0])]) + 1 if bad.any() else 0
    return (
        f"{run.source}: end_time is missing or before start_time for "
        f"{numbers.count(int(bad.sum()))} request(s) (the first is request #{first}): the end "
        "to end is the sum of the slices, not the span of the timestamps"
    )


def _before_first_token(budget: Budget, slices: dict[str, FloatArray]) -> list[str]:
    """The slices a request crosses before its first token, in slice order: the budget's up to
    its `first_token_after` where it sets one, else the known ones by their names (network ..
    first_token, in any budget order) and the budget's own names up to prefill; never decode
    or app."""
    cut = KNOWN_SLICES.index("first_token") + 1
    early, late = KNOWN_SLICES[:cut], KNOWN_SLICES[cut:]
    own = budget.ttft_slices if budget.slices else []
    said = budget.first_token_after is not None

    def before(s: str) -> bool:
        if s in late:
            return False
        return s in own if said and s in budget.slices else s in early or s in own

    return [s for s in slices if before(s)]


def _total_and_ttft(
    run: Run,
    budget: Budget,
    kept: _Kept,
    slices: dict[str, FloatArray],
    before: list[str],
) -> tuple[FloatArray, FloatArray | None, str]:
    """Each request's total and TTFT from everything the data has, and where the total is from.

    Total: as measured, else the span of the request's timestamps, else (no slices) TTFT + TPOT x
    (output tokens - 1), else every slice (budgeted or not) where the time to the first token is
    the largest of what the data says of it: a
    measured TTFT, a `first_token` slice, the sum of the other slices before it (they overlap:
    `first_token` spans them, and a TTFT column stands for slices the data lacks). TTFT: as
    measured, else that time, when a slice ends at the first token.
    """
    n = len(kept.rows)
    measured_ttft = kept.pick(run.ttft) if run.ttft is not None else None
    if measured_ttft is not None and run.total is not None:  # both measured, as is usual
        return kept.pick(run.total), measured_ttft, "measured"
    to_first = _to_first_token(slices, before, measured_ttft, n)
    if measured_ttft is not None:
        ttft: FloatArray | None = measured_ttft
    elif _ends_at_first_token(budget, before):
        ttft = to_first
    else:
        ttft = None
    if run.total is not None:
        return kept.pick(run.total), ttft, "measured"
    if run.start_time is not None and run.end_time is not None:
        span = (kept.pick(run.end_time) - kept.pick(run.start_time)) * 1000.0
        if len(span) and bool(np.isfinite(span).all()) and bool((span >= 0).all()):
            return span, ttft, "timestamps"
    decoding = _decoding(run)
    if not slices and ttft is not None and decoding is not None:
        tpot, tokens = kept.pick(decoding[0]), kept.pick(decoding[1])
        return ttft + tpot * np.maximum(tokens - 1.0, 0.0), ttft, "ttft + tpot"
    if bool(np.array_equal(to_first, slice_sum({s: slices[s] for s in before}, n))):
        return slice_sum(slices, n), ttft, "slices"  # nothing overlaps or stands in for a slice
    after = slice_sum({s: x for s, x in slices.items() if s not in before}, n)
    return to_first + after, ttft, "ttft + slices"


def _to_first_token(
    slices: dict[str, FloatArray], before: list[str], measured: FloatArray | None, n: int
) -> FloatArray:
    """Each request's time to its first token as the largest of what the data says of it: the
    slices before it summed, a `first_token` slice, a measured TTFT (one maximum at a time,
    into the sum: no stack of them)."""
    first = slice_sum({s: slices[s] for s in before if s != "first_token"}, n)
    for other in (measured, slices.get("first_token")):
        if other is not None:
            np.maximum(first, other, out=first)
    return first


def _total_notes(run: Run, kept: _Kept, total_from: str) -> list[str]:
    """What a reader should know of where the end to end came from."""
    if total_from == "ttft + tpot":
        return [
            f"{run.source}: no end-to-end column: the end to end is TTFT + TPOT x (output tokens "
            "- 1) per request"
        ]
    spanned = run.end_time is not None and run.start_time is not None and run.total is None
    return [_span_note(run, kept)] if spanned and total_from != "timestamps" else []


def _decoding(run: Run) -> tuple[FloatArray, FloatArray] | None:
    """TPOT and the output tokens, when the run has them and a TTFT: with no total and no
    slices, the end to end is TTFT + TPOT x (output tokens - 1), TPOT's definition turned
    around."""
    if run.ttft is None or run.tpot is None or run.output_tokens is None:
        return None
    return run.tpot, run.output_tokens


def _ends_at_first_token(budget: Budget, before: list[str]) -> bool:
    """Some slice of the data ends at the first token: the slices before it are the TTFT."""
    last = budget.ttft_slices[-1:] if budget.slices else []
    return any(s in before for s in ("first_token", "prefill", *last))


def _unattributed(
    total_from: str, budget: Budget, total: FloatArray, slices: dict[str, FloatArray]
) -> FloatArray | None:
    """`total - sum(slices)` (not below 0) when the budget names `unattributed`, or when a total
    that is not the slices' sum is more than rounding over them; None otherwise."""
    if not slices or (total_from == "slices" and UNATTRIBUTED not in budget.slices):
        return None
    if UNATTRIBUTED in budget.slices or (
        len(total) and _most_left(total, slices) > material(total)
    ):
        rest = rest_of(total, slices)  # all zero when the total is their sum
        return np.clip(rest, 0.0, None, out=rest)
    return None


def _most_left(total: FloatArray, slices: dict[str, FloatArray]) -> float:
    """max(rest_of(total, slices)), NaN if one is: the same sums, a chunk at a time while the
    cache holds it (`CHUNK`), with no array of every request's rest."""
    n = len(total)
    acc = np.empty(min(n, CHUNK))
    most = []
    for at, m in chunks(n):
        a = acc[:m]
        a.fill(0.0)
        _add_slices(slices, at, a)
        most.append(float(np.max(np.subtract(total[at], a, out=a))))
    return float(np.max(most))


def rest_of(total: FloatArray, slices: dict[str, FloatArray]) -> FloatArray:
    """total - slice_sum(slices) per request, in the sum's own array (no second array)."""
    rest = slice_sum(slices, len(total))
    return np.subtract(total, rest, out=rest)


def _check_finite(run: Run, kept: _Kept, named: list[tuple[str, FloatArray | None]]) -> None:
    """A succeeded request needs a number for every time it has."""
    for name, values in named:
        if values is None or not len(values) or all_finite(values):
            continue
        if not np.isfinite(values).all():  # the sum may only have overflowed: ask each value
            row = int(np.flatnonzero(~np.isfinite(values))[0])
            raise InputError(
                f"{run.source}: {name} is missing, not a number or too large for a request that "
                "succeeded "
                f"(request #{int(kept.rows[row]) + 1}); mark failed requests in the `error` column"
            )


def _tpot_row(
    run: Run,
    kept: _Kept,
    slices: dict[str, FloatArray],
    total: FloatArray,
    ttft: FloatArray | None,
) -> tuple[FloatArray, np.ndarray, str | None]:
    """The TPOT row's values (requests with more than one output token), which kept requests
    they are, and a note when some requests have no token count. The tool's own TPOT without
    token counts: every request that has one."""
    if run.output_tokens is None:
        assert run.tpot is not None  # `_tpot_source`: only the tool's own needs no counts
        tpot = kept.pick(run.tpot)
        has = np.isfinite(tpot)
        return tpot[has], has, None
    tokens = kept.pick(run.output_tokens)
    unknown = int(np.isnan(tokens).sum())
    note = None
    if 0 < unknown < len(tokens):
        note = (
            f"{run.source}: {unknown} succeeded request(s) have no output token count; "
            "TPOT leaves them out"
        )
    tpot = _tpot(run, kept, tokens, slices, total, ttft)
    has = np.isfinite(tpot) & (tokens > 1)
    return tpot[has], has, note


def _itl_rows(run: Run, kept: _Kept) -> tuple[FloatArray, FloatArray]:
    """Every gap between tokens of the succeeded requests (pooled), and each one's longest."""
    itl = run.itl
    assert itl is not None
    ok = run.succeeded
    lengths = np.diff(itl.offsets)
    mine = None if ok.all() else np.repeat(ok, lengths)  # gaps of succeeded requests
    gaps = itl.values if mine is None else itl.values[mine]
    bad = ~np.isfinite(gaps) | (gaps < 0)
    if bad.any():
        owner = np.repeat(np.arange(run.n), lengths)
        owner = owner if mine is None else owner[mine]
        raise InputError(
            f"{run.source}: request #{int(owner[np.flatnonzero(bad)[0]]) + 1} has an "
            "inter-token gap that is negative or not a number; token times must only grow "
            "(mark failed requests in the error column)"
        )
    stall = kept.pick(itl.per_request_max())
    return gaps, stall[np.isfinite(stall)]


def _duration(run: Run, kept: _Kept, total: FloatArray) -> float | None:
    """Benchmark time: the input's, or from the first start to the last end."""
    if run.duration_s is not None or run.start_time is None or not len(total):
        return run.duration_s
    start = kept.pick(run.start_time)
    ends = start + total / 1000.0
    if not np.isfinite(start).all():
        return None
    return float(np.max(ends) - np.min(start)) or None


def material(total: FloatArray) -> float:
    """How far `total - sum(slices)` may stray before it is a slice of its own, not rounding."""
    return (
        max(UNATTRIBUTED_MIN_MS, UNATTRIBUTED_MIN_SHARE * float(np.mean(total)))
        if len(total)
        else UNATTRIBUTED_MIN_MS
    )


def _tpot_source(run: Run, slices: dict[str, FloatArray], ttft: FloatArray | None) -> str | None:
    """What TPOT is taken from, the one place that chooses: the tool's own per-request TPOT
    (inference-perf: the numbers then match its summary), else `decode` where the data has that
    slice (so `app` and `unattributed` time is not counted as decoding), else `total - TTFT`
    (vLLM's definition); None when there is nothing to take it from (a computed TPOT needs the
    output token counts; the tool's own needs none)."""
    if run.tpot is not None:
        return "tool"
    if run.output_tokens is None:
        return None
    if "decode" in slices:
        return "decode"
    return "total - TTFT" if ttft is not None else None


def _tpot(
    run: Run,
    kept: _Kept,
    tokens: FloatArray,
    slices: dict[str, FloatArray],
    total: FloatArray,
    ttft: FloatArray | None,
) -> FloatArray:
    """Time per output token after the first, per kept request, from `_tpot_source`: computed
    ones are the decoding time / (tokens - 1), NaN where tokens <= 1 or unknown; all NaN when
    there is no source."""
    source = _tpot_source(run, slices, ttft)
    if source == "tool":
        assert run.tpot is not None
        return kept.pick(run.tpot)
    if source is None:
        return np.full(len(tokens), np.nan)
    decoding = slices["decode"] if source == "decode" else total - cast(FloatArray, ttft)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(tokens > 1, decoding / (tokens - 1), np.nan)


def _good(
    run: Run,
    budget: Budget,
    kept: np.ndarray,
    metrics: dict[str, FloatArray],
    slices: dict[str, FloatArray],
) -> tuple[np.ndarray | None, tuple[str, ...], str | None]:
    """Joint per-request SLO: succeeded and every target the SLO table checks met (`<=`).

    A target the table cannot check (no such metric in the data) is not held here either; the
    judge reports it as `unmeasured`. None, and why, when a checked target cannot be checked
    for every request: attainment that silently skipped requests would claim more than it knows.
    """
    targets = {k: v for k, v in budget.slo.targets().items() if k in metrics}
    if not targets or not run.per_request:
        return None, (), None
    good = np.zeros(run.n, dtype=bool)
    met = np.ones(len(kept), dtype=bool)
    for name, target in targets.items():
        per_request = _per_request_metric(run, name, kept, metrics, slices)
        # every value finite: the sum says so, no temporary (each value asked only when not)
        if per_request is None or not (all_finite(per_request) or np.isfinite(per_request).all()):
            return (
                None,
                (),
                (
                    f"SLO attainment is left out: the {name} target cannot be checked for every "
                    "request (it needs per-request TTFT, total and output token counts)"
                ),
            )
        met &= per_request <= target
    good[kept] = met
    return good, tuple(targets), None


def good_with(
    prep: Prepared,
    budget: Budget,
    total: FloatArray,
    ttft: FloatArray | None,
    slices: dict[str, FloatArray],
) -> np.ndarray | None:
    """`prep.good` recomputed with other per-request totals, TTFTs and slices (a what-if), or
    None when attainment is not known for this run. The same targets are held as in `prepare`."""
    if prep.good is None or prep.kept is None:
        return None
    metrics = dict(prep.metrics) | {"total": total}
    if ttft is not None:
        metrics["ttft"] = ttft
    good, _, _ = _good(prep.run, budget, prep.kept, metrics, slices)
    return good


def _run_notes(run: Run, unordered: bool) -> list[str]:
    """What a reader had to do to the data that the report must say."""
    note = run.meta.get("note")  # a reader's own word on the file (e.g. a sampled list)
    notes = [note] if isinstance(note, str) else []
    unmatched = run.meta.get("unmatched")
    if isinstance(unmatched, int | float) and unmatched > 0:
        notes.append(
            f"{run.source}: {numbers.count(int(unmatched))} succeeded client requests had no "
            "server span and are left out; slow or timed-out requests are often the ones missing"
        )
    clipped = run.meta.get("network_clipped")
    if isinstance(clipped, int | float) and clipped > 0:
        most = float(run.meta.get("network_clipped_max_ms", 0.0))
        notes.append(
            f"{run.source}: {numbers.count(int(clipped))} requests had a server TTFT above the "
            f"client's (clocks disagree by up to {numbers.ms(most)}); their network time is "
            "counted as 0"
        )
    if run.request_id is not None and run.n > 1:
        ids = run.request_id
        blank = ids.blank()
        repeated = repeated_ids(ids[~blank] if blank.any() else ids)  # as text, blanks aside
        if repeated:
            notes.append(
                f"{run.source}: {repeated} request(s) repeat the id of another request (or "
                "span); each is counted as a request of its own, and requests are not paired "
                "by id"
            )
    return notes + _order_notes(run, unordered)


def no_start_times(plural: str) -> str:
    """One text for every run without start times (of `plural`: requests, or an agent's
    tasks), so that a report says it once for both sides."""
    return (
        f"no start times: {plural} are taken to have arrived in row order; where the rows are "
        f"not in the order the {plural} were sent (a table written by completion, or sorted), "
        f"correlation between neighbouring {plural} cannot be seen and the intervals assume "
        f"independent {plural}"
    )


def _order_notes(run: Run, unordered: bool) -> list[str]:
    """Where the arrival order that the autocorrelation correction reads comes from, when it
    is not the requests' own start times."""
    if run.start_time is None:
        # what measure.results.unit_of reads (results builds on this module's callers)
        plural = "tasks" if run.meta.get("unit") == "task" else "requests"
        return [no_start_times(plural)] if run.per_request and run.n > 1 else []
    if unordered and np.isnan(run.start_time).any():
        return [
            f"{run.source}: start_time is missing for some requests; row order is "
            "taken as arrival order"
        ]
    return []


def _per_request_metric(
    run: Run,
    name: str,
    kept: np.ndarray,
    metrics: dict[str, FloatArray],
    slices: dict[str, FloatArray],
) -> FloatArray | None:
    """Each kept request's own value of an SLO metric, as the attainment holds it to a target:
    TTFT and total as measured; TPOT as the TPOT row computes it; ITL by the mean of the
    request's own gaps (AIPerf's per-request ITL; the ITL row pools every gap instead)."""
    if name in ("ttft", "total"):
        return metrics.get(name)
    if name == "tpot" and run.output_tokens is None and run.tpot is not None:
        theirs: FloatArray = run.tpot[kept]  # the tool's own, with no token counts
        return theirs
    if name == "tpot" and run.output_tokens is not None:
        tokens = run.output_tokens[kept]
        tpot = _tpot(run, _Kept(kept), tokens, slices, metrics["total"], metrics.get("ttft"))
        # one token has no gap to miss a per-token target with; an unknown count stays NaN
        return np.where(tokens == 1, 0.0, tpot)
    if name == "itl" and run.itl is not None:
        lengths = np.diff(run.itl.offsets)
        sums = np.zeros(run.n)
        has = lengths > 0
        if has.any():
            sums[has] = np.add.reduceat(run.itl.values, run.itl.offsets[:-1][has])
        mean = np.divide(sums, lengths, out=np.zeros(run.n), where=has)  # no gap: none missed
        own: FloatArray = mean[kept]
        return own
    return None


def _arrival_order(run: Run) -> np.ndarray | None:
    """Indices in arrival order (by start_time), or None when rows already are in that order."""
    if run.start_time is None or run.n < 2:
        return None
    st = run.start_time
    if np.isnan(st).any():
        return None
    if run.run is not None:  # runs one after another, whatever each run's clock origin
        order = np.lexsort((st, run.run))
        return None if bool(np.all(order[1:] > order[:-1])) else order
    if bool(np.all(st[1:] >= st[:-1])):
        return None
    return np.argsort(st, kind="stable")


def slice_sum(slices: dict[str, FloatArray], n: int | None = None) -> FloatArray:
    """Per-request sum in the fixed slice order, so equal operands give bit-equal sums
    (0 + x is x exactly); `n` is the length when there are no slices."""
    if n is None:
        n = len(next(iter(slices.values()))) if slices else 0
    out = np.zeros(n)
    for at, _ in chunks(n):  # a chunk of every slice while the cache holds its sums
        _add_slices(slices, at, out[at])
    return out


def _add_slices(slices: dict[str, FloatArray], at: slice, into: FloatArray) -> None:
    """Each slice's values at `at` added into `into`, in the fixed slice order (the same sums
    everywhere), in place."""
    with np.errstate(over="ignore"):  # an overflow is caught as a non-finite value later
        for values in slices.values():
            into += values[at]
