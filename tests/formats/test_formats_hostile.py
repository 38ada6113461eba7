"""Hostile and malformed inputs: every reader answers with one InputError naming the format, the
file and the key or row; never a traceback, never a silently wrong value."""

from __future__ import annotations

import io
import json
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from budgetdiff.errors import InputError
from budgetdiff.formats import ReadOptions, genai_perf, inference_perf, otlp, prometheus
from budgetdiff.formats.combine import combine
from budgetdiff.formats.native import build as native
from budgetdiff.formats.native import load as native_load
from budgetdiff.table import Run

OPTS = ReadOptions()
DEEP = 20_000  # deeper than Python's recursion limit and than pyarrow's JSON parser survives
DIGITS = "9" * 5000  # longer than Python's int digit limit (4300)
HUGE = "9" * 400  # an int too large for a float


def _native(data: str | bytes, source: str = "t.csv") -> Run:
    raw = data.encode() if isinstance(data, str) else data
    (run,) = native.read(raw, source, OPTS)
    return run


def _parquet(table: pa.Table) -> bytes:
    buf = io.BytesIO()
    pq.write_table(table, buf)
    return buf.getvalue()


def _native_error(data: str | bytes, source: str, message: str) -> None:
    with pytest.raises(InputError, match=rf"^native: {source}: .*{message}"):
        _native(data, source)


# ------------------------------------------------------------------ native: columns


def test_json_array_column_first_seen_after_1000_rows_counts() -> None:
    rows: list[dict[str, Any]] = [{"total_ms": 100} for _ in range(1500)]
    rows.append({"total_ms": 1, "error": "timeout"})
    run = _native(json.dumps(rows), "t.json")
    assert run.ok is not None
    assert run.ok.sum() == 1500 and not run.ok[-1]


@pytest.mark.parametrize(
    ("data", "source"),
    [
        ("total_ms,total_ms\n1,2\n", "t.csv"),
        ("total_ms , total_ms\n1,2\n", "t.csv"),  # the same name once stripped
        ('[{" total_ms": 1, "total_ms": 2}]', "t.json"),
    ],
)
def test_duplicate_column_names(data: str, source: str) -> None:
    _native_error(data, source, "column 'total_ms' appears twice")


def test_duplicate_column_names_in_parquet() -> None:
    table = pa.Table.from_arrays([pa.array([1]), pa.array([2])], names=["total_ms", "total_ms"])
    _native_error(_parquet(table), "t.parquet", "column 'total_ms' appears twice")


def test_header_names_are_stripped() -> None:
    run = _native(" total_ms , decode_ms\n1,2\n3,4\n")
    np.testing.assert_allclose(run.total, [1, 3])  # type: ignore[arg-type]
    np.testing.assert_allclose(run.slices["decode"], [2, 4])
    run = _native('[{" total_ms ": 5}]', "t.json")
    np.testing.assert_allclose(run.total, [5])  # type: ignore[arg-type]


def test_unterminated_quote_is_not_reported_as_empty() -> None:
    _native_error('"total_ms,note\n1,abc\n', "t.csv", r"double quote .* never closed")


# ------------------------------------------------------------------ native: values


@pytest.mark.parametrize(
    ("data", "source", "message"),
    [
        ('{"total_ms":1,"itl_ms":[1,NaN]}\n{"total_ms":2,"itl_ms":[1]}\n', "t.jsonl", "row 1"),
        ('[{"total_ms":1,"itl_ms":[2]},{"total_ms":1,"itl_ms":[1,Infinity]}]', "t.json", "row 2"),
        ('total_ms,itl_ms\n1,"[1, inf]"\n', "t.csv", "row 1"),
        ('total_ms,itl_ms\n1,"[1, 2]"\n1,"[1, -2]"\n', "t.csv", "row 2"),
    ],
)
def test_itl_gap_not_finite_or_negative(data: str, source: str, message: str) -> None:
    _native_error(data, source, rf"{message}, column 'itl_ms': inter-token gap")


def test_itl_of_one_number_per_request_not_finite_is_the_row_at_fault() -> None:
    """One mean per request is read as the TPOT (a per-request latency), and checked as one."""
    _native_error("total_ms,itl_ms\n1,3\n1,inf\n", "t.csv", "row 2, column 'itl_ms': infinite")


