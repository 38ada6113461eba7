"""A Prometheus text exposition scraped from an LLM server (vLLM, SGLang) -> an aggregate `Run`.

The latency histograms (`_bucket` lines, summed over every label set but `le`) become
`Run.histograms` in ms, named after the slice or metric they measure; `_sum` / `_count` go to
`meta` as `sum:<name>` (ms) and `count:<name>`. One scrape is cumulative since the server
started: two scrapes (before and after a run) are subtracted by `formats.combine`.
`histogram_quantile` estimates a percentile like Prometheus' function of that name.
"""

from __future__ import annotations

import math
import re

import numpy as np

from budgetdiff.errors import InputError
from budgetdiff.formats import ReadOptions
from budgetdiff.table import Histogram, Run

NAME = "prometheus"

# metric name after the `vllm:` / `sglang:` namespace -> slice or metric
METRIC_NAMES = {
    "request_queue_time_seconds": "queue",
    "queue_time_seconds": "queue",
    "request_prefill_time_seconds": "prefill",
    "request_decode_time_seconds": "decode",
    "time_to_first_token_seconds": "ttft",
    "e2e_request_latency_seconds": "total",
    "inter_token_latency_seconds": "itl",
    "time_per_output_token_seconds": "itl",  # older vLLM / SGLang name of the same
    "request_time_per_output_token_seconds": "tpot",
}
_PREFERRED = {"inter_token_latency_seconds"}  # wins over its older alias when both exist
_NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
_SAMPLE = re.compile(rf"^({_NAME})(\{{.*\}})?\s+(\S+)(\s+-?\d+)?\s*$")
_LABEL = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*,?')
_ESCAPES = {"\\\\": "\\", '\\"': '"', "\\n": "\n"}


def _fail(source: str, message: str) -> InputError:
    return InputError(f"{NAME}: {source}: {message}")


def sniff(head: bytes, name: str) -> bool:
    """Text whose lines are `# HELP` / `# TYPE` comments and `name{labels} value` samples."""
    try:
        text = head.decode("utf-8", errors="strict")
    except UnicodeDecodeError as exc:
        if exc.start < len(head) - 4:
            return False
        text = head[: exc.start].decode("utf-8")
    lines = [line for line in text.splitlines()[:-1] or text.splitlines() if line.strip()][:40]
    if not lines:
        return False
    typed = any(line.startswith(("# TYPE ", "# HELP ")) for line in lines)
    good = sum(1 for line in lines if line.startswith("#") or _SAMPLE.match(line))
    samples = sum(1 for line in lines if not line.startswith("#") and _SAMPLE.match(line))
    return typed and samples > 0 and good == len(lines)


def _labels(text: str, source: str, number: int) -> dict[str, str]:
    body = text[1:-1]
    out: dict[str, str] = {}
    pos = 0
    while pos < len(body):
        m = _LABEL.match(body, pos)
        if not m or m.end() == pos:
            raise _fail(source, f"line {number}: cannot read the labels {text!r}")
        value = re.sub(r"\\[\\\"n]", lambda e: _ESCAPES[e.group(0)], m.group(2))
        out[m.group(1)] = value
        pos = m.end()
    return out


def _float(text: str, source: str, number: int) -> float:
    try:
        return float(text)
    except ValueError:
        raise _fail(source, f"line {number}: {text[:40]!r} is not a number") from None


def _count(text: str, source: str, number: int) -> float:
    """A bucket or request count: finite and >= 0."""
    value = _float(text, source, number)
    if not (math.isfinite(value) and value >= 0):
        raise _fail(source, f"line {number}: count {text[:40]!r} must be a finite number >= 0")
    return value


def _bound(text: str, source: str, number: int) -> float:
    """A bucket's `le`: a finite number of seconds >= 0, or +Inf."""
    value = _float(text, source, number)
    if not (value >= 0 and (math.isfinite(value) or value == math.inf)):
        raise _fail(
            source,
            f'line {number}: le="{text[:40]}" must be a finite number of seconds >= 0 or "+Inf"',
        )
    return value


def _namespace_free(metric: str) -> str:
    return metric.split(":", 1)[1] if ":" in metric else metric


