"""A Parquet table of the work tree is read by pyarrow from its path (no copy of the whole
file in memory first): the same report as the file's bytes give, the same one-line errors,
and the size limit held."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from budgetdiff.cli import main
from budgetdiff.sources import files

BUDGET = (
    "version: 1\npercentile: 95\nslo: {ttft: 1200, total: 12000}\n"
    "slices: {queue: 300, decode: 9000}\n"
)


def _side(path: Path, seed: int, n: int = 3000) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    queue = np.round(rng.exponential(40, n), 3)
    decode = np.round(rng.lognormal(np.log(2000), 0.4, n), 3)
    ttft = np.round(queue + rng.lognormal(np.log(300), 0.3, n), 3)
    cols = {"queue_ms": queue, "decode_ms": decode, "ttft_ms": ttft}
    cols["e2e_ms"] = np.round(ttft + decode, 3)
    ids = pa.array([f"req-{i}" for i in range(n)])
    pq.write_table(pa.table({"request_id": ids, **cols}), path)
    return cols


def _compare(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], env: dict[str, str] | None = None
) -> tuple[int, str, str]:
    budget = tmp_path / "budget.yml"
    budget.write_text(BUDGET)
    argv = ["compare", "--base", str(tmp_path / "base.parquet"), "--head"]
    argv += [str(tmp_path / "head.parquet"), "--budget", str(budget), "--output", "json"]
    code = main(argv, env or {})
    got = capsys.readouterr()
    return code, got.out, got.err


def _report(out: str) -> dict[str, Any]:
    return json.loads(out)


def test_read_from_its_path_the_report_is_the_bytes_one_and_numpys(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _side(tmp_path / "base.parquet", 1)
    head = _side(tmp_path / "head.parquet", 2)
    read = files.read_bytes

    def no_parquet_bytes(path: str, ref: str | None, limit: int) -> bytes:
        assert not path.endswith(".parquet"), "a Parquet file of the work tree read as bytes"
        return read(path, ref, limit)

    with monkeypatch.context() as m:
        m.setattr(files, "read_bytes", no_parquet_bytes)
        code, by_path, err = _compare(tmp_path, capsys)
    assert code in (0, 1), err
    with monkeypatch.context() as m:  # the other way: every file read into bytes first
        m.setattr(files, "head_of", lambda *_: None)
        code_bytes, by_bytes, err = _compare(tmp_path, capsys)
    assert code_bytes == code, err
    assert _report(by_path) == _report(by_bytes)
    report = _report(by_path)
    slo = {r["metric"]: r for r in report["slo"]}
    slices = {r["name"]: r for r in report["slices"]}
    assert slo["total"]["head_ms"] == round(float(np.percentile(head["e2e_ms"], 95)), 3)
    assert slices["decode"]["head_ms"] == round(float(np.percentile(head["decode_ms"], 95)), 3)


def test_a_damaged_parquet_file_and_one_over_the_limit_are_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _side(tmp_path / "base.parquet", 1)
    _side(tmp_path / "head.parquet", 2)
    code, _, err = _compare(tmp_path, capsys, {"BUDGETDIFF_MAX_INPUT_BYTES": "1000"})
    assert code == 2 and err.count("\n") == 1 and "limit" in err and ".parquet" in err
    data = (tmp_path / "head.parquet").read_bytes()
    (tmp_path / "head.parquet").write_bytes(data[: len(data) // 2])  # cut: no footer
    code, _, err = _compare(tmp_path, capsys)
    assert code == 2 and err.count("\n") == 1, err
    assert "head.parquet" in err and "not a readable Parquet file" in err


def test_a_table_from_a_pipe_is_read_whole(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--head <(...)`: a pipe is read once, into bytes; nothing of it is taken to look at
    first (what would be gone for the reading: the read then waits for a writer that has
    left, so the run is a child with a deadline). The report is the file's own."""
    import os
    import subprocess
    import sys
    import threading

    _side(tmp_path / "base.parquet", 1)
    _side(tmp_path / "head.parquet", 2)
    code, from_file, err = _compare(tmp_path, capsys)
    assert code in (0, 1), err
    data = (tmp_path / "head.parquet").read_bytes()
    pipe = tmp_path / "pipe.parquet"
    os.mkfifo(pipe)

    def write() -> None:
        try:
            with open(pipe, "wb") as w:
                w.write(data)
        except BrokenPipeError:  # the reader closed it early: the test fails below
            pass

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    argv = [sys.executable, "-m", "budgetdiff", "compare", "--base", "base.parquet"]
    argv += ["--head", "pipe.parquet", "--budget", "budget.yml", "--output", "json"]
    try:
        child = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    finally:
        if writer.is_alive():  # let a writer still waiting for a reader go
            with open(pipe, "rb") as r:
                r.read()
    assert child.returncode == code, child.stderr
    mine, theirs = _report(from_file), _report(child.stdout)
    assert mine["slo"] == theirs["slo"] and mine["slices"] == theirs["slices"]
