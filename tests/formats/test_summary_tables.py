"""A table of statistics is no table of requests, whatever tool wrote it (issue 37).

Rows labelled as percentiles or statistics (evalscope's `benchmark_percentile.json`: 10%,
25%, ..., 99%; pandas' `describe()`: count, mean, std, min, 25%, ...; p1 ... p99), or columns
named so (`metric,mean,p50,p95`; `ttft_p50_ms,ttft_p95_ms`), are refused through the CLI with
exit 2 and one line naming the file, what it is and what to pass instead: never read as one
request per row. The tables are made here from requests drawn with a fixed seed; the numbers
in them are numpy's percentiles of those requests.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.support.helpers import run, write_table

BUDGET = "version: 1\npercentile: 95\nslo: {ttft: 1200, total: 9000}\n"
EVALSCOPE_LABELS = ["10%", "25%", "50%", "66%", "75%", "80%", "90%", "95%", "98%", "99%"]


def _requests(n: int = 300) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(11)
    ttft = rng.lognormal(np.log(0.25), 0.4, n)
    tokens = rng.integers(50, 400, n)
    tpot = rng.lognormal(np.log(0.02), 0.2, n)
    return {"ttft": ttft, "tpot": tpot, "latency": ttft + tpot * (tokens - 1), "tokens": tokens}


def _percentile_rows(labels: list[str]) -> list[dict[str, object]]:
    """evalscope's shape: one row per percentile, seconds, tokens and rates beside them."""
    r = _requests()
    rows = []
    for label in labels:
        q = {"min": 0.0, "max": 100.0}[label] if label in ("min", "max") else float(label[:-1])
        rows.append(
            {
                "Percentiles": label,
                "TTFT (s)": round(float(np.percentile(r["ttft"], q)), 4),
                "ITL (s)": round(float(np.percentile(r["tpot"], q)), 4),
                "TPOT (s)": round(float(np.percentile(r["tpot"], q)), 4),
                "Latency (s)": round(float(np.percentile(r["latency"], q)), 4),
                "Input tokens": 128,
                "Output tokens": int(np.percentile(r["tokens"], q)),
                "Output (tok/s)": round(float(np.percentile(1 / r["tpot"], q)), 2),
                "Total (tok/s)": round(float(np.percentile(1 / r["tpot"], q)) * 1.4, 2),
            }
        )
    return rows


def _refused(path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], *fmt: str) -> str:
    budget = tmp_path / "b.yml"
    budget.write_text(BUDGET)
    code, out, err = run(["check", "--head", str(path), "--budget", str(budget), *fmt], capsys)
    assert code == 2, (out, err)
    assert err.count("\n") == 1, err  # one line
    assert str(path) in err, err
    assert "summary" in err and "one row per request" in err, err
    return err


