"""One explicit reading of a native table's header: every column mapped to a role, or listed
as not used. The budget's `column:`/`unit:` come first, then the names of `native_names.RULES`.

A unit is decided once per column (suffix, header bracket, the budget's `unit:`, else
guessed) and holds for every row that reads the column; a `unit:` that contradicts the
column's own suffix or bracket is refused.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from budgetdiff.errors import ReadError
from budgetdiff.formats.native.names import (
    CLASS,
    FAILURE,
    FROM_BUDGET,
    GUESSED,
    LATENCY_ROLES,
    METRIC,
    SLICE,
    TIME,
    UNUSED,
    Name,
    cut,
    looks_read_worthy,
    normalize,
    rule_for,
    statistic_column,
)
from budgetdiff.formats.native.tables import NAME
from budgetdiff.formats.options import ReadOptions
from budgetdiff.table import KNOWN_SLICES, ColumnUse


@dataclass(frozen=True)
class Mapping:
    """Each column's use (a column read two ways, as a budget slice and an SLO metric, has
    two uses with the same unit)."""

    uses: tuple[ColumnUse, ...]

    def one(self, role: str, target: str) -> ColumnUse | None:
        return next((u for u in self.uses if u.role == role and u.target == target), None)

    def all(self, role: str) -> list[ColumnUse]:
        return [u for u in self.uses if u.role == role]


def _q(column: str) -> str:
    return repr(cut(column, 80))


def map_columns(columns: list[str], options: ReadOptions, source: str) -> Mapping:
    """The reading of a header; a ReadError when it cannot be read right (a budget mapping to
    a column that is not there, a unit that contradicts the column's name, two columns for
    one latency)."""
    listed = ", ".join(cut(c, 80) for c in columns[:50]) or "(none)"
    uses: list[ColumnUse] = []
    units: dict[str, tuple[str, str]] = {}  # column -> (unit, how decided)
    budget_slices: dict[str, str] = {}  # slice -> column the budget maps it to
    for name, (column, unit) in options.columns.items():
        if column not in columns and column == name:  # `unit:` alone: the slice's column
            column = _by_rule(columns, SLICE, name) or column
        if column not in columns:
            raise ReadError.at(
                NAME,
                source,
                f"no column {_q(column)} (mapped for slice {name!r}); columns are: {listed}; "
                "fix the slice's `column:` in the budget",
            )
        stated = normalize(column)
        if unit is not None and stated.unit is not None and stated.unit != unit:
            raise ReadError.at(
                NAME,
                source,
                f"column {_q(column)}: the budget's `unit: {unit}` (slice {name!r}) contradicts "
                f"the {stated.unit_from} of the column's name, which says {stated.unit}; drop "
                "the `unit:` or rename the column",
            )
        if unit is not None:
            units[column] = (unit, FROM_BUDGET)
        budget_slices[name] = column
    budget_columns = set(budget_slices.values())
    wanted_slices = set(options.slices)
    for column in columns:
        stated = normalize(column)
        rule = rule_for(column)
        if rule is not None and rule.unit is None and stated.unit is not None:
            rule = None  # `error_ms`, `id_s`: a duration, not a failure marker or an id
        role, target = (rule.role, rule.target) if rule else (None, None)
        if rule is None and stated.base in wanted_slices and stated.base not in budget_slices:
            role, target = SLICE, stated.base  # the budget's own slice: `retrieval_ms`
        if role == SLICE and target in budget_slices:
            role = None  # the budget maps this slice to another column
        if column in budget_columns:
            for name, mapped in budget_slices.items():
                if mapped == column:
                    uses.append(_latency(column, SLICE, name, stated, units, "ms"))
            if role is not None and role != SLICE:
                uses.append(_use(column, role, target, stated, units, rule.unit if rule else None))
            continue
        if role is None:
            uses.append(ColumnUse(column, UNUSED, note=looks_read_worthy(column) or "not used"))
            continue
        assert target is not None
        uses.append(_use(column, role, target, stated, units, rule.unit if rule else "ms"))
    uses += _first_token_from_ttft(uses, wanted_slices)
    if not any(u.role in LATENCY_ROLES for u in uses):
        _not_a_summary(columns, source)
    return Mapping(tuple(_one_each(uses, source)))


def _not_a_summary(columns: list[str], source: str) -> None:
    """A header with no latency column read and two or more named as statistics (`mean`,
    `p95`, `p95_ttft_ms`) is a summary, one row per metric or run: refused as what it is."""
    stats = [c for c in columns if statistic_column(c)]
    if len(stats) < 2:
        return
    named = ", ".join(cut(c, 40) for c in stats[:8]) + (", ..." if len(stats) > 8 else "")
    raise ReadError.at(
        NAME,
        source,
        f"a summary, not requests: its columns are statistics ({named}), not one value per "
        "request; pass the per-request file it was made from (one row per request)",
    )


def _first_token_from_ttft(uses: list[ColumnUse], wanted: set[str]) -> list[ColumnUse]:
    """A budget's `first_token` slice without a column of its own is the measured TTFT: the
    same time (what `rebudget --write` names the TTFT's slice when the table has only it)."""
    if "first_token" not in wanted or any(
        u.role == SLICE and u.target == "first_token" for u in uses
    ):
        return []
    ttft = next((u for u in uses if u.role == METRIC and u.target == "ttft"), None)
    if ttft is None:
        return []
    return [replace(ttft, role=SLICE, target="first_token", note="the TTFT column, as a slice")]


def _by_rule(columns: list[str], role: str, target: str) -> str | None:
    """The column a `unit:`-only budget slice means (`decode: {unit: s}` on `decode_time`)."""
    for column in columns:
        rule = rule_for(column)
        if rule is not None and rule.role == role and rule.target == target:
            return column
    return None


def _latency(
    column: str,
    role: str,
    target: str,
    stated: Name,
    units: dict[str, tuple[str, str]],
    default: str,
) -> ColumnUse:
    if column in units:
        unit, how = units[column]
    elif stated.unit is not None and stated.unit_from is not None:
        unit, how = stated.unit, stated.unit_from
    else:
        unit, how = default, GUESSED
    units[column] = (unit, how)  # every use of the column reads it in one unit
    return ColumnUse(column, role, target, unit, how)


def _use(
    column: str,
    role: str,
    target: str | None,
    stated: Name,
    units: dict[str, tuple[str, str]],
    default: str | None,
) -> ColumnUse:
    assert target is not None
    if role in LATENCY_ROLES or role == TIME:
        return _latency(column, role, target, stated, units, default or "ms")
    return ColumnUse(column, role, target)


def _one_each(uses: list[ColumnUse], source: str) -> list[ColumnUse]:
    """Two columns for one latency are refused; for an id, tokens, a time or a class the
    first wins and the others are listed as not used. Failure markers all count."""
    seen: dict[tuple[str, str | None], str] = {}
    out: list[ColumnUse] = []
    for u in uses:
        key = (u.role, u.target)
        if u.role in (UNUSED, FAILURE) or key not in seen:
            if u.role not in (UNUSED, FAILURE):
                seen[key] = u.column
            out.append(u)
            continue
        if u.role == SLICE:
            raise ReadError.at(
                NAME,
                source,
                f"slice {u.target!r} has several columns ({cut(seen[key], 80)}, "
                f"{cut(u.column, 80)}); keep one, or choose it with "
                f"`{u.target}: {{budget: ..., column: NAME}}`",
            )
        if u.role == METRIC:
            raise ReadError.at(
                NAME,
                source,
                f"columns {_q(seen[key])} and {_q(u.column)} both read as the {u.target}; keep "
                "one (docs/native-table.md lists the names read)",
            )
        role = "class column" if u.role == CLASS else u.target
        out.append(ColumnUse(u.column, UNUSED, note=f"{cut(seen[key], 80)} is the {role}"))
    return out


def known_slices(mapping: Mapping) -> list[str]:
    """The slices a table has, in the order a request crosses them (the budget's own last)."""
    names = [u.target for u in mapping.all(SLICE) if u.target is not None]
    return sorted(names, key=lambda s: KNOWN_SLICES.index(s) if s in KNOWN_SLICES else 99)
