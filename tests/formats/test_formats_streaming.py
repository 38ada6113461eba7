"""The readers' fast paths give what the checked paths give: JSON values line by line through
orjson (non-finite literals included), gap lists converted in one go, ITL text cells split by
Arrow. Every case here also runs the slow path it replaces, or states its result by hand."""

from __future__ import annotations

import json
import math
import re
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from budgetdiff.errors import InputError
from budgetdiff.formats import ReadOptions, aiperf, llmperf, sglang
from budgetdiff.formats._checks import (
    Ctx,
    finite,
    iter_json_values,
    literal,
    number,
    number_lists,
    numbers,
)
from budgetdiff.formats.native import build as native

CTX = Ctx("test", "t.json", "a test file")
OPTS = ReadOptions()


def _values(text: str) -> list[tuple[int, Any]]:
    return list(iter_json_values(text.encode(), CTX))


# ------------------------------------------------------------------ JSON values


def test_json_lines_keep_their_line_numbers_across_blank_lines() -> None:
    text = '{"a": 1}\n\n  \n{"a": 2}\r\n{"a": 3}'
    assert _values(text) == [(1, {"a": 1}), (4, {"a": 2}), (5, {"a": 3})]


def test_a_long_blank_line_is_skipped_too() -> None:
    text = '{"a": 1}\n' + " " * 100 + '\n{"a": 2}\n'
    assert _values(text) == [(1, {"a": 1}), (3, {"a": 2})]


def test_a_value_over_several_lines_is_read_by_the_stdlib_with_its_line() -> None:
    text = '{"a": 1}\n{"a":\n 2}\n{"a": 3}\n\n{"a": 4} {"a": 5}\n'
    assert _values(text) == [
        (1, {"a": 1}),
        (2, {"a": 2}),
        (4, {"a": 3}),
        (6, {"a": 4}),
        (6, {"a": 5}),
    ]


def test_an_error_after_the_stdlib_takes_over_names_the_files_own_line() -> None:
    text = '{"a": 1}\n{"a":\n 2}\n{"a": 3}\n{"a": }\n'
    with pytest.raises(InputError, match=r"line 5: is not valid JSON at line 5"):
        _values(text)


def test_non_finite_literals_stay_on_orjson_and_read_as_floats() -> None:
    text = '{"rate": Infinity, "low": -Infinity, "x": NaN, "text": "NaN and Infinity"}\n{"b": 1}'
    (line, first), second = _values(text)
    assert line == 1 and second == (2, {"b": 1})
    assert first["text"] == "NaN and Infinity"  # inside a string: left alone
    assert literal(first["rate"]) == math.inf and literal(first["low"]) == -math.inf
    assert math.isnan(literal(first["x"]))
    assert finite(first["rate"]) is None
    assert number(first["low"], "k", CTX) == -math.inf
    with pytest.raises(InputError, match=r"k must be a finite latency >= 0, not inf"):
        number(first["rate"], "k", CTX, latency=True)


@pytest.mark.parametrize(
    "text",
    [
        '{"a": "x \\" NaN", "b": NaN}',
        '{"a": "x \\\\", "b": NaN}',
        '[-Infinity,"Infinity"]',
        '{"a": "no literal"}',
        '{"a": "NaN", "b": [Infinity, "-Infinity"]}',
    ],
)
def test_literals_outside_strings_only_become_floats(text: str) -> None:
    """Escaped quotes and backslashes do not fool the fast path: what it reads is what the
    stdlib reads, a literal inside a string stays text."""
    ((line, value),) = _values(text)
    assert line == 1
    assert json.dumps(_unmark(value)) == json.dumps(json.loads(text))


def _unmark(value: Any) -> Any:
    if isinstance(value, list):
        return [_unmark(v) for v in value]
    if isinstance(value, dict):
        return {k: _unmark(v) for k, v in value.items()}
    return literal(value)


# ------------------------------------------------------------------ gap lists


@pytest.mark.parametrize(
    "lists",
    [
        [[0.5, 1.0], [], [2, 3, 4]],
        [[1.0], [True, 2.0]],  # numpy reads a true among numbers as 1, as `numbers` does
        [[1.0], [2.0, "3"]],
        [[1.0], [-2.0]],
        [[1.0], [2.0, "\x00NaN"]],
        [[1.0], {"a": 1}],
        [[1.0], [2.0, 10**30]],
        [[1.0], [None]],
    ],
)
def test_number_lists_match_numbers_on_each_list(lists: list[Any]) -> None:
    def where(i: int) -> str:
        return f"key 'itls'[{i}]"

    try:
        expected = [numbers(g, where(i), CTX, latency=True) for i, g in enumerate(lists)]
    except InputError as exc:
        with pytest.raises(InputError, match=re.escape(str(exc))):
            number_lists(lists, where, CTX, latency=True)
        return
    itl = number_lists(lists, where, CTX, latency=True)
    assert np.diff(itl.offsets).tolist() == [len(g) for g in expected]
    np.testing.assert_array_equal(itl.values, np.concatenate(expected))


