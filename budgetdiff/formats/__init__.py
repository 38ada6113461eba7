"""Readers: every supported file format mapped onto `budgetdiff.table.Run`.

`registry` lists the readers (a module each, most specific first), `detect.read` reads one
file with the reader `--format` names or the content shows, `combine` makes one side of several
files. `ReadOptions` is what the budget tells a reader.
"""

from __future__ import annotations

from budgetdiff.formats.options import ReadOptions

__all__ = ["ReadOptions"]
