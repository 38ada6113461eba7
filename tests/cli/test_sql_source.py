"""`compare --sql`: the requests read from a real engine (DuckDB, and ClickHouse through the
embedded chdb), base and head selected by a label or a time window; the percentiles equal
numpy's on the same rows; a bad query or connection is one line and exit 2, with no password
in it."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from budgetdiff.cli import main

BUDGET = """version: 1
percentile: 95
slo: {ttft: 1500, total: 6000}
slices: {queue: 200, prefill: 900, decode: 4500}
first_token_after: prefill
"""
T0 = datetime(2026, 12, 1, 12, 0, tzinfo=timezone.utc)


def _requests(n: int, seed: int, version: str, slow: float, start: datetime) -> pa.Table:
    rng = np.random.default_rng(seed)
    queue = rng.exponential(30, n).round(3)
    prefill = rng.lognormal(np.log(300), 0.4, n).round(3)
    decode = (rng.lognormal(np.log(2000), 0.3, n) * slow).round(3)
    ttft = (queue + prefill).round(3)
    return pa.table(
        {
            "request_id": [f"{version}-{seed}-{i}" for i in range(n)],
            "version": [version] * n,
            "start_time": pa.array(
                [start + timedelta(seconds=float(s)) for s in np.sort(rng.uniform(0, 1700, n))],
                pa.timestamp("us", tz="UTC"),
            ),
            "queue_ms": queue,
            "prefill_ms": prefill,
            "decode_ms": decode,
            "ttft_ms": ttft,
            "e2e_ms": (ttft + decode).round(3),
            "prompt": ["a long prompt the engine keeps"] * n,  # not a column budgetdiff reads
        }
    )


@pytest.fixture
def rows() -> pa.Table:
    return pa.concat_tables(
        [
            _requests(1500, 1, "stable", 1.0, T0),
            _requests(1200, 2, "canary", 1.12, T0 + timedelta(minutes=30)),
        ]
    )


def _compare(tmp_path: Path, capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    budget = tmp_path / "budget.yml"
    budget.write_text(BUDGET, encoding="utf-8")
    code = main(["compare", *args, "--budget", str(budget), "--output", "json"])
    out = capsys.readouterr().out
    assert code in (0, 1), out
    return dict(json.loads(out))


def _assert_numpy(report: dict[str, Any], base: pa.Table, head: pa.Table) -> None:
    """Every percentile shown is numpy's on the side's own rows (to the JSON's 3 decimals)."""
    columns = {"ttft": "ttft_ms", "total": "e2e_ms"}
    for row in report["slo"]:
        for side, table in (("base", base), ("head", head)):
            x = table.column(columns[row["metric"]]).to_numpy()
            assert row[f"{side}_ms"] == pytest.approx(np.percentile(x, 95), abs=6e-4)
            for key, shown in row["percentiles"].items():
                want = np.percentile(x, float(key[1:]))
                assert shown[f"{side}_ms"] == pytest.approx(want, abs=6e-4)
    for row in report["slices"]:
        x = head.column(f"{row['name']}_ms").to_numpy()
        assert row["head_ms"] == pytest.approx(np.percentile(x, 95), abs=6e-4)
    assert report["requests"] == {"base": base.num_rows, "head": head.num_rows}


def _side(rows: pa.Table, version: str) -> pa.Table:
    return rows.filter(pa.compute.equal(rows.column("version"), version))


def test_duckdb_canary_against_stable_by_label(
    rows: pa.Table, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    duckdb = pytest.importorskip("duckdb")
    database = tmp_path / "traces.duckdb"
    with duckdb.connect(str(database)) as con:
        con.register("rows", rows)
        con.execute("CREATE TABLE requests AS SELECT * FROM rows")
    report = _compare(
        tmp_path,
        capsys,
        *("--sql", f"duckdb:{database}", "--sql-table", "requests"),
        *("--base-match", '{version="stable"}', "--head-match", '{version="canary"}'),
    )
    _assert_numpy(report, _side(rows, "stable"), _side(rows, "canary"))
    query = report["inputs"]["head"]["query"]
    assert "WHERE \"version\" = 'canary'" in query and '"prompt"' not in query
    assert report["inputs"]["base"]["schema"] == "SQL"


def test_duckdb_over_parquet_files_by_query(
    rows: pa.Table, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("duckdb")
    pq.write_table(rows, tmp_path / "part-0.parquet")
    report = _compare(
        tmp_path,
        capsys,
        *("--sql", "duckdb:", "--sql-query"),
        f"SELECT * FROM read_parquet('{tmp_path}/*.parquet')",
        *("--base-match", '{version="stable"}', "--head-match", '{version!="stable"}'),
    )
    _assert_numpy(report, _side(rows, "stable"), _side(rows, "canary"))


def test_clickhouse_after_against_before_by_time_window(
    rows: pa.Table, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A real ClickHouse engine (chdb runs the server's SQL in process): a MergeTree table, the
    base the 30 minutes before the deploy, the head the 30 minutes after."""
    session = pytest.importorskip("chdb.session")
    pq.write_table(rows, tmp_path / "rows.parquet")
    folder = tmp_path / "clickhouse"
    s = session.Session(str(folder))
    s.query(
        "CREATE TABLE traces ENGINE = MergeTree ORDER BY tuple() AS "
        f"SELECT * FROM file('{tmp_path}/rows.parquet', Parquet)"
    )
    s.close()
    deploy = T0 + timedelta(minutes=30)
    report = _compare(
        tmp_path,
        capsys,
        *("--sql", f"chdb:{folder}", "--sql-table", "traces", "--sql-time", "start_time"),
        *("--window", "30m", "--base-at", deploy.isoformat()),
        *("--head-at", (deploy + timedelta(minutes=30)).isoformat()),
    )
    _assert_numpy(report, _side(rows, "stable"), _side(rows, "canary"))
    assert "parseDateTime64BestEffort" in report["inputs"]["head"]["query"]


def test_a_bad_query_is_one_line_and_exit_2(
    rows: pa.Table, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("duckdb")
    (tmp_path / "budget.yml").write_text(BUDGET, encoding="utf-8")
    code = main(
        [
            "compare",
            *("--sql", "duckdb:", "--sql-query", "SELECT * FROM no_such_table"),
            *("--base-match", '{version="stable"}', "--head-match", '{version="canary"}'),
            *("--budget", str(tmp_path / "budget.yml")),
        ]
    )
    err = capsys.readouterr().err
    assert code == 2
    [line] = err.strip().splitlines()
    assert "no_such_table" in line and "the query failed" in line


def test_a_bad_connection_never_prints_the_password(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("clickhouse_connect")
    (tmp_path / "budget.yml").write_text(BUDGET, encoding="utf-8")
    monkeypatch.setenv("CLICKHOUSE_PASSWORD", "env-secret-42")
    for url in ("clickhouse://bob:url-secret-7@127.0.0.1:1/traces", "clickhouse://127.0.0.1:1"):
        code = main(
            [
                "compare",
                *("--sql", url, "--sql-table", "requests"),
                *("--base-match", '{version="stable"}', "--head-match", '{version="canary"}'),
                *("--budget", str(tmp_path / "budget.yml")),
            ]
        )
        captured = capsys.readouterr()
        assert code == 2
        [line] = captured.err.strip().splitlines()
        assert "127.0.0.1" in line
        for secret in ("url-secret-7", "env-secret-42"):
            assert secret not in captured.err + captured.out


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--sql", "postgres://x"], "not a connection"),
        (["--sql", "duckdb:", "--sql-table", "a; drop"], "--sql-table"),
        (["--sql", "duckdb:", "--sql-table", "t", "--head-match", "version=canary"], "matchers"),
        (["--sql", "duckdb:", "--sql-table", "t", "--window", "30m"], "--sql-time"),
        (["--sql-table", "t", "--head", "x.csv"], "goes with"),
    ],
)
def test_sql_flags_are_checked(
    args: list[str], says: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "budget.yml").write_text(BUDGET, encoding="utf-8")
    code = main(["check", *args, "--budget", str(tmp_path / "budget.yml")])
    err = capsys.readouterr().err
    assert code == 2
    assert says in err and len(err.strip().splitlines()) == 1


def test_inspect_shows_the_query_it_sends(
    rows: pa.Table, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    duckdb = pytest.importorskip("duckdb")
    database = tmp_path / "traces.duckdb"
    with duckdb.connect(str(database)) as con:
        con.register("rows", rows)
        con.execute("CREATE TABLE requests AS SELECT * FROM rows")
    args = ["--sql", f"duckdb:{database}", "--sql-table", "requests"]
    assert main(["inspect", *args, "--head-match", '{version="canary"}']) == 0
    out = capsys.readouterr().out
    assert "rows: 1,200" in out
    assert "FROM requests AS requests WHERE \"version\" = 'canary'" in out
