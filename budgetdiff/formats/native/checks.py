"""What a native table says about itself, checked: which requests failed (every failure marker
it has), which rows are a harness's summary and not requests, and whether each column's unit
and values are plausible against the others and the token counts.

A unit that looks wrong is a `units` doubt (it fails the check: a number shown would be
wrong); rows no request can have are an `impossible` doubt with their count and first row.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np
import pyarrow as pa

from budgetdiff import numbers
from budgetdiff.errors import ReadError
from budgetdiff.formats.native.columns import as_float, decoded, failed
from budgetdiff.formats.native.names import GUESSED, STATISTIC, cut, is_statistic
from budgetdiff.formats.native.tables import NAME, Table
from budgetdiff.table import (
    CHUNK,
    KNOWN_SLICES,
    METRICS,
    BoolArray,
    ColumnUse,
    Doubt,
    FloatArray,
    Itl,
    all_finite,
    chunks,
    order_statistics,
)
from budgetdiff.units import MS_PER


def quantile(values: FloatArray, q: float) -> float:
    """Percentile `q` as np.percentile's linear method computes it, without its import of
    numpy.ma (start-up: the reader runs on every compare). The two order statistics by
    selection (`order_statistics`), not a sort (the values are the same, found in O(n))."""
    rank = q / 100 * (len(values) - 1)
    low = int(np.floor(rank))
    high = min(low + 1, len(values) - 1)
    ordered = order_statistics(values, [low, high])  # NaN last, as sorted
    return float(ordered[low] + (ordered[high] - ordered[low]) * (rank - low))


def median(values: FloatArray) -> float:
    return quantile(np.asarray(values, dtype=np.float64), 50)


# ---------------------------------------------------------------- failures

_OK_STATUS_TEXT = frozenset(
    {"ok", "success", "succeeded", "completed", "complete", "done", "pass", "passed"}
)
# a `finish_reason` that says the answer did not end by itself (OpenAI's stop, length,
# content_filter, tool_calls and any other reason: it did)
_FAILED_FINISH = frozenset(
    {"error", "abort", "aborted", "cancelled", "canceled", "timeout", "timed_out", "failed"}
)
_TRUE = frozenset({"true", "1", "yes", "y", "t", "1.0"})
_FALSE = frozenset({"false", "0", "no", "n", "f", "0.0"})


def marker_failed(table: Table, use: ColumnUse, source: str) -> BoolArray:
    """Which requests a failure marker says failed (blank: it says nothing)."""
    if use.target in ("error", "failed"):
        return failed(table, use.column, source)
    arr = decoded(table.get(use.column))
    kind = arr.type
    if pa.types.is_integer(kind) or pa.types.is_floating(kind):  # in bulk: codes or 1/0
        values = as_float(table, use.column, source)
        with np.errstate(invalid="ignore"):
            if use.target == "status":
                return np.isfinite(values) & ~((values >= 200) & (values < 300))
            return np.asarray(values == 0, dtype=bool)
    if pa.types.is_boolean(kind):
        return np.array([f is False for f in arr.to_pylist()], dtype=bool)
    values = arr.to_pylist()
    out = np.zeros(len(values), dtype=bool)
    for i, value in enumerate(values):
        if value is None or (isinstance(value, float) and np.isnan(value)):
            continue
        text = str(value).strip().lower()
        if text in ("", "nan", "null", "none"):
            continue
        if use.target == "status":
            out[i] = _status_failed(text)
        elif use.target == "finish_reason":
            out[i] = text in _FAILED_FINISH
        elif isinstance(value, bool) or text in _TRUE | _FALSE:
            out[i] = (value is False) if isinstance(value, bool) else text in _FALSE
        else:
            raise ReadError.at(
                NAME,
                source,
                f"row {i + 1}, column {cut(use.column, 80)!r}: {cut(text, 40)!r} is not "
                "true or false; write true/false (or 1/0) for whether the request succeeded",
            )
    return out


def _status_failed(text: str) -> bool:
    """HTTP 2xx, or a word for success: succeeded; any other code or word: failed."""
    try:
        code = float(text)
    except ValueError:
        return text not in _OK_STATUS_TEXT
    return not 200 <= code < 300


# ---------------------------------------------------------------- summary rows

_KERNELS_FROM_ROWS = 20_000  # as native_columns: below it a loop beats importing the kernels
_SUMMARY_ROWS = 1000  # a table of statistics has at most this many rows (p0.1 ... p99.9, ...)


def summary_rows(
    table: Table, labels: Sequence[ColumnUse], latencies: dict[str, FloatArray]
) -> tuple[BoolArray, str | None]:
    """Rows a harness appended as a summary: labelled mean/p95/max/... in a text column, or
    trailing rows equal to the statistics of the rows above. (mask, how they were told)"""
    n = table.n
    mask = np.zeros(n, dtype=bool)
    for use in labels:
        arr = table.get(use.column)  # its chunks as they are: the regex reads them in place
        if pa.types.is_dictionary(arr.type):
            arr = decoded(arr)
        if not (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)):
            continue
        mask = _labelled(arr)
        labelled = int(mask.sum())
        column = f"column {cut(use.column, 80)!r}" if use.column else "the nameless first column"
        if labelled == n and n <= _SUMMARY_ROWS:  # every row a statistic: a summary table
            said = _every_row_a_statistic(arr)
            if said is not None:
                return mask, f"labelled as a statistic in {column} ({said})"
        if labelled > max(20, n // 10):  # not a summary: a class or id that reads like one
            mask[:] = False
        if mask.any():
            return mask, f"labelled as statistics in {column}"
    trailing = _statistic_rows(latencies, n)
    if trailing:
        mask[n - trailing :] = True
        return mask, "equal to the statistics (mean, percentiles, max) of the rows above"
    return mask, None


# `STATISTIC` as RE2 (pyarrow's) reads it on a cell as it is, case folded: it lets through
# every cell `is_statistic` accepts (the cell stripped of what str.isspace calls space, lower
# case; Python's \d and \s are Unicode, RE2's ASCII), and maybe a few more, which
# `is_statistic` then reads. One pass over the column instead of three (trim, lower, match):
# 1.9 s less at ten million ids.
_SPACE = r"[\s\p{Z}\x{0b}\x{1c}-\x{1f}\x{85}]"
_STATISTIC_RE2 = (
    f"^{_SPACE}*"
    + STATISTIC.pattern[1:-1].replace(r"\d", r"\p{Nd}").replace(r"\s", _SPACE)
    + f"{_SPACE}*$"
)


def _labelled(arr: pa.Array | pa.ChunkedArray) -> BoolArray:
    """Which cells of a text column are a statistic's label (mean, p95, 95%, max, ...):
    `is_statistic` of each, read only of the cells a pattern over the whole column lets by."""
    if len(arr) < _KERNELS_FROM_ROWS:  # a loop: no pyarrow.compute import (start-up)
        return np.array([is_statistic(v or "") for v in arr.to_pylist()], dtype=bool)
    import pyarrow.compute as pc

    if _plain_ids(arr):
        return np.zeros(len(arr), dtype=bool)
    hit = pc.match_substring_regex(arr, _STATISTIC_RE2, ignore_case=True)
    mask = np.asarray(pc.fill_null(hit, False).to_numpy(zero_copy_only=False), dtype=bool)
    rows = np.flatnonzero(mask)
    if rows.size:
        texts = arr.take(pa.array(rows)).to_pylist()
        mask[rows] = [is_statistic(t or "") for t in texts]
    return mask


def _plain_ids(arr: pa.Array | pa.ChunkedArray) -> bool:
    """Every cell holds a '-' or is a bare number, which no label does (the pattern has no
    '-' and no wildcard; a bare number is never a statistic): ids such as UUIDs, `req-17`,
    `chatcmpl-...` or `1234`. Two literal tests over the column instead of the pattern, a
    quarter of its time (0.09 s against 0.39 s at ten million ids)."""
    import pyarrow.compute as pc

    plain = pc.or_kleene(pc.match_substring(arr, "-"), pc.utf8_is_decimal(arr))
    return bool(pc.sum(plain).as_py() == len(arr))  # a null cell is not plain: the pattern


def _every_row_a_statistic(arr: pa.Array | pa.ChunkedArray) -> str | None:
    """The labels (`10%, 25%, ..., max`) of a column whose every cell is a statistic's, when
    they make a summary: a few rows, or four different statistics or more (a class column's
    `max` / `min` tiers repeat); else None."""
    texts = [str(v).strip() for v in arr.to_pylist()]
    distinct = list(dict.fromkeys(texts))
    if len(texts) > 20 and len(distinct) < 4:
        return None
    shown = distinct if len(distinct) <= 12 else [*distinct[:10], "...", distinct[-1]]
    return ", ".join(cut(t, 20) for t in shown)


def _tolerance(stat: float) -> float:
    """How close a value must be to a statistic to be it: rounded to two decimals."""
    return max(1e-9 * abs(stat), 0.0051)


def _statistic_rows(latencies: dict[str, FloatArray], n: int) -> int:
    """How many trailing rows equal a statistic of the rows above them in every latency
    column, one of them the mean (no request's value is the mean but by chance)."""
    if not latencies or n < 20:
        return 0
    for t in range(min(8, n // 10), 0, -1):
        mean_seen = False
        every = True
        for values in latencies.values():
            above = values[: n - t]
            finite = np.isfinite(above)
            if not finite.all():  # a copy only of a column with a gap
                above = above[finite]
            if len(above) < 10:
                return 0
            mean = float(np.mean(above))
            off = above - mean
            if np.min(np.abs(off, out=off)) <= _tolerance(mean):
                return 0  # a request's own value is the mean: no telling a summary row apart
            stats = [mean, float(np.std(above)), float(np.sum(above))]
            stats += [quantile(above, q) for q in (0, 50, 90, 95, 99, 100)]
            for value in values[n - t :]:
                close = [abs(value - s) <= _tolerance(s) for s in stats]
                if not any(close):
                    every = False
                    break
                mean_seen |= close[0]
            if not every:
                break
        if every and mean_seen:
            return t
    return 0


# ---------------------------------------------------------------- plausibility

# (typical low, typical high) of a median, ms: outside it a unit mix-up is the likelier story
_TYPICAL = {"ttft": (1.0, 300_000.0), "total": (1.0, 3_600_000.0), "itl": (0.1, 10_000.0)}
_TYPICAL["tpot"] = _TYPICAL["itl"]
_SLICE_HIGH = 3_600_000.0
_PER_TOKEN = (0.1, 10_000.0)  # a TPOT, ms
KNOWN_TARGETS = frozenset({*KNOWN_SLICES, *METRICS})
_RATIO = 1000.0  # a column this many times its siblings is in another unit
_SIBLING_MIN = 10.0  # ms: below it a sibling is too small to measure others by (queue 2 ms)
_WHOLES = frozenset({"total", "itl", "tpot"})
_GUESSED_TOTAL_LOW = 100.0  # ms: an end to end under it, in a unit nothing states, may be seconds
_BEFORE_FIRST_TOKEN = KNOWN_SLICES[: KNOWN_SLICES.index("first_token") + 1]
_UNIT_NAME = {"ms": "milliseconds", "s": "seconds", "us": "microseconds", "ns": "nanoseconds"}


def _median(values: FloatArray, ok: BoolArray) -> float | None:
    clean = bool(ok.all()) and all_finite(values)  # then no copy (`all_finite`)
    kept = values if clean else values[ok & np.isfinite(values)]
    return float(median(kept)) if len(kept) else None


def _fits(median_ms: float, use: ColumnUse, low: float, high: float) -> str:
    """The unit that would put the median in its typical range, worded for the message."""
    raw = median_ms / MS_PER[use.unit or "ms"]
    for unit in ("s", "ms", "us", "ns"):
        if unit != use.unit and low <= raw * MS_PER[unit] <= high:
            return f"looks like {_UNIT_NAME[unit]}"
    return "too small for a request" if median_ms < low else "too large for a request"


def figure(x: float) -> str:
    """A median as a message says it: 0.276, 5,823,722, 0.033."""
    if abs(x) >= 0.1 or x == 0:
        return numbers.num(x)
    return numbers.given(round(x, 1 - math.floor(math.log10(abs(x)))))  # two figures


def _unit_doubt(where: str, use: ColumnUse, median_ms: float, why: str, looks: str) -> Doubt:
    raw = median_ms / MS_PER[use.unit or "ms"]
    how = "guessed" if use.unit_from == GUESSED else f"from the {use.unit_from}"
    return Doubt(
        "units",
        cut(use.column, 80),
        f"{where}: {cut(use.column, 80)}: median {figure(raw)} read as {use.unit} "
        f"({how}){why} "
        f"- {looks or 'looks like another unit'}; {unit_fix(use)}",
        affects=(use.target,) if use.target else (),
    )


def unit_fix(use: ColumnUse) -> str:
    """How to say a column's unit: a slice's budget can (`unit:`); an SLO column such as
    `e2e` is read by its name alone, so the name's suffix is the only fix (issue 38)."""
    stem = re.sub(r"(?i)_(ms|s|us|ns|sec|secs|seconds)$", "", use.column)
    named = f"rename it {cut(stem, 60)}_s or {cut(stem, 60)}_ms"
    if use.role == "slice" and use.target:
        return (
            f"say the unit in the column's name ({named}) or with the slice's `unit:` in the "
            f"budget (`{cut(use.target, 40)}: {{budget: ..., unit: s}}`)"
        )
    return f"say the unit in the column's name: {named}"


def unit_doubts(
    columns: Sequence[tuple[ColumnUse, FloatArray]],
    ok: BoolArray,
    output_tokens: FloatArray | None,
    where: str,
) -> list[Doubt]:
    """Each latency column against its typical range, its siblings and the token counts."""
    out: list[tuple[ColumnUse, float, bool, Doubt]] = []
    medians = {u.column: m for u, v in columns if (m := _median(v, ok)) is not None}
    doubted: set[str] = set()

    def add(use: ColumnUse, median: float, why: str, looks: str, small: bool) -> None:
        """`small`: the values are too small for their unit (seconds read as ms), not too
        large."""
        if use.column not in doubted:
            doubted.add(use.column)
            out.append((use, median, small, _unit_doubt(where, use, median, why, looks)))

    by_target = {u.target: (u, v) for u, v in columns}
    for use, _ in columns:
        m = medians.get(use.column)
        if m is None or m == 0:
            continue
        low, high = _TYPICAL.get(use.target or "", (0.0, _SLICE_HIGH))
        if m < low or m > high:
            looks = _fits(m, use, *_TYPICAL.get(use.target or "", (0.01, high)))
            add(use, m, "", looks, m < low)
    _guessed_total(by_target.get("total"), medians, output_tokens, add)
    # a column a thousand times its siblings: among the parts of a request (slices, TTFT), not
    # the total (a long answer dwarfs every part), nor a decode the token counts can vouch for
    parts = {
        u.column: medians[u.column]
        for u, _ in columns
        if u.target not in _WHOLES and medians.get(u.column, 0) > 0
    }
    for use, _ in columns:
        m = parts.get(use.column)
        others = [v for c, v in parts.items() if c != use.column]
        if m is None or not others or (use.target == "decode" and output_tokens is not None):
            continue
        biggest = max(others)
        if m > _RATIO * biggest and biggest >= _SIBLING_MIN:
            add(use, m, f", {numbers.count(round(m / biggest))} times its siblings", "", False)
    # TTFT above the total
    if "ttft" in by_target and "total" in by_target:
        t_use, total_use = by_target["ttft"][0], by_target["total"][0]
        mt, mtot = medians.get(t_use.column), medians.get(total_use.column)
        if mt is not None and mtot is not None and mtot > 0 and mt > 10 * mtot:
            add(t_use, mt, f", above the total ({numbers.ms(mtot)})", "", False)
    if "ttft" not in by_target:
        _first_token_sum(columns, ok, add)
    # per-token time from the total (or a decoding slice) and the answer lengths
    tokens = _Tokens(output_tokens, ok) if output_tokens is not None else None
    for name in ("total", "decode", *(t for t in by_target if t not in KNOWN_TARGETS)):
        if name in by_target and tokens is not None:
            _per_token(by_target[name], by_target.get("ttft"), tokens, doubted, add)
    return [_with_kin(d, use, m, small, columns, medians, doubted) for use, m, small, d in out]


def _guessed_total(
    total: tuple[ColumnUse, FloatArray] | None,
    medians: dict[str, float],
    output_tokens: FloatArray | None,
    add: Callable[[ColumnUse, float, str, str, bool], None],
) -> None:
    """An end to end whose unit nothing states (guessed ms) and no token count can vouch for:
    under 100 it reads as seconds just as well (0.5 to 100 s is every chat answer; under 100 ms
    almost none), so the unit is in doubt, not guessed quietly."""
    if total is None or total[0].unit_from != GUESSED or output_tokens is not None:
        return
    m = medians.get(total[0].column)
    if m is not None and 1.0 <= m < _GUESSED_TOTAL_LOW:
        add(total[0], m, ", and an end to end that short is rare", "could be seconds", True)


def _first_token_sum(
    columns: Sequence[tuple[ColumnUse, FloatArray]],
    ok: BoolArray,
    add: Callable[[ColumnUse, float, str, str, bool], None],
) -> None:
    """The time to first token made of slices, with no TTFT column: under a millisecond it is
    no LLM request's, though each slice alone may pass for a fast one (seconds read as ms)."""
    early = [(u, v) for u, v in columns if u.target in _BEFORE_FIRST_TOKEN]
    if not early or len({(u.unit, u.unit_from) for u, _ in early}) != 1:
        return
    m = _median(np.sum([v for _, v in early], axis=0), ok)
    low, high = _TYPICAL["ttft"]
    if m is not None and 0 < m < low:
        first = early[0][0]
        names = " + ".join(cut(u.column, 40) for u, _ in early)
        use = ColumnUse(names, "slice", "ttft", first.unit, first.unit_from)
        add(use, m, " as the time to first token", _fits(m, use, low, high), True)


def _with_kin(
    doubt: Doubt,
    use: ColumnUse,
    mine: float,
    small: bool,
    columns: Sequence[tuple[ColumnUse, FloatArray]],
    medians: dict[str, float],
    doubted: set[str],
) -> Doubt:
    """A unit mixed up in one column is likely the writer's in the columns whose unit was
    read the same way (the same unit, from the same suffix, header bracket, `unit:` or guess),
    though no check could tell on its own (seconds of a network slice look like a fast
    network): those carry the doubt too, and the message names them. Not a column that sits
    clearly on the sound side of the doubted one (ten times larger than a column whose values
    are too small, a tenth of one whose values are too large): the writer got that one right."""

    def kin(u: ColumnUse) -> bool:
        same_way = (u.unit, u.unit_from) == (use.unit, use.unit_from)
        if u.column in doubted or not u.target or not same_way:
            return False
        theirs = medians.get(u.column)
        return theirs is not None and (theirs <= 10 * mine if small else theirs >= mine / 10)

    shared = [u for u, _ in columns if kin(u)]
    if not shared:
        return doubt
    named = [u for u in shared if u.column not in use.column.split(" + ")]  # a sum names its own
    if not named:
        return replace(doubt, affects=(*doubt.affects, *(u.target for u in shared if u.target)))
    names = ", ".join(cut(u.column, 40) for u in named[:6]) + (", ..." if len(named) > 6 else "")
    return replace(
        doubt,
        message=f"{doubt.message} ({names}, read the same way, may be wrong with it)",
        affects=(*doubt.affects, *(u.target for u in shared if u.target)),
    )


class _Tokens:
    """A side's answer lengths and which requests succeeded, as the per-token checks read
    them; `every`: every request succeeded with a finite count above one, the usual table,
    whose columns are then read whole, with no selection (once for the total and the decode)."""

    __slots__ = ("counts", "every", "ok")

    def __init__(self, counts: FloatArray, ok: BoolArray) -> None:
        every = len(counts) and bool(ok.all()) and all_finite(counts) and float(counts.min()) > 1
        self.counts, self.ok, self.every = counts, ok, bool(every)


def _per_token(
    column: tuple[ColumnUse, FloatArray],
    ttft: tuple[ColumnUse, FloatArray] | None,
    tokens: _Tokens,
    doubted: set[str],
    add: Callable[[ColumnUse, float, str, str, bool], None],
) -> None:
    """A TPOT under 0.1 ms (seconds read as ms) or over 10 s (ms read as seconds)."""
    use, values = column
    first = ttft[1] if ttft is not None and use.target == "total" else None
    if use.column in doubted:
        return
    whole = tokens.every and all_finite(values) and (first is None or all_finite(first))
    if whole and len(values) >= 3:  # every row counts, no NaN
        if _typical_per_token(values, first, tokens.counts):
            return  # the usual answer, from two counts: no array of the times, no median
        kept_values, kept_tokens, kept_first = values, tokens.counts, first
    else:
        counts, ok = tokens.counts, tokens.ok
        sel = ok & np.isfinite(values) & np.isfinite(counts) & (counts > 1)
        kept_values, kept_tokens = values[sel], counts[sel]
        kept_first = None if first is None else first[sel]
    if len(kept_tokens) < 3:
        return
    # (values - first) / (tokens - 1)
    per = kept_values if kept_first is None else np.subtract(kept_values, kept_first)
    per = np.divide(per, np.subtract(kept_tokens, 1.0))
    per_token = float(median(per))
    # the column's own median and the answers' only when a doubt is raised (it names them)
    if per_token < _PER_TOKEN[0] and (answer := float(median(kept_tokens))) >= 50:
        words = f" for {int(answer)} tokens ({numbers.ms(per_token)} a token)"
        add(use, median(kept_values), words, "looks like seconds", True)
    elif per_token > _PER_TOKEN[1]:
        words = f" ({numbers.ms(per_token)} a token)"
        add(use, median(kept_values), words, "looks like milliseconds", False)


def _typical_per_token(values: FloatArray, first: FloatArray | None, counts: FloatArray) -> bool:
    """The median time per token ((values - first) / (counts - 1), no NaN among them) surely
    inside `_PER_TOKEN`: fewer than (n + 1) // 2 times below its low end and fewer above its
    high end (the median is below the low end only when that many are). The times are made
    and counted a chunk at a time (`CHUNK`), with the same operations as the median's array:
    no array of them, no selection. False: the median itself decides."""
    n = values.size
    need = (n + 1) // 2
    low, high = _PER_TOKEN
    below = above = 0
    per, gaps = np.empty(min(n, CHUNK)), np.empty(min(n, CHUNK))
    for at, m in chunks(n):
        p, g = per[:m], gaps[:m]
        np.subtract(counts[at], 1.0, out=g)
        if first is None:
            np.divide(values[at], g, out=p)
        else:
            np.divide(np.subtract(values[at], first[at], out=p), g, out=p)
        below += int(np.count_nonzero(p < low))
        above += int(np.count_nonzero(p > high))
    return below < need and above < need


def impossible_rows(
    ttft: FloatArray | None, total: FloatArray | None, ok: BoolArray, source: str
) -> list[Doubt]:
    """Succeeded requests whose total is below their TTFT: their count and first row."""
    if ttft is None or total is None:
        return []
    with np.errstate(invalid="ignore"):
        if not np.greater(ttft, total).any():  # none above its total (usual): nothing to excuse
            return []
        bad = ok & (ttft > total + 1e-6 + 1e-9 * np.abs(total))
    if not bad.any():
        return []
    first = int(np.flatnonzero(bad)[0])
    return [
        Doubt(
            "impossible",
            "total",
            f"{source}: {numbers.count(int(bad.sum()))} request(s) end before their first "
            f"token (total below TTFT; first: row {first + 1}): the columns or their units "
            "are not what their names say",
            affects=("ttft", "total"),
        )
    ]


def itl_from_start(
    itl: Itl, ttft: FloatArray | None, tokens: FloatArray | None, ok: BoolArray
) -> Itl | None:
    """The gaps without each request's first one, when the lists start at the request's start
    (their first gap is the TTFT, or there are as many gaps as tokens and the first is the
    longest); None when the lists are gaps between tokens as they should be."""
    lengths = np.diff(itl.offsets)
    has = ok & (lengths > 1)
    if has.sum() < 3:
        return None
    firsts = itl.values[itl.offsets[:-1][has]]
    starts_at_start = False
    if ttft is not None:
        t = ttft[has]
        close = np.abs(firsts - t) <= np.maximum(0.01 * np.abs(t), 0.5)
        starts_at_start = bool(np.mean(close) >= 0.8)
    elif tokens is not None:
        same = lengths[has] == tokens[has]
        seconds = itl.values[itl.offsets[:-1][has] + 1]
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = firsts / seconds
        starts_at_start = bool(np.mean(same) >= 0.8 and median(ratio[np.isfinite(ratio)]) > 3)
    if not starts_at_start:
        return None
    drop = np.zeros(len(itl.values), dtype=bool)
    drop[itl.offsets[:-1][lengths > 0]] = True
    kept_counts = np.maximum(lengths - 1, 0)
    offsets = np.concatenate([[0], np.cumsum(kept_counts)]).astype(np.int64)
    return Itl(values=itl.values[~drop], offsets=offsets)


_PAST_TOTAL = 0.5  # this share of the lists summing past their end to end: not gaps
_GROWING = 0.9  # of those, this share never falling: token times, not gaps


def itl_cumulative(
    itl: Itl, total: FloatArray | None, ok: BoolArray
) -> tuple[Itl | None, int, int, int]:
    """Gap lists that are no gaps: summed, a request's gaps are at most its end to end, but
    token times (since the first token, or the request's start) sum far past it. Returns the
    gaps as their differences where the lists are such times (growing), else None; and how
    many lists sum past their end to end, of how many with a total, the first such row. One
    pass over the gaps where they are gaps (the common case)."""
    lengths = np.diff(itl.offsets)
    if total is None:
        return None, 0, 0, 0
    has = ok & (lengths > 1) & np.isfinite(total)
    if has.sum() < 3:
        return None, 0, 0, 0
    listed = lengths > 0
    starts = itl.offsets[:-1][listed]
    sums = np.zeros(len(lengths))
    sums[listed] = np.add.reduceat(itl.values, starts)
    with np.errstate(invalid="ignore"):
        past = has & (sums > total * 1.01 + 1.0)
    if past.sum() < _PAST_TOTAL * has.sum():
        return None, 0, 0, 0
    counts = (int(past.sum()), int(has.sum()), int(np.flatnonzero(past)[0]))
    step = np.diff(itl.values, prepend=0.0)
    step[starts] = itl.values[starts]  # each list's first gap: its first time, from 0
    lowest = np.zeros(len(lengths))
    lowest[listed] = np.minimum.reduceat(step, starts)
    with np.errstate(invalid="ignore"):
        growing = past & ~(lowest < -1e-9)
    if growing.sum() < _GROWING * past.sum():
        return None, *counts
    return Itl(values=step, offsets=itl.offsets), *counts


# ---------------------------------------------------------------- times


def epoch_unit(raw: FloatArray) -> str | None:
    """The unit epoch time stamps of this size are in (s, ms, us, ns), or None (not epoch)."""
    finite = raw[np.isfinite(raw)]
    if not len(finite):
        return None
    m = float(median(np.abs(finite)))
    for unit, (low, high) in (
        ("s", (3e8, 3e10)),
        ("ms", (3e11, 3e13)),
        ("us", (3e14, 3e16)),
        ("ns", (3e17, 3e19)),
    ):
        if low <= m <= high:
            return unit
    return None


def numbers_of(table: Table, column: str, source: str) -> FloatArray | None:
    """A time column as plain numbers, or None when it holds timestamps or text times."""
    arr = decoded(table.get(column))
    kind = arr.type
    if pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_null(kind):
        return as_float(table, column, source)
    return None


# ---------------------------------------------------------------- a start time's unit

# A `start_time` of plain numbers with no end time and no unit in its name is guessed to be
# seconds; milliseconds since the run began (0, 12.5, 40, ...) read so would stretch the run a
# thousandfold. The two readings are told apart by the requests themselves:
_FOLLOWS = 0.5  # this share of requests starting as an earlier one ends: a closed loop's unit
_OVERLAP = 0.5  # as seconds, this many requests in flight on average or more: seconds
_IDLE = 0.002  # as seconds, fewer than this in flight (the server idle 99.8%): milliseconds
_SAME = 3.0  # one reading's `follows` must be this many times the other's to decide
START_MIN_REQUESTS = 20


@dataclass(frozen=True, slots=True)
class StartReading:
    """What start times read in one unit say of the run, with each request's end to end."""

    in_flight: float  # mean requests in flight: their busy time over the run's span (Little)
    follows: float  # the share of requests that start within a moment of an earlier one's end
    span_s: float  # first start to last end


def _start_reading(start_s: FloatArray, total_s: FloatArray) -> StartReading:
    ends = start_s + total_s
    span = float(np.max(ends) - np.min(start_s))
    ordered = np.sort(ends)
    before = np.searchsorted(ordered, start_s, side="right") - 1
    gap = start_s - ordered[np.maximum(before, 0)]
    moment = max(0.005, 0.01 * float(median(total_s)))  # the harness's turn-around
    follows = float(np.mean((before >= 0) & (gap <= moment)))
    in_flight = float(np.sum(total_s)) / span if span > 0 else math.inf
    return StartReading(in_flight=in_flight, follows=follows, span_s=span)


def start_unit(
    start: FloatArray, total_ms: FloatArray, ok: BoolArray
) -> tuple[str | None, StartReading, StartReading] | None:
    """Whether plain-number start times are seconds (`s`), milliseconds since the run began
    (`ms`) or cannot be told (None), with the run as each reading sees it; None when too few
    requests have both a start and an end to end to tell."""
    sel = ok & np.isfinite(start) & np.isfinite(total_ms) & (total_ms > 0)
    if sel.sum() < START_MIN_REQUESTS:
        return None
    total_s = total_ms[sel] / 1000.0
    as_s = _start_reading(start[sel], total_s)
    as_ms = _start_reading(start[sel] / 1000.0, total_s)
    if as_ms.follows >= _FOLLOWS and as_ms.follows >= _SAME * as_s.follows:
        return "ms", as_s, as_ms
    if as_s.follows >= _FOLLOWS and as_s.follows >= _SAME * as_ms.follows:
        return "s", as_s, as_ms
    if as_s.in_flight >= _OVERLAP:
        return "s", as_s, as_ms
    if as_s.in_flight < _IDLE:
        return "ms", as_s, as_ms
    return None, as_s, as_ms
