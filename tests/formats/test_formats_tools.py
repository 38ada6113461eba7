"""The tools teams pick besides the serving benchmarks (issue 37): genai-bench, evalscope perf,
Locust, and the GenAI spans of an instrumented OpenAI client. Every file in tests/data/{locust,
otel-genai,genai-bench,evalscope} is what that tool's released version wrote against
tools/mock_llm_server.py (tests/data/SOURCES.md gives the version and the command); each reader
is held to the tool's own summary of the same run, computed here from the file without
budgetdiff, or refuses the file naming the one to pass."""

from __future__ import annotations

import csv
import json
import sqlite3
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from budgetdiff.errors import InputError
from budgetdiff.formats import (
    ReadOptions,
    detect,
    evalscope,
    genai_bench,
    locust,
    otel_console,
    otlp,
)
from budgetdiff.table import Run
from tests.support.helpers import run
from tests.support.paths import SAMPLES, sample_files

OPTS = ReadOptions()
LOCUST = SAMPLES / "locust"
OTEL = SAMPLES / "otel-genai"
SIDES = ("base", "head", "fail")


def _runs(path: Path, module: object) -> list[Run]:
    data = path.read_bytes()
    assert detect.detect(data, path.name, OPTS).module is module, path
    return detect.read(data, path.name, "auto", OPTS)


# ---------------------------------------------------------------- Locust 2.47.0
def _csv_rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


PERCENT_COLUMNS = ("50%", "66%", "75%", "80%", "90%", "95%", "98%", "99%", "99.9%", "99.99%")


@pytest.mark.parametrize("side", SIDES)
def test_locust_stats_csv_is_one_aggregate_per_endpoint_with_its_own_percentiles(
    side: str,
) -> None:
    path = LOCUST / side / "locust_stats.csv"
    rows = _csv_rows(path)
    endpoints = [r for r in rows if r["Name"] != "Aggregated"]
    runs = _runs(path, locust)
    assert [r.scenario for r in runs] == [f"{r['Type']} {r['Name']}" for r in endpoints]
    for got, row in zip(runs, endpoints, strict=True):
        assert got.n == 0 and not got.per_request
        assert got.summary == {"total": {float(c[:-1]): float(row[c]) for c in PERCENT_COLUMNS}}
        assert got.summary_count == int(row["Request Count"])
        assert got.meta["failures"] == int(row["Failure Count"])
        note = str(got.meta["note"])
        assert "what the locustfile's task timed" in note
        assert ("failed requests' times" in note) == (int(row["Failure Count"]) > 0)


def _locust_rule(times: dict[str, int], requests: int, p: float) -> float:
    """Locust's `calculate_response_time_percentile`, as numpy: the sorted (rounded) times at
    rank floor(requests * p)."""
    values = np.repeat([float(k) for k in times], list(times.values()))
    ordered = np.sort(values)
    return float(ordered[min(int(requests * p / 100.0), len(ordered) - 1)])


@pytest.mark.parametrize("side", SIDES)
def test_locust_json_percentiles_are_locusts_own_from_its_histogram(side: str) -> None:
    path = LOCUST / side / "locust.json"
    entries = json.loads(path.read_text())
    runs = _runs(path, locust)
    assert len(runs) == len(entries) == 2
    for got, entry in zip(runs, entries, strict=True):
        assert got.scenario == f"{entry['method']} {entry['name']}"
        want = {
            p: _locust_rule(entry["response_times"], entry["num_requests"], p)
            for p in locust.JSON_PERCENTILES
        }
        assert got.summary == {"total": want}
        assert got.summary_count == entry["num_requests"]
        assert got.meta["failures"] == entry["num_failures"]
        assert got.duration_s == pytest.approx(
            entry["last_request_timestamp"] - entry["start_time"]
        )


