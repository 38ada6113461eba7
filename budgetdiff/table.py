"""One benchmark run, normalized: per-request columns in milliseconds, whatever tool wrote it.

Every reader (`budgetdiff.formats.*`) returns `Run` objects; everything downstream
(`rows`, `stats`, `attribution`, `rebudget`) reads only this.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import TYPE_CHECKING, Any, TypeAlias, overload

import numpy as np

from budgetdiff import numbers
from budgetdiff.errors import ReadError

if TYPE_CHECKING:
    import numpy.typing as npt


# numpy.typing's NDArray, written out: numpy.typing is 0.5 ms of start-up for two aliases
FloatArray = np.ndarray[Any, np.dtype[np.float64]]
BoolArray = np.ndarray[Any, np.dtype[np.bool_]]
IntArray = np.ndarray[Any, np.dtype[np.int64]]

# Slice names the contract knows, in the order a request crosses them.
KNOWN_SLICES = ("network", "gateway", "queue", "prefill", "first_token", "decode", "app")
UNATTRIBUTED = "unattributed"
# Per-request metrics (not slices) a run may carry.
METRICS = ("ttft", "total", "itl", "tpot")

# Plausible bounds. A value past them is a unit mix-up, a corrupt file or a hostile one; it is
# refused where the readers hand over their runs, so no computation ever sees it (1e200 ms
# would overflow a variance, 2^63 ms a sum).
MAX_MS = 86_400_000.0  # a day: no request of a benchmark takes longer
MAX_COUNT = 1e12  # requests, tokens
MAX_SECONDS = 1e11  # a start time or a duration (epoch seconds reach 1.8e9)
# Counts a reader may keep beside the table (failed requests of an aggregate, the run's
# concurrency): the same bound, since the judge computes rates and intervals from them.
_META_COUNTS = ("failures", "incomplete", "unmatched", "num_prompts", "concurrency", "scrapes")


@dataclass(frozen=True)
class Itl:
    """Inter-token gaps of every request, pooled: request i owns values[offsets[i]:offsets[i+1]]."""

    values: FloatArray
    offsets: npt.NDArray[np.int64]

    def rows(self, index: npt.NDArray[Any]) -> Itl:
        """The gaps of the requests `index` selects (a boolean mask or positions), in its order."""
        lengths = np.diff(self.offsets)[index]
        starts = self.offsets[:-1][index]
        pick = (
            np.concatenate([np.arange(a, a + m) for a, m in zip(starts, lengths, strict=True)])
            if len(starts)
            else np.zeros(0, dtype=np.int64)
        )
        offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        return Itl(values=self.values[pick.astype(np.int64)], offsets=offsets)

    def per_request_max(self) -> FloatArray:
        """The longest single gap of each request (NaN for a request with no gaps)."""
        n = len(self.offsets) - 1
        out = np.full(n, np.nan)
        lengths = np.diff(self.offsets)
        has = lengths > 0
        if has.any():
            starts = self.offsets[:-1][has]
            out[has] = np.maximum.reduceat(self.values, starts) if len(self.values) else np.nan
        return out


@dataclass(frozen=True)
class Histogram:
    """A cumulative-free histogram: counts[i] requests fell in (bounds[i-1], bounds[i]] (ms)."""

    bounds: FloatArray
    counts: FloatArray


def histogram_quantile(h: Histogram, p: float) -> tuple[float, float, float]:
    """(estimate, bucket_low, bucket_high) of percentile `p` (0 < p <= 100), ms.

    Like Prometheus' histogram_quantile: linear interpolation inside the bucket the rank falls
    in, 0 as the lower edge of the first bucket; a rank in the +Inf bucket gives the highest
    finite bound (with bucket_high = inf). An empty histogram gives NaNs.
    """
    if not 0 < p <= 100:
        raise ValueError(f"percentile {p} is not in (0, 100]")
    cumulative = np.cumsum(h.counts)
    total = float(cumulative[-1]) if len(cumulative) else 0.0
    if total <= 0:
        return (math.nan, math.nan, math.nan)
    rank = p / 100.0 * total
    b = int(np.searchsorted(cumulative, rank, side="left"))
    b = min(b, len(cumulative) - 1)
    high = float(h.bounds[b])
    low = float(h.bounds[b - 1]) if b > 0 else min(0.0, high)
    if math.isinf(high):
        finite = float(h.bounds[b - 1]) if b > 0 else math.nan
        return (finite, finite, math.inf)
    before = float(cumulative[b - 1]) if b > 0 else 0.0
    in_bucket = float(h.counts[b])
    if in_bucket <= 0:
        return (high, low, high)
    return (low + (high - low) * (rank - before) / in_bucket, low, high)


@dataclass(frozen=True)
class ColumnUse:
    """How one column of a table was read: its role (slice, metric, tokens, id, failure, time,
    class, unused), what it stands for, its unit and how that unit was decided."""

    column: str
    role: str
    target: str | None = None  # the slice, metric or field it is read as
    unit: str | None = None  # ms, s, us, ns for a duration or a time; None otherwise
    unit_from: str | None = None  # suffix, header bracket, budget unit:, guessed
    note: str | None = None  # why it is not used, or what is odd about it


@dataclass(frozen=True)
class Doubt:
    """What a reader found wrong in data it could still read: a `units` mix-up or rows no
    request can have (`impossible`). The judge turns each into a finding; `fails` says
    whether it fails the check (a number the report shows would be wrong) or only informs;
    `affects`, what the doubted values are read as (`ttft`, `total`, a slice, `itl`): the rows
    computed from them carry the doubt instead of a pass mark (`doubts.mark`)."""

    kind: str
    subject: str
    message: str
    fails: bool = True
    affects: tuple[str, ...] = ()


PARTS = ("model", "tool", "between")  # a step's parts, in the order a step crosses them


@dataclass(frozen=True)
class Tasks:
    """Agent tasks: per task its id, its end to end and its answers; per step its parts."""

    task_id: tuple[str, ...]
    total_ms: FloatArray  # each task, end to end
    offsets: IntArray  # task i's steps are [offsets[i], offsets[i+1])
    model_ms: FloatArray  # per step: the model call that asked for the tool
    tool_ms: FloatArray  # per step: its tool call(s), start of the first to end of the last
    between_ms: FloatArray  # per step: the rest of the round trip
    tool: tuple[str, ...]  # per step: the tool's name ("" when the data does not name it)
    answers: IntArray  # per task: model calls that asked for no tool (not steps)
    ok: np.ndarray[Any, np.dtype[np.bool_]]  # per task: it did not fail

    @property
    def steps(self) -> IntArray:
        """Steps (tool round trips) of each task."""
        return np.diff(self.offsets)

    @property
    def step_ms(self) -> FloatArray:
        """Each step's round trip: model + tool + between."""
        return self.model_ms + self.tool_ms + self.between_ms

    def part(self, name: str) -> FloatArray:
        return {"model": self.model_ms, "tool": self.tool_ms, "between": self.between_ms}[name]

    def of_tasks(self, keep: np.ndarray[Any, np.dtype[np.bool_]]) -> Tasks:
        """Only the tasks `keep` marks (the succeeded ones, say), with their steps."""
        steps = np.repeat(keep, self.steps)
        offsets = np.concatenate([[0], np.cumsum(self.steps[keep])]).astype(np.int64)
        return Tasks(
            task_id=tuple(t for t, k in zip(self.task_id, keep, strict=True) if k),
            total_ms=self.total_ms[keep],
            offsets=offsets,
            model_ms=self.model_ms[steps],
            tool_ms=self.tool_ms[steps],
            between_ms=self.between_ms[steps],
            tool=tuple(t for t, k in zip(self.tool, steps, strict=True) if k),
            answers=self.answers[keep],
            ok=self.ok[keep],
        )


