"""The names a native table's columns go by: one declarative list, name -> role and unit.

The reader maps every column through `RULES` (the budget's `column:` mappings first), and
`docs/native-table.md` is generated from the same list (`tools/native_doc.py`), so the
documentation cannot drift from what is read. A header is matched after `normalize`: case
and spacing folded (`Total Latency [s]` -> `total_latency`, unit `s` from the bracket), a unit
suffix split off (`ttft_ms` -> `ttft`, unit `ms` from the suffix).

Pure: names in, names out; no numbers are read here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from budgetdiff.table import KNOWN_SLICES

# Roles a column can play; `unused` is a column read by nothing.
SLICE, METRIC, TOKENS, ID, FAILURE, TIME, CLASS, UNUSED = (
    "slice",
    "metric",
    "tokens",
    "id",
    "failure",
    "time",
    "class",
    "unused",
)
LATENCY_ROLES = (SLICE, METRIC)

# How a column's unit was decided.
FROM_SUFFIX = "suffix"
FROM_BRACKET = "header bracket"
FROM_BUDGET = "budget unit:"
GUESSED = "guessed"
FROM_TYPE = "column type"  # a duration column: Parquet duration, pandas Timedelta

# Spellings of a unit in a suffix or a bracket -> the unit (milliseconds per unit: MS_PER).
UNIT_SPELLINGS = {
    "ms": "ms",
    "msec": "ms",
    "msecs": "ms",
    "millis": "ms",
    "milliseconds": "ms",
    "s": "s",
    "sec": "s",
    "secs": "s",
    "seconds": "s",
    "us": "us",
    "usec": "us",
    "micros": "us",
    "microseconds": "us",
    "µs": "us",
}
# Nanoseconds only in a bracket (`Queue [ns]`): a `_ns` suffix names time stamps far more often
# (`arrive_ns`, `first_token_ns`) than durations.
BRACKET_UNITS = {**UNIT_SPELLINGS, "ns": "ns", "nanos": "ns", "nanoseconds": "ns"}


@dataclass(frozen=True)
class Rule:
    """Columns whose normalized name is one of `names` play `role` as `target`; `unit` is the
    unit assumed when the header states none (None: not a duration)."""

    role: str
    target: str
    names: tuple[str, ...]
    unit: str | None
    meaning: str


def _slice_rule(name: str, extra: tuple[str, ...], meaning: str) -> Rule:
    return Rule(SLICE, name, (name, *extra), "ms", meaning)


_SLICE_MEANINGS = {
    "network": ("network_time", "network_latency", "rtt"),
    "gateway": ("gateway_time", "proxy", "proxy_time", "router", "router_time"),
    "queue": (
        "queue_time",
        "queued",
        "queue_wait",
        "queue_delay",
        "queueing",
        "queuing",
        "queueing_time",
        "queuing_time",
        "time_in_queue",
        "scheduling_delay",
        "queue_duration",
        "request_queue_time",  # vLLM's server metric names
    ),
    "prefill": (
        "prefill_time",
        "prefill_latency",
        "prefill_duration",
        "prompt_time",
        "prompt_processing",
        "request_prefill_time",
    ),
    "first_token": (),
    "decode": (
        "decode_time",
        "decode_latency",
        "decode_duration",
        "decoding",
        "decoding_time",
        "request_decode_time",
    ),
    "app": ("app_time", "postprocess", "postprocessing", "post_processing"),
}
_SLICE_TEXT = {
    "network": "client to server and back (the wire)",
    "gateway": "gateway, proxy or router in front of the server",
    "queue": "waiting in the server's queue before prefill",
    "prefill": "processing the prompt, up to the first token",
    "first_token": "emitting the first token",
    "decode": "generating the tokens after the first",
    "app": "the application's own work after the answer",
}

# Order matters only for the documentation; every name appears in exactly one rule (a test).
RULES: tuple[Rule, ...] = (
    Rule(
        METRIC,
        "total",
        (
            "total",
            "total_latency",
            "total_time",
            "e2e",
            "e2e_latency",
            "e2e_time",
            "e2el",
            "e2e_request_latency",
            "end_to_end",
            "end_to_end_latency",
            "end_to_end_time",
            "latency",
            "request_latency",
            "request_duration",
            "response_time",
            "duration",
            "elapsed",
            "elapsed_time",
            "ttlt",
            "time_to_last_token",
        ),
        "ms",
        "end to end: request sent to last token received (SLO metric `total`)",
    ),
    Rule(
        METRIC,
        "ttft",
        (
            "ttft",
            "time_to_first_token",
            "first_token_latency",
            "first_token_time",
            "ttft_latency",
        ),
        "ms",
        "time to first token (SLO metric `ttft`)",
    ),
    Rule(
        METRIC,
        "itl",
        ("itl", "itls", "inter_token_latency", "inter_token_latencies", "token_gaps", "gaps"),
        "ms",
        "gaps between tokens: a list per request ([12.1, 11.8, ...]); one number per request is "
        "its mean gap, read as the TPOT",
    ),
    Rule(
        METRIC,
        "tpot",
        ("tpot", "time_per_output_token", "per_token_latency"),
        "ms",
        "time per output token after the first, as the harness measured it",
    ),
    *(_slice_rule(s, _SLICE_MEANINGS[s], _SLICE_TEXT[s]) for s in KNOWN_SLICES),
    Rule(
        TOKENS,
        "input_tokens",
        (
            "input_tokens",
            "prompt_tokens",
            "num_input_tokens",
            "num_prompt_tokens",
            "input_len",
            "input_length",
            "prompt_len",
            "prompt_length",
            "input_sequence_length",
            "number_input_tokens",
            "isl",
        ),
        None,
        "prompt length in tokens",
    ),
    Rule(
        TOKENS,
        "output_tokens",
        (
            "output_tokens",
            "completion_tokens",
            "generated_tokens",
            "num_output_tokens",
            "num_completion_tokens",
            "output_len",
            "output_length",
            "output_sequence_length",
            "number_output_tokens",
            "osl",
        ),
        None,
        "answer length in tokens",
    ),
    Rule(ID, "request_id", ("request_id", "req_id", "id", "uuid"), None, "the request's id"),
    Rule(
        ID,
        "prompt_hash",
        ("prompt_hash", "prompt_sha", "prompt_sha256", "prompt_id"),
        None,
        "what the request asked, as a hash: base and head pair by id only where it agrees",
    ),
    Rule(
        ID,
        "run",
        ("run", "run_id", "run_index", "repetition", "trial"),
        None,
        "which run of the same configuration a request is from (any text): the runs of a side "
        "are its clusters, and the interval includes the variance between them",
    ),
    Rule(
        FAILURE,
        "error",
        ("error", "errors", "error_message", "error_msg", "err", "exception"),
        None,
        "failed when not empty; empty, OK, none, null, 0, false and success mean it succeeded",
    ),
    Rule(
        FAILURE,
        "status",
        (
            "status",
            "status_code",
            "http_status",
            "http_code",
            "response_code",
            "request_status",
            "response_status",
            "outcome",
        ),
        None,
        "HTTP status: 2xx succeeded, any other code failed; as text, ok, success, completed, done "
        "and pass succeeded, any other word (error, timeout, fail, ...) failed",
    ),
    Rule(
        FAILURE,
        "finish_reason",
        ("finish_reason", "stop_reason"),
        None,
        "why the answer ended: error, abort, cancelled, timeout or failed: the request failed; "
        "stop, length and any other reason: it succeeded",
    ),
    Rule(
        FAILURE,
        "success",
        ("success", "ok", "succeeded", "is_success", "successful"),
        None,
        "true/1/yes: succeeded; false/0/no: failed",
    ),
    Rule(FAILURE, "failed", ("failed", "is_error", "is_failed"), None, "true/1/yes: failed"),
    Rule(
        TIME,
        "start_time",
        (
            "start_time",
            "start",
            "started_at",
            "start_timestamp",
            "request_start",
            "send_time",
            "sent_at",
            "timestamp",
        ),
        "s",
        "when the request was sent: seconds (any origin), epoch numbers or ISO 8601 text",
    ),
    Rule(
        TIME,
        "end_time",
        ("end_time", "end", "ended_at", "end_timestamp", "finished_at", "completed_at"),
        "s",
        "when its last token arrived; with start_time, the end to end when no total is given",
    ),
    Rule(
        CLASS,
        "class",
        ("traffic_class", "class", "scenario", "workload", "request_class"),
        None,
        "a class of traffic: the table is split into one scenario per value",
    ),
)

_BY_NAME = {name: rule for rule in RULES for name in rule.names}
_CAMEL = re.compile(r"([a-z])([A-Z])")  # a lower-case letter then a capital: a word starts
_BRACKET = re.compile(r"^(.*?)\s*[\(\[]\s*([^\)\]]+?)\s*[\)\]]\s*$")
_SUFFIX = re.compile(r"^(.+?)_(" + "|".join(sorted(UNIT_SPELLINGS, key=len, reverse=True)) + r")$")
# Columns that look like a latency or a failure marker: read by nothing, they are a note.
_LOOKS_LATENCY = re.compile(r"(latency|time|ttft|tpot|itl|delay|wait|duration|elapsed)")
# (`result` may hold PASS/FAIL or the model's answer: named in a note, not read as a status)
_LOOKS_FAILURE = re.compile(r"(error|fail|status|success|exception|result|outcome)")


@dataclass(frozen=True)
class Name:
    """A header, normalized: its base name and the unit it states (None: none stated)."""

    base: str
    unit: str | None
    unit_from: str | None  # FROM_SUFFIX or FROM_BRACKET


def normalize(header: str) -> Name:
    """`TTFT (ms)` -> ttft, ms from the bracket; `decode_s` -> decode, s from the suffix;
    `ttftMs` (a JavaScript harness's camelCase) -> ttft, ms from the suffix."""
    text = _CAMEL.sub(r"\1_\2", header.strip()).lower()
    unit = unit_from = None
    bracket = _BRACKET.match(text)
    if bracket and bracket.group(2).strip() in BRACKET_UNITS:
        text, unit, unit_from = bracket.group(1), BRACKET_UNITS[bracket.group(2)], FROM_BRACKET
    base = re.sub(r"[^0-9a-zµ]+", "_", text).strip("_")
    if unit is None:
        suffix = _SUFFIX.match(base)
        if suffix and not suffix.group(1).endswith("_per"):  # `tokens_per_s` is a rate
            # `queue_time_ms`, `retrieval_s` (the budget's own slice), `e2e_us`
            base, unit, unit_from = suffix.group(1), UNIT_SPELLINGS[suffix.group(2)], FROM_SUFFIX
    return Name(base, unit, unit_from)


def rule_for(header: str) -> Rule | None:
    """The rule a header matches, or None."""
    return _BY_NAME.get(normalize(header).base)


def looks_read_worthy(header: str) -> str | None:
    """Why an unmapped column deserves a note (it looks like a latency or a failure)."""
    name = normalize(header)
    if name.unit is not None:
        return "looks like a latency"
    if _LOOKS_FAILURE.search(name.base):
        return "looks like a failure marker"
    if _LOOKS_LATENCY.search(name.base):
        return "looks like a latency"
    return None


def cut(text: str, limit: int) -> str:
    """Text from the file, cut to `limit` characters for a message (the renderers escape it)."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


# ---------------------------------------------------------------- statistics, not requests

# A statistic's label, as a summary names its rows or columns: a word (mean, max, count) or a
# percentile as a harness writes one (p95, P99.9, 95%, 95th, 99.9th percentile); never a bare
# number (an id, a class of traffic).
_STATISTIC_WORDS = (
    "mean|avg|average|median|mode|min|minimum|max|maximum|std|stdev|stddev|std_dev|sd|var"
    "|variance|sum|total|count|summary|overall|all"
)
STATISTIC = re.compile(
    rf"^(?:{_STATISTIC_WORDS}"
    r"|p\d{1,3}(?:[._]\d+)?"
    r"|\d{1,3}(?:\.\d+)?\s*%"
    r"|\d{1,2}(?:\.\d+)?\s*(?:st|nd|rd|th)(?:\s+percentile)?"
    r"|percentile\s*\d{1,2}(?:\.\d+)?)$"
)


def is_statistic(text: str) -> bool:
    """`mean`, `p95`, `95%`, `99.9th percentile`: a statistic's label (case folded)."""
    return STATISTIC.match(text.strip().lower()) is not None


def statistic_column(header: str) -> bool:
    """A column of a summary, not of requests: named as a statistic (`p95`, `95%`, `mean`,
    `p95_ms`), or as a statistic of a latency (`p95_ttft_ms`, `ttft_p95`, `Median E2EL`); not a
    name read as something else (`total`, `total_latency`)."""
    if rule_for(header) is not None:
        return False
    base = normalize(header).base
    if is_statistic(header) or is_statistic(base):
        return True
    words = base.split("_")
    for stat, rest in ((words[0], words[1:]), (words[-1], words[:-1])):
        rule = _BY_NAME.get("_".join(rest)) if rest and is_statistic(stat) else None
        if rule is not None and rule.role in LATENCY_ROLES:
            return True
    return False