@pytest.mark.parametrize("shape", ["json", "csv", "parquet", "jsonl"])
@pytest.mark.parametrize("labels", ["evalscope", "min to max"])
def test_percentile_rows_are_a_summary_not_requests(
    shape: str, labels: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    names = EVALSCOPE_LABELS if labels == "evalscope" else ["min", "1%", *EVALSCOPE_LABELS, "max"]
    rows = _percentile_rows(names)
    path = tmp_path / f"benchmark_percentile.{shape}"
    if shape == "json":
        path.write_text(json.dumps(rows, indent=4))
    elif shape == "jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    elif shape == "csv":
        pd.DataFrame(rows).to_csv(path, index=False)
    else:
        pq.write_table(pa.Table.from_pylist(rows), path)
    if shape == "json":  # evalscope's own file: its reader takes it as evalscope's percentiles
        _read_as_evalscope_percentiles(path, rows, tmp_path, capsys)
        return
    err = _refused(path, tmp_path, capsys)
    assert "Percentiles" in err and "95%" in err, err


def _read_as_evalscope_percentiles(
    path: Path, rows: list[dict[str, object]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An aggregate with the table's own percentiles (in the unit each column names), never
    one request per row."""
    budget = tmp_path / "b.yml"
    budget.write_text(BUDGET)
    argv = ["check", "--head", str(path), "--budget", str(budget), "--output", "json"]
    code, out, err = run(argv, capsys)
    assert code in (0, 1), err
    report = json.loads(out)
    assert report["inputs"]["head"]["format"] == "evalscope"
    assert report["requests"]["head"] is None  # the table holds no request count
    p95 = next(r for r in rows if r["Percentiles"] == "95%")
    for metric, column in (("ttft", "TTFT (s)"), ("total", "Latency (s)")):
        row = next(r for r in report["slo"] if r["metric"] == metric)
        assert row["head_ms"] == pytest.approx(float(p95[column]) * 1000, abs=1e-3)  # type: ignore[arg-type]


def test_pandas_describe_is_a_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`df.describe().to_csv()`: count, mean, std, min, 25%, 50%, 75%, max in a nameless column
    (five of the eight labels were known, the three percentiles were read as requests)."""
    r = _requests()
    frame = pd.DataFrame({"ttft_ms": r["ttft"] * 1000, "e2e_ms": r["latency"] * 1000})
    path = tmp_path / "describe.csv"
    frame.describe().to_csv(path)
    _refused(path, tmp_path, capsys)


def test_many_percentile_rows_are_a_summary(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """p1 ... p99: more rows than a few trailing summary lines, every one a statistic."""
    r = _requests()
    qs = np.arange(1, 100)
    path = write_table(
        tmp_path / "percentiles.csv",
        {
            "stat": [f"p{q}" for q in qs],
            "ttft_ms": np.percentile(r["ttft"] * 1000, qs).round(3),
            "e2e_ms": np.percentile(r["latency"] * 1000, qs).round(3),
        },
    )
    _refused(path, tmp_path, capsys)


@pytest.mark.parametrize("fmt", [(), ("--format", "native")])
def test_columns_of_statistics_are_a_summary(
    fmt: tuple[str, ...], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """One row per metric, one column per statistic (a transposed summary)."""
    r = _requests()
    stats = {"mean": np.mean, "p50": np.median}
    stats |= {f"p{q}": (lambda x, q=q: np.percentile(x, q)) for q in (90, 95, 99)}
    stats["max"] = np.max
    rows = {
        "metric": ["ttft_ms", "e2e_ms"],
        **{
            k: [round(float(f(r[m] * 1000)), 3) for m in ("ttft", "latency")]
            for k, f in stats.items()
        },
    }
    path = write_table(tmp_path / "stats.csv", rows)
    err = _refused(path, tmp_path, capsys, *fmt)
    assert "p95" in err and "column" in err, err


def test_statistic_columns_of_latencies_are_a_summary(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """One row per run, a column per statistic of each latency (vLLM's key names flattened)."""
    r = _requests()
    ttft, e2e = r["ttft"] * 1000, r["latency"] * 1000
    columns = {
        "run": ["base"],
        "mean_ttft_ms": [round(float(np.mean(ttft)), 3)],
        "p95_ttft_ms": [round(float(np.percentile(ttft, 95)), 3)],
        "median_e2el_ms": [round(float(np.median(e2e)), 3)],
        "p99_e2el_ms": [round(float(np.percentile(e2e, 99)), 3)],
    }
    path = write_table(tmp_path / "runs.csv", columns)
    err = _refused(path, tmp_path, capsys)
    assert "p95_ttft_ms" in err, err


def _json(argv: list[str], capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    code, out, err = run([*argv, "--output", "json"], capsys)
    assert code in (0, 1), err
    return json.loads(out)  # type: ignore[no-any-return]


def test_requests_with_percent_labelled_rows_after_them_keep_the_requests(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A few summary rows a harness appended (`mean`, `95%`) are left out, the requests read."""
    r = _requests()
    ttft, e2e = (r["ttft"] * 1000).round(3), (r["latency"] * 1000).round(3)
    ids = [f"r{i}" for i in range(len(ttft))] + ["mean", "95%"]
    path = write_table(
        tmp_path / "with_summary.csv",
        {
            "request_id": ids,
            "ttft_ms": [*ttft, ttft.mean().round(3), np.percentile(ttft, 95).round(3)],
            "e2e_ms": [*e2e, e2e.mean().round(3), np.percentile(e2e, 95).round(3)],
        },
    )
    budget = tmp_path / "b.yml"
    budget.write_text(BUDGET)
    report = _json(["check", "--head", str(path), "--budget", str(budget)], capsys)
    assert report["requests"] == {"base": None, "head": len(ttft)}  # the summary left out
    slo = {r["metric"]: r["head_ms"] for r in report["slo"]}  # type: ignore[attr-defined]
    assert slo["ttft"] == pytest.approx(np.percentile(ttft, 95), abs=2e-3)
    assert slo["total"] == pytest.approx(np.percentile(e2e, 95), abs=2e-3)
    rows = [f for f in report["findings"] if f["kind"] == "impossible"]  # type: ignore[attr-defined]
    assert any("2 row(s)" in f["message"] for f in rows), rows


def test_a_class_column_named_after_a_statistic_is_no_summary(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every row's class is `max` or `min` (two tiers of traffic): labels that repeat are
    classes, not a summary's statistics; each class is read as its requests."""
    r = _requests()
    ttft, e2e = (r["ttft"] * 1000).round(3), (r["latency"] * 1000).round(3)
    tiers = np.where(np.arange(len(ttft)) % 3 == 0, "max", "min")
    path = write_table(
        tmp_path / "tiers.csv", {"traffic_class": tiers, "ttft_ms": ttft, "e2e_ms": e2e}
    )
    budget = tmp_path / "b.yml"
    budget.write_text(BUDGET)
    report = _json(["check", "--head", str(path), "--budget", str(budget)], capsys)
    scenarios = {s["name"]: s for s in report["scenarios"]}  # type: ignore[attr-defined]
    for tier in ("max", "min"):
        mine = tiers == tier
        assert scenarios[tier]["requests"]["head"] == int(mine.sum())
        slo = {row["metric"]: row["head_ms"] for row in scenarios[tier]["slo"]}
        assert slo["ttft"] == pytest.approx(np.percentile(ttft[mine], 95), abs=2e-3)


def test_a_large_columns_labels_are_the_ones_is_statistic_reads_cell_by_cell() -> None:
    """A column of 20,000 cells or more is matched by one RE2 pass before `is_statistic`
    reads the cells it lets by: the same cells as reading every one (case, Unicode spaces and
    digits, labels inside longer text)."""
    from budgetdiff.formats.native.checks import _labelled
    from budgetdiff.formats.native.names import is_statistic

    tricky = [
        "mean",
        " MEAN ",
        "\u00a0p95\u2003",
        "P99.9",
        "95 %",
        "95\u00a0%",
        "99.9th percentile",
        "\u0669\u0665%",
        "p\u0669\u0665",
        "Percentile 90",
        "\tmax\n",
        "ma x",
        "mean2",
        "req-95",
        "p9999",
        "95",
        "",
        "all",
        "Overall ",
        "x mean",
        "std_dev",
        "\x1cmin\x85",
        "K",
        "nd",
    ]
    rng = np.random.default_rng(37)
    cells = [f"req-{i}" for i in range(25_000)]
    for i in rng.choice(len(cells), 2_000, replace=False):
        cells[i] = tricky[i % len(tricky)]
    arr = pa.array(cells)
    expected = np.array([is_statistic(c) for c in cells])
    assert expected.sum() > 500  # the labels are there to find
    assert np.array_equal(_labelled(arr), expected)
    chunked = pa.chunked_array([arr.slice(0, 9_999), arr.slice(9_999)])  # as Parquet reads it
    assert np.array_equal(_labelled(chunked), expected)


def test_dashed_or_numeric_ids_have_no_labels_and_one_label_among_them_is_found() -> None:
    """Ids that all hold a '-' or are bare numbers (UUIDs, req-17, 1234) skip the pattern; a
    single label among them (or a cell neither: `id_7`) sends the column through it again."""
    from budgetdiff.formats.native.checks import _labelled
    from budgetdiff.formats.native.names import is_statistic

    cells = [f"{i:08x}-4b1d-95-mean" if i % 3 else str(i) for i in range(30_000)]
    cells[17] = "\u0669\u0665"  # a bare number in other digits
    cells[18] = "p95-"
    assert not _labelled(pa.array(cells)).any()
    assert not any(is_statistic(c) for c in cells)
    for odd in (" p95 ", "id_7"):
        mixed = [*cells[:100], odd, *cells[100:]]
        got = _labelled(pa.chunked_array([pa.array(mixed[:5_000]), pa.array(mixed[5_000:])]))
        assert np.array_equal(got, np.array([is_statistic(c) for c in mixed]))
        assert got[100] == is_statistic(odd)
    assert is_statistic(" p95 ") and not is_statistic("id_7")
