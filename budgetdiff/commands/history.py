"""`budgetdiff history`: the newest run of a history file against the runs before it (trends,
change points, drift) as a table of words, and the trend page that draws them."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from budgetdiff import history, numbers
from budgetdiff.budget import Regression
from budgetdiff.commands.output import Edge, write_atomic
from budgetdiff.errors import InputError
from budgetdiff.evaluate import load_history
from budgetdiff.history import History, Loaded
from budgetdiff.numbers import count, ms, pct, percentile
from budgetdiff.render.page import render_page
from budgetdiff.render.text import plain


@dataclass(frozen=True)
class HistoryOptions:
    """history: the JSON Lines file, and the page to draw it on."""

    file: str
    html: str | None = None


def run(o: HistoryOptions, edge: Edge) -> int:
    """The newest run of a history file against the ones before it: trends, change points,
    drift; `--html` draws them. A view: exit 0 whatever it shows."""
    loaded = load_history(o.file, edge.environ)
    assert loaded is not None
    trends = newest(o.file, loaded)
    edge.out.write(trend_table(o.file, loaded, trends))
    if o.html:
        write_atomic(Path(o.html), trend_page(o.file, loaded, trends))
        edge.out.write(f"wrote {o.html}\n")
    return 0


def newest(file: str, loaded: Loaded) -> History:
    """The newest run against the ones before it (InputError when the file holds no report)."""
    h = history.latest(loaded, Regression())
    if h is None:
        raise InputError(f"{file}: no budgetdiff report in it: one JSON report per line")
    return h


def trend_table(file: str, loaded: Loaded, h: History) -> str:
    """One line per SLO metric and slice: sparkline, cumulative change, change vs reference,
    since when it is slower, and the newest value."""
    p = percentile(loaded.entries[-1].percentile)
    lines = [
        f"{file}: {count(len({e.line for e in loaded.entries}))} run(s); the newest against "
        f"the {h.window} before it since the budget last changed",
        f"  {p:<16} {'trend':<20} {'cumulative':>11} {'vs reference':>13}  slower since",
    ]
    for t in h.trends:
        drift = " drift" if t.drift else ""
        lines.append(
            f"  {plain(t.label, 16):<16} {t.sparkline:<20} {pct(t.cumulative_pct, signed=True):>11}"
            f" {pct(t.change_pct, signed=True):>13}  {plain(t.slower_since or '–', 40)}"
            f"{drift}  (last {ms(t.values[-1])})"
        )
    return "".join(f"{line}\n" for line in lines)


def trend_page(file: str, loaded: Loaded, h: History) -> str:
    """The page with a chart per row (`--html PAGE`)."""
    p = numbers.given(loaded.entries[-1].percentile)  # as the table says it
    return render_page(f"budgetdiff trend · {plain(file, 80)}", float(p), h, [])