@dataclass(frozen=True)
class Run:
    """One run (one scenario) of one benchmark, every latency in milliseconds.

    Per-request arrays all have length `n`; NaN marks a value a request does not have.
    Aggregate-only inputs leave `n == 0`-length arrays empty and fill `summary` (percentile
    -> value for a metric or slice) or `histograms` instead; nothing is invented from them.
    """

    source: str
    n: int
    slices: dict[str, FloatArray] = field(default_factory=dict)
    ttft: FloatArray | None = None
    total: FloatArray | None = None
    ok: BoolArray | None = None
    request_id: Ids | None = None  # (a numpy array of them is taken as Ids)
    input_tokens: FloatArray | None = None
    output_tokens: FloatArray | None = None
    itl: Itl | None = None
    start_time: FloatArray | None = None  # seconds, any origin; gives arrival order
    end_time: FloatArray | None = None  # seconds, `start_time`'s origin: end - start is a total
    prompt_hash: npt.NDArray[Any] | None = None  # what each request asked (str): proves pairing
    duration_s: float | None = None
    scenario: str | None = None
    meta: dict[str, str | float] = field(default_factory=dict)
    summary: dict[str, dict[float, float]] = field(default_factory=dict)
    summary_count: int | None = None
    histograms: dict[str, Histogram] = field(default_factory=dict)
    # a per-request run's tool's own percentiles over the same requests (GuideLLM's), shown
    # beside budgetdiff's: summary name -> {percentile: ms}; `meta["percentile_method"]` says
    # how the tool takes them (budgetdiff interpolates linearly)
    tool_percentiles: dict[str, dict[float, float]] = field(default_factory=dict)
    # per-request TPOT as the tool defines it, where that is not (total - TTFT) / (tokens - 1)
    # (inference-perf: last token - first token); None: that formula
    tpot: FloatArray | None = None
    # a table's reading, column by column (native tables), and what it found wrong in the data
    columns: tuple[ColumnUse, ...] = ()
    doubts: tuple[Doubt, ...] = ()
    # agent tasks (formats.agent_*): one row per task above, its steps here
    agent: Tasks | None = None
    # which run of the same configuration each request belongs to (0, 1, ...: the file's index
    # of repeated --base/--head files, or a `run` column's value); None: one run
    run: npt.NDArray[np.int64] | None = None

    def __post_init__(self) -> None:
        if self.request_id is not None and not isinstance(self.request_id, Ids):
            object.__setattr__(self, "request_id", Ids(self.request_id))

    @property
    def succeeded(self) -> BoolArray:
        return np.ones(self.n, dtype=bool) if self.ok is None else self.ok

    @property
    def per_request(self) -> bool:
        """True when the run has one row per request (not only aggregates)."""
        return self.n > 0 and not self.summary and not self.histograms

    def available(self) -> list[str]:
        """Slice and metric names this run can give, for error messages."""
        names = list(self.slices)
        names += [m for m in ("ttft", "total") if getattr(self, m) is not None]
        if self.itl is not None:
            names.append("itl")
        names += [k for k in self.summary if k not in names]
        names += [k for k in self.histograms if k not in names]
        return names


