"""The native per-request table reader: layouts, units, mapping, sniffing and every error."""

from __future__ import annotations

import io
import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from budgetdiff.errors import InputError
from budgetdiff.formats import ReadOptions, detect
from budgetdiff.formats.native import build as native
from budgetdiff.table import Run
from tests.support.paths import sample_files

OPTS = ReadOptions(slices=("queue", "prefill", "decode"))


def _read(text: str | bytes, opts: ReadOptions = OPTS, source: str = "head.csv") -> Run:
    data = text.encode() if isinstance(text, str) else text
    runs = native.read(data, source, opts)
    assert len(runs) == 1
    return runs[0]


CSV = (
    "request_id,queue_ms,prefill_s,decode_us,ttft_ms\nr1,20,0.08,640000,100\nr2,30,0.1,700000,130\n"
)


def test_csv_units_from_suffix() -> None:
    run = _read(CSV)
    assert run.n == 2
    np.testing.assert_allclose(run.slices["queue"], [20, 30])
    np.testing.assert_allclose(run.slices["prefill"], [80, 100])
    np.testing.assert_allclose(run.slices["decode"], [640, 700])
    assert list(run.slices) == ["queue", "prefill", "decode"]
    np.testing.assert_allclose(run.ttft, [100, 130])  # type: ignore[arg-type]
    assert run.total is None  # not derived here
    assert run.ok is None
    assert list(run.request_id) == ["r1", "r2"]  # type: ignore[arg-type]
    assert run.meta["layout"] == "csv"


def test_tsv_and_unsuffixed_is_ms() -> None:
    run = _read("queue\tprefill\tdecode\ttotal_s\n1\t2\t3\t0.5\n4\t5\t6\t0.7\n", source="a.tsv")
    assert run.meta["layout"] == "tsv"
    np.testing.assert_allclose(run.slices["decode"], [3, 6])
    np.testing.assert_allclose(run.total, [500, 700])  # type: ignore[arg-type]


def test_parquet_with_itl_lists() -> None:
    table = pa.table(
        {
            "queue_ms": [1.0, 2.0],
            "prefill_ms": [10, 20],
            "decode_ms": [100.0, 200.0],
            "itl_ms": [[1.0, 2.0], [3.0]],
            "output_tokens": [3, 2],
        }
    )
    buf = io.BytesIO()
    pq.write_table(table, buf)
    data = buf.getvalue()
    assert native.sniff(data[:65536], "x.bin")
    run = _read(data, source="x.parquet")
    assert run.meta["layout"] == "parquet"
    np.testing.assert_allclose(run.slices["prefill"], [10, 20])
    assert run.itl is not None
    np.testing.assert_allclose(run.itl.values, [1, 2, 3])
    assert list(run.itl.offsets) == [0, 2, 3]
    np.testing.assert_allclose(run.output_tokens, [3, 2])  # type: ignore[arg-type]


def test_json_lines_and_array_agree() -> None:
    rows = [
        {"request_id": "a", "queue_ms": 1, "prefill_ms": 2.5, "decode_ms": 30, "itl_ms": [1, 2]},
        {"request_id": "b", "queue_ms": 2, "prefill_ms": 3.5, "decode_ms": 40, "itl_ms": [3]},
    ]
    lines = _read("\n".join(json.dumps(r) for r in rows) + "\n", source="h.jsonl")
    array = _read(json.dumps(rows), source="h.json")
    assert lines.meta["layout"] == "jsonl" and array.meta["layout"] == "json"
    for run in (lines, array):
        np.testing.assert_allclose(run.slices["prefill"], [2.5, 3.5])
        assert run.itl is not None
        np.testing.assert_allclose(run.itl.values, [1, 2, 3])
        assert list(run.request_id) == ["a", "b"]  # type: ignore[arg-type]


def test_json_lines_mixed_types_fall_back_and_name_the_row() -> None:
    text = '{"queue": 1, "prefill": 2, "decode": 3}\n{"queue": 1.5, "prefill": "x", "decode": 3}\n'
    with pytest.raises(InputError, match=r"native: h\.jsonl: row 2, column 'prefill'"):
        _read(text, source="h.jsonl")


def test_csv_itl_as_text_list() -> None:
    run = _read('queue,prefill,decode,itl_ms\n1,2,3,"[1.5, 2.5]"\n1,2,3,\n1,2,3,[4]\n')
    assert run.itl is not None
    np.testing.assert_allclose(run.itl.values, [1.5, 2.5, 4])
    assert list(run.itl.offsets) == [0, 2, 2, 3]


