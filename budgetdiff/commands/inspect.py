"""`budgetdiff inspect FILE [--budget B]`: how a file is read, before any verdict rests on it.

For each run: the format, every column's role, what it is read as, its unit and how that unit
was decided (suffix, header bracket, the budget's `unit:`, guessed); the counts (rows, failed,
blanks per column); the first rows as read, in ms; and what the reader found wrong in the data
(the `units` and `impossible` findings `check` and `compare` would give). Exit 0 when the file
reads, 2 when it cannot (the same one-line error as `check`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from budgetdiff.errors import UsageError

if TYPE_CHECKING:
    from budgetdiff.commands.edge import Edge
    from budgetdiff.commands.options import InspectOptions
    from budgetdiff.formats import ReadOptions
    from budgetdiff.table import FloatArray, Run

FIRST_ROWS = 5


def run(o: InspectOptions, edge: Edge) -> int:
    from pathlib import Path

    from budgetdiff.budget.file import load_budget
    from budgetdiff.evaluate.orchestrator import read_options
    from budgetdiff.formats import ReadOptions, detect
    from budgetdiff.sources import files as sources

    options = read_options(load_budget(Path(o.budget))) if o.budget else ReadOptions()
    if o.sql:
        runs = _sql_runs(o, edge, options)
    elif not o.file:
        raise UsageError("inspect needs a FILE (or --sql CONNECTION)")
    else:
        data = sources.read_bytes(o.file, None, sources.max_bytes(edge.environ))
        runs = detect.read(data, o.file, o.format, options)
    edge.out.write("\n\n".join(describe(r) for r in runs) + "\n")
    return 0


def _sql_runs(o: InspectOptions, edge: Edge, options: ReadOptions) -> list[Run]:
    """The rows `--sql` selects, read as compare reads a side (the note shows the query)."""
    from budgetdiff.commands.compare import sql_query
    from budgetdiff.sources.sql import read_side, sides

    _, head = sides(
        base_match=None,
        head_match=o.head_match,
        window=o.window,
        at=o.at,
        base_at=None,
        head_at=None,
        compare=False,
    )
    return read_side(sql_query(o, edge.environ, base=None, head=head), "head", options)


def describe(run: Run) -> str:
    """One run's reading, as `inspect` prints it."""
    import numpy as np
    from tabulate import tabulate

    from budgetdiff import numbers
    from budgetdiff.render.text import plain

    name = f" · class {plain(run.scenario)}" if run.scenario else ""
    layout = run.meta.get("layout")
    read = f"{run.meta.get('format', 'unknown')}{f' ({layout})' if layout else ''}"
    lines = [f"{plain(run.source, 200)}: {read}{name}"]
    arrays = _arrays(run)
    if run.columns:
        rows = []
        for u in run.columns:
            values = arrays.get(u.target or "") if u.role in ("slice", "metric") else None
            blanks = int(np.isnan(values).sum()) if values is not None else None
            rows.append(
                [
                    plain(u.column, 40),
                    u.role,
                    u.target or "",
                    u.unit or "",
                    u.unit_from or "",
                    "" if blanks is None else numbers.count(blanks),
                    plain(u.note or "", 60),
                ]
            )
        headers = ["column", "role", "read as", "unit", "unit from", "blank", "note"]
        lines.append(tabulate(rows, headers=headers, tablefmt="simple"))
    else:
        lines.append(f"read as: {', '.join(run.available()) or 'nothing'}")
    failed = int(run.n - run.succeeded.sum())
    lines.append(f"rows: {numbers.count(run.n)} · failed: {numbers.count(failed)}")
    if not run.slices and run.ttft is not None and run.total is not None and run.per_request:
        from budgetdiff.formats.native.derive import SAID

        lines.append(f"derived: {SAID}, for a budget that names first_token or decode")
    if run.per_request and arrays:
        shown = list(arrays.items())
        table = [
            [str(i + 1), *(numbers.num(float(v[i])) for _, v in shown), _ok(run, i)]
            for i in range(min(FIRST_ROWS, run.n))
        ]
        lines.append("first rows as read (ms):")
        lines.append(tabulate(table, headers=["row", *(k for k, _ in shown), "ok"]))
    for d in run.doubts:
        lines.append(f"{d.kind}{' (fails the check)' if d.fails else ''}: {plain(d.message, 400)}")
    note = run.meta.get("note")
    if isinstance(note, str):
        lines.append(f"note: {plain(note, 600)}")
    return "\n".join(lines)


def _arrays(run: Run) -> dict[str, FloatArray]:
    out: dict[str, FloatArray] = dict(run.slices)
    for name in ("ttft", "total", "tpot"):
        values = getattr(run, name)
        if values is not None:
            out[name] = values
    return out


def _ok(run: Run, i: int) -> str:
    return "yes" if run.succeeded[i] else "failed"
