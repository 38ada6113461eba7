"""OpenTelemetry console-exporter spans (inference-perf's console export)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from budgetdiff.errors import InputError
from budgetdiff.formats import ReadOptions, detect, otel_console
from tests.support.helpers import run
from tests.support.paths import sample_files

FOLDER = "generated/inference-perf-otel-console"


def test_every_request_span_is_read(samples: Path) -> None:
    data = (samples / FOLDER / "base/console_spans.txt").read_bytes()
    (r,) = otel_console.read(data, "spans.txt", ReadOptions())
    assert r.n == 30 and r.ok is not None and r.ok.all()
    assert r.ttft is not None and r.total is not None
    text, decoder, pos, spans = data.decode(), json.JSONDecoder(), 0, []
    while text[pos:].strip():
        span, pos = decoder.raw_decode(text, len(text) - len(text[pos:].lstrip()))
        spans.append(span)
    ttfts = sorted(
        1000 * s["attributes"][otel_console.TTFT]
        for s in spans
        if otel_console.TTFT in s.get("attributes", {})
    )
    assert np.allclose(np.sort(r.ttft), ttfts)
    assert np.allclose(r.slices["decode"], r.total - r.ttft)
    assert r.output_tokens is not None and set(r.output_tokens) == {64.0}


def test_detected_by_content_and_claims_no_other_sample(samples: Path) -> None:
    for path in sample_files():
        head = path.read_bytes()[: detect.SNIFF_BYTES]
        mine = path.name == "console_spans.txt"
        assert otel_console.sniff(head, "x") == mine, path
        if mine:
            assert detect.detect(path.read_bytes(), "x", ReadOptions()).module is otel_console


def test_thirty_requests_say_what_they_can(
    samples: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = [str(samples / FOLDER / side / "console_spans.txt") for side in ("base", "head")]
    for p, expect in ((95, "inconclusive"), (50, "regression")):
        budget = tmp_path / "b.yml"
        budget.write_text(f"version: 1\npercentile: {p}\nslo: {{ttft: 1200, total: 6000}}\n")
        code, out, err = run(
            [
                "compare",
                "--base",
                files[0],
                "--head",
                files[1],
                "--budget",
                str(budget),
                "--output",
                "json",
            ],
            capsys,
        )
        rows = {r["name"]: r for r in json.loads(out)["slices"]}
        assert rows["decode"]["change"] == expect, err
        assert rows["first_token"]["change"] in ("none", "inconclusive")
        if expect == "inconclusive":
            assert rows["decode"]["needed"] == 72 and code == 0


@pytest.mark.parametrize(
    "mutate,word",
    [
        (lambda t: t[: len(t) // 2], "otel-console"),
        (
            lambda t: t.replace('"gen_ai.response.total_latency": 0.', '"other": 0.', 1),
            "gen_ai.response.total_latency",
        ),
        (
            lambda t: re.sub(
                r'("gen_ai.response.time_to_first_token": )[0-9.e-]+', r'\1"fast"', t, count=1
            ),
            "time_to_first_token",
        ),
    ],
)
def test_broken_files_name_the_format_file_and_key(
    samples: Path, mutate: object, word: str
) -> None:
    text = (samples / FOLDER / "base/console_spans.txt").read_text()
    broken = mutate(text)  # type: ignore[operator]
    with pytest.raises(InputError) as e:
        detect.read(broken.encode(), "spans.txt", "otel-console", ReadOptions())
    assert "otel-console: spans.txt" in str(e.value) and word in str(e.value)