def test_itl_nan_allowed_in_a_failed_request() -> None:
    run = _native('total_ms,itl_ms,error\n1,"[1, nan]",boom\n2,"[3]",\n')
    assert run.itl is not None and run.ok is not None
    assert list(run.ok) == [False, True]
    np.testing.assert_allclose(run.itl.values[2:], [3])


@pytest.mark.parametrize(
    ("data", "source", "message"),
    [
        ('[{"total_ms":100},{"total_ms":[1,2]}]', "t.json", "row 2, column 'total_ms': a list"),
        ('{"total_ms":100}\n{"total_ms":[1,2]}\n', "t.jsonl", "row 2, column 'total_ms': a list"),
        ('[{"total_ms":[1]},{"total_ms":2}]', "t.json", "row 2, column 'total_ms': 2 where"),
        ('[{"total_ms":1},{"total_ms":{"a":1}}]', "t.json", "row 2, column 'total_ms': an obj"),
        (
            '[{"total_ms":100,"itl_ms":[1,"x"]}]',
            "t.json",
            r"row 1, column 'itl_ms': item 1 \('x'\)",
        ),
        (f'[{{"total_ms":1,"itl_ms":[1,{HUGE}]}}]', "t.json", "row 1, column 'itl_ms': item 1"),
        ('{"total_ms":[1,2]}\n', "t.jsonl", "column 'total_ms' holds list"),
        (f'[{{"total_ms":{HUGE}}}]', "t.json", "row 1, column 'total_ms': infinite"),
    ],
)
def test_json_values_pyarrow_cannot_type(data: str, source: str, message: str) -> None:
    _native_error(data, source, message)


def test_json_int_beyond_int64_is_read_as_a_float() -> None:
    run = _native('[{"total_ms":99999999999999999999999}]', "t.json")
    np.testing.assert_allclose(run.total, [1e23])  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("data", "source", "message"),
    [
        ("[" * DEEP + "]" * DEEP, "t.json", "nested too deeply"),
        ('{"total_ms":1,"x":' + "[" * DEEP + "]" * DEEP + "}\n", "t.jsonl", "line 1: nested"),
        (f'[{{"total_ms":{DIGITS}}}]', "t.json", "more digits"),
        (
            f'{{"total_ms":1,"x":"a"}}\n{{"total_ms":1,"x":[{DIGITS}]}}\n',
            "t.jsonl",
            "line 2: .*digits",
        ),
    ],
)
def test_json_too_deep_or_too_many_digits(data: str, source: str, message: str) -> None:
    # the JSON Lines case crashed the process inside pyarrow's parser before
    _native_error(data, source, message)


def test_integers_above_2_to_53_and_epoch_nanosecond_start_times() -> None:
    t0 = 1_700_000_000_123_456_789
    table = pa.table({"total_ms": pa.array([2**60 + 1, 3]), "start_time": pa.array([t0 + 250, t0])})
    run = _native(_parquet(table), "t.parquet")
    np.testing.assert_allclose(run.total, [2.0**60, 3])  # type: ignore[arg-type]
    assert run.start_time is not None
    # exact: subtracted before the float cast; epoch nanoseconds are read as such, and said
    assert list(run.start_time) == [250e-9, 0.0]
    assert any(d.kind == "units" and "look like epoch ns" in d.message for d in run.doubts)


@pytest.mark.parametrize(
    "column",
    [
        pa.array([1_500_000, 0], pa.timestamp("us")),
        pa.array([1_500_000, 0], pa.timestamp("us", tz="UTC")),
    ],
    ids=["timestamp", "timestamp-tz"],
)
def test_parquet_time_stamps_as_seconds(column: pa.Array) -> None:
    run = _native(_parquet(pa.table({"total_ms": [1, 2], "start_time": column})), "t.parquet")
    np.testing.assert_allclose(run.start_time, [1.5, 0])  # type: ignore[arg-type]


