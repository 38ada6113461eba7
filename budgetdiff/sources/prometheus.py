"""Base and head from a live Prometheus (`compare --prometheus URL`): per latency histogram
family, `sum by (le) (increase(FAMILY_bucket{MATCH}[WINDOW]))` with the count from `_count`
and the mean from `_sum`, each side at the end of its own window -> one aggregate `Run` a side.

The families and the slice or metric each measures are the snapshot reader's
(`formats.prometheus.METRIC_NAMES`: vLLM's two generations of names and SGLang's), plus what
the budget's `prometheus.metrics` maps. The Runs carry histograms like a scrape's, so the
percentiles, their buckets, the first-bucket and `+Inf` cases and the change test on the bucket
counts are `aggregate`'s, the same as for a saved snapshot.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING

import numpy as np

from budgetdiff import numbers
from budgetdiff.errors import UsageError
from budgetdiff.formats.prometheus import _PREFERRED, METRIC_NAMES
from budgetdiff.sources.prometheus_api import PrometheusClient, PrometheusError, Sample
from budgetdiff.table import Histogram, Run

if TYPE_CHECKING:
    import httpx

NAME = "prometheus"
SCHEMA = "HTTP API"  # where the report names the file's schema
NAMESPACES = ("vllm:", "sglang:")
DEFAULT_WINDOW = "30m"
# the order families are asked in: end to end first, so an error names the headline's query
ORDER = ("total", "ttft", "queue", "prefill", "decode", "itl", "tpot")
BUCKET_ESTIMATES = (
    "the percentiles are bucket estimates (PromQL histogram_quantile's interpolation), each "
    "with the bucket it falls in"
)
_LABEL = r"[a-zA-Z_][a-zA-Z0-9_]*"
_VALUE = r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\''
_MATCHER = re.compile(rf"\s*({_LABEL})\s*(=~|!~|!=|=)\s*({_VALUE})\s*")
_DURATION = re.compile(r"^(?:\d+(?:ms|s|m|h|d|w|y))+$")
_UNIT_S = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800, "y": 31536000}


@dataclass(frozen=True, slots=True)
class Window:
    """One side: the label matchers added to every series, and when its window ends."""

    match: str  # the inside of `{...}`, checked
    end: float  # Unix seconds

    def selector(self, metric: str) -> str:
        return f"{metric}{{{self.match}}}"

    @property
    def when(self) -> str:
        """The end, as RFC 3339 in UTC."""
        return datetime.fromtimestamp(self.end, timezone.utc).isoformat().replace("+00:00", "Z")


@dataclass(frozen=True, slots=True)
class LiveQuery:
    """What to ask which server: the window (a PromQL duration) and each side's matchers."""

    url: str
    window: str
    base: Window | None
    head: Window
    families: Mapping[str, str]  # slice or metric -> family, the budget's `prometheus.metrics`

    @classmethod
    def parse(
        cls,
        url: str,
        *,
        base_match: str | None,
        head_match: str | None,
        window: str | None,
        at: str | None = None,
        base_at: str | None = None,
        head_at: str | None = None,
        families: Mapping[str, str] | None = None,
        compare: bool = True,
        now: float | None = None,
    ) -> LiveQuery:
        """The options of `--prometheus`, checked (a usage error names the flag and the fix)."""
        if at is not None and (base_at is not None or head_at is not None):
            raise UsageError("--at ends both windows: give it or --base-at/--head-at, not both")
        if not compare and (base_match is not None or base_at is not None):
            raise UsageError("check reads one side: give --head-match (and --at), no --base-*")
        if base_match is None and head_match is None:
            raise UsageError(
                "--prometheus needs --head-match (and --base-match for compare), e.g. "
                "--base-match '{version=\"stable\"}' --head-match '{version=\"canary\"}'"
            )
        clock = time.time() if now is None else now
        ends = {
            side: _time(flag, given, clock)
            for side, flag, given in (
                ("base", "--base-at", base_at),
                ("head", "--head-at", head_at),
            )
        }
        if at is not None:
            ends = dict.fromkeys(ends, _time("--at", at, clock))
        head = Window(_matchers("--head-match", head_match or base_match or ""), ends["head"])
        base = Window(_matchers("--base-match", base_match or head_match or ""), ends["base"])
        if compare and base == head:
            raise UsageError(
                "base and head are the same series over the same window: give --base-match and "
                "--head-match (canary vs stable) or --base-at and --head-at (after vs before)"
            )
        return cls(
            url=url,
            window=_duration(window or DEFAULT_WINDOW),
            base=base if compare else None,
            head=head,
            families=dict(families or {}),
        )


