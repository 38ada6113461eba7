"""The checks every JSON reader shares: parse untrusted JSON, then check each field.

Every check raises one `ReadError` that names the format, the file and the key, and says how
to fix it; nothing here lets a KeyError, TypeError or ValueError escape to the user.
"""

from __future__ import annotations

import itertools
import json
import math
import re
from collections.abc import Callable, Iterator, Mapping, Sequence, Sized
from dataclasses import dataclass
from typing import Any, TypeGuard

import numpy as np
import orjson

from budgetdiff.errors import ReadError
from budgetdiff.table import FloatArray, Itl
from budgetdiff.units import SPELLED_UNIT_TO_MS

_PERCENTILE_KEY = re.compile(r"p(\d{1,2}(?:\.\d+)?)")


@dataclass(frozen=True, slots=True)
class Ctx:
    """Where we are: the format, the file, and what the file should have been (for messages)."""

    fmt: str
    source: str
    hint: str

    def error(self, where: str, problem: str) -> ReadError:
        where_part = f"{where} " if where else ""
        return ReadError(
            f"{self.fmt}: {self.source}: {where_part}{problem}; is this {self.hint}? "
            "(use --format to pick another)",
            file=self.source,
            field=where or None,
        )


def _fast(data: bytes | memoryview, *, literals: bool = False) -> Any:
    """orjson where it can (5x the stdlib on a 100 MB result file); None when it cannot, and the
    stdlib then reads the text and names what is wrong (several values, a value over several
    lines, huge ints, bad UTF-8). With `literals`, `Infinity`/`NaN` outside strings stay on this
    path: orjson reads them as marker strings that `literal` (and so `number`, `numbers` and
    `finite`) turns back into floats; only readers that check every number with those use it."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        if not literals:
            return None
    marked = _marked(data)
    if marked is None:
        return None
    try:
        return orjson.loads(marked)
    except orjson.JSONDecodeError:
        return None


# Python's JSON writer puts these literals where a float is not finite (SGLang's request rate).
_LITERAL = {"\x00Infinity": math.inf, "\x00-Infinity": -math.inf, "\x00NaN": math.nan}
_INFINITY = re.compile(b"Infinity")  # literal patterns: searched as fast as bytes.find
_NAN = re.compile(b"NaN")


def _marked(data: bytes | memoryview) -> bytes | None:
    """The text with every non-finite literal outside strings written as a marker string (a NUL
    and the literal), or None when it has none. One pass: quotes are counted between matches."""
    spans = [m.span() for m in _INFINITY.finditer(data)] + [m.span() for m in _NAN.finditer(data)]
    if not spans:
        return None
    spans.sort()
    # escaped backslashes, then escaped quotes, blanked at the same length: what is left of the
    # quotes delimits the strings (up to the last match: SGLang's is in the header)
    plain = bytes(data[: spans[-1][1]]).replace(b"\\\\", b"__").replace(b'\\"', b"__")
    pieces: list[bytes | memoryview] = []
    quotes = 0
    scanned = 0
    done = 0
    for start, end in spans:
        quotes += plain.count(b'"', scanned, start)
        scanned = end
        if quotes % 2 == 0:
            if start > done and data[start - 1 : start] == b"-":
                start -= 1
            pieces += [data[done:start], b'"\\u0000', data[start:end], b'"']
            done = end
    if not pieces:
        return None
    pieces.append(data[done:])
    return b"".join(pieces)


def literal(value: Any) -> Any:
    """`value`, or the float a non-finite literal's marker stands for."""
    if isinstance(value, str) and value in _LITERAL:
        return _LITERAL[value]
    return value


class JsonProblem(Exception):
    """Why a text is no JSON value, for the reader to word: `kind` is "syntax" (the parser's
    `line`, `column` and `message`; `truncated` when the text ends inside a value), "digits" (an
    integer past Python's digit limit; `message`), "deep" (nested past the recursion limit) or
    "utf8" (bytes that are not UTF-8: byte `position`, on `line`)."""

    def __init__(
        self,
        kind: str,
        *,
        line: int = 0,
        column: int = 0,
        position: int = 0,
        message: str = "",
        truncated: bool = False,
    ) -> None:
        super().__init__(kind, message)
        self.kind = kind
        self.line = line
        self.column = column
        self.position = position
        self.message = message
        self.truncated = truncated