def test_dates_and_iso_text_as_seconds() -> None:
    days = pa.table({"total_ms": [1, 2], "start_time": pa.array([19001, 19000], pa.date32())})
    np.testing.assert_allclose(_native(_parquet(days), "t.parquet").start_time, [86400, 0])  # type: ignore[arg-type]
    csv = "total_ms,start_time\n1,2024-01-01T00:00:01.5\n2,2024-01-01T00:00:00\n"
    np.testing.assert_allclose(_native(csv).start_time, [1.5, 0])  # type: ignore[arg-type]
    rows = json.dumps(
        [
            {"total_ms": 1, "start_time": "2024-01-01T00:00:02Z"},
            {"total_ms": 1, "start_time": "2024-01-01T01:00:00+01:00"},
        ]
    )
    np.testing.assert_allclose(_native(rows, "t.json").start_time, [2, 0])  # type: ignore[arg-type]


def test_start_time_text_that_is_no_time() -> None:
    rows = '[{"total_ms":1,"start_time":"2024-01-01T00:00:00"},{"total_ms":1,"start_time":"soon"}]'
    _native_error(rows, "t.json", r"row 2, column 'start_time': 'soon' is neither seconds")
    mixed = '[{"total_ms":1,"start_time":"2024-01-01T00:00:00"},{"total_ms":1,"start_time":"12"}]'
    _native_error(mixed, "t.json", r"column 'start_time' mixes seconds \(row 2\)")


@pytest.mark.parametrize(
    ("table", "message"),
    [
        (pa.table({"error": pa.array([[1], []])}), "column 'error' holds list"),
        (
            pa.table({"error": pa.array([b"", b"\xff"], pa.binary())}),
            "row 2, column 'error': bytes",
        ),
        (pa.table({"request_id": pa.array([[1], [2]])}), "column 'request_id' holds list"),
        (
            pa.table({"request_id": pa.array([b"a", b"\xff"], pa.binary())}),
            "row 2, column 'request_id': bytes",
        ),
    ],
)
def test_error_and_request_id_of_the_wrong_type(table: pa.Table, message: str) -> None:
    table = table.append_column("total_ms", pa.array([1, 2]))
    _native_error(_parquet(table), "t.parquet", message)


def test_error_and_request_id_objects_in_json() -> None:
    _native_error('[{"total_ms":1,"error":{"code":500}}]', "t.json", "column 'error' holds struct")
    _native_error('[{"total_ms":1,"request_id":{"a":1}}]', "t.json", "'request_id' holds struct")
    # binary that is UTF-8 still works
    table = pa.table({"total_ms": [1], "request_id": pa.array([b"r1"], pa.binary())})
    assert list(_native(_parquet(table), "t.parquet").request_id) == ["r1"]  # type: ignore[arg-type]


def test_parquet_row_and_size_caps(monkeypatch: pytest.MonkeyPatch) -> None:
    data = _parquet(pa.table({"total_ms": np.ones(100)}))
    monkeypatch.setattr(native_load, "MAX_PARQUET_ROWS", 99)
    _native_error(data, "t.parquet", "100 rows, more than budgetdiff reads")
    monkeypatch.setattr(native_load, "MAX_PARQUET_ROWS", 100)
    monkeypatch.setattr(native_load, "MAX_PARQUET_BYTES", 10)
    _native_error(data, "t.parquet", "GiB uncompressed, more than budgetdiff reads")


# ------------------------------------------------------------------ inference-perf


def _ip_records(times: list[float]) -> list[dict[str, Any]]:
    return [
        {
            "start_time": 1.0,
            "end_time": 2.0,
            "info": {"response_metrics": {"output_token_times": [1.1, 1.2, 1.3]}},
        },
        {
            "start_time": 1.0,
            "end_time": 2.0,
            "info": {"response_metrics": {"output_token_times": times}},
        },
    ]


@pytest.mark.parametrize("times", [[1.1, float("nan"), 1.3], [1.1, 1.3, 1.2]], ids=["nan", "back"])
def test_inference_perf_token_times_nan_or_backwards(times: list[float]) -> None:
    data = json.dumps(_ip_records(times)).encode()
    with pytest.raises(
        InputError, match=r"^inference-perf: p.json: request 1: 'output_token_times'"
    ):
        inference_perf.read(data, "p.json", OPTS)


def test_inference_perf_token_times_good() -> None:
    (run,) = inference_perf.read(json.dumps(_ip_records([1.1, 1.15, 1.3])).encode(), "p.json", OPTS)
    assert run.itl is not None
    np.testing.assert_allclose(run.itl.values, [100, 100, 50, 150])