def read_live(
    query: LiveQuery,
    environ: Mapping[str, str],
    *,
    transport: httpx.BaseTransport | None = None,
    sleep: Callable[[float], None] | None = None,
) -> tuple[Run | None, Run]:
    """The base run (None for a check) and the head run, read from the server (each side one
    network step, with its own deadline)."""
    base = None
    if query.base is not None:
        base = read_side(query, "base", environ, transport=transport, sleep=sleep)
    return base, read_side(query, "head", environ, transport=transport, sleep=sleep)


def read_side(
    query: LiveQuery,
    name: str,
    environ: Mapping[str, str],
    *,
    transport: httpx.BaseTransport | None = None,
    sleep: Callable[[float], None] | None = None,
) -> Run:
    """One side's run (`name` "base" or "head"), read from the server within the deadline of
    the step "reading the base (head) side": what `evaluate.run` reads for a `Live` source."""
    side = query.base if name == "base" else query.head
    if side is None:
        raise UsageError("check reads one side: give --head-match (and --at), no --base-*")
    wait = time.sleep if sleep is None else sleep
    step = f"reading the {name} side"
    with PrometheusClient(query.url, environ, transport=transport, sleep=wait, step=step) as c:
        return _side(c, query, side, name)


def candidates(families: Mapping[str, str]) -> dict[str, tuple[str, ...]]:
    """Slice or metric -> the families that may measure it, in order of preference: the
    budget's own, else vLLM's and SGLang's names (the newer alias first)."""
    out: dict[str, list[str]] = {target: [] for target in ORDER}
    ordered = sorted(METRIC_NAMES, key=lambda short: short not in _PREFERRED)
    for short in ordered:
        out.setdefault(METRIC_NAMES[short], []).extend(ns + short for ns in NAMESPACES)
    for target, family in families.items():
        out[target] = [family]
    return {target: tuple(names) for target, names in out.items() if names}


def _side(client: PrometheusClient, query: LiveQuery, side: Window, name: str) -> Run:
    """One side's histograms, sums and counts; no family with series is bad input."""
    histograms: dict[str, Histogram] = {}
    meta: dict[str, str | float] = {"format": NAME, "schema": SCHEMA, "side": "server"}
    asked: list[str] = []
    for target, names in candidates(query.families).items():
        for family in names:
            promql = _increase(family, "_bucket", side, query.window, by_le=True)
            asked.append(promql)
            buckets = client.vector(promql, side.end)
            if not buckets:
                continue
            histograms[target] = _histogram(buckets, family, client, promql)
            scale = _scale(family)
            meta[f"count:{target}"] = _total(client, family, "_count", side, query, 1.0)
            meta[f"sum:{target}"] = _total(client, family, "_sum", side, query, scale)
            meta[f"family:{target}"] = family
            break
    if not histograms:
        raise PrometheusError(
            f"prometheus {client.url}: no latency histogram has series matching "
            f"{{{side.match}}} in the {query.window} to {side.when} (asked {len(asked)} "
            f"families); check --{name}-match and the window; query: {asked[0]}"
        )
    meta["note"] = (
        f"{name}: Prometheus {client.url}, series {{{side.match}}}, increase over the "
        f"{query.window} to {side.when}; {BUCKET_ESTIMATES}"
    )
    return Run(
        source=f"{{{side.match}}}[{query.window}] @ {side.when}",
        n=0,
        histograms=histograms,
        summary_count=_requests(meta, histograms),
        meta=meta,
    )


def _increase(family: str, suffix: str, side: Window, window: str, *, by_le: bool) -> str:
    by = " by (le)" if by_le else ""
    return f"sum{by} (increase({side.selector(family + suffix)}[{window}]))"


def _total(
    client: PrometheusClient,
    family: str,
    suffix: str,
    side: Window,
    query: LiveQuery,
    scale: float,
) -> float:
    """`sum(increase(FAMILY_count or _sum))`, checked finite and >= 0; 0 without series."""
    promql = _increase(family, suffix, side, query.window, by_le=False)
    result = client.vector(promql, side.end)
    value = sum(s.value for s in result)
    if not (math.isfinite(value) and value >= 0):
        raise PrometheusError(
            f"prometheus {client.url} answered {numbers.given(value)}, not a count or sum "
            f"of seconds; query: {promql}"
        )
    return value * scale


