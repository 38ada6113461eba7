"""`compare --engine duckdb` (issue 36 item 2): native Parquet/CSV files through DuckDB, out of
core. The same numbers as the in-memory compare on the same 1e5 rows, exactly (percentiles,
intervals, p-values, verdicts, the pairing by id and its paired intervals, the split of the
total's percentile into the slices); percentiles, pair counts and the slices' parts equal
numpy's on the same rows; the autocorrelated and the quantised (tied) paths included; bad
input is exit 2 and one line."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.parquet as pq
import pytest

from budgetdiff import stats
from budgetdiff.cli import main
from budgetdiff.measure import engine as ooc
from budgetdiff.sources import engine as engine_source
from budgetdiff.sources.engine import Engine, relation

BUDGET = """version: 1
percentile: 95
slo: {ttft: 1200, total: 12000}
slices: {queue: 250, prefill: 800, decode: 10000, app: 300}
first_token_after: prefill
"""
N = 100_000
FIELDS = (
    "base_ms", "head_ms", "delta_ms", "delta_pct", "ci_ms", "head_ci_ms", "change",
    "p_value", "mde_pct", "needed", "notes", "family", "percentiles", "paired",
)  # fmt: skip
# a slice's split of the total's p95 (each side's) and of its change (paired: Shapley's)
PARTS = ("tail_share_pct", "part_ms", "base_part_ms", "tail_change_ms")


def _table(seed: int, slow: float, n: int = N) -> pa.Table:
    """Requests of the usual shape; queue autocorrelated in arrival order (load regimes), app
    in whole milliseconds (quantised: the tied path)."""
    rng = np.random.default_rng(seed)
    regime = np.repeat(rng.lognormal(0.0, 0.5, n // 500 + 1), 500)[:n]
    queue = (rng.exponential(35, n) * regime).round(3)
    prefill = rng.lognormal(np.log(300), 0.4, n).round(3)
    decode = (rng.integers(16, 1024, n) * rng.lognormal(np.log(8), 0.25, n) * slow).round(3)
    app = rng.lognormal(np.log(60), 0.3, n).round(0)
    ttft = (queue + prefill).round(3)
    return pa.table(
        {
            "request_id": [f"r{i}" for i in range(n)],
            "queue_ms": queue,
            "prefill_ms": prefill,
            "decode_ms": decode,
            "app_ms": app,
            "ttft_ms": ttft,
            "e2e_ms": (ttft + decode + app).round(3),
        }
    )


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("engine")
    out = {"budget": d / "budget.yml"}
    out["budget"].write_text(BUDGET)
    for side, seed, slow in (("base", 1, 1.0), ("head", 2, 1.05)):
        out[side] = d / f"{side}.parquet"
        pq.write_table(_table(seed, slow), out[side], row_group_size=30_000)
    return out


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    code = main(["compare", *args, "--output", "json"])
    out = capsys.readouterr().out
    assert code in (0, 1), out
    return dict(json.loads(out))


def _rows(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {r.get("metric", r.get("name")): r for r in (*report["slo"], *report["slices"])}


def test_the_report_equals_the_in_memory_compare(
    files: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """Unpaired (`--no-pair` on both paths): every row, and the split of the total's change
    (each side's parts, head's less base's)."""
    common = ["--base", str(files["base"]), "--head", str(files["head"])]
    common += ["--budget", str(files["budget"]), "--no-pair"]
    whole = _run(capsys, *common)
    memory = _rows(whole)
    engine = _run(capsys, *common, "--engine", "duckdb")
    rows = _rows(engine)
    assert set(rows) == {"ttft", "total", "queue", "prefill", "decode", "app"}
    _assert_same_rows(memory, rows, engine)
    for name in ("queue", "prefill", "decode", "app"):
        assert {f: rows[name][f] for f in PARTS} == {f: memory[name][f] for f in PARTS}, name
    assert engine["attribution"] == whole["attribution"] and not engine["paired"]
    assert engine["notes"] == [n for n in whole["notes"] if n in engine["notes"]]
    assert "not paired by request id (--no-pair)" in engine["notes"]
    assert rows["decode"]["change"] == "regression"  # a real change, found the same way
    assert any("autocorrelated" in n for n in rows["queue"]["notes"])  # the inflated path
    assert any("quantised" in n for n in rows["app"]["notes"])  # the tied path
    assert engine["verdict"] == "fail" and engine["requests"] == {"base": N, "head": N}
    assert any("quantile_disc" in q for q in engine["queries"])  # the query sent is shown
    assert not {x["what"] for x in engine["not_computed"]} & {"pairing", "attribution"}


def _sides(tmp_path: Path, base: pa.Table, head: pa.Table) -> list[str]:
    (tmp_path / "budget.yml").write_text(BUDGET)
    for name, t in (("base", base), ("head", head)):
        pq.write_table(t, tmp_path / f"{name}.parquet", row_group_size=30_000)
    return [
        *("--base", str(tmp_path / "base.parquet"), "--head", str(tmp_path / "head.parquet")),
        *("--budget", str(tmp_path / "budget.yml")),
    ]


def _autocorrelated(row: dict[str, Any]) -> bool:
    return any("autocorrelated in arrival order" in n for n in row["notes"])


def _assert_same_rows(
    memory: dict[str, dict[str, Any]], rows: dict[str, dict[str, Any]], engine: dict[str, Any]
) -> None:
    """Every row's fields equal in both paths; where only the arrival-order tests the engine
    does not run find correlation (its not_computed says so), the percentiles equal and the
    in-memory interval is wider."""
    for name, row in rows.items():
        fields = FIELDS
        if _autocorrelated(memory[name]) and not _autocorrelated(row):
            assert "rank and warm-up tests" in {x["what"] for x in engine["not_computed"]}
            fields = ("base_ms", "head_ms", "delta_ms", "delta_pct", "percentiles", "paired")
        assert {f: row[f] for f in fields} == {f: memory[name][f] for f in fields}, name


def _same_report(
    capsys: pytest.CaptureFixture[str], argv: list[str]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Both paths' reports on the same files: every row's numbers, the pairing verdict and
    its notes, each slice's parts of both sides' p95 and share of head's tail equal."""
    whole, engine = _run(capsys, *argv), _run(capsys, *argv, "--engine", "duckdb")
    memory, rows = _rows(whole), _rows(engine)
    assert set(rows) == {"ttft", "total", "queue", "prefill", "decode", "app"}
    _assert_same_rows(memory, rows, engine)
    for name, row in rows.items():
        if row["kind"] == "slice":
            assert {f: row[f] for f in PARTS} == {f: memory[name][f] for f in PARTS}, name
            assert row["part_ms"] is not None and row["tail_change_ms"] is not None
    assert engine["paired"] == whole["paired"]
    assert engine["attribution"] == whole["attribution"]
    assert engine["requests"] == whole["requests"]
    # the pairing's notes, in the in-memory report's words and order
    assert engine["notes"] == [n for n in whole["notes"] if n in engine["notes"]]
    return whole, engine


def test_requests_with_the_same_ids_pair_as_in_memory(
    files: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """The fixture's sides number their requests alike (r0..): paired by id alone, every
    interval the paired one; the counts of the join are numpy's over the same pairs."""
    argv = ["--base", str(files["base"]), "--head", str(files["head"])]
    whole, engine = _same_report(capsys, [*argv, "--budget", str(files["budget"])])
    assert engine["paired"] and engine["pairs"] == N
    assert any("POSITIONAL JOIN" in q for q in engine["queries"])  # the same ids in order
    assert all(r["paired"] for r in (*engine["slo"], *engine["slices"]))
    assert any(n.startswith("paired by request id alone") for n in engine["notes"])
    unpaired = _rows(_run(capsys, *argv, "--budget", str(files["budget"]), "--no-pair"))
    assert _rows(engine)["queue"]["ci_ms"] != unpaired["queue"]["ci_ms"]  # pairing mattered
    assert whole["attribution"] == engine["attribution"] == "Shapley (exact)"


def test_the_join_counts_and_the_band_are_numpys(files: dict[str, Path]) -> None:
    """The pair counts the paired correlation reads, and a slice's part of the total's p95
    (its mean over the band of requests whose total is within 2.5 points of the p95, scaled
    to it), from numpy on the same rows."""
    from budgetdiff.measure import engine_attribution, engine_pairing
    from budgetdiff.measure.results import Unit

    tables = [pq.read_table(files[s]) for s in ("base", "head")]
    e = Engine()
    rels = relation([str(files["base"])], "b"), relation([str(files["head"])], "h")
    sides = engine_pairing.Tables(
        rels, (N, N), ("b", "h"), tuple(engine_pairing.targets(t.column_names) for t in tables)
    )
    paired = engine_pairing.pair(e, sides, Unit.REQUEST, no_pair=False)
    assert paired.decision.paired and not paired.decision.cut
    xb, xh = (t["decode_ms"].to_numpy() for t in tables)  # the same ids in the same order
    vb, vh = float(np.percentile(xb, 90)), float(np.percentile(xh, 90))
    (got,) = engine_pairing.pair_counts(e, paired, ["decode_ms"], [(vb, vh)], ("b", "h"))
    assert (got.m, got.base, got.head) == (N, np.sum(xb <= vb), np.sum(xh <= vh))
    assert got.both == np.sum((xb <= vb) & (xh <= vh))
    head = tables[1]
    slices = {s: f"{s}_ms" for s in ("queue", "prefill", "decode", "app")}
    split = engine_attribution.split(e, rels[1], N, slices, "e2e_ms", 95.0, "h")
    assert split is not None
    total = sum((head[c].to_numpy() for c in slices.values()), np.zeros(N))
    ordered = np.sort(total)
    band = (total >= ordered[int((N - 1) * 0.925)]) & (total <= ordered[-(-(N - 1) * 975 // 1000)])
    want = head["decode_ms"].to_numpy()[band].mean() * np.percentile(total, 95) / total[band].mean()
    assert split.parts["decode"] == pytest.approx(want, rel=1e-12)
    assert math.fsum(split.parts.values()) == pytest.approx(np.percentile(total, 95), rel=1e-12)


def _with_ids(t: pa.Table, ids: list[str]) -> pa.Table:
    return t.set_column(t.schema.get_field_index("request_id"), "request_id", pa.array(ids))


@pytest.mark.parametrize("case", ["fresh", "repeated", "blank"])
def test_runs_without_common_ids_are_compared_unpaired_as_in_memory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str
) -> None:
    """No id in both (each run numbers its own), an id repeated, or a request without one:
    unpaired on both paths, every number equal."""
    base, head = _table(11, 1.0), _table(12, 1.05)
    ids = [f"h{i}" for i in range(N)] if case == "fresh" else head["request_id"].to_pylist()
    if case == "repeated":
        ids[7] = ids[8]
    if case == "blank":
        ids[7] = ""
    whole, engine = _same_report(capsys, _sides(tmp_path, base, _with_ids(head, ids)))
    assert not engine["paired"] and engine["pairs"] is None
    assert not any(r["paired"] for r in (*engine["slo"], *engine["slices"]))
    for r in engine["slices"]:  # unpaired: the change is split as head's parts less base's
        assert r["tail_change_ms"] == _rows(whole)[r["name"]]["tail_change_ms"] is not None


@pytest.mark.parametrize(
    ("in_both", "differ", "hashes", "says", "paired"),
    [
        (0.95, 0.0, False, "compared on the 95,000 both ran, the others are left out", True),
        (0.96, 0.02, False, "disagree on their output token counts and are left out", True),
        (0.8, 0.0, False, "only 80,000 request ids are in both runs", False),
        (0.97, 0.5, False, "output token counts agree on only", False),
        (0.97, 0.5, True, "ask the same prompts (their prompt token counts or hashes", True),
    ],
)
def test_runs_that_share_part_of_their_ids_pair_as_in_memory(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    in_both: float,
    differ: float,
    hashes: bool,
    says: str,
    paired: bool,
) -> None:
    """Head re-ran part of base (the rest new ids, in another order): paired on the requests
    both ran, each side cut to them in its own order, when most are in both and agree on their
    output token counts (where both tables have them), or on their prompts (hashes) where the
    answers differ; else unpaired, said so. The same verdict, notes and numbers as in memory."""
    rng = np.random.default_rng(13)
    base, head = _table(14, 1.0), _table(15, 1.05)
    ids = np.array(base["request_id"].to_pylist(), dtype=object)
    head_ids = ids[rng.permutation(N)]  # head ran them in another order
    fresh = np.zeros(N, dtype=bool)
    fresh[rng.choice(N, round((1.0 - in_both) * N), replace=False)] = True
    head_ids[fresh] = [f"new{i}" for i in range(int(fresh.sum()))]
    head = _with_ids(head, head_ids.tolist())
    order = {r: i for i, r in enumerate(ids.tolist())}
    if differ:
        tokens = rng.integers(16, 1024, N)
        base = base.append_column("output_tokens", pa.array(tokens))
        mine = np.array([tokens[order[r]] if r in order else 100 for r in head_ids.tolist()])
        mine[rng.random(N) < differ] += 1
        head = head.append_column("output_tokens", pa.array(mine))
    if hashes:
        base = base.append_column("prompt_hash", pa.array([f"sha-{i}" for i in range(N)]))
        theirs = [f"sha-{order[r]}" if r in order else "new" for r in head_ids.tolist()]
        head = head.append_column("prompt_hash", pa.array(theirs))
    _, engine = _same_report(capsys, _sides(tmp_path, base, head))
    assert any(says in n for n in engine["notes"]), engine["notes"]
    assert engine["paired"] == paired
    if engine["paired"]:
        assert engine["pairs"] < N and any("CREATE" in q for q in engine["queries"])
        assert any(" JOIN " in q and " ON " in q for q in engine["queries"])  # on the id


def test_csv_sides_cut_to_their_pairs_keep_their_row_order(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """CSV files (no row numbers of their own: the cut orders by the row's place in the
    stream) sharing 95% of their ids: the same numbers as in memory."""
    rng = np.random.default_rng(16)
    base, head = _table(17, 1.0), _table(18, 1.05)
    ids = np.array(base["request_id"].to_pylist(), dtype=object)[rng.permutation(N)]
    ids[rng.choice(N, 5_000, replace=False)] = [f"new{i}" for i in range(5_000)]
    (tmp_path / "budget.yml").write_text(BUDGET)
    pcsv.write_csv(base, tmp_path / "base.csv")
    pcsv.write_csv(_with_ids(head, ids.tolist()), tmp_path / "head.csv")
    argv = ["--base", str(tmp_path / "base.csv"), "--head", str(tmp_path / "head.csv")]
    _, engine = _same_report(capsys, [*argv, "--budget", str(tmp_path / "budget.yml")])
    assert engine["paired"] and engine["pairs"] == 95_000


@pytest.mark.parametrize("kept", [True, False])
@pytest.mark.parametrize("column", ["queue_ms", "app_ms", "e2e_ms"])
def test_each_change_equals_stats_on_the_same_values(
    files: dict[str, Path], column: str, kept: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The whole Change (tests and flags too) and head's own interval, as `stats` computes
    them on the values in memory; the percentiles are numpy's. With the values around the
    percentiles kept by the scan, and without (each count then its own query)."""
    if not kept:
        monkeypatch.setattr(engine_source, "MAX_BRACKET", 0)
    base, head = (pq.read_table(files[s])[column].to_numpy() for s in ("base", "head"))
    e = Engine()
    b, h = (ooc.Column(e, relation([str(files[s])], s), column, N, s) for s in ("base", "head"))
    got, head_ci = ooc.compare(
        b, h, 95.0, 0.95, family_size=6, also=[50.0, 99.0], min_change=0.05, min_ms=5.0
    )
    want = stats.compare_percentile(
        base, head, 95.0, 0.95, family_size=6, also=[50.0, 99.0], min_change=0.05, min_ms=5.0
    )
    assert got == want
    assert head_ci == stats.interval(head, 95.0, 0.95)
    assert got.base == np.percentile(base, 95) and got.head == np.percentile(head, 95)
    assert got.others[1] == (np.percentile(base, 99), np.percentile(head, 99))


def test_order_statistics_are_numpys_sorted_values(files: dict[str, Path]) -> None:
    x = np.sort(pq.read_table(files["base"])["decode_ms"].to_numpy())
    ranks = [0, 1, 4999, 50_000, 94_999, 95_000, N - 2, N - 1]
    got = Engine().order_statistics(relation([str(files["base"])], "b"), "decode_ms", N, ranks, "b")
    assert got == {r: float(x[r]) for r in ranks}


def test_a_glob_and_csv_read_every_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Several files a side by a glob (Parquet) or a list (CSV): one sample of all their rows,
    its percentiles numpy's over the rows together."""
    (tmp_path / "budget.yml").write_text(BUDGET)
    parts = [_table(seed, 1.0, 2_000) for seed in (3, 4, 5)]
    for i, t in enumerate(parts):
        pq.write_table(t, tmp_path / f"base-{i}.parquet")
    head = _table(6, 1.0, 3_000)
    pcsv.write_csv(head, tmp_path / "head.csv")
    report = _run(
        capsys,
        *("--base", str(tmp_path / "base-*.parquet"), "--head", str(tmp_path / "head.csv")),
        *("--budget", str(tmp_path / "budget.yml"), "--engine", "duckdb"),
    )
    rows = _rows(report)
    whole = pa.concat_tables(parts)
    assert report["requests"] == {"base": 6_000, "head": 3_000}
    for name, col in (("decode", "decode_ms"), ("total", "e2e_ms")):
        assert rows[name]["base_ms"] == round(float(np.percentile(whole[col], 95)), 3)
        assert rows[name]["head_ms"] == round(float(np.percentile(head[col], 95)), 3)


@pytest.mark.parametrize(
    ("change", "says"),
    [
        ("missing", "has no column decode_ms or decode for slice decode"),
        ("nan", "column decode_ms has 1 missing values"),
        ("json", "give native Parquet (.parquet) or CSV (.csv) files"),
        ("nothing", "the engine refused the query"),
        ("text", "the engine refused the query"),
        ("status", "column status (status) is not read on the engine path"),
        ("start_time", "column start_time (start_time) is not read on the engine path"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], change: str, says: str
) -> None:
    (tmp_path / "budget.yml").write_text(BUDGET)
    t = _table(7, 1.0, 1_000)
    pq.write_table(t, tmp_path / "base.parquet")
    head = tmp_path / "head.parquet"
    if change == "missing":
        t = t.drop_columns(["decode_ms"])
    elif change == "nan":
        decode = t["decode_ms"].to_numpy().copy()
        decode[10] = np.nan
        t = t.set_column(t.schema.get_field_index("decode_ms"), "decode_ms", pa.array(decode))
    elif change == "text":
        t = t.set_column(3, "decode_ms", pa.array(["slow"] * 1_000))
    elif change in ("status", "start_time"):
        t = t.append_column(change, pa.array(["ok"] * 1_000))
    pq.write_table(t, head)
    if change == "json":
        head = tmp_path / "head.json"
        head.write_text("{}")
    elif change == "nothing":
        head = tmp_path / "none-*.parquet"
    argv = ["compare", "--base", str(tmp_path / "base.parquet"), "--head", str(head)]
    code = main([*argv, "--budget", str(tmp_path / "budget.yml"), "--engine", "duckdb"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert says in err and len(err.strip().splitlines()) == 1, err


def test_too_few_rows_give_the_percentiles_without_an_interval(tmp_path: Path) -> None:
    sides = {}
    for side, seed in (("base", 8), ("head", 9)):
        pq.write_table(_table(seed, 1.0, 50), tmp_path / f"{side}.parquet")
        sides[side] = pq.read_table(tmp_path / f"{side}.parquet")["e2e_ms"].to_numpy()
    e = Engine()
    b, h = (
        ooc.Column(e, relation([str(tmp_path / f"{s}.parquet")], s), "e2e_ms", 50, s)
        for s in ("base", "head")
    )
    got, head_ci = ooc.compare(
        b, h, 95.0, 0.95, family_size=1, also=[50.0], min_change=0.05, min_ms=5.0
    )
    want = stats.compare_percentile(
        sides["base"], sides["head"], 95.0, 0.95, family_size=1, also=[50.0], min_change=0.05
    )
    assert got == want and got.ci is None and head_ci is None
    assert got.head == np.percentile(sides["head"], 95)


def test_too_few_paired_requests_give_the_percentiles_as_in_memory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """15 requests a side with the same ids: paired, too few for an interval (no pair counts
    to take), the split of the change still Shapley's; all as in memory."""
    argv = _sides(tmp_path, _table(1, 1.0, 15), _table(2, 1.0, 15))
    _, engine = _same_report(capsys, argv)
    assert engine["paired"] and all(r["needed"] for r in engine["slo"])


def test_a_latency_falls_by_no_more_than_all_of_it_on_the_engine_path_too(
    tmp_path: Path,
) -> None:
    """Strong load regimes on 200 requests a side (seed found so that the interval reaches
    past -100% before the floor): the engine's interval is floored at -base as the in-memory
    one is, and equals it."""
    rng = np.random.default_rng(3)

    def side(shift: float) -> np.ndarray[Any, np.dtype[np.float64]]:
        regime = np.repeat(rng.lognormal(0.0, 1.2, 200 // 50 + 1), 50)[:200]
        return np.asarray((rng.lognormal(np.log(100), 0.3, 200) * regime * shift).round(3))

    values = {"base": side(1.0), "head": side(1.3)}
    for name, x in values.items():
        pq.write_table(pa.table({"e2e_ms": x}), tmp_path / f"{name}.parquet")
    e = Engine()
    b, h = (
        ooc.Column(e, relation([str(tmp_path / f"{s}.parquet")], s), "e2e_ms", 200, s)
        for s in ("base", "head")
    )
    args: dict[str, Any] = {"family_size": 1, "also": [], "min_change": 0.05, "min_ms": 5.0}
    got, _ = ooc.compare(b, h, 95.0, 0.95, **args)
    want = stats.compare_percentile(values["base"], values["head"], 95.0, 0.95, **args)
    assert want.ci is not None and want.ci[0] == -np.percentile(values["base"], 95)
    assert got == want


@pytest.mark.parametrize(("cap", "counted"), [(10, False), (30_000, True)])
def test_a_paired_split_past_the_candidates_cap_is_said_not_computed(
    files: dict[str, Path],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    cap: int,
    counted: bool,
) -> None:
    """More paired requests that can be at the percentile than the path holds (far more: seen
    from a sample; a few more: counted): the slices' parts of each side's p95 are still there,
    the split of the change is null and said so."""
    from budgetdiff.measure import engine_attribution

    monkeypatch.setattr(engine_attribution, "MAX_CANDIDATES", cap)
    argv = ["--base", str(files["base"]), "--head", str(files["head"])]
    engine = _run(capsys, *argv, "--budget", str(files["budget"]), "--engine", "duckdb")
    assert engine["paired"] and engine["attribution"] is None
    assert all(r["tail_change_ms"] is None and r["part_ms"] for r in engine["slices"])
    why = {x["what"]: x["why"] for x in engine["not_computed"]}["split of the change"]
    assert f"more than the {cap} this path holds" in why
    assert why.startswith("about") != counted, why
