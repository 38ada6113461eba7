"""`budgetdiff history`: the newest run of a history file against the runs before it (trends,
change points, drift) as a table of words, and the trend page that draws them."""

from __future__ import annotations

from pathlib import Path

from budgetdiff import numbers
from budgetdiff.budget.model import Regression
from budgetdiff.commands.edge import Edge
from budgetdiff.commands.options import HistoryOptions
from budgetdiff.commands.output import write_atomic
from budgetdiff.commands.terminal import width
from budgetdiff.errors import InputError
from budgetdiff.evaluate.orchestrator import load_history
from budgetdiff.measure import history
from budgetdiff.measure.history import History, Loaded
from budgetdiff.numbers import amount, count, pct, percentile
from budgetdiff.render.fit import column, prose, table
from budgetdiff.render.page import render_page
from budgetdiff.render.text import plain


def run(o: HistoryOptions, edge: Edge) -> int:
    """The newest run of a history file against the ones before it: trends, change points,
    drift; `--html` draws them. A view: exit 0 whatever it shows."""
    loaded = load_history(o.file, edge.environ)
    assert loaded is not None
    trends = newest(o.file, loaded)
    edge.out.write(trend_table(o.file, loaded, trends, width(edge.environ, edge.out)))
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


def trend_table(file: str, loaded: Loaded, h: History, width: int | None = None) -> str:
    """One row per SLO metric and slice: sparkline, cumulative change, change vs reference,
    the newest value, drift, and since when it is slower; in lines of at most `width` (folded:
    the numbers, then drift and since when)."""
    p = percentile(loaded.entries[-1].percentile)
    t = h.trends
    columns = [
        column("trend", [x.sparkline for x in t]),
        column("cumulative", [pct(x.cumulative_pct, signed=True) for x in t], right=True),
        column("vs reference", [pct(x.change_pct, signed=True) for x in t], right=True),
        column("last", [amount(x.values[-1], x.unit) for x in t], right=True),
        column("drift", ["drift" if x.drift else "" for x in t], group=1),
        column("slower since", [plain(x.slower_since or "–", 40) for x in t], group=1),
    ]
    runs = count(len({e.line for e in loaded.entries}))
    lines = prose(
        f"{file}: {runs} run(s); the newest against the {h.window} before it since the budget "
        "last changed",
        width,
    )
    inner = None if width is None else width - 2
    lines += [
        "  " + line for line in table(column(p, [plain(x.label, 16) for x in t]), columns, inner)
    ]
    return "".join(f"{line.rstrip()}\n" for line in lines)


def trend_page(file: str, loaded: Loaded, h: History) -> str:
    """The page with a chart per row (`--html PAGE`)."""
    p = numbers.given(loaded.entries[-1].percentile)  # as the table says it
    return render_page(f"budgetdiff trend · {plain(file, 80)}", float(p), h, [])