def test_locust_json_and_csv_of_one_run_agree_where_they_count_the_same_requests() -> None:
    """The JSON is written after the last requests in flight ended, the CSV before: the
    percentiles of the two agree to Locust's rounding where the counts do."""
    for side in SIDES:
        csv_runs = _runs(LOCUST / side / "locust_stats.csv", locust)
        json_runs = {r.scenario: r for r in _runs(LOCUST / side / "locust.json", locust)}
        assert set(json_runs) == {r.scenario for r in csv_runs}
        for a in csv_runs:
            b = json_runs[a.scenario]
            assert b.summary_count is not None and a.summary_count is not None
            assert 0 <= b.summary_count - a.summary_count <= 8  # 4 users, 2 endpoints
            assert a.summary["total"][50.0] == pytest.approx(b.summary["total"][50.0], rel=0.05)


@pytest.mark.parametrize("side", SIDES)
def test_locust_history_reads_its_last_row_as_the_aggregated_row(side: str) -> None:
    history = _csv_rows(LOCUST / side / "locust_stats_history.csv")
    last = history[-1]
    (got,) = _runs(LOCUST / side / "locust_stats_history.csv", locust)
    assert got.summary == {"total": {float(c[:-1]): float(last[c]) for c in PERCENT_COLUMNS}}
    assert got.summary_count == int(last["Total Request Count"])
    assert got.meta["failures"] == int(last["Total Failure Count"])
    assert "last row of the stats history" in str(got.meta["note"])
    aggregated = next(r for r in _csv_rows(LOCUST / side / "locust_stats.csv") if not r["Type"])
    if aggregated["Request Count"] == last["Total Request Count"]:  # the same moment
        assert got.summary["total"] == {
            float(c[:-1]): float(aggregated[c]) for c in PERCENT_COLUMNS
        }


def test_locust_full_history_is_refused_naming_the_stats_file(tmp_path: Path) -> None:
    """`--csv-full-history` adds a row per endpoint whose percentiles are of the last ten
    seconds only (Locust's `use_current`): not the run's."""
    path = LOCUST / "full-history" / "locust_stats_history.csv"
    with pytest.raises(InputError, match=r"last ten seconds only; pass the run's <prefix>_stats"):
        _runs(path, locust)


