"""The format registry: `--format NAME` or detection from the content of the file."""

from __future__ import annotations

import gc
import importlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from types import ModuleType

from budgetdiff.errors import InputError, UsageError
from budgetdiff.formats import ReadOptions
from budgetdiff.table import Run, check_bounds

# Most specific first: the native table reader accepts any table, so it comes last.
FORMATS = (
    "vllm",
    "sglang",
    "aiperf",
    "genai-perf",
    "llmperf",
    "guidellm",
    "inference-perf",
    "otlp",
    "otel-console",
    "prometheus",
    "native",
)
ALIASES = {
    "csv": "native",
    "tsv": "native",
    "parquet": "native",
    "jsonl": "native",
    "json": "native",
    "otlp-json": "otlp",
}
SNIFF_BYTES = 64 * 1024
# The schema a reader takes when the file names no version of its own; readers that tell
# versions apart (AIPerf, GuideLLM, LLMPerf, vLLM/SGLang aggregates) set `meta["schema"]`.
SCHEMAS = {
    "vllm": "bench serve result",
    "sglang": "bench_serving result",
    "aiperf": "current",
    "genai-perf": "profile export",
    "llmperf": "individual responses",
    "guidellm": "benchmarks",
    "inference-perf": "lifecycle metrics",
    "otlp": "OTLP/JSON",
    "otel-console": "ConsoleSpanExporter",
    "prometheus": "text exposition",
    "native": "table",
}
UTF8_BOM = b"\xef\xbb\xbf"


def names() -> list[str]:
    return ["auto", *FORMATS]


def module(name: str) -> ModuleType:
    name = ALIASES.get(name, name)
    if name not in FORMATS:
        raise UsageError(f"--format {name!r}: unknown; choose one of {', '.join(names())}")
    return importlib.import_module(f"budgetdiff.formats.{name.replace('-', '_')}")


def detect(data: bytes, source: str, options: ReadOptions) -> ModuleType:
    # Old-Mac line ends (CR alone) must not hide a format that its reader reads from the
    # sniffer, which looks at lines (the byte-order mark is gone already, see `read`).
    head = data[:SNIFF_BYTES]
    if b"\r" in head and b"\n" not in head:
        head = head.replace(b"\r", b"\n")
    for name in FORMATS:
        mod = module(name)
        if mod.sniff(head, source):
            return mod
    native = module("native")
    # the budget maps its own column names, or the columns are its own slices: a native table
    if options.columns or native.has_slices(head, options.slices):
        return native
    raise InputError(
        f"{source}: not a format budgetdiff recognises (tried {', '.join(FORMATS)}); pass "
        "--format NAME, or write a CSV/JSON table with one row per request"
    )


# What a parser raises on malformed input it did not foresee. The readers raise precise
# InputErrors for what they check; this is the last resort at the edge, so that a hostile file
# is an exit 2 with its file and format named, never a traceback. Bugs elsewhere still surface.
# pyarrow's errors derive from these too (ArrowInvalid is a ValueError, ArrowTypeError a
# TypeError, ArrowNotImplementedError a NotImplementedError), so pyarrow need not be imported.
_MALFORMED = (
    ValueError,
    TypeError,
    KeyError,
    IndexError,
    OverflowError,
    RecursionError,
    NotImplementedError,
)


def read(data: bytes, source: str, fmt: str, options: ReadOptions) -> list[Run]:
    data = data.removeprefix(UTF8_BOM)  # Windows tools write one; no format has a use for it
    mod = detect(data, source, options) if fmt == "auto" else module(fmt)
    try:
        with _collector_paused():
            runs: list[Run] = mod.read(data, source, options)
    except _MALFORMED as e:
        what = str(e).splitlines()[0][:200] if str(e) else type(e).__name__
        raise InputError(
            f"{mod.NAME}: {source}: cannot be read ({what}); is it a complete {mod.NAME} file? "
            "(--format picks another reader)"
        ) from None
    if not runs:
        raise InputError(f"{source}: {mod.NAME}: the file holds no runs")
    for run in runs:  # one place for every reader: no computation sees an absurd value
        check_bounds(run)
    return [_stamped(r, mod.NAME) for r in runs]


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cycle collector off while a reader runs. A decoded JSON file is millions of
    dicts and lists, and none refers back to another: each collection walks them all for
    nothing, more often the larger the file (half the time of an OTLP read of 100,000 spans).
    Reference counting still frees everything a reader drops."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _stamped(run: Run, name: str) -> Run:
    """The run, saying which reader read it and which schema of the tool's file that was."""
    schema = run.meta.get("schema", run.meta.get("layout", SCHEMAS[name]))
    return replace(run, meta={**run.meta, "format": name, "schema": schema})