def parse_json(data: bytes | str) -> Any:
    """The one JSON parse of the readers: one value (`Infinity`/`NaN` literals allowed, as
    Python writes); a `JsonProblem` when the text is not one JSON value. Bytes (UTF-8, a
    byte-order mark dropped) go through orjson where it can; text goes to the stdlib, which
    keeps an integer past 2**64 an int (orjson makes it a float): the native table reader
    relies on that for ids."""
    if isinstance(data, bytes):
        fast = _fast(data)
        if fast is not None:
            return fast
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            line = data[: exc.start].count(b"\n") + 1
            raise JsonProblem("utf8", position=exc.start, line=line) from None
    else:
        text = data
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        truncated = exc.pos >= len(exc.doc.rstrip())
        raise JsonProblem(
            "syntax", line=exc.lineno, column=exc.colno, message=exc.msg, truncated=truncated
        ) from None
    except ValueError as exc:  # an integer literal longer than Python's digit limit
        raise JsonProblem("digits", message=str(exc)) from None
    except RecursionError:
        raise JsonProblem("deep") from None


def load_json(data: bytes, ctx: Ctx) -> Any:
    """The whole file as one JSON value (`Infinity`/`NaN` literals allowed, as Python writes)."""
    try:
        return parse_json(data)
    except JsonProblem as problem:
        raise ctx.error("", _worded(problem)) from None


MAX_YAML_DEPTH = 64  # the tools' reports nest about ten levels


def load_document(data: bytes, ctx: Ctx) -> Any:
    """The whole file as one value: JSON, or the same document written as YAML (GuideLLM's
    `benchmarks.yaml`, reports kept as YAML)."""
    start = data.lstrip(b"\xef\xbb\xbf \t\r\n")[:1]
    if start in (b"{", b"["):
        return load_json(data, ctx)
    return load_yaml(data, ctx)


def load_yaml(data: bytes, ctx: Ctx) -> Any:
    """A YAML document loaded safely: plain values only (no Python objects), no anchors or
    aliases (a few lines of them expand to gigabytes), a bounded depth; dates become text, as
    the JSON twin of the file has them."""
    import yaml  # only YAML files pay for it

    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise ctx.error("", f"is not UTF-8 text (byte {e.start})") from None
    if not text.endswith("\n"):  # YAML has no closing bracket: a cut file may still parse
        raise ctx.error("", "is cut short (its last line has no line end)")
    loader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    opening = (
        yaml.BlockMappingStartToken,
        yaml.BlockSequenceStartToken,
        yaml.FlowMappingStartToken,
        yaml.FlowSequenceStartToken,
    )
    closing = (yaml.BlockEndToken, yaml.FlowMappingEndToken, yaml.FlowSequenceEndToken)
    try:
        depth = 0
        for token in yaml.scan(text, Loader=loader):
            line = token.start_mark.line + 1
            if isinstance(token, yaml.AnchorToken | yaml.AliasToken):
                raise ctx.error(f"line {line}", "uses a YAML anchor or alias; write it out")
            if isinstance(token, opening):
                depth += 1
                if depth > MAX_YAML_DEPTH:
                    raise ctx.error(f"line {line}", "is nested too deeply to be a results file")
            elif isinstance(token, closing):
                depth -= 1
        doc = yaml.load(text, Loader=loader)  # a safe loader
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark is not None else ""
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise ctx.error(where, f"is not valid JSON or YAML ({problem})") from None
    return _plain_values(doc)