def test_locust_compare_reads_each_endpoint_as_a_scenario(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    budget = tmp_path / "b.yml"
    budget.write_text("version: 1\npercentile: 95\nslo: {total: 2000}\n")
    base, head = LOCUST / "base" / "locust_stats.csv", LOCUST / "head" / "locust_stats.csv"
    argv = ["compare", "--base", str(base), "--head", str(head), "--budget", str(budget)]
    code, out, err = run([*argv, "--output", "json"], capsys)
    assert code in (0, 1), err
    report = json.loads(out)
    want = {f"{r['Type']} {r['Name']}": r for r in _csv_rows(head) if r["Type"]}
    scenarios = report["scenarios"]
    seen = 0
    for scenario in scenarios:
        name = scenario.get("name")
        if name not in want:
            continue
        total = next(r for r in scenario["slo"] if r["metric"] == "total")
        assert total["head_ms"] == float(want[name]["95%"])
        seen += 1
    assert seen == len(want)


# ---------------------------------------------------------------- OpenTelemetry GenAI spans
def _otlp_spans(path: Path) -> list[dict[str, Any]]:
    """Every span of an OTLP/JSON Lines file, read without budgetdiff."""
    out = []
    for line in path.read_text().splitlines():
        for resource in json.loads(line)["resourceSpans"]:
            for scope in resource["scopeSpans"]:
                out.extend(scope["spans"])
    return out


def _console_spans(path: Path) -> list[dict[str, Any]]:
    decoder, text, pos, out = json.JSONDecoder(), path.read_text(), 0, []
    while pos < len(text.rstrip()):
        span, end = decoder.raw_decode(text, pos)
        out.append(span)
        pos = end + 1
    return out


def _iso(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


INSTRUMENTORS = ("openai-v2", "openllmetry")
CHUNK = "gen_ai.content.completion.chunk"


@pytest.mark.parametrize("side", SIDES)
@pytest.mark.parametrize("instrumentor", INSTRUMENTORS)
def test_otlp_client_spans_are_requests_with_the_span_as_end_to_end(
    instrumentor: str, side: str
) -> None:
    path = OTEL / instrumentor / side / "spans.otlp.jsonl"
    spans = _otlp_spans(path)
    (got,) = _runs(path, otlp)
    assert got.n == len(spans) and got.meta["side"] == "client"
    by_trace = {s["traceId"]: s for s in spans}
    assert got.request_id is not None and set(got.request_id) == set(by_trace)
    order = [by_trace[t] for t in got.request_id]
    ends = np.array(
        [(int(s["endTimeUnixNano"]) - int(s["startTimeUnixNano"])) / 1e6 for s in order]
    )
    assert got.total is not None and np.array_equal(got.total, ends)
    failed = np.array([s["status"].get("code") == 2 for s in order])
    assert np.array_equal(~got.succeeded, failed)
    assert (side == "fail") == bool(failed.any())
    tokens = [
        next(
            (
                a["value"]["intValue"]
                for a in s["attributes"]
                if a["key"] == "gen_ai.usage.output_tokens"
            ),
            None,
        )
        for s in order
    ]
    assert got.output_tokens is not None
    for value, want in zip(got.output_tokens, tokens, strict=True):
        assert (np.isnan(value) and want is None) or value == int(want)
    firsts = [
        min(
            (int(e["timeUnixNano"]) for e in s.get("events", []) if e["name"] == CHUNK),
            default=None,
        )
        for s in order
    ]
    if instrumentor == "openai-v2":  # records no first token: TTFT unmeasured, not invented
        assert (
            all(f is None for f in firsts) and got.ttft is None and "first_token" not in got.slices
        )
        return
    want = np.array(
        [
            np.nan if f is None else (f - int(s["startTimeUnixNano"])) / 1e6
            for f, s in zip(firsts, order, strict=True)
        ]
    )
    assert got.ttft is not None
    np.testing.assert_array_equal(got.ttft, want)
    np.testing.assert_allclose(got.slices["decode"], got.total - want)


@pytest.mark.parametrize("side", SIDES)
@pytest.mark.parametrize("instrumentor", INSTRUMENTORS)
def test_console_spans_of_the_same_run_read_as_their_otlp_twin(
    instrumentor: str, side: str
) -> None:
    """The console exporter writes the same spans to the microsecond: the same requests, the
    same end to end within 1 us, the same failures and TTFT."""
    folder = OTEL / instrumentor / side
    (twin,) = _runs(folder / "spans.otlp.jsonl", otlp)
    (got,) = _runs(folder / "console_spans.txt", otel_console)
    assert got.n == twin.n and got.meta["side"] == "client"
    assert got.request_id is not None and twin.request_id is not None
    ids = [str(i).removeprefix("0x") for i in got.request_id]
    at = {t: i for i, t in enumerate(twin.request_id)}
    order = np.array([at[i] for i in ids])
    assert got.total is not None and twin.total is not None
    np.testing.assert_allclose(got.total, twin.total[order], atol=2e-3)
    np.testing.assert_array_equal(got.succeeded, twin.succeeded[order])
    if twin.ttft is None:
        assert got.ttft is None and got.slices == {}
    else:
        assert got.ttft is not None
        np.testing.assert_allclose(got.ttft, twin.ttft[order], atol=2e-3)
    spans = _console_spans(folder / "console_spans.txt")
    durations = [
        (_iso(s["end_time"]) - _iso(s["start_time"])).total_seconds() * 1000 for s in spans
    ]
    np.testing.assert_allclose(np.sort(got.total), np.sort(durations), atol=1e-9)


def test_client_span_files_are_claimed_by_their_readers_only() -> None:
    for path in sample_files():
        if OTEL not in path.parents:
            continue
        module = otlp if path.name == "spans.otlp.jsonl" else otel_console
        assert detect.detect(path.read_bytes(), path.name, OPTS).module is module, path


# ---------------------------------------------------------------- genai-bench 0.0.5
GENAI_BENCH = SAMPLES / "genai-bench"
GB_LATENCIES = {"ttft": "ttft", "total": "e2e_latency", "decode": "output_latency"}


def _gb_run_file(side: str) -> Path:
    (path,) = (GENAI_BENCH / side).glob("D*_num_concurrency_*_time_*s.json")
    return path


@pytest.mark.parametrize("side", ("base", "head", "fail"))
def test_genai_bench_requests_are_read_in_their_unit_and_give_its_own_percentiles(
    side: str,
) -> None:
    """numpy's percentiles of the requests budgetdiff read are genai-bench's own (numpy's too),
    in the unit `_time_unit` names (head was run with --metrics-time-unit ms)."""
    path = _gb_run_file(side)
    doc = json.loads(path.read_text())
    scale = {"s": 1000.0, "ms": 1.0}[doc["_time_unit"]]
    rows = doc["individual_request_metrics"]
    (got,) = _runs(path, genai_bench)
    assert got.n == len(rows) and got.per_request
    failed = [r["error_code"] is not None for r in rows]
    assert list(~got.succeeded) == failed
    assert sum(failed) == sum(doc["aggregated_metrics"]["error_codes_frequency"].values())
    assert (side == "fail") == any(failed)
    stats = doc["aggregated_metrics"]["stats"]
    ok = got.succeeded
    columns = {"ttft": got.ttft, "total": got.total, "decode": got.slices["decode"]}
    for name, metric in GB_LATENCIES.items():
        values = columns[name]
        assert values is not None
        for q in (25, 50, 75, 90, 95, 99):
            want = stats[metric][f"p{q}"] * scale
            assert np.percentile(values[ok], q) == pytest.approx(want, rel=1e-9)
    np.testing.assert_array_equal(got.slices["first_token"][ok], columns["ttft"][ok])
    assert got.meta["concurrency"] == doc["aggregated_metrics"]["num_concurrency"]


def test_genai_bench_with_warm_up_and_cool_down_reads_its_own_statistics() -> None:
    """--warmup-ratio / --cooldown-ratio: the statistics leave out the first and last requests,
    the list keeps them; the file does not say which, so its own percentiles are read."""
    path = _gb_run_file("warmup")
    doc = json.loads(path.read_text())
    stats = doc["aggregated_metrics"]["stats"]
    counted = round(stats["e2e_latency"]["sum"] / stats["e2e_latency"]["mean"])
    assert counted < len(doc["individual_request_metrics"])
    (got,) = _runs(path, genai_bench)
    assert got.n == 0 and got.summary_count == counted
    for name, metric in (("ttft", "ttft"), ("total", "e2e_latency"), ("decode", "output_latency")):
        assert got.summary[name] == {
            float(q): stats[metric][f"p{q}"] * 1000.0 for q in (25, 50, 75, 90, 95, 99)
        }
    assert "--warmup-ratio" in str(got.meta["note"])


def test_genai_bench_experiment_metadata_is_refused_naming_the_run_file() -> None:
    path = GENAI_BENCH / "base" / "experiment_metadata.json"
    with pytest.raises(InputError, match=r"experiment_metadata\.json.*pass one of its run files"):
        _runs(path, genai_bench)


def test_genai_bench_compare_gives_its_own_p95(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    budget = tmp_path / "b.yml"
    budget.write_text("version: 1\npercentile: 95\nslo: {ttft: 1000, total: 2000}\n")
    base, head = _gb_run_file("base"), _gb_run_file("head")
    argv = ["compare", "--base", str(base), "--head", str(head), "--budget", str(budget)]
    code, out, err = run([*argv, "--output", "json"], capsys)
    assert code in (0, 1), err
    report = json.loads(out)
    total = next(r for r in report["slo"] if r["metric"] == "total")
    for side, path in (("base", base), ("head", head)):
        doc = json.loads(path.read_text())
        want = doc["aggregated_metrics"]["stats"]["e2e_latency"]["p95"]
        want *= {"s": 1000.0, "ms": 1.0}[doc["_time_unit"]]
        assert total[f"{side}_ms"] == pytest.approx(want, rel=5e-3)  # the report rounds
    assert report["inputs"]["head"]["format"] == "genai-bench"


# ---------------------------------------------------------------- evalscope perf 1.14.1
EVALSCOPE = SAMPLES / "evalscope"


def _nearest_rank(values: np.ndarray[Any, Any], p: float) -> float:
    """evalscope 1.14's `calculate_percentiles`: the value at rank ceil(n p / 100), 4 decimals
    (numpy's `inverted_cdf`)."""
    return round(float(np.percentile(values, p, method="inverted_cdf")), 4)


@pytest.mark.parametrize("side", ("base", "head", "fail"))
def test_evalscope_database_gives_its_own_percentile_table(side: str) -> None:
    folder = EVALSCOPE / side
    table = json.loads((folder / "benchmark_percentile.json").read_text())
    summary = json.loads((folder / "benchmark_summary.json").read_text())
    (got,) = _runs(folder / "benchmark_data.db", evalscope)
    assert got.n == summary["Total Requests"] and got.per_request
    assert int(got.succeeded.sum()) == summary["Success Requests"]
    assert int((~got.succeeded).sum()) == summary["Failed Requests"]
    assert (side == "fail") == bool(summary["Failed Requests"])
    ok = got.succeeded
    assert got.ttft is not None and got.total is not None and got.itl is not None
    assert got.output_tokens is not None
    tpot = got.slices["decode"][ok] / (got.output_tokens[ok] - 1)
    mine = {
        "TTFT (ms)": got.ttft[ok],
        "Latency (s)": got.total[ok] / 1000.0,
        "ITL (ms)": got.itl.rows(ok).values,
        "TPOT (ms)": tpot,
    }
    for row in table:
        label = row["Percentiles"]
        if not label.endswith("%"):
            continue
        for column, values in mine.items():
            # exactly evalscope's numbers: the same requests, evalscope's definition
            assert _nearest_rank(values, float(label[:-1])) == row[column], (label, column)


def test_evalscope_interpolated_percentiles_and_its_nearest_rank_differ_little() -> None:
    """budgetdiff interpolates, evalscope takes the nearest rank: on 150 requests the end to end
    agrees within 0.5% at p50 to p95; TTFT's tail is sparser (docs/formats-client.md)."""
    for side in ("base", "head"):
        folder = EVALSCOPE / side
        rows = {
            r["Percentiles"]: r
            for r in json.loads((folder / "benchmark_percentile.json").read_text())
        }
        (got,) = _runs(folder / "benchmark_data.db", evalscope)
        assert got.total is not None
        for q in (50, 90, 95):
            want = rows[f"{q}%"]["Latency (s)"] * 1000
            assert np.percentile(got.total[got.succeeded], q) == pytest.approx(want, rel=5e-3)


@pytest.mark.parametrize("side", ("base", "head", "fail"))
def test_evalscope_percentile_table_is_an_aggregate_not_eleven_requests(side: str) -> None:
    path = EVALSCOPE / side / "benchmark_percentile.json"
    table = json.loads(path.read_text())
    (got,) = _runs(path, evalscope)
    assert got.n == 0 and not got.per_request and got.summary_count is None
    rows = [r for r in table if r["Percentiles"].endswith("%")]
    for name, column, scale in (
        ("ttft", "TTFT (ms)", 1.0),
        ("first_token", "TTFT (ms)", 1.0),
        ("total", "Latency (s)", 1000.0),
        ("itl", "ITL (ms)", 1.0),
        ("tpot", "TPOT (ms)", 1.0),
    ):
        assert got.summary[name] == {float(r["Percentiles"][:-1]): r[column] * scale for r in rows}


@pytest.mark.parametrize("name", ("benchmark_args.json", "benchmark_summary.json"))
def test_evalscope_args_and_summary_are_refused_naming_what_to_pass(name: str) -> None:
    path = EVALSCOPE / "base" / name
    with pytest.raises(InputError, match=rf"{name}: .*pass benchmark_data\.db"):
        _runs(path, evalscope)


def test_evalscope_database_opened_as_the_hostile_file_it_may_be(tmp_path: Path) -> None:
    """A view for the table, a cut file, a text where a latency belongs: one clear error each,
    the file itself never written (it is read from a private copy, read-only)."""
    real = (EVALSCOPE / "base" / "benchmark_data.db").read_bytes()
    cut = tmp_path / "cut.db"
    cut.write_bytes(real[: len(real) // 3])
    with pytest.raises(InputError, match=r"not a readable SQLite database|has no rows|missing"):
        detect.read(cut.read_bytes(), "cut.db", "evalscope", OPTS)
    texts = tmp_path / "texts.db"
    texts.write_bytes(real)
    with sqlite3.connect(texts) as con:
        con.execute("UPDATE result SET latency = 'slow' WHERE rowid = 3")
    with pytest.raises(InputError, match=r"row 3 column 'latency' must be a number"):
        detect.read(texts.read_bytes(), "texts.db", "auto", OPTS)
    view = tmp_path / "view.db"
    with sqlite3.connect(view) as con:
        con.execute(
            "CREATE TABLE data(inter_token_latencies TEXT, first_chunk_latency REAL, "
            "latency REAL, success INTEGER)"
        )
        con.execute("CREATE VIEW result AS SELECT * FROM data")
    with pytest.raises(InputError, match="table 'result' is missing"):
        detect.read(view.read_bytes(), "view.db", "evalscope", OPTS)


def _evalscope_compare(
    base: Path, head: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> dict[str, Any]:
    budget = tmp_path / "b.yml"
    budget.write_text("version: 1\npercentile: 95\nslo: {ttft: 5000, total: 60000}\n")
    argv = ["compare", "--base", str(base), "--head", str(head), "--budget", str(budget)]
    code, out, err = run([*argv, "--output", "json"], capsys)
    assert code in (0, 1), err
    report: dict[str, Any] = json.loads(out)
    return report


def test_evalscope_own_percentiles_from_the_database_folder_are_shown_beside(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """budgetdiff interpolates and evalscope takes the nearest rank: where evalscope's own table
    is in the database's folder, each row carries evalscope's number beside budgetdiff's, the
    method of each named, and the notes give both."""
    report = _evalscope_compare(
        EVALSCOPE / "base" / "benchmark_data.db",
        EVALSCOPE / "head" / "benchmark_data.db",
        tmp_path,
        capsys,
    )
    columns = {"ttft": ("TTFT (ms)", 1.0), "total": ("Latency (s)", 1000.0)}
    for side in ("base", "head"):
        rows = {
            r["Percentiles"]: r
            for r in json.loads((EVALSCOPE / side / "benchmark_percentile.json").read_text())
        }
        given = report["inputs"][side]
        assert given["percentile_method"] == "linear interpolation"
        assert given["tool_percentiles"]["by"] == "evalscope"
        assert given["tool_percentiles"]["method"] == "nearest rank"
        for metric, (column, scale) in columns.items():
            row = next(r for r in report["slo"] if r["metric"] == metric)
            want = rows["95%"][column] * scale
            assert row["tool_ms"][side] == pytest.approx(want, abs=5e-4)  # the report: 3 decimals
    assert any("evalscope's own p95 (nearest rank)" in n for n in report["notes"])


def test_evalscope_table_of_other_requests_beside_the_database_is_not_shown(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A percentile table that is not of the database's requests (another run's, copied in) is
    named in a note and its numbers are not shown; a database alone shows none."""
    wrong, alone = tmp_path / "wrong", tmp_path / "alone"
    for folder in (wrong, alone):
        folder.mkdir()
        (folder / "benchmark_data.db").write_bytes(
            (EVALSCOPE / "base" / "benchmark_data.db").read_bytes()
        )
    (wrong / "benchmark_percentile.json").write_bytes(
        (EVALSCOPE / "head" / "benchmark_percentile.json").read_bytes()
    )
    report = _evalscope_compare(
        wrong / "benchmark_data.db", alone / "benchmark_data.db", tmp_path, capsys
    )
    assert report["inputs"]["base"]["tool_percentiles"] is None
    assert report["inputs"]["head"]["tool_percentiles"] is None
    assert all(r["tool_ms"] is None for r in report["slo"])
    assert any("is not of its requests" in n for n in report["notes"])
