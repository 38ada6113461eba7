"""A reader's two kinds of failure, told apart: bad input is exit 2 with one line naming the
file; a bug inside a reader is exit 3 with one line naming the file and the format, never the
user's fault ("is it a complete file?") and never a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from budgetdiff.errors import BUG_EXIT_CODE, ReaderBug, ReadError, bug_message
from budgetdiff.formats import ReadOptions, detect, registry
from tests.support.helpers import run
from tests.support.paths import SAMPLES

VLLM = SAMPLES / "fuzz" / "vllm" / "fuzz_vllm_bench_serve.json"
BUDGET = "version: 1\nslo: {ttft: 1200, total: 6000}\n"


def _check(tmp_path: Path, capsys: pytest.CaptureFixture[str], data: bytes) -> tuple[int, str, str]:
    head = tmp_path / "results.json"
    head.write_bytes(data)
    budget = tmp_path / "budget.yml"
    budget.write_text(BUDGET)
    return run(["check", "--head", str(head), "--budget", str(budget)], capsys)


def _key_error(data: bytes, source: str, options: ReadOptions) -> list[object]:
    return {}["ttfts"]  # type: ignore[no-any-return]  # a reader's own slip, not the file's


def test_malformed_input_is_exit_2_naming_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _check(tmp_path, capsys, VLLM.read_bytes()[:-200])  # cut short
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(f"budgetdiff: error: vllm: {tmp_path / 'results.json'}: ")


def test_a_key_error_inside_a_reader_is_exit_3_naming_file_and_format(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(registry.reader("vllm").module, "read", _key_error)
    code, out, err = _check(tmp_path, capsys, VLLM.read_bytes())
    assert code == BUG_EXIT_CODE and out == ""
    assert err.count("\n") == 1 and "Traceback" not in err
    assert f"the vllm reader failed on {tmp_path / 'results.json'}, not your input" in err
    assert "(KeyError at budgetdiff/formats/registry.py:" in err
    assert "is it a complete" not in err


def test_a_reader_bug_keeps_the_file_the_format_and_the_original(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(registry.reader("vllm").module, "read", _key_error)
    with pytest.raises(ReaderBug) as caught:
        detect.read(VLLM.read_bytes(), "r.json", "auto", ReadOptions())
    bug = caught.value
    assert (bug.file, bug.format, type(bug.original)) == ("r.json", "vllm", KeyError)
    assert bug_message(bug).startswith("a bug in budgetdiff, the vllm reader failed on r.json")


def test_a_table_with_a_row_too_long_is_a_read_error_with_the_file() -> None:
    with pytest.raises(ReadError) as caught:
        detect.read(b"total_ms,x\n1,2\n3,4,5,6\n", "t.csv", "native", ReadOptions())
    assert caught.value.file == "t.csv"
    assert str(caught.value).startswith("native: t.csv: not a readable CSV table")


def _json_error(data: bytes, source: str, options: ReadOptions) -> list[object]:
    return json.loads(data[:10])  # type: ignore[no-any-return]  # a parser on a cut-short file


def test_a_parser_error_a_reader_did_not_foresee_is_exit_2_naming_file_and_format(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(registry.reader("vllm").module, "read", _json_error)
    code, out, err = _check(tmp_path, capsys, VLLM.read_bytes())
    assert code == 2 and out == "" and err.count("\n") == 1
    assert err.startswith(f"budgetdiff: error: vllm: {tmp_path / 'results.json'}: cannot be read")
    assert "is it a complete vllm file?" in err


def test_every_format_has_a_reader_with_its_name() -> None:
    for name in detect.FORMATS:
        assert name == registry.reader(name).module.NAME
    assert registry.reader("csv").name == "native"


def test_a_table_in_memory_is_read_with_the_same_errors_as_a_file() -> None:
    import pyarrow as pa

    (run,) = detect.read_arrow(pa.table({"total_ms": [1.0, 2.0]}), "frame", ReadOptions())
    assert run.n == 2 and run.meta["schema"] == "in-memory table"
    ids = pa.array([{"a": 1}, {"a": 2}])
    with pytest.raises(ReadError, match=r"^native: frame: column 'request_id' holds struct"):
        detect.read_arrow(
            pa.table({"total_ms": [1.0, 2.0], "request_id": ids}), "frame", ReadOptions()
        )