def test_mapped_column_with_unit() -> None:
    opts = ReadOptions(
        slices=("queue", "decode"),
        columns={"decode": ("decode_time", "s"), "queue": ("wait_us", None)},
    )
    run = _read("wait_us,decode_time\n2000,1.5\n3000,2\n", opts)
    np.testing.assert_allclose(run.slices["queue"], [2, 3])
    np.testing.assert_allclose(run.slices["decode"], [1500, 2000])


def test_without_budget_slices_takes_every_known_slice_in_order() -> None:
    run = _read("decode_ms,other,network,app_s\n5,x,1,0.002\n", ReadOptions())
    assert list(run.slices) == ["network", "decode", "app"]
    np.testing.assert_allclose(run.slices["app"], [2])


def test_failed_rows_may_have_blanks() -> None:
    text = "queue,prefill,decode,error\n1,2,3,\n,,,timeout\n4,5,6,false\n"
    run = _read(text)
    assert list(run.ok) == [True, False, True]  # type: ignore[arg-type]
    assert np.isnan(run.slices["decode"][1])
    bools = _read(json.dumps([{"queue": 1, "prefill": 1, "decode": 1, "error": True}]), OPTS)
    assert list(bools.succeeded) == [False]


@pytest.mark.parametrize("repeat", [1, 4_000], ids=["short: a loop", "long: the kernels"])
def test_error_texts_mean_the_same_short_or_long(repeat: int) -> None:
    """A short error column is read by a loop (no pyarrow.compute import at start-up), a long
    one by Arrow's kernels: the same texts fail the same rows either way."""
    cells = ["", "  False ", "0", "NO", "none", " null", "timeout", "HTTP 500", "  x  ", "nullx"]
    body = "".join(f"r{i}-{k},1,2,3,{c}\n" for k in range(repeat) for i, c in enumerate(cells))
    run = _read("request_id,queue,prefill,decode,error\n" + body)
    want = [False] * 6 + [True] * 4
    assert list(run.ok) == [not w for w in want] * repeat  # type: ignore[arg-type]


def test_start_time_and_tokens() -> None:
    run = _read("queue,prefill,decode,start_time,input_tokens\n1,2,3,100.5,200\n1,2,3,101,\n")
    np.testing.assert_allclose(run.start_time, [100.5, 101])  # type: ignore[arg-type]
    assert np.isnan(run.input_tokens[1])  # type: ignore[index]


# ------------------------------------------------------------------ errors


def test_missing_slice_names_candidates_columns_and_fix() -> None:
    with pytest.raises(InputError) as err:
        _read("a,b,c\n1,2,3\n", ReadOptions(slices=("decode",)))
    msg = str(err.value)
    assert msg == (
        "native: head.csv: no column for slice 'decode' (looked for decode, decode_ms, "
        "decode_s, decode_us); columns are: a, b, c; map it with "
        "`decode: {budget: ..., column: NAME}`"
    )


def test_missing_mapped_column() -> None:
    opts = ReadOptions(slices=("decode",), columns={"decode": ("dec", None)})
    with pytest.raises(InputError, match=r"no column 'dec' \(mapped for slice 'decode'\)"):
        _read("decode_ms\n1\n", opts)


def test_ambiguous_columns() -> None:
    with pytest.raises(InputError, match="several columns"):
        _read("decode,decode_ms\n1,2\n", ReadOptions(slices=("decode",)))


@pytest.mark.parametrize("data", [b"", b"  \n\n"])
def test_empty_file(data: bytes) -> None:
    with pytest.raises(InputError, match=r"native: head.csv: the file is empty"):
        _read(data)


def test_header_only() -> None:
    with pytest.raises(InputError, match="header but no rows"):
        _read("queue,prefill,decode\n")
    with pytest.raises(InputError, match="header but no rows"):
        _read("[]", source="h.json")


def test_non_numeric_names_row_and_column() -> None:
    with pytest.raises(InputError, match=r"row 3, column 'prefill_ms': 'fast' is not a number"):
        _read("queue,prefill_ms,decode\n1,2,3\n1,2,3\n1,fast,3\n")
    with pytest.raises(InputError, match=r"row 2, column 'decode': True is not a number|row 2"):
        _read(
            json.dumps(
                [
                    {"queue": 1, "prefill": 1, "decode": 1},
                    {"queue": 1, "prefill": 1, "decode": "slow"},
                ]
            ),
            source="h.json",
        )


def test_negative_latency() -> None:
    with pytest.raises(InputError, match=r"row 2, column 'queue': negative latency \(-5\)"):
        _read("queue,prefill,decode\n1,2,3\n-5,2,3\n")


@pytest.mark.parametrize("cell", ["", "NaN"])
def test_blank_in_succeeded_request(cell: str) -> None:
    with pytest.raises(InputError, match=r"row 1, column 'decode': empty or NaN"):
        _read(f"queue,prefill,decode,error\n1,2,{cell},\n")


