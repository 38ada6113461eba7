"""The live source is the orchestrator's (`evaluate.Live`): the Python API reads the same real
Prometheus as the CLI and gets the same numbers, and the budget's `prometheus.metrics` reach
the query whoever built it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from budgetdiff import api
from budgetdiff.cli import main
from tests.prometheus.conftest import BUDGET, Server

STABLE, CANARY = '{version="stable"}', '{version="canary"}'
DECODE = "vllm:request_decode_time_seconds"
TOTAL = "vllm:e2e_request_latency_seconds"


def p95(server: Server, family: str, match: str) -> float:
    """The server's own histogram_quantile over the same window, in ms."""
    q = f"histogram_quantile(0.95, sum by (le) (increase({family}_bucket{match}[30m])))"
    return 1000 * server.query(q)


def slice_row(report: dict, name: str) -> dict:
    return next(r for r in report["slices"] if r["name"] == name)


def test_the_api_reads_the_server_as_the_cli_does(
    prometheus: Server, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base, head = api.live(
        prometheus.url, base_match=STABLE, head_match=CANARY, window="30m", at=str(prometheus.end)
    )
    report = json.loads(api.compare(base, head, BUDGET, environ={}).to_json())
    assert report["verdict"] == "fail"
    decode = slice_row(report, "decode")
    assert decode["base_ms"] == pytest.approx(p95(prometheus, DECODE, STABLE), rel=0.02)
    assert decode["head_ms"] == pytest.approx(p95(prometheus, DECODE, CANARY), rel=0.02)
    (tmp_path / "budget.yml").write_text(BUDGET, encoding="utf-8")
    argv = ["compare", "--prometheus", prometheus.url, "--base-match", STABLE, "--head-match",
            CANARY, "--window", "30m", "--at", str(prometheus.end), "--budget",
            str(tmp_path / "budget.yml"), "--output", "json"]  # fmt: skip
    assert main(argv, environ={}) == 1
    assert json.loads(capsys.readouterr().out)["slices"] == report["slices"]


def test_check_takes_the_head_alone(prometheus: Server) -> None:
    base, head = api.live(prometheus.url, head_match=CANARY, at=str(prometheus.end))
    assert base is None
    report = json.loads(api.check(head, BUDGET, environ={}).to_json())
    assert report["mode"] == "check"
    assert slice_row(report, "decode")["head_ms"] == pytest.approx(
        p95(prometheus, DECODE, CANARY), rel=0.02
    )


def test_the_budgets_families_reach_the_query(prometheus: Server) -> None:
    """decode mapped to the end-to-end family: the decode row reads that family's p95."""
    mapped = BUDGET + f"prometheus: {{metrics: {{decode: '{TOTAL}'}}}}\n"
    _, head = api.live(prometheus.url, head_match=CANARY, at=str(prometheus.end))
    report = json.loads(api.check(head, mapped, environ={}).to_json())
    total = p95(prometheus, TOTAL, CANARY)
    assert total != pytest.approx(p95(prometheus, DECODE, CANARY), rel=0.02)
    assert slice_row(report, "decode")["head_ms"] == pytest.approx(total, rel=0.02)
