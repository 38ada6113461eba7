"""`budgetdiff compare`: base vs head against the budget; and the Request its options (the
flags, or the Action's inputs) become, which `check` and `demo` share."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from budgetdiff.commands.budget_source import held_budget
from budgetdiff.commands.edge import Edge
from budgetdiff.commands.options import RunOptions, SqlFlags
from budgetdiff.commands.output import finish, write_atomic
from budgetdiff.errors import UsageError
from budgetdiff.evaluate import orchestrator as evaluate
from budgetdiff.evaluate.orchestrator import Base, Files, Live, Request, Source, Sql

if TYPE_CHECKING:
    from budgetdiff.sources.sql import Side, SqlQuery

# the options that go with --prometheus alone (the flag each is)
LIVE_ONLY = ("base_match", "head_match", "window", "at", "base_at", "head_at")
SQL_ONLY = ("sql_table", "sql_query", "sql_time")  # and --sql itself


def run(o: RunOptions, edge: Edge) -> int:
    if o.engine:  # issue 36: out of core, its own report (docs/performance.md)
        from budgetdiff.commands.engine import run as run_engine

        return run_engine(o, edge)
    return evaluate_and_finish(request(o, edge, compare=True), o, edge)


def request(o: RunOptions, edge: Edge, *, compare: bool) -> Request:
    """The Request of a compare (with its base) or a check (without)."""
    held = held_budget(o, edge.environ)  # the base commit's, in a pull request's Action run
    head, base = _sides(o, edge, compare=compare)
    return Request(
        head=head,
        budget=held.budget,
        budget_change=held.change,
        base=base,
        fail_on=o.fail_on,
        report_id=o.id,
        fmt=o.format,
        scenarios=o.scenario,
        history=o.history,
        accept_label=o.accept_label,
        pair=o.pair,
        environ=edge.environ,
        github=edge.github,
    )


def _sides(o: RunOptions, edge: Edge, *, compare: bool) -> tuple[Source, Base | None]:
    """The head and (for a compare) the base: files, or both from a live Prometheus."""
    if o.prometheus and o.sql:
        raise UsageError("--prometheus and --sql are two sources: give one of them")
    if o.prometheus:
        return _live(o, edge, compare=compare)
    if o.sql:
        return _sql(o, edge, compare=compare)
    given = [f"--{f.replace('_', '-')}" for f in LIVE_ONLY if getattr(o, f) is not None]
    given += [f"--{f.replace('_', '-')}" for f in SQL_ONLY if getattr(o, f) is not None]
    if given:
        raise UsageError(f"{given[0]} goes with --prometheus URL or --sql (docs/deploy-gate.md)")
    if not o.head:
        raise UsageError("the following arguments are required: --head (or --prometheus URL)")
    base = None
    if compare:
        base = Base(
            source=Files(o.base, None if o.base_artifact else o.base_ref),
            artifact=o.base_artifact,
            allow_missing=o.allow_missing_base,
        )
    return Files(o.head, o.head_ref), base


def _live(o: RunOptions, edge: Edge, *, compare: bool) -> tuple[Live, Base | None]:
    """Issue 27: both sides from the server `--prometheus` names (no file is read)."""
    from budgetdiff.sources.prometheus import LiveQuery  # httpx only when live

    _no_files(o, "--prometheus reads the sides from the server")
    query = LiveQuery.parse(
        o.prometheus or "",
        base_match=o.base_match,
        head_match=o.head_match,
        window=o.window,
        at=o.at,
        base_at=o.base_at,
        head_at=o.head_at,
        compare=compare,
    )
    base = Base(source=Live(query, "base", edge.sleep)) if compare else None
    return Live(query, "head", edge.sleep), base


def _sql(o: RunOptions, edge: Edge, *, compare: bool) -> tuple[Sql, Base | None]:
    """Issue 36: both sides' requests from the engine `--sql` names (no file is read)."""
    from budgetdiff.sources.sql import sides

    _no_files(o, "--sql reads the sides from the engine")
    base, head = sides(
        base_match=o.base_match,
        head_match=o.head_match,
        window=o.window,
        at=o.at,
        base_at=o.base_at,
        head_at=o.head_at,
        compare=compare,
    )
    query = sql_query(o, edge.environ, base=base, head=head)
    return Sql(query, "head"), (Base(source=Sql(query, "base")) if compare else None)


def sql_query(
    o: SqlFlags, environ: Mapping[str, str], *, base: Side | None, head: Side
) -> SqlQuery:
    """The query `--sql` and its flags send for the sides selected (compare's, inspect's)."""
    from budgetdiff.sources.sql import Connection, SqlQuery

    return SqlQuery.parse(
        Connection.parse(o.sql or "", environ),
        table=o.sql_table,
        query=o.sql_query,
        time_column=o.sql_time,
        base=base,
        head=head,
    )


def _no_files(o: RunOptions, source: str) -> None:
    """A live source reads both sides itself: a file or ref given beside it is a mistake."""
    if o.head or o.base or o.base_artifact or o.base_ref or o.head_ref:
        raise UsageError(f"{source}: drop --head/--base/--*-ref")


def evaluate_and_finish(req: Request, o: RunOptions, edge: Edge) -> int:
    """Evaluate, write the page if asked, then every output and the GitHub publication."""
    done = evaluate.run(req)
    if o.html:  # the trend charts and this run's distributions
        write_atomic(Path(o.html), done.page())
    return finish(done.report, o, edge)
