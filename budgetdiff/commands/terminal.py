"""The width the terminal report is laid out for, read once at the edge from the environment
dict `main` was given and the stream the report goes to.

The rule: `COLUMNS` when it holds a whole number (shells export it, and a user sets it to ask
for a width: `COLUMNS=200 budgetdiff compare ... > report.txt` keeps every table whole); else
the size of the terminal the report is printed on; else 80. A pipe, a file and a CI log have
no width of their own (GitHub's runner sets no `COLUMNS` and gives no terminal), and whoever
reads them later does so in a window about that wide: 80 is what `shutil` and most tools
assume there. The report is folded to fit, never cut, so nothing is lost at 80. Below 40 the
report is laid out for 40: a table folded narrower says less than one that runs over.
(`shutil.get_terminal_size` is not used: it reads `os.environ`, not the dict `main` got.)
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TextIO

DEFAULT_WIDTH = 80  # Report.to_text()'s too
MIN_WIDTH = 40


def width(environ: Mapping[str, str], out: TextIO) -> int:
    """The columns the report on `out` may use (see the module's rule)."""
    raw = environ.get("COLUMNS", "").strip()
    if raw.isascii() and raw.isdigit() and int(raw) > 0:
        return max(MIN_WIDTH, int(raw))
    try:
        columns = os.get_terminal_size(out.fileno()).columns if out.isatty() else 0
    except (OSError, ValueError):  # no file descriptor (a StringIO), or not a terminal after all
        columns = 0
    return max(MIN_WIDTH, columns) if columns > 0 else DEFAULT_WIDTH