def _stage(**latency: Any) -> dict[str, Any]:
    return {"load_summary": {}, "successes": {"count": 3, "latency": latency}}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (json.dumps(_stage(request_latency={"p50": -1.0})), "request_latency.p50 is -1.0"),
        (json.dumps(_stage(request_latency={"p90": float("inf")})), "request_latency.p90 is inf"),
        (
            json.dumps(_stage(request_latency={"p50": 1})).replace(
                '"count": 3', '"count": Infinity'
            ),
            "'successes.count' is inf",
        ),
        (
            json.dumps(_stage(request_latency={"p50": 1})).replace(
                '"count": 3', f'"count": {HUGE}'
            ),
            "'successes.count' is 9999",
        ),
        (f'[{{"start_time": {HUGE}, "end_time": 1, "info": {{}}}}]', "request 0: 'start_time'"),
        (f'{{"successes": {DIGITS}}}', "a number JSON cannot hold"),
        ("[" * DEEP + "]" * DEEP, "nested too deeply"),
    ],
)
def test_inference_perf_hostile_numbers(text: str, message: str) -> None:
    with pytest.raises(InputError, match=rf"^inference-perf: s.json: .*{message}"):
        inference_perf.read(text.encode(), "s.json", OPTS)


def test_inference_perf_huge_optional_numbers_are_dropped() -> None:
    doc = _stage(request_latency={"p50": 1})
    text = json.dumps({**doc, "load_summary": {"requested_rate": 5, "send_duration": 1}})
    text = text.replace('"send_duration": 1', f'"send_duration": {HUGE}')
    (run,) = inference_perf.read(text.encode(), "s.json", OPTS)
    assert run.duration_s is None and run.meta["requested_rate"] == 5.0
    assert run.summary["total"] == {50.0: 1000.0}


# ------------------------------------------------------------------ prometheus

HEAD = "# TYPE vllm:e2e_request_latency_seconds histogram\n"
BUCKETS = (
    'vllm:e2e_request_latency_seconds_bucket{{le="{a}"}} {x}\n'
    'vllm:e2e_request_latency_seconds_bucket{{le="+Inf"}} {y}\n'
)


def _prom(a: str = "0.5", x: str = "1", y: str = "2") -> bytes:
    return (HEAD + BUCKETS.format(a=a, x=x, y=y)).encode()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (_prom(x="NaN"), "line 2: count 'NaN' must be a finite number >= 0"),
        (_prom(y="1e400"), "line 3: count '1e400' must be a finite number >= 0"),
        (_prom(x="-1"), "line 2: count '-1'"),
        (_prom(a="NaN"), 'line 2: le="NaN" must be a finite number of seconds'),
        (_prom(a="-0.5"), 'line 2: le="-0.5"'),
        (_prom(a="-Inf"), 'line 2: le="-Inf"'),
        (_prom(a="x"), "line 2: 'x' is not a number"),
        (_prom() + b"vllm:e2e_request_latency_seconds_sum +Inf\n", "line 4: '\\+Inf' must be"),
    ],
)
def test_prometheus_hostile_values(text: bytes, message: str) -> None:
    with pytest.raises(InputError, match=rf"^prometheus: m\.prom: {message}"):
        prometheus.read(text, "m.prom", OPTS)


def test_prometheus_all_zero_scrape_alone_is_refused_but_works_as_before() -> None:
    zero = prometheus.read(_prom(x="0", y="0"), "before.prom", OPTS)
    assert zero[0].summary_count == 0  # readable: a fresh server's scrape before the run
    with pytest.raises(InputError, match=r"^prometheus: before.prom: no request recorded"):
        combine([zero], ["before.prom"])
    after = prometheus.read(_prom(x="3", y="4"), "after.prom", OPTS)
    (run,) = combine([zero, after], ["before.prom", "after.prom"])
    assert run.summary_count == 4
    np.testing.assert_array_equal(run.histograms["total"].counts, [3, 1])
    assert combine([after], ["after.prom"]) == after


# ------------------------------------------------------------------ OTLP


