"""Whether a file is a native table, from its first bytes, and what its header's names mean.

A latency column is one `native_names.RULES` reads as a slice or an SLO metric (`decode_ms`,
`e2e_latency`, `TTFT (ms)`). Sniffing reads only the header line or the first JSON object; it
imports no pyarrow, so detecting another format costs nothing.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Sequence
from typing import Any

from budgetdiff.formats.native.names import (
    LATENCY_ROLES,
    looks_read_worthy,
    normalize,
    rule_for,
    statistic_column,
)

# Keys that mark a benchmark tool's own JSON (read by that tool's format, not as a native table).
TOOL_KEYS = frozenset(
    {
        # LLMPerf individual responses
        "end_to_end_latency_s",
        "inter_token_latency_s",
        "request_output_throughput_token_per_s",
        "number_output_tokens",
        "error_msg",
        # vLLM / SGLang bench results
        "ttfts",
        "itls",
        "generated_texts",
        "backend",
        "completed",
        # AIPerf / genai-perf / guidellm / inference-perf
        "metadata",
        "metrics",
        "experiments",
        "benchmarks",
        "lifecycle",
        "load_summary",
        "resourceSpans",
    }
)


# ---------------------------------------------------------------- sniffing


def _first_json_object(text: str) -> Any:
    """The first JSON value of a JSON-Lines text or the first element of a JSON array."""
    decoder = json.JSONDecoder()
    stripped = text.lstrip()
    if stripped.startswith("["):
        body = stripped[1:].lstrip()
        if not body or body.startswith("]"):
            return None
        return decoder.raw_decode(body)[0]
    return decoder.raw_decode(stripped)[0]


def _flat(obj: dict[str, Any]) -> bool:
    """A row of a table: numbers and texts, numeric lists (the gaps between tokens), and nested
    objects under names that are no latency, left unread (an OpenAI response's `usage` beside a
    harness's timings). Not a latency holding an object (`{"decode_ms": {"p50": ...}}` is a
    summary), nor a list of objects or texts: a tool's own structure."""
    for key, value in obj.items():
        if isinstance(value, dict):
            rule = rule_for(key)
            latency = (
                rule.role in LATENCY_ROLES
                if rule
                else looks_read_worthy(key) == "looks like a latency"
            )
            if latency:
                return False
        if isinstance(value, list) and not all(
            isinstance(v, int | float) and not isinstance(v, bool) for v in value
        ):
            return False
    return True


def _looks_native_header(columns: Sequence[str]) -> bool:
    names = {c.strip() for c in columns}
    if names & TOOL_KEYS:
        return False
    rules = [rule_for(c) for c in names]
    return any(r is not None and r.role in LATENCY_ROLES for r in rules)


def sniff(head: bytes, name: str) -> bool:
    """Parquet magic, or a text table / flat JSON objects with a latency-looking column."""
    if head.startswith(b"PAR1"):
        return True
    header = _header(head)
    return header is not None and _looks_native_header(header)


def summary_header(head: bytes) -> bool:
    """A text table / flat JSON objects whose header names two or more statistics (`mean`,
    `p95`, `p95_ttft_ms`) and no benchmark tool's keys: a summary, which no reader claimed;
    the native reader says what it is (a summary, not requests), not that no format fits."""
    header = _header(head)
    if header is None or {c.strip() for c in header} & TOOL_KEYS:
        return False
    return sum(1 for c in header if statistic_column(c)) >= 2


def has_slices(head: bytes, slices: Sequence[str]) -> bool:
    """A text table / flat JSON objects with a column named after one of the budget's own
    slices (`retrieval_ms`, `guardrail`), and no benchmark tool's keys."""
    header = _header(head)
    if header is None:
        return False
    names = {c.strip() for c in header}
    wanted = set(slices)
    return any(normalize(c).base in wanted for c in names) and not (names & TOOL_KEYS)


def _header(head: bytes) -> list[str] | None:
    """The column names of a text table, or the keys of the first flat JSON object."""
    try:
        text = head.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        # the head may end inside a multi-byte character
        if exc.start < len(head) - 4:
            return None
        text = head[: exc.start].decode("utf-8-sig")
    stripped = text.lstrip()
    if not stripped:
        return None
    if stripped[0] in "[{":
        try:
            first = _first_json_object(stripped)
        except (ValueError, RecursionError):
            return None
        return list(first) if isinstance(first, dict) and _flat(first) else None
    if "\x00" in text:
        return None
    line = stripped.splitlines()[0]
    sep = delimiter(line)
    try:
        return next(csv.reader([line], delimiter=sep))
    except (csv.Error, StopIteration):
        return None


# ---------------------------------------------------------------- loading


def delimiter(header_line: str) -> str:
    """The separator a text table's header line uses: tab, semicolon (without a comma) or comma."""
    if "\t" in header_line:
        return "\t"
    if "," not in header_line and ";" in header_line:
        return ";"
    return ","
