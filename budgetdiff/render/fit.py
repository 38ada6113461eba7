"""Text that fits a terminal's width: tables laid out by tabulate, folded by column groups when
too wide, and prose wrapped. A width of None is no limit (`Report.to_text(width=None)`).

How a table folds, in order, until it fits:
1. the whole table, one line per row, headers wrapped at words if that makes it fit;
2. one table per group of columns, each under the first (key) column, one line per row;
3. the same, headers wrapped, then each cell's parts one per line (a change above its
   caveat);
4. the same, with the widest columns wrapped until it fits (narrow widths, long names),
   breaking no word of up to LONG_WORD characters: below about 60 columns a table may
   still run over.
Nothing is dropped: a reader at 80 columns sees every number a wide terminal shows.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import groupby

from tabulate import tabulate

DEFAULT_WIDTH = 80  # a pipe, a file, a CI log, the Python API: see `budgetdiff.commands.terminal`
LONG_WORD = 20  # a word longer than this may be broken to fit a table column
GAP = 2  # tabulate's "simple" layout: two spaces between columns


@dataclass(frozen=True)
class Column:
    """A column: its header, and each row's cell as parts (said on one line when there is
    room, one per line when not). `group` says which folded table it goes to; `right` aligns
    numbers."""

    head: str
    cells: tuple[tuple[str, ...], ...]
    group: int = 0
    right: bool = False


def column(head: str, cells: Sequence[str], *, group: int = 0, right: bool = False) -> Column:
    """A column of one-part cells."""
    return Column(head, tuple((c,) for c in cells), group, right)


def table(key: Column, columns: Sequence[Column], width: int | None) -> list[str]:
    """The lines of the table `key` + `columns`, folded to `width` (see the module)."""
    whole = _lines([key, *columns], stacked=False)
    if width is None or _widest(whole) <= width:
        return whole
    whole = _lines([key, *columns], stacked=False, short_heads=True)
    if _widest(whole) <= width:
        return whole
    by_group = sorted(columns, key=lambda c: c.group)  # stable: the order within a group holds
    out: list[str] = []
    for _, group in groupby(by_group, key=lambda c: c.group):
        out += ([""] if out else []) + _narrow([key, *group], width)
    return out


def prose(text: str, width: int | None, indent: str = "", hang: str = "  ") -> list[str]:
    """`text` as lines of at most `width` characters: the first starts with `indent`, the rest
    with `indent + hang`. Words longer than a line are broken: the width is a promise."""
    if width is None:
        return [indent + text]
    return textwrap.wrap(
        text,
        width,
        initial_indent=indent,
        subsequent_indent=indent + hang,
        break_on_hyphens=False,
    ) or [indent.rstrip()]


def _narrow(columns: list[Column], width: int) -> list[str]:
    for stacked, short_heads in ((False, False), (False, True), (True, True)):
        lines = _lines(columns, stacked=stacked, short_heads=short_heads)
        if _widest(lines) <= width:
            return lines
    natural = [_natural(c) for c in columns]
    floors = [min(n, _floor(c)) for c, n in zip(columns, natural, strict=True)]
    room = width - GAP * (len(columns) - 1)
    cap = max(natural)
    while cap > min(floors) and sum(_capped(natural, floors, cap)) > room:
        cap -= 1
    return _lines(columns, stacked=True, caps=_capped(natural, floors, cap))


def _capped(natural: list[int], floors: list[int], cap: int) -> list[int]:
    """Each column at most `cap` wide, but never narrower than its longest word."""
    return [max(f, min(n, cap)) for n, f in zip(natural, floors, strict=True)]


def _lines(
    columns: list[Column],
    *,
    stacked: bool,
    short_heads: bool = False,
    caps: list[int] | None = None,
) -> list[str]:
    """The table by tabulate. `short_heads`: a header wider than its cells wraps (at words);
    `caps`: each column's widest, its cells and header wrapped here (tabulate's own
    `maxcolwidths` re-types what it wraps: `1,200` fails as an int, a cell `False` comes out
    `True`)."""
    widths: list[int | None] = list(caps) if caps else [None] * len(columns)
    if short_heads and not caps:
        # on two lines at most: a header said in four is harder to read than a folded table
        widths = [
            max(_cells(c, stacked), _head_floor(c), -(-len(c.head) // 2) + 2) for c in columns
        ]
    join = "\n" if stacked else " "
    rows = [
        [
            _wrapped(join.join(c.cells[i]), w if caps else None)
            for c, w in zip(columns, widths, strict=True)
        ]
        for i in range(len(columns[0].cells))
    ]
    # the header's two spaces of padding are part of its column's width
    head = [_wrapped(c.head, w - 2 if w else None) for c, w in zip(columns, widths, strict=True)]
    text = tabulate(
        rows,
        head,
        tablefmt="simple",
        disable_numparse=True,  # a cell is shown as given: `1e5` stays `1e5`
        colalign=["right" if c.right else "left" for c in columns],
    )
    return [line.rstrip() for line in text.split("\n")]


def _wrapped(text: str, width: int | None) -> str:
    if width is None:
        return text
    return "\n".join("\n".join(prose(line, max(1, width), hang="")) for line in text.split("\n"))


def _natural(c: Column) -> int:
    """The column's width with its cells' parts one per line."""
    return max(len(c.head) + 2, _cells(c, stacked=True))


def _cells(c: Column, stacked: bool) -> int:
    """The widest cell, its parts one per line or on one."""
    if stacked:
        return max((len(part) for cell in c.cells for part in cell), default=0)
    return max((len(" ".join(cell)) for cell in c.cells), default=0)


def _head_floor(c: Column) -> int:
    """The header's longest word with the two spaces of its padding."""
    return max((len(w) + 2 for w in c.head.split()), default=2)


def _floor(c: Column) -> int:
    """The column's longest word (a header's with its two spaces), up to LONG_WORD: a longer
    one (a slice named in one 60-character word) is broken rather than run over."""
    words = [len(w) for cell in c.cells for part in cell for w in part.split()]
    return min(LONG_WORD, max(_head_floor(c), *words))


def _widest(lines: list[str]) -> int:
    return max((len(line) for line in lines), default=0)
