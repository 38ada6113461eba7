"""Issue 36: which requests of base and head are the same request, on the engine path: the
verdict of `pairing.match` (`pairing.decide` on the same counts), the counts taken by joins on
the id column inside the engine, never by pulling ids into Python.

What `match` reads of two runs, each a query here: whether a side's ids can pair at all (none
blank, none repeated: counts over the side), the ids in both and what their requests agree on
(the token counts and prompt hashes both tables have: counts over the join), and, where most
disagree, whether their prompts agree. A pairing of part of the requests cuts each side to
them in its own file order (a temporary table, ordered by the row's place in the file: a
join does not keep the order, and the autocorrelation check reads it). The paired
correlation of each row (`stats.change.paired_rho`) reads four counts over the pairs, one
join for every row at once (`pair_counts`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from budgetdiff.formats.native.names import rule_for
from budgetdiff.measure.pairing import AGREE, EVIDENCE, Decision, Overlap, decide
from budgetdiff.measure.results import Unit
from budgetdiff.sources.engine import Engine, ident
from budgetdiff.stats.change import PairCounts

PROMPTS = ("input_tokens", "prompt_hash")  # what `pairing._same_prompts` reads
KEY = "budgetdiff_key"  # a side's id as text, in the cut tables


@dataclass(frozen=True, slots=True)
class Tables:
    """Both sides' relations and row counts, and their columns by the native reader's target
    (the id, token counts, prompt hash: the first column each names)."""

    rels: tuple[str, str]
    n: tuple[int, int]
    labels: tuple[str, str]
    columns: tuple[dict[str, str], dict[str, str]]


def targets(columns: Sequence[str]) -> dict[str, str]:
    """The columns pairing reads, by target (`request_id`, `input_tokens`, ...)."""
    wanted = {"request_id", *(name for name, _ in EVIDENCE)}
    out: dict[str, str] = {}
    for c in columns:
        rule = rule_for(c)
        if rule is not None and rule.target in wanted and rule.target not in out:
            out[rule.target] = c
    return out


@dataclass(frozen=True, slots=True)
class Pairing:
    """The verdict and, when paired, the relations to compare (cut to the pairs, or as they
    were) and their row counts, with the join condition that pairs their rows."""

    decision: Decision
    rels: tuple[str, str]
    n: tuple[int, int]
    keys: tuple[str, str] | None  # each side's id column (None: not paired)
    aligned: bool = False  # row i of base and of head have the same id: joined by position


def _key(column: str, alias: str = "") -> str:
    """A side's id as text (ids of either type pair as the in-memory reader's text ids)."""
    return f"CAST({alias + '.' if alias else ''}{ident(column)} AS VARCHAR)"


def pair(engine: Engine, s: Tables, unit: Unit, no_pair: bool) -> Pairing:
    """`pairing.match` (never `--pair`) through the engine."""
    unpaired = Pairing(Decision(False), s.rels, s.n, None)
    if no_pair:
        note = f"not paired by {unit.value} id (--no-pair)"
        return Pairing(Decision(False, notes=(note,)), s.rels, s.n, None)
    if any("request_id" not in c for c in s.columns) or min(s.n) < 2:
        return unpaired  # no ids, or too few requests: `pairing._unusable`
    ids = (s.columns[0]["request_id"], s.columns[1]["request_id"])
    aligned = _aligned(engine, s, ids)  # then head's ids are base's: one side tells
    if not _ids_usable(engine, s, ids, aligned):
        return unpaired
    join = _join(s.rels, ids, aligned)
    evidence = [(name, words) for name, words in EVIDENCE if _both(s, name)]
    agree = " AND ".join(_same(s, name) for name, _ in evidence) or "TRUE"
    parts = [
        f"count(*) FILTER (WHERE {_known(s, name)}), count(*) FILTER (WHERE NOT ({_same(s, name)}))"
        for name, _ in evidence
    ]
    label = f"{s.labels[0]} and {s.labels[1]}"
    got = engine.one(
        f"SELECT count(*), count(*) FILTER (WHERE {agree}){''.join(', ' + p for p in parts)} "
        f"FROM {join}",
        label,
    )
    common, agreed = int(got[0]), int(got[1])
    said = tuple(w for i, (_, w) in enumerate(evidence) if int(got[2 + 2 * i]))
    differ = tuple(w for i, (_, w) in enumerate(evidence) if int(got[3 + 2 * i]))
    prompts: list[str] = []  # the prompts' condition, where they pair on it

    def same_prompts() -> int | None:
        return _same_prompts(engine, s, join, label, common, prompts)

    d = decide(Overlap(s.n[0], s.n[1], common, said, differ, agreed, same_prompts), unit)
    if not d.paired:
        return Pairing(d, s.rels, s.n, None)
    if not d.cut:
        return Pairing(d, s.rels, s.n, ids, aligned)
    keep = {"common": "TRUE", "agree": agree, "prompts": prompts[-1] if prompts else "TRUE"}
    return _cut(engine, s, d, join, keep[d.on], ids, aligned)


def _ids_usable(engine: Engine, s: Tables, ids: tuple[str, str], aligned: bool) -> bool:
    """Every request has an id and no id repeats (`pairing._unusable`), on each side (one side
    tells when the sides are aligned: head's ids are base's)."""
    each = list(zip(s.rels, ids, s.n, s.labels, strict=True))
    for rel, col, n, label in each[: 1 if aligned else 2]:
        k = _key(col)
        blank, distinct = engine.one(
            f"SELECT count(*) FILTER (WHERE {k} IS NULL OR {k} = ''), count(DISTINCT {k}) "
            f"FROM {rel}",
            label,
        )
        if int(blank) or int(distinct) < n:  # a request without an id, or ids repeated
            return False
    return True


def _same_prompts(
    engine: Engine, s: Tables, join: str, label: str, common: int, prompts: list[str]
) -> int | None:
    """`pairing._same_prompts`: the prompts' evidence that tells prompts apart, and how many
    pairs agree on it (its condition appended to `prompts`)."""
    proven = []
    for name in PROMPTS:
        if not _both(s, name):
            continue
        known = _known(s, name)
        col = f"b.{ident(s.columns[0][name])}"
        many = "" if name == "prompt_hash" else f", count(DISTINCT {col}::DOUBLE)"
        row = engine.one(f"SELECT count(*){many} FROM {join} WHERE {known}", label)
        if not int(row[0]) or (name != "prompt_hash" and int(row[1]) < 2):
            continue  # one prompt length for every request: it tells no prompt apart
        proven.append(_same(s, name))
    if not proven:
        return None
    condition = " AND ".join(proven)
    same = int(engine.one(f"SELECT count(*) FROM {join} WHERE {condition}", label)[0])
    if same / common < AGREE:
        return None
    prompts.append(condition)
    return same


def join(p: Pairing) -> str:
    """The paired requests: base (`b`) joined with head (`h`), as `p` pairs them."""
    assert p.keys is not None
    return _join(p.rels, p.keys, p.aligned)


def _aligned(engine: Engine, s: Tables, ids: tuple[str, str]) -> bool:
    """Both sides hold the same ids in the same order (a benchmark re-run on the same
    requests; `table.common_ids`'s first look): one streaming pass by position, and then the
    pairs are the rows at the same place, no hash join of every id. Where the ids are unique
    (the caller checks), the pairs by position are exactly those by id."""
    if s.n[0] != s.n[1]:
        return False
    kb, kh = _key(ids[0], "b"), _key(ids[1], "h")
    sql = (
        f"SELECT count(*) FILTER (WHERE {kb} IS DISTINCT FROM {kh}) "
        f"FROM {s.rels[0]} AS b POSITIONAL JOIN {s.rels[1]} AS h"
    )
    return int(engine.one(sql, f"{s.labels[0]} and {s.labels[1]}")[0]) == 0


def _join(rels: tuple[str, str], ids: tuple[str, str], aligned: bool) -> str:
    """Base (`b`) joined with head (`h`) on the id (by position when `aligned`)."""
    if aligned:
        return f"{rels[0]} AS b POSITIONAL JOIN {rels[1]} AS h"
    return f"{rels[0]} AS b JOIN {rels[1]} AS h ON {_key(ids[0], 'b')} = {_key(ids[1], 'h')}"


def _cut(
    engine: Engine,
    s: Tables,
    d: Decision,
    join: str,
    keep: str,
    keys: tuple[str, str],
    aligned: bool,
) -> Pairing:
    """Each side cut to the paired requests, in its own file order (`pairing._rows`)."""
    engine.execute(
        f"CREATE OR REPLACE TEMP TABLE budgetdiff_pairs AS SELECT {_key(keys[0], 'b')} AS {KEY} "
        f"FROM {join} WHERE {keep}",
        f"{s.labels[0]} and {s.labels[1]}",
    )
    rels = []
    for side, rel, key, label in zip(("base", "head"), s.rels, keys, s.labels, strict=True):
        table = f"budgetdiff_{side}"
        engine.execute(
            f"CREATE OR REPLACE TEMP TABLE {table} AS SELECT * EXCLUDE (budgetdiff_row) FROM "
            f"(SELECT *, row_number() OVER () AS budgetdiff_row FROM {rel}) "
            f"WHERE {_key(key)} IN (SELECT {KEY} FROM budgetdiff_pairs) ORDER BY budgetdiff_row",
            label,
        )
        rels.append(table)
    # the same ids kept of aligned sides are still aligned (each cut keeps its order)
    return Pairing(d, (rels[0], rels[1]), (d.kept, d.kept), keys, aligned)


def _both(s: Tables, name: str) -> bool:
    return all(name in c for c in s.columns)


def _known(s: Tables, name: str) -> str:
    """Both sides say it for this request (a hash not blank, a count a finite number)."""
    b, h = (f"{w}.{ident(c[name])}" for w, c in zip("bh", s.columns, strict=True))
    if name == "prompt_hash":
        said = (f"coalesce(CAST({x} AS VARCHAR), '') <> ''" for x in (b, h))
        return f"({' AND '.join(said)})"
    return f"coalesce(isfinite({b}::DOUBLE) AND isfinite({h}::DOUBLE), false)"


def _same(s: Tables, name: str) -> str:
    """The request agrees on it, or a side does not say it."""
    b, h = (f"{w}.{ident(c[name])}" for w, c in zip("bh", s.columns, strict=True))
    if name == "prompt_hash":
        equal = f"CAST({b} AS VARCHAR) = CAST({h} AS VARCHAR)"
    else:
        equal = f"{b}::DOUBLE = {h}::DOUBLE"
    return f"(NOT {_known(s, name)} OR coalesce({equal}, false))"


def pair_counts(
    engine: Engine,
    p: Pairing,
    columns: Sequence[str],
    values: Sequence[tuple[float, float]],
    labels: tuple[str, str],
) -> list[PairCounts]:
    """Per row (a column and its two sides' percentiles): over the pairs, how many have
    base's value at or below base's percentile, head's at or below head's, and both. One join
    for every row."""
    assert p.keys is not None
    if not columns:
        return []
    filters = []
    for c, (vb, vh) in zip(columns, values, strict=True):
        b, h = f"b.{ident(c)}::DOUBLE <= {_num(vb)}", f"h.{ident(c)}::DOUBLE <= {_num(vh)}"
        filters.append(
            f"count(*) FILTER (WHERE {b}), count(*) FILTER (WHERE {h}), "
            f"count(*) FILTER (WHERE {b} AND {h})"
        )
    got = engine.one(
        f"SELECT count(*), {', '.join(filters)} FROM {_join(p.rels, p.keys, p.aligned)}",
        f"{labels[0]} and {labels[1]}",
    )
    m = int(got[0])
    return [
        PairCounts(m, int(got[1 + 3 * i]), int(got[2 + 3 * i]), int(got[3 + 3 * i]))
        for i in range(len(columns))
    ]


def _num(v: float) -> str:
    """A double as SQL, exactly (its shortest repr, parsed as a double: no decimal literal)."""
    return f"'{v!r}'::DOUBLE"
