"""Readers: every supported file format mapped onto `budgetdiff.table.Run`.

Each format is a module here with `NAME`, `sniff(head: bytes, name: str) -> bool` (content
detection from the first bytes; the file name is only a hint) and
`read(data: bytes, source: str, options: ReadOptions) -> list[Run]` (one Run per scenario).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class ReadOptions:
    """What the budget tells a reader: which slices it wants and where the native columns are."""

    slices: tuple[str, ...] = ()
    # slice name -> (column name, unit or None for "from the suffix")
    columns: dict[str, tuple[str, str | None]] = field(default_factory=dict)
    # the budget's percentile: a reader holding only a sample of the requests (GuideLLM) uses
    # the file's own percentiles when the sample is too small for this one
    percentile: float = 95.0