# From this many ids on, ids are told apart by hashing (pyarrow's dictionary encoding, O(n)),
# not by sorting them (a sort of a million strings is a second); below it a sort is quicker than
# importing pyarrow.compute (start-up).
# below it a segment takes its ranks in one np.partition (its several-rank path is slow only
# on a large array)
_SELECT_SMALL = 4096


def select(x: FloatArray, kth: Sequence[int], *, in_place: bool = False) -> FloatArray:
    """np.partition(x, kth)'s promise (each rank in `kth` holds the value a sort would put
    there, NaN last; none before it larger, none after it smaller), kept by selections of one
    rank at a time: numpy selects one rank several times faster than several at once (0.0035 s
    against 0.016 s for two adjacent ranks of a million). The values at the ranks are the
    order statistics, the same as np.partition's; the other places may hold other orders.
    `in_place` reorders `x` instead of a copy."""
    part = x if in_place else x.copy()
    _place(part, sorted({int(k) for k in kth}))
    return part


def _place(a: FloatArray, ks: list[int]) -> None:
    """Put the ranks `ks` (sorted, distinct, in [0, len(a))) of the view `a` in place."""
    while ks:
        if len(a) <= _SELECT_SMALL:
            a.partition(ks)
            return
        if ks[0] == 0:  # the least value: a scan, not a selection
            _swap(a, 0, _least(a))
            a, ks = a[1:], [k - 1 for k in ks[1:]]
            continue
        if ks[-1] == len(a) - 1:  # the greatest: argmax finds a NaN first, as sorted
            _swap(a, len(a) - 1, int(np.argmax(a)))
            a, ks = a[:-1], ks[:-1]
            continue
        k = ks[len(ks) // 2]
        a.partition(k)
        _place(a[:k], [r for r in ks if r < k])
        a, ks = a[k + 1 :], [r - k - 1 for r in ks if r > k]


# From this many values on, `order_statistics` brackets its ranks from a sample instead of
# selecting them in a copy (below it a copy and a selection take well under a millisecond)
_BRACKET_FROM = 1 << 16
_SAMPLE = 1 << 16  # values in the bracketing sample
# values a pass of several tests reads at once (2 MB: the cache holds them while they run)
CHUNK = 1 << 18


def chunks(n: int) -> Iterator[tuple[slice, int]]:
    """The places 0 .. n - 1 a `CHUNK` at a time: each chunk's slice and its length (the last
    may be shorter), for a pass that runs several tests on a chunk while the cache holds it."""
    for start in range(0, n, CHUNK):
        stop = min(n, start + CHUNK)
        yield slice(start, stop), stop - start


# ranks closer than this share of the values share one bracket
_CLUSTER = 1.0 / 256
# how wide a bracket is around its ranks, in binomial standard deviations of a rank in the
# sample: a bracket that misses (about once in 10^6 at 5) costs a selection, never a wrong value
_MARGIN_SD = 5.0


def order_statistics(
    x: FloatArray, ranks: Sequence[int], *, in_place: bool = False
) -> dict[int, float]:
    """The value at each of `ranks` (0-based, in [0, len(x))) of sorted `x`, NaN last: what
    `select(x, ranks)[k]` holds, without a copy of `x` or a selection over all of it. Ranks
    close together (a percentile, its interval band and bounds) share one bracket: two values
    from a sorted sample of `x` that hold them between them, with a margin; one pass counts
    the values below the bracket and keeps those inside (a small share of `x`), and a
    selection among those places the ranks. Every bracket is checked (the ranks must fall
    inside it), so a sample that misses costs a selection, never a wrong value. Small arrays,
    and arrays holding a NaN, take `select` (`in_place`: it may reorder `x`)."""
    return pooled_order_statistics((x,), ranks, in_place=in_place)


def pooled_order_statistics(
    parts: Sequence[FloatArray], ranks: Sequence[int], *, in_place: bool = False
) -> dict[int, float]:
    """`order_statistics` of the values of all `parts` together, without concatenating them
    (a pool of base and head: no copy of both); `in_place` with one part only."""
    ks = sorted({int(k) for k in ranks})
    n = sum(x.size for x in parts)
    if not ks:
        return {}
    if n < _BRACKET_FROM:
        return _select_pool(parts, ks, in_place)
    step = n // _SAMPLE
    sample = np.concatenate([x[::step] for x in parts])
    groups: list[list[int]] = []
    for k in ks:
        if groups and k - groups[-1][-1] <= n * _CLUSTER:
            groups[-1].append(k)
        else:
            groups.append([k])
    # the sample's values at the brackets' edges, selected, not sorted (a quarter of the time)
    edges = [_edges(g, sample.size, n) for g in groups]
    at = select(
        sample, [i for pair in edges for i in pair if 0 < i < sample.size - 1], in_place=True
    )
    brackets = [_bracket(low_at, high_at, at) for low_at, high_at in edges]
    if any(low is None and high is None for low, high in brackets):  # a bracket spans it all
        return _select_all(parts, ks)
    counted = _inside(parts, brackets)
    if counted is None:  # a NaN: no comparison places it
        return _select_pool(parts, ks, in_place)
    below, inside = counted
    out: dict[int, float] = {}
    for group, (low, high), under in zip(groups, brackets, below, strict=True):
        mine = inside
        if low is not None:
            mine = mine[mine >= low]
        if high is not None:
            mine = mine[mine <= high]
        lo, hi = group[0], group[-1]
        if not (under <= lo and hi < under + mine.size):  # the sample missed: select them all
            return _select_all(parts, ks)
        part = select(mine, [k - under for k in group], in_place=True)
        out.update({k: float(part[k - under]) for k in group})
    return out


def all_finite(values: FloatArray) -> bool:
    """Every value finite, known from their sum (a NaN or an infinity makes it one; a sum that
    overflows only sends the caller to its exact test): one pass, no temporary. A table whose
    rows all succeeded with finite values, the usual one, is then read without copies of its
    columns (issue 36)."""
    with np.errstate(all="ignore"):
        return math.isfinite(float(values.sum()))


def taken(values: npt.NDArray[Any], index: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """values[index], without the copy when `index` is every place in order, 0 .. n - 1 (the
    same requests in the same order on both sides); that told a chunk at a time, not by
    np.diff's array of every place (80 MB at ten million, each of the rows' calls)."""
    return values if _every_place(index, len(values)) else values[index]


def _every_place(index: npt.NDArray[Any], n: int) -> bool:
    if index.size != n or (n and (index[0] != 0 or index[-1] != n - 1)):
        return False
    return all(np.array_equal(index[at], np.arange(at.start, at.stop)) for at, _ in chunks(n))


def max_abs(values: FloatArray) -> float:
    """np.max(np.abs(values)) (NaN when one is), from the greatest and the least: no temporary
    the size of `values` (a fresh 80 MB at ten million, whose pages cost more than the pass)."""
    return max(float(values.max()), -float(values.min()))


Bracket: TypeAlias = tuple[float | None, float | None]


def _edges(ks: list[int], m: int, n: int) -> tuple[int, int]:
    """The ranks in a sample of `m` of the `n` values whose values hold the ranks `ks` (sorted,
    close together) between them, with a margin; outside [1, m - 2]: no bound on that side."""
    lo, hi = ks[0], ks[-1]
    q = lo / n
    margin = _MARGIN_SD * math.sqrt(m * max(q * (1.0 - q), 1.0 / m)) + 2.0
    return math.floor(lo / n * m - margin), math.ceil(hi / n * m + margin)


def _bracket(low_at: int, high_at: int, sample: FloatArray) -> Bracket:
    """The bracket's two values: `sample` holds its order statistics at both edges (`select`)."""
    low = float(sample[low_at]) if low_at > 0 else None
    high = float(sample[high_at]) if high_at < sample.size - 1 else None
    return low, high


def _inside(
    parts: Sequence[FloatArray], brackets: list[Bracket]
) -> tuple[list[int], FloatArray] | None:
    """How many values lie below each bracket, and the values inside any of them; None when a
    value is NaN (told by the sums). One read of each part for all the brackets: the tests of
    every bracket run on a chunk of `CHUNK` values while the cache holds it (half the time of
    each test over the whole part: those read it from memory once per test)."""
    below = [0] * len(brackets)
    kept = []
    size = min(CHUNK, max(x.size for x in parts))
    keep, mine, under = (np.empty(size, dtype=bool) for _ in range(3))
    for x in parts:
        for at, m in chunks(x.size):
            chunk = x[at]
            if _has_nan(chunk):
                return None
            k, b = keep[:m], under[:m]
            for i, (low, high) in enumerate(brackets):
                a = k if i == 0 else mine[:m]  # the first bracket's values straight into `k`
                if low is None:
                    assert high is not None  # (a bracket with neither bound was never made)
                    np.less_equal(chunk, high, out=a)
                else:
                    np.greater_equal(chunk, low, out=a)
                    below[i] += m - int(np.count_nonzero(a))
                    if high is not None:
                        np.logical_and(a, np.less_equal(chunk, high, out=b), out=a)
                if i:
                    np.logical_or(k, a, out=k)
            kept.append(np.compress(k, chunk))  # half the time of chunk[k] (numpy 2.4)
    return below, np.concatenate(kept)


def between(x: FloatArray, low: float, high: float) -> FloatArray:
    """The values of `x` in [low, high], in their order: the two tests and the compress a
    chunk at a time while the cache holds it (`CHUNK`), with no mask of all of `x`."""
    size = min(CHUNK, x.size)
    inside, scratch = np.empty(size, dtype=bool), np.empty(size, dtype=bool)
    kept = []
    for at, m in chunks(x.size):
        chunk, k, t = x[at], inside[:m], scratch[:m]
        np.logical_and(
            np.greater_equal(chunk, low, out=k), np.less_equal(chunk, high, out=t), out=k
        )
        kept.append(np.compress(k, chunk))
    return np.concatenate(kept) if kept else x[:0].copy()


def _has_nan(x: FloatArray) -> bool:
    """A NaN in `x` (or +inf and -inf both): one sum, no temporary."""
    with np.errstate(invalid="ignore"):
        return math.isnan(float(x.sum()))


def _select_pool(parts: Sequence[FloatArray], ks: list[int], in_place: bool) -> dict[int, float]:
    """The ranks by selection in the pool of `parts` (one part: itself, or a copy)."""
    pool = parts[0] if len(parts) == 1 else np.concatenate(parts)
    part = select(pool, ks, in_place=in_place or len(parts) > 1)
    return {k: float(part[k]) for k in ks}


def _select_all(parts: Sequence[FloatArray], ks: list[int]) -> dict[int, float]:
    part = select(np.concatenate(parts), ks, in_place=True)
    return {k: float(part[k]) for k in ks}


def _least(a: FloatArray) -> int:
    """Where the least value is: a NaN only when every value is one (NaN sorts last)."""
    at = int(np.argmin(a))  # argmin finds a NaN first, when there is one
    if a[at] == a[at]:
        return at
    least = np.fmin.reduce(a)  # the least number, NaN when there is none
    return int(np.argmax(a == least)) if least == least else 0


def _swap(a: FloatArray, i: int, j: int) -> None:
    a[i], a[j] = a[j], a[i]


def arrow_numpy(arr: Any) -> npt.NDArray[Any]:
    """A numeric or boolean Arrow array or chunked array as numpy: read from its buffers when
    it has no nulls (a view of a lone chunk, a concatenation of several, as Arrow's own gives);
    anything else by Arrow's own `to_numpy`. Arrow's own imports pandas the first time it runs
    (0.13-0.18 s of every run's start-up, pyarrow 26), though it never hands back pandas."""
    chunks = arr.chunks if hasattr(arr, "chunks") else [arr]
    parts = [_from_buffers(c) for c in chunks]
    if not parts or any(p is None for p in parts):
        return arr.to_numpy(zero_copy_only=False)  # type: ignore[no-any-return]
    return parts[0] if len(parts) == 1 else np.concatenate(parts)  # type: ignore[arg-type,return-value]


def _from_buffers(a: Any) -> npt.NDArray[Any] | None:
    """One chunk without nulls from its buffers, or None (nulls, or a type of other layout)."""
    import pyarrow as pa

    kind, n = a.type, len(a)
    if a.null_count or not (
        pa.types.is_boolean(kind) or pa.types.is_integer(kind) or pa.types.is_floating(kind)
    ):
        return None
    if pa.types.is_boolean(kind):  # one bit a value, the first at bit `offset`
        if n == 0:
            return np.zeros(0, dtype=bool)
        bits = np.frombuffer(a.buffers()[1], dtype=np.uint8)
        unpacked = np.unpackbits(bits, count=a.offset + n, bitorder="little")[a.offset :]
        return unpacked.astype(bool)
    letter = "f" if pa.types.is_floating(kind) else "i" if pa.types.is_signed_integer(kind) else "u"
    dtype = np.dtype(f"{letter}{kind.bit_width // 8}")
    if n == 0:
        return np.zeros(0, dtype=dtype)
    return np.frombuffer(a.buffers()[1], dtype=dtype, count=n, offset=a.offset * dtype.itemsize)


HASH_IDS_FROM = 20_000


class Ids:
    """A run's request ids, as text (an integer id is its decimal text; a missing one is "").

    The native reader's stay the Arrow array pyarrow read: ten million ids as Python strings
    took 2 s to make, 0.6 GB to hold and 1.5 s to turn back into Arrow for the hash (issue 36).
    Other readers hand over numpy arrays. Either way, what pairing asks (blanks, repeats, the
    ids both runs hold, the rows at some places) is answered without the other form. How many
    ids repeat is kept once counted: pairing, prepare and the rows all ask it of the same ids.
    """

    __slots__ = ("_counting", "_repeats", "values")

    def __init__(self, values: Any) -> None:
        self.values: Any = values.values if isinstance(values, Ids) else values
        self._repeats: int | None = None
        self._counting: _Distinct | None = None
        if isinstance(values, Ids):  # the same ids: what was counted of them holds
            self._repeats, self._counting = values._repeats, values._counting

    def count_early(self) -> None:
        """Start counting how many ids repeat, on another thread, so that pairing finds it
        done (pyarrow's `unique` lets go of the interpreter): a comparison asks it of head's
        ids, and reads the base while another core counts (issue 36)."""
        waiting = self._repeats is None and self._counting is None
        if self.arrow and waiting and len(self) >= HASH_IDS_FROM:
            self._counting = _Distinct(self.values)

    @property
    def arrow(self) -> bool:
        return not isinstance(self.values, np.ndarray)

    def __len__(self) -> int:
        return len(self.values)

    def __iter__(self) -> Iterator[Any]:
        return iter(self.tolist())

    @overload
    def __getitem__(self, index: int) -> Any: ...
    @overload
    def __getitem__(self, index: slice | np.ndarray | Sequence[Any]) -> Ids: ...

    def __getitem__(self, index: Any) -> Any:
        """The ids at `index` (a slice, positions or a mask), as numpy indexing takes them; one
        id at an integer."""
        if isinstance(index, int | np.integer):
            one = self.values[int(index)]
            return one.as_py() if self.arrow else one
        if not self.arrow:
            return Ids(self.values[index])
        import pyarrow as pa

        if isinstance(index, slice):
            index = np.arange(*index.indices(len(self.values)))
        index = np.asarray(index)
        if index.dtype == np.bool_:
            return Ids(self.values.filter(pa.array(index)))
        return Ids(self.values.take(pa.array(index.astype(np.int64, copy=False))))

    def tolist(self) -> list[Any]:
        return self.values.to_pylist() if self.arrow else self.values.tolist()  # type: ignore[no-any-return]

    def numpy(self) -> npt.NDArray[Any]:
        """The ids as a numpy array (Python strings for Arrow's): for a few of them."""
        if not self.arrow:
            return self.values  # type: ignore[no-any-return]
        return self.values.to_numpy(zero_copy_only=False)  # type: ignore[no-any-return]

    def blank(self) -> BoolArray:
        """Which ids are empty (a request without an id)."""
        if not self.arrow:
            return np.asarray(self.values == "", dtype=bool)
        import pyarrow.compute as pc

        # from the lengths: comparing with "" makes a scalar of it, and that imports pandas
        return np.asarray(arrow_numpy(pc.binary_length(self.values)) == 0, dtype=bool)

    def same(self, other: Ids) -> bool:
        """The same ids in the same order."""
        if len(self) != len(other):
            return False
        if self.arrow and other.arrow:
            return bool(_chunked(self.values).equals(_chunked(other.values)))
        return bool(np.array_equal(self.numpy(), other.numpy()))

    def count_in(self, wanted: set[Any]) -> int:
        """How many of the ids are in `wanted` (a few ids)."""
        if not self.arrow:
            return sum(1 for x in self.values.tolist() if x in wanted)
        import pyarrow as pa
        import pyarrow.compute as pc

        hits = pc.is_in(self.values, value_set=pa.array(sorted(wanted), type=self.values.type))
        return int(pc.sum(hits).as_py() or 0)

    @staticmethod
    def concat(parts: Sequence[Ids]) -> Ids:
        """The ids of several runs, one run after another."""
        if all(p.arrow for p in parts) and len({p.values.type for p in parts}) == 1:
            import pyarrow as pa

            return Ids(pa.chunked_array([c for p in parts for c in _chunked(p.values).chunks]))
        return Ids(np.concatenate([p.numpy() for p in parts]))


def repeated_ids(ids: Ids) -> int:
    """How many request ids repeat an earlier one (len(ids) - len(set(ids))), by hashing:
    pyarrow's `unique` for many (ten million random ids in 2.4-3.4 s, where the dictionary
    encoding, which also numbers them, took 4.0-4.7 s), a set for a few (no pyarrow.compute
    import at start-up)."""
    if ids._repeats is None and ids._counting is not None:
        distinct = ids._counting.result()  # None: called off, counted here instead
        ids._repeats = None if distinct is None else len(ids) - distinct
    if ids._repeats is None:
        if len(ids) < HASH_IDS_FROM and not ids.arrow:
            distinct = len({str(x) for x in ids.tolist()})
        else:
            import pyarrow.compute as pc

            distinct = len(pc.unique(ids.values if ids.arrow else _as_text(ids.values)))
        ids._repeats = len(ids) - distinct
    return ids._repeats


def _progress(ids: Ids) -> int:
    """How far the count of repeats is: 0 known, 1 done, 2 under way, 3 waiting, 4 not asked."""
    c = ids._counting
    if ids._repeats is not None:
        return 0
    if c is None:
        return 4
    return 1 if c._done.is_set() else 2 if c._started.is_set() else 3


class _Distinct:
    """How many distinct ids an Arrow array holds, counted on a thread of its own. One count
    runs at a time (two would only share the cores the reader uses); a count not started yet
    can be called off. The thread is a daemon: an error that ends the run does not wait."""

    _one_at_a_time = threading.Lock()

    def __init__(self, values: Any) -> None:
        self._values: Any = values
        self._count: int | None = None
        self._error: BaseException | None = None
        self._called_off = False
        self._started = threading.Event()
        self._done = threading.Event()
        threading.Thread(target=self._run, name="budgetdiff-ids", daemon=True).start()

    def _run(self) -> None:
        try:
            with self._one_at_a_time:
                self._started.set()
                if not self._called_off:
                    import pyarrow.compute as pc

                    self._count = len(pc.unique(self._values))
        except BaseException as e:  # raised where the count is asked for
            self._error = e
        finally:
            self._values = None
            self._done.set()

    def cancel(self) -> None:
        self._called_off = True

    def result(self) -> int | None:
        """The count, once done; None when it was called off before it began."""
        self._done.wait()
        if self._error is not None:
            raise self._error
        return self._count


def common_ids(a: Ids, b: Ids) -> tuple[np.ndarray, np.ndarray]:
    """(ia, ib): the positions in `a` and in `b` of the ids both hold, a[ia] == b[ib], in a's
    order, each id at its first place on each side: np.intersect1d's pairs (which come in the
    ids' sorted order), found by one hash of both sides instead of a sort. Counts how many ids
    repeat on each side (`repeated_ids` then answers at once)."""
    if a.same(b):  # the same requests in the same order: one side's count is both sides'
        counted, other = (b, a) if _progress(b) < _progress(a) else (a, b)
        if other._counting is not None:
            other._counting.cancel()
        other._repeats = repeated_ids(counted)
        first = _first_places(a)
        return first, first
    ca, cb = _codes([a, b])
    size = int(max(ca.max(initial=-1), cb.max(initial=-1))) + 1
    ia = _first_of(ca, size)  # each id of a at its first place, in a's order
    first_b = np.full(size, len(cb), dtype=np.intp)
    np.minimum.at(first_b, cb, np.arange(len(cb)))  # each id's first place in b
    a._repeats = len(ca) - len(ia)
    b._repeats = len(cb) - int(np.count_nonzero(first_b < len(cb)))
    ib = first_b[ca[ia]]
    keep = ib < len(cb)
    return ia[keep], ib[keep]


def _first_places(ids: Ids) -> np.ndarray:
    """The position of each id's first appearance, in order (every position when unique)."""
    if repeated_ids(ids) == 0:
        return np.arange(len(ids))
    return _first_of(_codes([ids])[0])


def _first_of(codes: np.ndarray, size: int | None = None) -> np.ndarray:
    """Positions of each code's first appearance, ascending."""
    n = len(codes)
    first = np.full(int(codes.max(initial=-1)) + 1 if size is None else size, n, dtype=np.intp)
    np.minimum.at(first, codes, np.arange(n))
    places = first[first < n]
    if len(places) == n:  # every id once: every position, in order
        return np.arange(n)
    return np.sort(places)


def _codes(ids: Sequence[Ids]) -> list[np.ndarray]:
    """One integer code per id, equal ids (as text) equal codes across all of them, numbered
    in order of first appearance: pyarrow's dictionary encoding of Arrow ids and of many,
    a dict of a few (no pyarrow.compute import at start-up)."""
    sizes = [len(i) for i in ids]
    if sum(sizes) < HASH_IDS_FROM and not any(i.arrow for i in ids):
        seen: dict[str, int] = {}
        flat_list = [seen.setdefault(str(x), len(seen)) for i in ids for x in i.tolist()]
        flat = np.array(flat_list, dtype=np.intp)
    else:
        flat = _arrow_codes(ids)
    bounds = np.cumsum([0, *sizes])
    return [flat[lo:hi] for lo, hi in pairwise(bounds)]


def _arrow_codes(ids: Sequence[Ids]) -> np.ndarray:
    import pyarrow as pa
    import pyarrow.compute as pc

    parts = [_chunked(i.values if i.arrow else _as_text(i.values)) for i in ids]
    if len({c.type for c in parts}) != 1:
        parts = [pc.cast(c, pa.large_string()) for c in parts]
    whole = pa.chunked_array([c for p in parts for c in p.chunks], type=parts[0].type)
    # one dictionary for every chunk (pyarrow unifies them): a chunk's codes are the whole's
    codes = [c.indices.to_numpy() for c in pc.dictionary_encode(whole).chunks]
    empty = np.zeros(0, dtype=np.intp)  # (no chunks: no ids, no codes)
    return np.concatenate([empty, *codes]).astype(np.intp, copy=False)


def _chunked(values: Any) -> Any:
    """Arrow ids as one ChunkedArray (the native reader's keep Parquet's chunks: combining
    them copied every id, 0.35 s a side at ten million)."""
    import pyarrow as pa

    return values if isinstance(values, pa.ChunkedArray) else pa.chunked_array([values])


def _as_text(values: npt.NDArray[Any]) -> Any:
    """A numpy id array as Arrow text (ids of several kinds, 1 and "1", as text alike)."""
    import pyarrow as pa

    try:
        return pa.array(values, type=pa.string())
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return pa.array([str(x) for x in values.tolist()], type=pa.string())


_LATENCY = "more than a day in ms; check the unit (a slice's `unit: s|ms|us`) or the file"
_COUNT = "not a count (0 to 10^12)"


def check_bounds(run: Run) -> None:
    """Refuse a run holding a value no benchmark produces (see MAX_MS, MAX_COUNT): one
    ReadError naming the file, the field and the request, never a silently absurd report."""
    _check_per_request(run)
    if run.duration_s is not None and (run.duration_s < 0 or run.duration_s > MAX_SECONDS):
        raise _refused(run, "the duration", None, run.duration_s, "not a benchmark's duration (s)")
    # the file's own counts first: a reader's request count may be made from them
    for key in _META_COUNTS:
        value = run.meta.get(key)
        if isinstance(value, int | float) and not 0 <= value <= MAX_COUNT:
            raise _refused(run, f"the {key} count", None, value, _COUNT)
    if run.summary_count is not None and not 0 <= run.summary_count <= MAX_COUNT:
        raise _refused(run, "the request count", None, run.summary_count, _COUNT)
    for name, by_pct in run.summary.items():
        for pct, value in by_pct.items():
            if np.isfinite(value) and abs(value) > MAX_MS:
                raise _refused(run, f"{name} at {numbers.percentile(pct)}", None, value, _LATENCY)
    for name, hist in run.histograms.items():
        counts = hist.counts
        if len(counts) and not (np.isfinite(counts) & (counts >= 0) & (counts <= MAX_COUNT)).all():
            value = float(counts[~(np.isfinite(counts) & (counts >= 0) & (counts <= MAX_COUNT))][0])
            raise _refused(run, f"the {name} histogram's count", None, value, _COUNT)


def _refused(run: Run, field: str, row: int | None, value: float, what: str) -> ReadError:
    where = f" of request #{row + 1}" if row is not None else ""
    return ReadError(
        f"{run.source}: {field}{where} is {numbers.given(value)}, {what}", file=run.source
    )


def _check_per_request(run: Run) -> None:
    """The per-request columns: latencies and gaps of succeeded requests, token counts, starts."""
    ok = run.succeeded
    for name, values in [*run.slices.items(), ("ttft", run.ttft), ("total", run.total)]:
        if values is not None and len(values) and not _within(values, -MAX_MS, MAX_MS):
            bad = ok & np.isfinite(values) & (np.abs(values) > MAX_MS)
            if bad.any():
                row = int(np.flatnonzero(bad)[0])
                raise _refused(run, name, row, float(values[row]), _LATENCY)
    _check_gaps(run, ok)
    for name, values in (("input_tokens", run.input_tokens), ("output_tokens", run.output_tokens)):
        if values is not None and len(values) and not _within(values, 0, MAX_COUNT):
            with np.errstate(invalid="ignore"):
                bad = ok & (np.isinf(values) | (values < 0) | (values > MAX_COUNT))
            if bad.any():
                row = int(np.flatnonzero(bad)[0])
                what = "not a token count (0 to 10^12, or empty)"
                raise _refused(run, name, row, float(values[row]), what)
    start, end = run.start_time, run.end_time
    if start is not None and len(start) and not _within(start, -MAX_SECONDS, MAX_SECONDS):
        bad = np.isfinite(start) & (np.abs(start) > MAX_SECONDS)
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            value = float(start[row])
            raise _refused(run, "start_time", row, value, "not a time in seconds")
    if end is not None and len(end) and not _within(end, -MAX_SECONDS, MAX_SECONDS):
        bad = np.isfinite(end) & (np.abs(end) > MAX_SECONDS)
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            value = float(end[row])
            raise _refused(run, "end_time", row, value, "not a time in seconds")


def _within(values: FloatArray, low: float, high: float) -> bool:
    """Every number in `values` (NaN aside) in [low, high]: two reductions, no temporary; the
    row-by-row search runs only when one is not (issue 36: 0.4 s a side at ten million)."""
    least, most = float(np.fmin.reduce(values)), float(np.fmax.reduce(values))
    return low <= least and most <= high  # all NaN: False, and the search finds nothing


def _check_gaps(run: Run, ok: BoolArray) -> None:
    itl = run.itl
    # the search below only when a gap is out of bounds or NaN: two reductions find that out
    # without a temporary the size of the pool (64 MB at 100,000 requests of 64 gaps)
    if (
        itl is None
        or not len(itl.values)
        or (float(itl.values.min()) >= -MAX_MS and float(itl.values.max()) <= MAX_MS)
    ):
        return
    gaps = itl.values
    mine = np.repeat(ok, np.diff(itl.offsets))  # the gaps of succeeded requests
    bad = mine & np.isfinite(gaps) & (np.abs(gaps) > MAX_MS)
    if bad.any():
        at = int(np.flatnonzero(bad)[0])
        row = int(np.searchsorted(itl.offsets, at, side="right")) - 1
        raise _refused(run, "an inter-token gap", row, float(gaps[at]), _LATENCY)