def _aiperf_record(i: int, gaps: Any, unit: str = "ms") -> str:
    record = {
        "metadata": {"x_request_id": f"r{i}", "benchmark_phase": "profiling"},
        "metrics": {
            "request_latency": {"value": 100.0 + i, "unit": "ms"},
            "time_to_first_token": {"value": 20.0, "unit": "ms"},
            "inter_chunk_latency": {"value": gaps, "unit": unit},
        },
    }
    return json.dumps(record)


def test_aiperf_gaps_keep_each_records_unit() -> None:
    lines = [_aiperf_record(0, [1.0, 2.0]), _aiperf_record(1, 3000.0, "us"), _aiperf_record(2, [])]
    (run,) = aiperf.read("\n".join(lines).encode(), "p.jsonl", OPTS)
    assert run.itl is not None
    np.testing.assert_allclose(run.itl.values, [1.0, 2.0, 3.0])
    assert run.itl.offsets.tolist() == [0, 2, 3, 3]


@pytest.mark.parametrize(
    ("gaps", "message"),
    [
        (
            "[1.0, NaN]",
            r"line 2: key 'metrics.inter_chunk_latency.value'\[1\] must be a finite "
            r"latency >= 0, not nan",
        ),
        (
            '[1.0, "2"]',
            r"line 2: key 'metrics.inter_chunk_latency.value'\[1\] must be a number, "
            "not a string",
        ),
        (
            "-Infinity",
            r"line 2: key 'metrics.inter_chunk_latency.value'\[0\] must be a finite "
            r"latency >= 0, not -inf",
        ),
    ],
)
def test_aiperf_bad_gap_names_its_line(gaps: str, message: str) -> None:
    bad = _aiperf_record(1, "GAPS").replace('"GAPS"', gaps)
    data = "\n".join([_aiperf_record(0, [1.0]), bad, _aiperf_record(2, [1.0])]).encode()
    with pytest.raises(InputError, match=rf"^aiperf: p.jsonl: {message}"):
        aiperf.read(data, "p.jsonl", OPTS)


def _sglang_line(ttfts: list[float], itls: list[list[float]], rate: str = "Infinity") -> str:
    doc = {
        "backend": "sglang-oai-chat",
        "request_rate": "RATE",
        "max_concurrency": 8,
        "completed": len(ttfts),
        "mean_e2e_latency_ms": 1.0,
        "ttfts": ttfts,
        "itls": itls,
        "errors": [""] * len(ttfts),
    }
    return json.dumps(doc).replace('"RATE"', rate)


def test_sglang_runs_with_infinity_sum_their_gaps() -> None:
    lines = [_sglang_line([0.1, 0.2], [[0.01, 0.02], []]), _sglang_line([0.3], [[0.5]], "4")]
    base, fast = sglang.read("\n".join(lines).encode(), "s.jsonl", OPTS)
    assert base.meta["rate"] == "inf" and fast.meta["rate"] == 4.0
    np.testing.assert_allclose(base.slices["decode"], [30.0, 0.0])
    assert base.total is not None
    np.testing.assert_allclose(base.total, [130.0, 200.0])
    assert fast.total is not None
    np.testing.assert_allclose(fast.total, [800.0])


def test_sglang_failed_request_leaves_its_gaps_out() -> None:
    line = json.loads(_sglang_line([0.1, 0.2], [[0.01], [0.02, 0.03]], "1"))
    line["errors"] = ["", "timeout"]
    (run,) = sglang.read(json.dumps(line).encode(), "s.jsonl", OPTS)
    assert run.itl is not None
    np.testing.assert_allclose(run.itl.values, [10.0])
    assert run.itl.offsets.tolist() == [0, 1, 1]
    assert np.isnan(run.slices["decode"][1])


# ------------------------------------------------------------------ ITL text cells


def _python_split(cells: list[str | None]) -> tuple[list[float], list[int]]:
    """The reference: what the reader did before Arrow split the cells."""
    values: list[float] = []
    offsets = [0]
    for cell in cells:
        if cell:
            for token in re.split(r"[\s,;]+", cell.strip().strip("[]").strip()):
                if token:
                    values.append(float(token))
        offsets.append(len(values))
    return values, offsets