def _histogram(
    samples: list[Sample], family: str, client: PrometheusClient, promql: str
) -> Histogram:
    """Cumulative counts by `le` -> per-bucket counts in ms. Counts that fall as `le` grows
    (series that started at different times) are raised to the count below, as PromQL's
    histogram_quantile does."""
    per: dict[float, float] = {}
    for s in samples:
        le = _le(s.labels.get("le"))
        if le is None or not (math.isfinite(s.value) and s.value >= 0):
            raise PrometheusError(
                f"prometheus {client.url} answered a bucket le={s.labels.get('le')!r} of "
                f"{numbers.given(s.value)}, not a histogram; query: {promql}"
            )
        per[le] = per.get(le, 0.0) + s.value
    bounds = np.array(sorted(per), dtype=np.float64)
    if not math.isinf(bounds[-1]):
        raise PrometheusError(
            f'prometheus {client.url}: {family} has no le="+Inf" bucket; query: {promql}'
        )
    cumulative = np.maximum.accumulate(np.array([per[b] for b in bounds], dtype=np.float64))
    return Histogram(bounds=bounds * _scale(family), counts=np.diff(cumulative, prepend=0.0))


def _le(text: str | None) -> float | None:
    try:
        value = float(text) if text is not None else math.nan
    except ValueError:
        return None
    return value if value >= 0 else None  # NaN fails the comparison


def _scale(family: str) -> float:
    """Milliseconds per unit of the family: seconds, Prometheus' base unit, unless its name
    says milliseconds."""
    return 1.0 if family.endswith(("_milliseconds", "_ms")) else 1000.0


def _requests(meta: Mapping[str, str | float], histograms: Mapping[str, Histogram]) -> int:
    """The side's requests: the end-to-end `_count` (else TTFT's, decode's, any)."""
    for target in ("total", "ttft", "decode", *histograms):
        count = meta.get(f"count:{target}")
        if isinstance(count, float):
            return round(count)
    return 0


def _matchers(flag: str, text: str) -> str:
    """`{a="b", c=~"d"}` -> `a="b",c=~"d"`: label matchers only, so no other PromQL gets in."""
    body = text.strip()
    if body.startswith("{") and body.endswith("}"):
        body = body[1:-1]
    elif body:
        raise UsageError(
            f'{flag} {text[:100]!r}: write label matchers in braces, {{version="canary"}}'
        )
    found, pos = [], 0
    while pos < len(body):
        m = _MATCHER.match(body, pos)
        if m is None:
            raise UsageError(
                f"{flag} {text[:100]!r}: not label matchers at {body[pos : pos + 30]!r}; write "
                '{label="value", other=~"regex"}'
            )
        if m.group(1) in ("le", "__name__"):
            raise UsageError(
                f"{flag}: {m.group(1)!r} is budgetdiff's to choose; match other labels"
            )
        found.append(f"{m.group(1)}{m.group(2)}{m.group(3)}")
        pos = m.end()
        if pos < len(body):
            if body[pos] != ",":
                raise UsageError(f"{flag} {text[:100]!r}: separate the matchers with commas")
            pos += 1
    return ",".join(found)


def _duration(text: str) -> str:
    """A PromQL duration (`30m`, `1h30m`), checked."""
    window = text.strip()
    if not _DURATION.match(window) or _seconds(window) <= 0:
        raise UsageError(f"--window {text[:40]!r}: write a PromQL duration such as 30m or 1h")
    return window


def _seconds(window: str) -> float:
    return sum(int(n) * _UNIT_S[unit] for n, unit in re.findall(r"(\d+)(ms|s|m|h|d|w|y)", window))


def _time(flag: str, text: str | None, now: float) -> float:
    """RFC 3339 or Unix seconds; None is now."""
    if text is None:
        return now
    try:
        seconds = float(text)
    except ValueError:
        pass
    else:
        if not (math.isfinite(seconds) and seconds > 0):
            raise UsageError(f"{flag} {text[:40]!r}: write a time after 1970, in Unix seconds")
        return seconds
    try:
        parsed = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(
            f"{flag} {text[:40]!r}: write RFC 3339 (2026-12-01T21:00:00Z) or Unix seconds"
        ) from None
    if parsed.tzinfo is None:
        raise UsageError(f"{flag} {text[:40]!r}: give the time zone (Z or +HH:MM)")
    return parsed.timestamp()
