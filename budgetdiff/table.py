"""One benchmark run, normalized: per-request columns in milliseconds, whatever tool wrote it.

Every reader (`budgetdiff.formats.*`) returns `Run` objects; everything downstream
(`compare`, `stats`, `attribution`, `rebudget`) reads only this.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from budgetdiff.errors import InputError

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]

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
    request_id: npt.NDArray[Any] | None = None  # str or object (Python str) values
    input_tokens: FloatArray | None = None
    output_tokens: FloatArray | None = None
    itl: Itl | None = None
    start_time: FloatArray | None = None  # seconds, any origin; gives arrival order
    duration_s: float | None = None
    scenario: str | None = None
    meta: dict[str, str | float] = field(default_factory=dict)
    summary: dict[str, dict[float, float]] = field(default_factory=dict)
    summary_count: int | None = None
    histograms: dict[str, Histogram] = field(default_factory=dict)
    # per-request TPOT as the tool defines it, where that is not (total - TTFT) / (tokens - 1)
    # (inference-perf: last token - first token); None: that formula
    tpot: FloatArray | None = None

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


def repeated_ids(ids: npt.NDArray[Any]) -> int:
    """How many request ids repeat an earlier one (len(ids) - len(np.unique(ids))), by a sort:
    np.unique's first call imports numpy.ma, 8 ms of start-up."""
    ordered = np.sort(ids)
    return int(np.count_nonzero(ordered[1:] == ordered[:-1]))


def check_bounds(run: Run) -> None:
    """Refuse a run holding a value no benchmark produces (see MAX_MS, MAX_COUNT): one
    InputError naming the file, the field and the request, never a silently absurd report."""
    ok = run.succeeded

    def refuse(field: str, row: int | None, value: float, what: str) -> InputError:
        where = f" of request #{row + 1}" if row is not None else ""
        return InputError(f"{run.source}: {field}{where} is {value:g}, {what}")

    latency = "more than a day in ms; check the unit (a slice's `unit: s|ms|us`) or the file"
    for name, values in [*run.slices.items(), ("ttft", run.ttft), ("total", run.total)]:
        if values is not None and len(values):
            bad = ok & np.isfinite(values) & (np.abs(values) > MAX_MS)
            if bad.any():
                row = int(np.flatnonzero(bad)[0])
                raise refuse(name, row, float(values[row]), latency)
    itl = run.itl
    # the search below only when a gap is out of bounds or NaN: two reductions find that out
    # without a temporary the size of the pool (64 MB at 100,000 requests of 64 gaps)
    if (
        itl is not None
        and len(itl.values)
        and not (float(itl.values.min()) >= -MAX_MS and float(itl.values.max()) <= MAX_MS)
    ):
        gaps = itl.values
        mine = np.repeat(ok, np.diff(itl.offsets))  # the gaps of succeeded requests
        bad = mine & np.isfinite(gaps) & (np.abs(gaps) > MAX_MS)
        if bad.any():
            at = int(np.flatnonzero(bad)[0])
            row = int(np.searchsorted(itl.offsets, at, side="right")) - 1
            raise refuse("an inter-token gap", row, float(gaps[at]), latency)
    for name, values in (("input_tokens", run.input_tokens), ("output_tokens", run.output_tokens)):
        if values is not None and len(values):
            with np.errstate(invalid="ignore"):
                bad = ok & (np.isinf(values) | (values < 0) | (values > MAX_COUNT))
            if bad.any():
                row = int(np.flatnonzero(bad)[0])
                raise refuse(
                    name, row, float(values[row]), "not a token count (0 to 10^12, or empty)"
                )
    if run.start_time is not None and len(run.start_time):
        bad = np.isfinite(run.start_time) & (np.abs(run.start_time) > MAX_SECONDS)
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise refuse("start_time", row, float(run.start_time[row]), "not a time in seconds")
    if run.duration_s is not None and (run.duration_s < 0 or run.duration_s > MAX_SECONDS):
        raise refuse("the duration", None, run.duration_s, "not a benchmark's duration (s)")
    if run.summary_count is not None and not 0 <= run.summary_count <= MAX_COUNT:
        raise refuse("the request count", None, run.summary_count, "not a count (0 to 10^12)")
    for key in _META_COUNTS:
        value = run.meta.get(key)
        if isinstance(value, int | float) and not 0 <= value <= MAX_COUNT:
            raise refuse(f"the {key} count", None, value, "not a count (0 to 10^12)")
    for name, by_pct in run.summary.items():
        for pct, value in by_pct.items():
            if np.isfinite(value) and abs(value) > MAX_MS:
                raise refuse(f"{name} at p{pct:g}", None, value, latency)
    for name, hist in run.histograms.items():
        counts = hist.counts
        if len(counts) and not (np.isfinite(counts) & (counts >= 0) & (counts <= MAX_COUNT)).all():
            value = float(counts[~(np.isfinite(counts) & (counts >= 0) & (counts <= MAX_COUNT))][0])
            raise refuse(f"the {name} histogram's count", None, value, "not a count (0 to 10^12)")