@pytest.mark.parametrize(
    "cells",
    [
        ["[1.5, 2, 3]", "[4, 5]"],  # as Python prints a list: split at ", "
        ["[1,2]", " [3 , 4 ,] ", "5"],  # commas with blanks around
        ["1 2\t3", "[4;5]", "6,, 7"],  # other separators: the regex
        ["[]", "", None, "[[8]]", " 9 ;10 ", "1e2"],
        ["1,2", "3\u00a0, 4"],  # a non-ASCII blank trimmed by Arrow as Python strips it
        ["1_000, 2"],  # only Python reads this number: the loop decides
    ],
)
def test_itl_cells_split_as_python_did(cells: list[str | None]) -> None:
    text = "total_ms,itl_ms\n" + "".join(
        f'1000,"{c}"\n' if c is not None else "1000,\n" for c in cells
    )
    (run,) = native.read(text.encode(), "t.csv", OPTS)
    values, offsets = _python_split([c or None for c in cells])
    assert run.itl is not None
    assert run.itl.offsets.tolist() == offsets
    np.testing.assert_array_equal(run.itl.values, np.array(values, dtype=np.float64))


def test_itl_cells_bad_token_still_names_its_row() -> None:
    text = 'total_ms,itl_ms\n1000,"[1, 2]"\n1000,"[3, x4]"\n'
    with pytest.raises(InputError, match=r"row 2, column 'itl_ms': 'x4' is not a number"):
        native.read(text.encode(), "t.csv", OPTS)


def test_parquet_itl_lists_are_read_without_a_copy_per_step() -> None:
    import io

    import pyarrow.parquet as pq

    table = pa.table(
        {
            "total_ms": [10.0, 20.0, 30.0],
            "itl_ms": pa.array([[1.0, 2.0], None, [3.0]], type=pa.list_(pa.float64())),
        }
    )
    buf = io.BytesIO()
    pq.write_table(table, buf)
    (run,) = native.read(buf.getvalue(), "t.parquet", OPTS)
    assert run.itl is not None
    np.testing.assert_array_equal(run.itl.values, [1.0, 2.0, 3.0])
    assert run.itl.offsets.tolist() == [0, 2, 2, 3]


# ------------------------------------------------------------------ LLMPerf rows


def test_llmperf_plain_and_checked_rows_read_alike() -> None:
    rows = [
        {"ttft_s": 0.1, "end_to_end_latency_s": 0.5, "number_input_tokens": 10},
        {"error_code": 500, "number_output_tokens": 3.0},
        {"ttft_s": 1, "end_to_end_latency_s": 2, "number_output_tokens": 7},  # ints: checked
    ]
    (run,) = llmperf.read(json.dumps(rows).encode(), "l.json", OPTS)
    assert run.ok is not None and run.ok.tolist() == [True, False, True]
    np.testing.assert_array_equal(run.ttft, [100.0, np.nan, 1000.0])
    np.testing.assert_array_equal(run.total, [500.0, np.nan, 2000.0])
    assert run.input_tokens is not None and run.output_tokens is not None
    np.testing.assert_array_equal(run.input_tokens, [10.0, np.nan, np.nan])
    np.testing.assert_array_equal(run.output_tokens, [np.nan, 3.0, 7.0])


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"ttft_s": -0.1, "end_to_end_latency_s": 1.0}, r"\[1\] key 'ttft_s' must be a finite"),
        ({"ttft_s": 0.1}, r"\[1\] key 'end_to_end_latency_s' is missing"),
        ({"ttft_s": 0.1, "end_to_end_latency_s": True}, r"must be a number, not a boolean"),
        ({"ttft_s": 0.1, "end_to_end_latency_s": 1.0, "number_input_tokens": "9"}, "a string"),
    ],
)
def test_llmperf_row_that_needs_a_check_is_named(row: dict[str, Any], message: str) -> None:
    rows = [{"ttft_s": 0.1, "end_to_end_latency_s": 0.5}, row]
    with pytest.raises(InputError, match=rf"^llmperf: l.json: .*{message}"):
        llmperf.read(json.dumps(rows).encode(), "l.json", OPTS)


def test_a_gap_list_mixing_numbers_and_lists_names_the_request() -> None:
    """numpy refuses a ragged nesting with a ValueError; the fast path hands over to the checked
    one, which names the request (the fuzzer found this as a reader bug, exit 3)."""
    with pytest.raises(InputError, match=r"request 1"):
        number_lists([[1.0, 2.0], [3.0, [4.0]]], lambda i: f"request {i}", CTX, latency=True)
