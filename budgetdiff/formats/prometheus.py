"""A Prometheus text exposition scraped from an LLM server (vLLM, SGLang) -> an aggregate `Run`.

The latency histograms (`_bucket` lines, summed over every label set but `le`) become
`Run.histograms` in ms, named after the slice or metric they measure; `_sum` / `_count` go to
`meta` as `sum:<name>` (ms) and `count:<name>`. One scrape is cumulative since the server
started: two scrapes (before and after a run) are subtracted by `formats.combine`.
`budgetdiff.table.histogram_quantile` estimates a percentile from such a histogram.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

import numpy as np

from budgetdiff.errors import ReadError
from budgetdiff.formats.options import ReadOptions
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


def _fail(source: str, message: str) -> ReadError:
    return ReadError.at(NAME, source, message)


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


@dataclass
class _Scrape:
    """What `parse` gathers, per target (slice or metric): bucket counts by `le` (cumulative),
    sums (ms), counts, the earliest `_created` time and the metric base it was read from."""

    buckets: dict[str, dict[float, float]] = field(default_factory=dict)
    sums: dict[str, float] = field(default_factory=dict)
    counts: dict[str, float] = field(default_factory=dict)
    created: dict[str, float] = field(default_factory=dict)
    chosen: dict[str, str] = field(default_factory=dict)

    def forget(self, target: str) -> None:
        """Drop what was read for `target` (an alias the preferred name replaces)."""
        self.buckets.pop(target, None)
        self.sums.pop(target, None)
        self.counts.pop(target, None)
        self.created.pop(target, None)


def parse(
    text: str, source: str
) -> tuple[dict[str, Histogram], dict[str, float], dict[str, float], dict[str, float]]:
    """Histograms (ms, +Inf as the last bound, per-bucket counts), sums (ms), counts, and the
    earliest `_created` time of each (a later one means the server restarted)."""
    scrape = _Scrape()
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.startswith("#"):
            continue
        m = _SAMPLE.match(line)
        if not m:
            raise _fail(
                source, f"line {number}: not a sample line ('name{{labels}} value'): {line[:80]!r}"
            )
        _sample(scrape, m, source, number)
    for target, total in scrape.sums.items():
        if not math.isfinite(total):
            raise _fail(source, f"the _sum of {scrape.chosen[target]!r} is past what a float holds")
    histograms = {
        target: _histogram(per, scrape.chosen[target], source)
        for target, per in scrape.buckets.items()
    }
    return histograms, scrape.sums, scrape.counts, scrape.created


def _sample(scrape: _Scrape, m: re.Match[str], source: str, number: int) -> None:
    """One sample line into `scrape`, when it is a part of a histogram this reader knows."""
    metric, label_text, value_text = m.group(1), m.group(2), m.group(3)
    for suffix in ("_bucket", "_sum", "_count", "_created"):
        if metric.endswith(suffix):
            base = metric[: -len(suffix)]
            break
    else:
        return
    short = _namespace_free(base)
    target = METRIC_NAMES.get(short)
    if target is None:
        return
    previous = scrape.chosen.get(target)
    if previous is not None and previous != base:
        if _namespace_free(previous) in _PREFERRED or short not in _PREFERRED:
            return
        scrape.forget(target)
    scrape.chosen[target] = base
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
        per = scrape.buckets.setdefault(target, {})
        per[le] = per.get(le, 0.0) + value
    elif suffix == "_created":
        scrape.created[target] = min(scrape.created.get(target, value), value)
    elif suffix == "_sum":
        scrape.sums[target] = scrape.sums.get(target, 0.0) + value * 1000.0
    else:
        scrape.counts[target] = scrape.counts.get(target, 0.0) + value


def _histogram(per: dict[float, float], metric: str, source: str) -> Histogram:
    """Cumulative bucket counts by `le` (seconds) as a Histogram in ms of per-bucket counts."""
    bounds = np.array(sorted(per), dtype=np.float64)
    if not math.isinf(bounds[-1]):
        raise _fail(source, f'the histogram for {metric!r} has no le="+Inf" bucket')
    cumulative = np.array([per[b] for b in sorted(per)], dtype=np.float64)
    if not np.isfinite(cumulative).all():
        raise _fail(source, f"the buckets of {metric!r} sum past what a float holds")
    if (np.diff(cumulative) < -1e-9).any():
        raise _fail(
            source,
            f"the buckets of {metric!r} are not cumulative (a count goes down as "
            "`le` grows); this is not a Prometheus histogram scrape",
        )
    return Histogram(bounds=bounds * 1000.0, counts=np.diff(cumulative, prepend=0.0))


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
