"""What the budget tells a reader: the slices it wants and where a native table keeps them."""

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
