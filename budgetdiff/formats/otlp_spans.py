"""The spans of an OTLP/JSON trace export, one at a time, without holding the parsed document.

A file is one `ExportTraceServiceRequest` ({"resourceSpans": [...]}) or JSON Lines of them (the
OpenTelemetry Collector's file exporter). msgspec reads its structure (resources, scopes, their
span lists) and keeps each span as a `Raw` view into the file's bytes (48 bytes a span); each
span is parsed when its turn comes and dropped after, so a million spans cost the file's bytes
and what the reader keeps of them, not a 3 GB tree of dicts (issue 35).

What msgspec refuses (not strict JSON: `NaN` literals, nesting past its depth, a structure of
the wrong types) is read as before, whole, by the stdlib/orjson path, which names the problem
in its own words; both paths give the same spans with the same `where`, in the same order.
"""

from __future__ import annotations

import codecs
from collections.abc import Iterator
from typing import Any

import msgspec

from budgetdiff.errors import ReadError
from budgetdiff.formats._checks import JsonProblem, parse_json

NAME = "otlp"
_BOM = b"\xef\xbb\xbf"
_CHUNK = 1024**2  # UTF-8 is checked this many bytes at a time (its text then dropped)


# OTLP's own key names. A key left out is UNSET; a null where a list belongs is refused (the
# whole-file path then says so), as it is there.
class _Scope(msgspec.Struct):
    spans: list[msgspec.Raw] = []


class _Resource(msgspec.Struct):
    scopeSpans: list[_Scope] | msgspec.UnsetType = msgspec.UNSET
    instrumentationLibrarySpans: list[_Scope] | msgspec.UnsetType = msgspec.UNSET


class _Export(msgspec.Struct):
    resourceSpans: list[_Resource]


_DECODER = msgspec.json.Decoder(_Export)


def fail(source: str, message: str) -> ReadError:
    return ReadError.at(NAME, source, message)


def spans(data: bytes, source: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every span of the file with where it is (`resourceSpans[0].scopeSpans[0].spans[3]`), in
    the file's order; a ReadError for a file that is not an OTLP/JSON trace export."""
    _check_utf8(data, source)
    view = memoryview(data)[len(_BOM) :] if data.startswith(_BOM) else memoryview(data)
    docs = _structure(view)
    if docs is None:  # not strict JSON, or not the shape msgspec expects: the whole-file path
        yield from _tree_spans(_documents(data, source), source)
        return
    for r, resource in enumerate(x for doc in docs for x in doc.resourceSpans):
        scopes = resource.scopeSpans
        if isinstance(scopes, msgspec.UnsetType):
            scopes = resource.instrumentationLibrarySpans
        if isinstance(scopes, msgspec.UnsetType):
            scopes = []
        for s, scope in enumerate(scopes):
            for i, raw in enumerate(scope.spans):
                where = f"resourceSpans[{r}].scopeSpans[{s}].spans[{i}]"
                span = _parse(raw, source, where)
                if not isinstance(span, dict):
                    raise fail(source, f"{where} is not an object")
                yield where, span


def _check_utf8(data: bytes, source: str) -> None:
    """A ReadError naming the offset of the first byte that is not UTF-8, a chunk at a time (no
    copy of the whole file as text)."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    view = memoryview(data)
    for at in range(0, len(data), _CHUNK):
        try:
            decoder.decode(view[at : at + _CHUNK], final=at + _CHUNK >= len(data))
        except UnicodeDecodeError as exc:
            raise fail(source, f"bytes that are not UTF-8 at offset {at + exc.start}") from None


def _structure(view: memoryview) -> list[_Export] | None:
    """The documents' resources and scopes, spans left raw; None when msgspec cannot say."""
    try:
        return [_DECODER.decode(view)]
    except msgspec.DecodeError:
        pass  # more than one document: JSON Lines, or not JSON at all
    except (msgspec.ValidationError, RecursionError):
        return None
    try:
        docs = _DECODER.decode_lines(view)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return None
    return docs or None  # nothing but blank lines: the whole-file path names it


def _parse(raw: msgspec.Raw, source: str, where: str) -> Any:
    try:
        return parse_json(bytes(memoryview(raw)))
    except JsonProblem as problem:  # msgspec read it as JSON: only Python's limits are left
        what = "a number too long to read" if problem.kind == "digits" else "nested too deeply"
        raise fail(source, f"{where}: {what} ({problem.message or problem.kind})") from None


# -- the whole-file path: the parsed documents, then their spans ------------------------------


def _documents(data: bytes, source: str) -> list[dict[str, Any]]:
    text = data.decode("utf-8-sig")  # _check_utf8 passed
    if not text.strip():
        raise fail(source, "the file is empty; export traces as OTLP/JSON")
    try:
        docs: list[Any] = [_loads(text, source, "")]
    except JsonProblem as whole:
        docs = []
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                docs.append(_loads(line, source, f"line {number}: "))
            except JsonProblem as problem:
                raise fail(
                    source,
                    f"invalid JSON at line {whole.line if number == 1 else number} "
                    f"({problem.message}); the file is cut short or not OTLP/JSON",
                ) from None
    for doc in docs:
        if not isinstance(doc, dict) or not isinstance(doc.get("resourceSpans"), list):
            raise fail(
                source,
                "no 'resourceSpans' list; this reader takes OTLP/JSON trace exports "
                "(ExportTraceServiceRequest), choose another --format for other files",
            )
    return docs


def _loads(text: str, source: str, where: str) -> Any:
    """One JSON document; a syntax error passes as a JsonProblem (the caller tries JSON Lines
    next)."""
    try:
        return parse_json(text)
    except JsonProblem as problem:
        if problem.kind == "digits":  # an integer literal longer than Python's digit limit
            raise fail(source, f"{where}a number too long to read ({problem.message})") from None
        if problem.kind == "deep":
            raise fail(source, f"{where}nested too deeply to be an OTLP export") from None
        raise


def _tree_spans(docs: list[dict[str, Any]], source: str) -> Iterator[tuple[str, dict[str, Any]]]:
    for r, resource in enumerate(rs for doc in docs for rs in doc["resourceSpans"]):
        if not isinstance(resource, dict):
            raise fail(source, f"resourceSpans[{r}] is not an object")
        scopes = resource.get("scopeSpans", resource.get("instrumentationLibrarySpans", []))
        if not isinstance(scopes, list):
            raise fail(source, f"resourceSpans[{r}].scopeSpans is not a list")
        for s, scope in enumerate(scopes):
            listed = scope.get("spans", []) if isinstance(scope, dict) else None
            if not isinstance(listed, list):
                raise fail(source, f"resourceSpans[{r}].scopeSpans[{s}].spans is not a list")
            for i, span in enumerate(listed):
                where = f"resourceSpans[{r}].scopeSpans[{s}].spans[{i}]"
                if not isinstance(span, dict):
                    raise fail(source, f"{where} is not an object")
                yield where, span