def test_blank_in_json_succeeded_request() -> None:
    with pytest.raises(InputError, match=r"row 2, column 'queue': empty or NaN"):
        _read(
            '{"queue": 1, "prefill": 1, "decode": 1}\n{"queue": null, "prefill": 1, "decode": 1}\n',
            source="h.jsonl",
        )


def test_unreadable_bytes() -> None:
    with pytest.raises(InputError, match=r"native: head.csv: not a readable CSV"):
        _read(b"queue,prefill,decode,request_id\n1,2,3,\xff\xfe\n")
    with pytest.raises(InputError, match=r"native: h.parquet: not a readable Parquet"):
        _read(b"PAR1\x00\x01garbage", source="h.parquet")
    with pytest.raises(InputError, match=r"native: h.json: line 1: bytes that are not UTF-8"):
        _read(b'[{"queue": "\xff"}]', source="h.json")
    with pytest.raises(InputError, match=r"native: h.json: invalid JSON"):
        _read(b'[{"queue": 1, "prefill": 2', source="h.json")


def test_no_latency_columns_at_all() -> None:
    with pytest.raises(InputError, match="no latency columns"):
        _read("a,b\n1,2\n", ReadOptions())


# ------------------------------------------------------------------ sniffing


def test_sniff_own_layouts() -> None:
    assert native.sniff(CSV.encode(), "x.txt")
    assert native.sniff(b"queue_ms\tdecode_ms\n1\t2\n", "x")
    assert native.sniff(b'[{"decode_ms": 1, "itl_ms": [1, 2]}, {"decode', "x")  # truncated head
    assert native.sniff(b'{"ttft_ms": 1}\n{"ttft', "x")
    assert not native.sniff(b"a,b\n1,2\n", "x.csv")
    assert not native.sniff(b'[{"ttft_s": 1, "end_to_end_latency_s": 2}]', "x.json")
    assert not native.sniff(b'{"decode_ms": {"p50": 1}}', "x.json")
    # an OpenAI response's `usage` beside a harness's timings: a row, its object left unread
    assert native.sniff(b'{"ttft_ms": 1, "usage": {"completion_tokens": 3}}\n', "x.jsonl")
    assert not native.sniff(b'{"ttft_ms": 1, "latency": {"p95": 3}}\n', "x.jsonl")
    assert not native.sniff(b"\x00\x01\x02", "x.csv")


def test_sniff_claims_no_tool_file() -> None:
    """No benchmark tool's file is taken for a native table. The mock server's ground-truth
    timings are a flat per-request table with queue_ms/decode_ms columns: a native table.
    evalscope's percentile table and settings are flat JSON the native sniffer takes; the
    evalscope reader, asked first, claims them (and reads or refuses them)."""
    for path in sample_files():
        data = path.read_bytes()
        claimed = native.sniff(data[:65536], path.name)
        if claimed and path.parent.parent.name == "evalscope":
            assert detect.detect(data, path.name, ReadOptions()).name == "evalscope", path
            continue
        assert claimed == (path.name == "mock_server_timings.jsonl"), path


def test_ground_truth_table_reads_as_native() -> None:
    paths = [p for p in sample_files() if p.name == "mock_server_timings.jsonl"]
    assert paths
    for path in paths:
        run = _read(path.read_bytes(), ReadOptions(), source=path.name)
        assert set(run.slices) == {"queue", "decode"}
        rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        assert run.n == len(rows)
        np.testing.assert_allclose(run.slices["queue"], [r["queue_ms"] for r in rows])


def test_large_csv_and_parquet_read_vectorized() -> None:
    rng = np.random.default_rng(7)
    n = 200_000
    table = pa.table(
        {
            "request_id": pa.array(np.arange(n).astype(str)),
            "queue_ms": rng.gamma(2, 10, n),
            "prefill_ms": rng.gamma(2, 40, n),
            "decode_ms": rng.gamma(4, 300, n),
        }
    )
    import pyarrow.csv as pacsv

    buf = io.BytesIO()
    pacsv.write_csv(table, buf)
    run = _read(buf.getvalue(), source="big.csv")
    assert run.n == n
    np.testing.assert_allclose(run.slices["decode"], table.column("decode_ms").to_numpy())
    pbuf = io.BytesIO()
    pq.write_table(table, pbuf)
    prun = _read(pbuf.getvalue(), source="big.parquet")
    np.testing.assert_array_equal(prun.slices["queue"], run.slices["queue"])
    assert prun.request_id[-1] == str(n - 1)  # type: ignore[index]