def parse(
    text: str, source: str
) -> tuple[dict[str, Histogram], dict[str, float], dict[str, float], dict[str, float]]:
    """Histograms (ms, +Inf as the last bound, per-bucket counts), sums (ms), counts, and the
    earliest `_created` time of each (a later one means the server restarted)."""
    buckets: dict[str, dict[float, float]] = {}
    sums: dict[str, float] = {}
    counts: dict[str, float] = {}
    created: dict[str, float] = {}
    chosen: dict[str, str] = {}  # target name -> metric base it was read from
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.startswith("#"):
            continue
        m = _SAMPLE.match(line)
        if not m:
            raise _fail(
                source, f"line {number}: not a sample line ('name{{labels}} value'): {line[:80]!r}"
            )
        metric, label_text, value_text = m.group(1), m.group(2), m.group(3)
        for suffix in ("_bucket", "_sum", "_count", "_created"):
            if metric.endswith(suffix):
                base = metric[: -len(suffix)]
                break
        else:
            continue
        short = _namespace_free(base)
        target = METRIC_NAMES.get(short)
        if target is None:
            continue
        previous = chosen.get(target)
        if previous is not None and previous != base:
            if _namespace_free(previous) in _PREFERRED or short not in _PREFERRED:
                continue
            buckets.pop(target, None)
            sums.pop(target, None)
            counts.pop(target, None)
            created.pop(target, None)
        chosen[target] = base
        if suffix in ("_bucket", "_count"):
            value = _count(value_text, source, number)
        else:
            value = _float(value_text, source, number)
            if not math.isfinite(value):
                raise _fail(source, f"line {number}: {value_text[:40]!r} must be finite")
        if suffix == "_bucket":
            labels = _labels(label_text or "{}", source, number)
            if "le" not in labels:
                raise _fail(source, f"line {number}: a _bucket sample without an 'le' label")
            le = _bound(labels["le"], source, number)
            per = buckets.setdefault(target, {})
            per[le] = per.get(le, 0.0) + value
        elif suffix == "_created":
            created[target] = min(created.get(target, value), value)
        elif suffix == "_sum":
            sums[target] = sums.get(target, 0.0) + value * 1000.0
        else:
            counts[target] = counts.get(target, 0.0) + value
    for target, total in sums.items():
        if not math.isfinite(total):
            raise _fail(source, f"the _sum of {chosen[target]!r} is past what a float holds")
    histograms: dict[str, Histogram] = {}
    for target, per in buckets.items():
        bounds = np.array(sorted(per), dtype=np.float64)
        if not math.isinf(bounds[-1]):
            raise _fail(source, f'the histogram for {chosen[target]!r} has no le="+Inf" bucket')
        cumulative = np.array([per[b] for b in sorted(per)], dtype=np.float64)
        if not np.isfinite(cumulative).all():
            raise _fail(source, f"the buckets of {chosen[target]!r} sum past what a float holds")
        if (np.diff(cumulative) < -1e-9).any():
            raise _fail(
                source,
                f"the buckets of {chosen[target]!r} are not cumulative (a count goes down as "
                "`le` grows); this is not a Prometheus histogram scrape",
            )
        histograms[target] = Histogram(
            bounds=bounds * 1000.0, counts=np.diff(cumulative, prepend=0.0)
        )
    return histograms, sums, counts, created


def read(data: bytes, source: str, options: ReadOptions) -> list[Run]:
    """One scrape -> one Run with cumulative-since-start histograms (n == 0)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise _fail(source, f"line {line}: bytes that are not UTF-8") from exc
    if not text.strip():
        raise _fail(source, "the file is empty; save the server's /metrics page")
    histograms, sums, counts, created = parse(text, source)
    if not histograms:
        known = ", ".join(f"vllm:{k}" for k in METRIC_NAMES)
        raise _fail(
            source,
            f"no latency histogram this reader knows ({known}); scrape the /metrics of a "
            "vLLM or SGLang server",
        )
    meta: dict[str, str | float] = {"format": NAME, "side": "server"}
    for name, value in sums.items():
        meta[f"sum:{name}"] = value
    for name, value in counts.items():
        meta[f"count:{name}"] = value
    for name, value in created.items():
        meta[f"created:{name}"] = value
    count = next(
        (float(histograms[k].counts.sum()) for k in ("total", "ttft", "decode") if k in histograms),
        max(float(h.counts.sum()) for h in histograms.values()),
    )
    return [Run(source=source, n=0, histograms=histograms, summary_count=round(count), meta=meta)]


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
