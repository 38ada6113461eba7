"""Trace files are read a span at a time (issue 35, item 9): what reading a file adds to the
interpreter's peak memory is at most 3x the file's size (it was 8.9x for OTLP, 7.6x for agent
traces), measured in a fresh interpreter against the same command on a file of 10 spans; and
the streaming path gives the same spans as the whole-document path it falls back to."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from budgetdiff.formats import otlp_spans
from tests.support.big_traces import write_agent, write_otlp
from tests.support.paths import ROOT

CHILD = """
import resource, sys
from budgetdiff.cli import main
code = main(sys.argv[1:])
print(f"maxrss_kb={resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}", file=sys.stderr)
sys.exit(code)
"""
BUDGETS = {
    "otlp": "version: 1\nslo: {ttft: 1200, total: 6000}\nslices: {queue: 250, decode: 4200}\n",
    "agent-traces": "version: 1\nslo: {total: 60000}\nagent: {steps: 5, step: 5000}\n",
}
SPANS = 80_000


def peak_kb(path: Path, fmt: str, budget: Path) -> int:
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            CHILD,
            "check",
            "--head",
            str(path),
            "--format",
            fmt,
            "--budget",
            str(budget),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode in (0, 1), done.stderr
    return int(done.stderr.rsplit("maxrss_kb=", 1)[1].split()[0])


@pytest.mark.slow
@pytest.mark.parametrize(("fmt", "write"), [("otlp", write_otlp), ("agent-traces", write_agent)])
def test_reading_a_trace_file_adds_at_most_three_times_its_size(
    tmp_path: Path, fmt: str, write: Callable[[Path, int], None]
) -> None:
    budget = tmp_path / "budget.yml"
    budget.write_text(BUDGETS[fmt])
    small, big = tmp_path / "small.json", tmp_path / "big.json"
    write(small, 16)
    write(big, SPANS)
    added = (peak_kb(big, fmt, budget) - peak_kb(small, fmt, budget)) * 1024
    assert added <= 3 * big.stat().st_size, (added, big.stat().st_size)


@pytest.mark.parametrize(
    "path",
    [
        "tests/data/agent/traces-base.json",
        "tests/data/generated/otlp-json/vllm-base/vllm_style_server_spans.otlp.json",
        "tests/data/fuzz/otlp/fuzz_server_spans.otlp.json",
    ],
)
def test_the_streaming_path_gives_the_whole_documents_spans(
    path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = (ROOT / path).read_bytes()
    streamed = list(otlp_spans.spans(data, path))
    monkeypatch.setattr(otlp_spans, "_structure", lambda view: None)
    assert list(otlp_spans.spans(data, path)) == streamed
    assert len(streamed) > 0


def test_json_lines_stream_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    one = tmp_path / "one.json"
    write_otlp(one, 3)
    data = one.read_bytes().strip() + b"\n\n" + one.read_bytes()
    streamed = list(otlp_spans.spans(data, "x.jsonl"))
    assert [w for w, _ in streamed][3] == "resourceSpans[1].scopeSpans[0].spans[0]"
    monkeypatch.setattr(otlp_spans, "_structure", lambda view: None)
    assert list(otlp_spans.spans(data, "x.jsonl")) == streamed