def _otlp_span(attr: dict[str, Any], start: Any = "1000", end: Any = "2000") -> bytes:
    span = {
        "traceId": "t1",
        "name": "llm_request",
        "startTimeUnixNano": start,
        "endTimeUnixNano": end,
        "attributes": [
            {"key": "gen_ai.latency.e2e", "value": {"doubleValue": 0.5}},
            {"key": "x", "value": attr},
        ],
    }
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}).encode()


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (_otlp_span({"intValue": "1" + "0" * 400}), r"attribute 'x': intValue '1000.*not valid"),
        (_otlp_span({"intValue": 2**70}), r"attribute 'x': intValue .*not valid"),
        (_otlp_span({"intValue": DIGITS}), r"attribute 'x': intValue .*not valid"),
        (_otlp_span({"doubleValue": 2**1100}), r"attribute 'x': doubleValue .*not valid"),
        (_otlp_span({}, start=HUGE), "startTimeUnixNano '9999.* is not unix nanoseconds"),
        (_otlp_span({}, end="-5"), "endTimeUnixNano '-5' is not unix nanoseconds"),
        ('{"resourceSpans": ' + "[" * DEEP + "]" * DEEP + "}", "nested too deeply"),
        (f'{{"resourceSpans": [{DIGITS}]}}', "a number too long"),
        (f'{{"resourceSpans": []}}\n{{"resourceSpans": [{DIGITS}]}}\n', "line 2: a number too"),
    ],
)
def test_otlp_hostile_values(data: bytes | str, message: str) -> None:
    raw = data.encode() if isinstance(data, str) else data
    with pytest.raises(InputError, match=rf"^otlp: s\.json: .*{message}"):
        otlp.read(raw, "s.json", OPTS)


@pytest.mark.parametrize("value", ["NaN", "Infinity", "1e400", -0.5])
def test_otlp_latency_must_be_finite(value: Any) -> None:
    data = _otlp_span({}).replace(
        b'{"doubleValue": 0.5}', json.dumps({"doubleValue": value}).encode()
    )
    with pytest.raises(
        InputError, match=r"^otlp: s\.json: .*'gen_ai.latency.e2e': .* not a latency"
    ):
        otlp.read(data, "s.json", OPTS)


# ------------------------------------------------------------------ genai-perf


def test_genai_perf_huge_stamp_is_checked_before_subtracting() -> None:
    request = (
        f'{{"timestamp": 1000, "response_timestamps": [2000, {HUGE}], '
        '"response_outputs": [{"response": "x"}, {"response": "y"}]}'
    )
    data = f'{{"service_kind": "triton", "experiments": [{{"requests": [{request}]}}]}}'
    match = r"^genai-perf: g.json: .*requests\[0\].response_timestamps\[1\] is a number too large"
    with pytest.raises(InputError, match=match):
        genai_perf.read(data.encode(), "g.json", OPTS)


@pytest.mark.parametrize(
    "text",
    [
        b'{"total_ms": 1, "x": "x\\"[[[[", "y":' + b"[" * DEEP + b"]" * DEEP + b"}\n",
        b'{"total_ms": 1, "x":' + b'["]",' * DEEP + b"]" * DEEP + b"}\n",  # closers in strings
        b'{"a": "' + b"]" * DEEP + b'"}\n{"total_ms": 1, "x":' + b"[" * DEEP + b"]" * DEEP + b"}\n",
        b'{"total_ms": 1}\n' + b"]" * DEEP + b"\n" + b"[" * DEEP + b"\n",  # closers first
        b'{"total_ms": 1, "x":' + b"[\n" * DEEP + b"]\n" * DEEP + b"}\n",  # over many lines
        b'{"a": "abc\n{"x":' + b"[" * DEEP + b"]" * DEEP + b"}\n",  # a string never closed
    ],
)
def test_jsonl_nested_deeper_than_strings_show_is_one_error_not_a_crash(text: bytes) -> None:
    # pyarrow's JSON parser, which crashes the process on deep nesting, never sees these
    with pytest.raises(InputError, match=r"^native: t.jsonl: "):
        _native(text, "t.jsonl")


def test_jsonl_brackets_inside_strings_are_no_nesting() -> None:
    text = b'{"total_ms": 1, "note": "[[[[[["}\n{"total_ms": 2, "note": "x\\"]]]]\\\\"}\n'
    np.testing.assert_array_equal(_native(text, "t.jsonl").total, [1.0, 2.0])  # type: ignore[arg-type]
