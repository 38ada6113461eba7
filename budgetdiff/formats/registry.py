"""The typed registry of readers: each format's name, default schema and module, in the order
detection tries them (most specific first: the native table reader accepts any table, so it
comes last).

A reader module holds `NAME`, `sniff(head, name) -> bool` (content detection from the first
bytes; the file name is only a hint) and `read(data, source, options) -> list[Run]` (one Run
per scenario). Modules are imported on first use: start-up pays only for the reader it runs.
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, cast

from budgetdiff.errors import UsageError

if TYPE_CHECKING:
    from budgetdiff.formats.options import ReadOptions
    from budgetdiff.table import Run


class ReaderModule(Protocol):
    """What every module of a format provides."""

    NAME: str

    def sniff(self, head: bytes, name: str) -> bool: ...

    def read(self, data: bytes, source: str, options: ReadOptions) -> list[Run]: ...


@dataclass(frozen=True, slots=True)
class Reader:
    """One format: `--format NAME`, the schema it takes when the file names no version of its
    own (readers that tell versions apart set `meta["schema"]`), and the module that reads it."""

    name: str
    schema: str
    module_name: str
    # A JSON format's file starts with `{` or `[`: detection asks it about no other file, and
    # so does not import it for a CSV, Parquet or Prometheus file...
    json: bool = True
    # ...unless the tool also writes a text shape (a CSV, YAML) whose first bytes this marks:
    # looked for without importing the module, so that a table still pays for no JSON reader
    text: re.Pattern[bytes] | None = None

    def may_claim(self, head: bytes, looks_json: bool) -> bool:
        """Whether to ask this reader's sniffer about a file that starts as `head` does."""
        if looks_json or not self.json:
            return True
        return self.text is not None and self.text.search(head) is not None

    @property
    def module(self) -> ReaderModule:
        return cast("ReaderModule", importlib.import_module(self.module_name))

    def sniff(self, head: bytes, name: str) -> bool:
        return self.module.sniff(head, name)

    def read(self, data: bytes, source: str, options: ReadOptions) -> list[Run]:
        return self.module.read(data, source, options)


def _reader(
    name: str, schema: str, *, json: bool = True, text: bytes | None = None, module: str = ""
) -> Reader:
    pattern = re.compile(text, re.MULTILINE) if text is not None else None
    module = module or name.replace("-", "_")
    return Reader(name, schema, f"budgetdiff.formats.{module}", json, pattern)


READERS = (
    _reader("vllm", "bench serve result"),
    _reader("sglang", "bench_serving result"),
    _reader("aiperf", "current", text=rb"\A\s*Metric,avg,min,max,"),  # its aggregate CSV
    _reader("genai-perf", "profile export"),
    _reader("llmperf", "individual responses"),
    _reader("guidellm", "benchmarks", text=rb"^benchmarks:"),  # its YAML output too
    # and as YAML, and the llm-d benchmark report (BR 0.2) it writes beside them
    _reader("inference-perf", "lifecycle metrics", text=rb"^(?:load_summary|version):"),
    _reader("genai-bench", "run file"),
    # its SQLite database too (`SQLite format 3` and the result table's columns in page 1)
    _reader("evalscope", "perf result", text=rb"\ASQLite format 3\x00"),
    # its stats CSV and stats-history CSV too
    _reader("locust", "stats CSV", text=rb"\A\s*(?:Type,Name,|Timestamp,User Count,Type,Name,)"),
    _reader("agent-traces", "OTLP/JSON GenAI agent spans", module="agent.traces"),
    _reader("otlp", "OTLP/JSON"),
    _reader("otel-console", "ConsoleSpanExporter"),
    _reader("prometheus", "text exposition", json=False),
    _reader("agent-steps", "one row per step", json=False, module="agent.steps"),
    _reader("native", "table", json=False, module="native.build"),
)
BY_NAME = {r.name: r for r in READERS}
ALIASES = {
    "csv": "native",
    "tsv": "native",
    "parquet": "native",
    "jsonl": "native",
    "json": "native",
    "otlp-json": "otlp",
}


def names() -> list[str]:
    """What `--format` accepts: `auto` and every reader's name."""
    return ["auto", *BY_NAME]


def reader(name: str) -> Reader:
    """The reader `--format NAME` picks (an alias such as `csv` names its reader)."""
    found = BY_NAME.get(ALIASES.get(name, name))
    if found is None:
        raise UsageError(f"--format {name!r}: unknown; choose one of {', '.join(names())}")
    return found
