"""One benchmark run, normalized: per-request columns in milliseconds, whatever tool wrote it.

Every reader (`budgetdiff.formats.*`) returns `Run` objects; everything downstream
(`compare`, `stats`, `attribution`, `rebudget`) reads only this.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]

# Slice names the contract knows, in the order a request crosses them.
KNOWN_SLICES = ("network", "gateway", "queue", "prefill", "first_token", "decode", "app")
UNATTRIBUTED = "unattributed"
# Per-request metrics (not slices) a run may carry.
METRICS = ("ttft", "total", "itl", "tpot")


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