def _plain_values(value: Any) -> Any:
    """YAML's dates as ISO text, as in JSON; everything else as loaded."""
    if isinstance(value, dict):
        return {k: _plain_values(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain_values(v) for v in value]
    if hasattr(value, "isoformat") and not isinstance(value, str):
        return value.isoformat()
    return value


def _worded(problem: JsonProblem) -> str:
    if problem.kind == "utf8":
        return f"is not UTF-8 text (byte {problem.position})"
    if problem.kind == "digits":
        return f"holds a number JSON cannot hold ({problem.message})"
    if problem.kind == "deep":
        return "is nested too deeply to be a results file"
    if problem.truncated:
        return "ends in the middle of a JSON value (truncated file?)"
    return f"is not valid JSON at line {problem.line} column {problem.column} ({problem.message})"


def iter_json_values(data: bytes, ctx: Ctx) -> Iterator[tuple[int, Any]]:
    """Consecutive JSON values (JSON Lines, or objects appended one after another), each with
    the line it starts on. Line by line through orjson; from the first line orjson cannot read
    as one value (a value over several lines, or an error to name) the stdlib reads the rest."""
    fast = _fast(data)  # the common case: one value (literals are looked for line by line)
    if fast is not None:
        yield 1, fast
        return
    pos = 3 if data.startswith(b"\xef\xbb\xbf") else 0
    line = 1
    view = memoryview(data)  # lines as views: a 1 GB line is not copied to be parsed
    while pos < len(data):
        end = data.find(b"\n", pos)
        if end < 0:
            end = len(data)
        # a long blank line is left to orjson, which refuses it: the stdlib then skips it
        if end > pos and not (end - pos <= 64 and data[pos:end].isspace()):
            value = _fast(view[pos:end], literals=True)
            if value is None:
                yield from _decoded_values(data, pos, line, ctx)
                return
            yield line, value
        pos = end + 1
        line += 1


def _decoded_values(data: bytes, offset: int, line: int, ctx: Ctx) -> Iterator[tuple[int, Any]]:
    """The stdlib's reading of the values from byte `offset` (on line `line`) on."""
    text = _text(data, ctx)  # the whole text, so that errors name the file's own line numbers
    decoder = json.JSONDecoder()
    pos = len(data[:offset].decode("utf-8-sig"))
    counted = pos
    end = len(text)
    while True:
        while pos < end and text[pos] in " \t\r\n":
            pos += 1
        if pos >= end:
            return
        line += text.count("\n", counted, pos)
        counted = pos
        try:
            value, pos = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as exc:
            raise ctx.error(f"line {exc.lineno}:", _json_problem(exc)) from None
        except ValueError as exc:  # an integer literal longer than Python's digit limit
            raise ctx.error(f"line {line}:", f"holds a number JSON cannot hold ({exc})") from None
        except RecursionError:
            raise ctx.error(f"line {line}:", "is nested too deeply") from None
        yield line, value


def _text(data: bytes, ctx: Ctx) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ctx.error("", f"is not UTF-8 text (byte {exc.start})") from None


def _json_problem(exc: json.JSONDecodeError) -> str:
    if exc.pos >= len(exc.doc.rstrip()):
        return "ends in the middle of a JSON value (truncated file?)"
    return f"is not valid JSON at line {exc.lineno} column {exc.colno} ({exc.msg})"


def obj(value: Any, where: str, ctx: Ctx) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ctx.error(where, f"must be a JSON object, not {_kind(value)}")
    return value


def arr(value: Any, where: str, ctx: Ctx) -> list[Any]:
    if not isinstance(value, list):
        raise ctx.error(where, f"must be a JSON list, not {_kind(value)}")
    return value


def load_object(data: bytes, ctx: Ctx, *, yaml: bool = False) -> dict[str, Any]:
    """The whole file as one JSON object (or, with `yaml`, the same document as YAML)."""
    return obj(load_document(data, ctx) if yaml else load_json(data, ctx), "top level", ctx)


def object_at(mapping: Mapping[str, Any], name: str, ctx: Ctx, where: str = "") -> dict[str, Any]:
    """`mapping[name]`, which must be there and be an object; errors name `where` (default:
    key 'name')."""
    return obj(key(mapping, name, ctx, where), where or f"key '{name}'", ctx)


def list_at(mapping: Mapping[str, Any], name: str, ctx: Ctx, where: str = "") -> list[Any]:
    """`mapping[name]`, which must be there and be a list; errors name `where` (default:
    key 'name')."""
    return arr(key(mapping, name, ctx, where), where or f"key '{name}'", ctx)


def key(mapping: Mapping[str, Any], name: str, ctx: Ctx, where: str = "") -> Any:
    """`mapping[name]`; when missing, the error names `where` (default: key 'name')."""
    if name not in mapping:
        raise ctx.error(where or f"key '{name}'", "is missing")
    return mapping[name]


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def is_number(value: Any) -> TypeGuard[int | float]:
    """A JSON number (a non-finite literal's marker is not one: pass it through `literal`)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def finite(value: Any) -> float | None:
    """A JSON number as a finite float, or None (for optional header values such as the load)."""
    value = literal(value)
    if not is_number(value):
        return None
    try:
        out = float(value)
    except OverflowError:
        return None
    return out if math.isfinite(out) else None


def number(value: Any, where: str, ctx: Ctx, *, latency: bool = False) -> float:
    """A JSON number; `latency=True` also demands finite and >= 0."""
    value = literal(value)
    if not is_number(value):
        raise ctx.error(where, f"must be a number, not {_kind(value)}")
    try:
        out = float(value)
    except OverflowError:
        raise ctx.error(where, "is a number too large for a float") from None
    if latency and not (math.isfinite(out) and out >= 0.0):
        raise ctx.error(where, f"must be a finite latency >= 0, not {out!r}")
    return out


def optional_number(value: Any, where: str, ctx: Ctx, *, latency: bool = False) -> float:
    """Like `number`, but null gives NaN (a value the request does not have)."""
    if value is None:
        return math.nan
    return number(value, where, ctx, latency=latency)


def numbers(value: Any, where: str, ctx: Ctx, *, latency: bool = False) -> FloatArray:
    """A JSON list of numbers as float64; `latency=True` also demands finite and >= 0."""
    items = arr(value, where, ctx)
    fast = _all_numbers(items)
    if fast is not None:
        out = fast
    else:
        items = [literal(item) for item in items]
        for i, item in enumerate(items):
            if not is_number(item):
                raise ctx.error(f"{where}[{i}]", f"must be a number, not {_kind(item)}")
        try:
            out = np.asarray(items, dtype=np.float64).reshape(len(items))
        except OverflowError:
            raise ctx.error(where, "holds a number too large for a float") from None
    if latency:
        bad = ~(np.isfinite(out) & (out >= 0.0))
        if bad.any():
            i = int(np.argmax(bad))
            bad_value = float(out[i])
            raise ctx.error(f"{where}[{i}]", f"must be a finite latency >= 0, not {bad_value!r}")
    return out


def _all_numbers(items: list[Any]) -> FloatArray | None:
    """The fast path: the items as float64 when numpy reads every one as a number (a string,
    null, list or an int beyond int64 gives another dtype, or numpy refuses a ragged nesting);
    else None, and the caller names the item that is not a number. A JSON true reads as 1."""
    if not items:
        return np.zeros(0)
    try:
        inferred = np.asarray(items)
    except ValueError:  # lists and numbers mixed: "an inhomogeneous shape"
        return None
    if inferred.ndim == 1 and inferred.dtype.kind in "fiu":
        return inferred.astype(np.float64, copy=False)
    return None


def number_lists(
    lists: Sequence[Any], where: Callable[[int], str], ctx: Ctx, *, latency: bool = False
) -> Itl:
    """Per-request JSON lists of numbers, pooled in one conversion (the same checks and messages
    as `numbers` on each list, `where(i)` naming list i). Not a Python loop per number: the items
    are chained into one list that numpy converts; only a file with an error to name is read
    list by list."""
    if all(type(item) is list for item in lists):
        lengths = np.fromiter(map(len, lists), dtype=np.int64, count=len(lists))
        offsets = np.concatenate([np.zeros(1, dtype=np.int64), np.cumsum(lengths)])
        values = _all_numbers(list(itertools.chain.from_iterable(lists)))
        if values is not None:
            bad = ~(np.isfinite(values) & (values >= 0.0)) if latency else None
            if bad is None or not bad.any():
                return Itl(values=values, offsets=offsets)
    return pooled([numbers(item, where(i), ctx, latency=latency) for i, item in enumerate(lists)])


def same_length(arrays: Mapping[str, Sized], ctx: Ctx, prefix: str = "") -> int:
    """The common length of per-request lists; an error names the two keys that disagree."""
    lengths = {name: len(a) for name, a in arrays.items()}
    first = next(iter(lengths))
    for name, length in lengths.items():
        if length != lengths[first]:
            raise ctx.error(
                f"{prefix}key '{name}'",
                f"has {length} entries but '{first}' has {lengths[first]} (one per request)",
            )
    return lengths[first]


def pooled(gaps: Sequence[FloatArray]) -> Itl:
    """Per-request gap arrays pooled into one `Itl`."""
    lengths = np.array([len(g) for g in gaps], dtype=np.int64)
    offsets = np.concatenate([np.zeros(1, dtype=np.int64), np.cumsum(lengths, dtype=np.int64)])
    values = np.concatenate(gaps) if gaps else np.empty(0)
    return Itl(values=np.asarray(values, dtype=np.float64), offsets=offsets)


def ms_per(unit: Any, where: str, ctx: Ctx) -> float:
    """Milliseconds per one `unit` (as AIPerf / genai-perf spell units)."""
    if not isinstance(unit, str) or unit.lower() not in SPELLED_UNIT_TO_MS:
        known = ", ".join(SPELLED_UNIT_TO_MS)
        raise ctx.error(where, f"has unit {unit!r}; expected one of {known}")
    return SPELLED_UNIT_TO_MS[unit.lower()]


def percentiles(stats: Mapping[str, Any], where: str, ctx: Ctx, scale: float) -> dict[float, float]:
    """`{"p50": v, "p99": v, ...}` (other keys ignored) as {50.0: v*scale, ...}, validated."""
    out: dict[float, float] = {}
    for name, value in stats.items():
        match = _PERCENTILE_KEY.fullmatch(name)
        if match is None:
            continue
        out[float(match.group(1))] = number(value, f"{where}.{name}", ctx, latency=True) * scale
    return out


def load_name(concurrency: float | None, rate: float | None) -> str:
    """A stable scenario name from load settings: 'concurrency=8', 'rate=10.0/s' or both."""
    parts = []
    if concurrency is not None:
        parts.append(f"concurrency={_num_text(concurrency)}")
    if rate is not None and math.isfinite(rate):
        parts.append(f"rate={float(rate)}/s")
    return ", ".join(parts) if parts else "rate=inf"


def _num_text(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def unique_names(names: list[str]) -> list[str]:
    """Make scenario names distinct by numbering repeats: 'rate=inf', 'rate=inf #2'."""
    seen: dict[str, int] = {}
    out = []
    for name in names:
        seen[name] = seen.get(name, 0) + 1
        out.append(name if seen[name] == 1 else f"{name} #{seen[name]}")
    return out
