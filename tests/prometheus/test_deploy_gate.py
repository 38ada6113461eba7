"""The deploy gate against a real Prometheus (issue 27): canary vs stable, stable-b vs stable,
after vs before, each number held to what the same server's PromQL says."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import numpy as np
import pytest

from budgetdiff.cli import main
from budgetdiff.sources.deadline import PROMETHEUS
from tests.prometheus.conftest import BUDGET, Server, free_port
from tests.support.waits import backoff

STABLE, STABLE_B, CANARY = '{version="stable"}', '{version="stable-b"}', '{version="canary"}'


@pytest.fixture
def budget(tmp_path: Path) -> str:
    path = tmp_path / "budget.yml"
    path.write_text(BUDGET, encoding="utf-8")
    return str(path)


def run(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, dict, str]:
    code = main(argv, environ={})
    out, err = capsys.readouterr()
    return code, (json.loads(out) if out.strip().startswith("{") else {}), err


def compare(server: Server, budget: str, base: str, head: str, *more: str) -> list[str]:
    return ["compare", "--prometheus", server.url, "--base-match", base, "--head-match", head,
            "--window", "30m", "--at", str(server.end), "--budget", budget, "--output", "json",
            *more]  # fmt: skip


def row(report: dict, name: str) -> dict:
    return next(
        r for r in (*report["slo"], *report["slices"]) if r.get("name", r.get("metric")) == name
    )


def promql_p95(server: Server, family: str, match: str) -> float:
    """The server's histogram_quantile of the same window, in ms."""
    q = f"histogram_quantile(0.95, sum by (le) (increase({family}_bucket{match}[30m])))"
    return 1000 * server.query(q)


def test_canary_fails_on_decode(
    prometheus: Server, budget: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, report, err = run(capsys, compare(prometheus, budget, STABLE, CANARY))
    assert code == 1, err
    assert report["verdict"] == "fail"
    regressed = [f for f in report["findings"] if f["kind"] == "regression"]
    assert [f["subject"] for f in regressed] == ["decode"]
    assert regressed[0]["fails"]
    assert row(report, "decode")["change"] == "regression"
    assert row(report, "prefill")["change"] != "regression"
    # the change budgetdiff reports is the server's: canary's decode p95 over stable's
    base = promql_p95(prometheus, "vllm:request_decode_time_seconds", STABLE)
    head = promql_p95(prometheus, "vllm:request_decode_time_seconds", CANARY)
    assert row(report, "decode")["base_ms"] == pytest.approx(base, rel=0.02)
    assert row(report, "decode")["head_ms"] == pytest.approx(head, rel=0.02)
    assert row(report, "decode")["delta_pct"] == pytest.approx(100 * (head / base - 1), abs=0.5)
    # and the requests, by numpy: canary's decode is 25% slower at p95 (within the buckets)
    seconds = {
        k: prometheus.observed[k]["vllm:request_decode_time_seconds"] for k in ("stable", "canary")
    }
    truth = np.quantile(seconds["canary"], 0.95) / np.quantile(seconds["stable"], 0.95)
    assert truth == pytest.approx(1.25, rel=0.06)


def test_stable_b_passes(
    prometheus: Server, budget: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, report, err = run(capsys, compare(prometheus, budget, STABLE, STABLE_B))
    assert code == 0, err
    assert report["verdict"] != "fail"
    assert not [f for f in report["findings"] if f["kind"] == "regression"]
    assert all(r["change"] != "regression" for r in (*report["slo"], *report["slices"]))


def test_numbers_are_promql_histogram_quantile(
    prometheus: Server, budget: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, report, err = run(capsys, compare(prometheus, budget, STABLE, CANARY))
    assert code == 1, err
    for name, family in (
        ("total", "vllm:e2e_request_latency_seconds"),
        ("ttft", "vllm:time_to_first_token_seconds"),
        ("prefill", "vllm:request_prefill_time_seconds"),
    ):
        for side, match in (("base_ms", STABLE), ("head_ms", CANARY)):
            assert row(report, name)[side] == pytest.approx(
                promql_p95(prometheus, family, match), rel=0.02
            ), (name, side)
    count = prometheus.query(f"sum(increase(vllm:e2e_request_latency_seconds_count{CANARY}[30m]))")
    assert report["requests"]["head"] == round(count)
    # the requests the data holds (within increase()'s extrapolation at the window's ends)
    assert count == pytest.approx(
        len(prometheus.observed["canary"]["vllm:e2e_request_latency_seconds"]), rel=0.03
    )


def test_first_bucket_is_unmeasured_not_a_number(
    prometheus: Server, budget: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """vLLM's queue at ~120 ms sits in its first bucket, le="0.3": no number, and why."""
    truth = np.quantile(prometheus.observed["stable"]["vllm:request_queue_time_seconds"], 0.95)
    assert truth < 0.3  # the data puts it there
    _, report, _ = run(capsys, compare(prometheus, budget, STABLE, STABLE_B))
    queue = row(report, "queue")
    assert queue["base_ms"] is None and queue["head_ms"] is None
    unmeasured = [f for f in report["findings"] if f["kind"] == "unmeasured"]
    assert [f["subject"] for f in unmeasured] == ["queue"]
    assert "first bucket (0, 300] ms" in unmeasured[0]["message"]


def test_the_trend_page_is_written_as_the_action_asks(
    prometheus: Server, budget: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    page = tmp_path / "trend.html"
    code, _, err = run(capsys, [*compare(prometheus, budget, STABLE, STABLE_B), f"--html={page}"])
    assert code == 0, err
    assert page.read_text(encoding="utf-8").startswith("<!")


def test_report_names_source_matchers_windows(
    prometheus: Server, budget: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        [*compare(prometheus, budget, STABLE, CANARY)[:-2], "--output", "markdown"], environ={}
    )
    # as a person reads it: the comment's escapes (no autolinks) undone
    text = html.unescape(capsys.readouterr().out).replace("\u200b", "")
    assert code == 1
    for said in (prometheus.url, 'version="stable"', 'version="canary"', "increase over the 30m",
                 "bucket estimates"):  # fmt: skip
        assert said in text, said


def test_after_vs_before_one_matcher(
    prometheus: Server, budget: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The same deployment's two halves of the window: one distribution, no regression."""
    argv = ["compare", "--prometheus", prometheus.url, "--head-match", STABLE, "--window", "15m",
            "--base-at", str(prometheus.end - 900), "--head-at", str(prometheus.end),
            "--budget", budget, "--output", "json"]  # fmt: skip
    code, report, err = run(capsys, argv)
    assert code == 0, err
    first = prometheus.query(
        f"sum(increase(vllm:e2e_request_latency_seconds_count{STABLE}[15m] offset 15m))"
    )
    assert report["requests"]["base"] == round(first)
    assert not [f for f in report["findings"] if f["kind"] == "regression"]


def test_check_reads_the_head(
    prometheus: Server, budget: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["check", "--prometheus", prometheus.url, "--head-match", CANARY, "--at",
            str(prometheus.end), "--budget", budget, "--output", "json"]  # fmt: skip
    code, report, err = run(capsys, argv)
    assert code == 0, err
    assert row(report, "total")["head_ms"] == pytest.approx(
        promql_p95(prometheus, "vllm:e2e_request_latency_seconds", CANARY), rel=0.02
    )


def one_line_error(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("budgetdiff: error: prometheus "), err
    return lines[0]


def test_unreachable_server_exits_2_in_one_line(
    budget: str, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    argv = ["compare", "--prometheus", url, "--base-match", STABLE, "--head-match", CANARY,
            "--budget", budget]  # fmt: skip
    waits: list[float] = []  # the retries' waits, not waited out
    assert main(argv, environ={}, sleep=waits.append) == 2
    assert backoff(waits, [PROMETHEUS.backoff_s(a) for a in (1, 2)])  # jittered
    line = one_line_error(capsys.readouterr().err)
    assert f"{url} cannot be reached" in line and "query: sum by (le) (increase(" in line


def test_bad_promql_matcher_exits_2(
    prometheus: Server, budget: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, compare(prometheus, budget, STABLE, '{version=~"(unclosed"}'))
    assert code == 2
    line = one_line_error(err)
    assert "refused the query (HTTP 400 bad_data" in line and prometheus.url in line
    assert 'version=~"(unclosed"' in line


def test_matcher_with_no_series_exits_2(
    prometheus: Server, budget: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, compare(prometheus, budget, STABLE, '{version="canry"}'))
    assert code == 2
    line = one_line_error(err)
    assert re.search(r'no latency histogram has series matching \{version="canry"\}', line)
    assert "--head-match" in line
    family = "vllm:e2e_request_latency_seconds_bucket"  # the headline's query
    assert f'query: sum by (le) (increase({family}{{version="canry"}}[30m]))' in line


def test_a_window_with_too_few_requests_is_inconclusive_with_the_count_needed(
    prometheus: Server, budget: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """30 s hold some 50 requests a side: too few to test a change at p95 (72 needed)."""
    argv = compare(prometheus, budget, STABLE, CANARY)
    argv[argv.index("--window") + 1] = "30s"
    code, report, err = run(capsys, argv)
    assert code == 0, err
    assert report["verdict"] == "warn"
    n = prometheus.query(f"sum(increase(vllm:e2e_request_latency_seconds_count{CANARY}[30s]))")
    assert report["requests"]["head"] == round(n) < 72
    decode = row(report, "decode")
    assert decode["change"] == "inconclusive" and decode["needed"] == 72
    [finding] = [f for f in report["findings"] if f["kind"] == "inconclusive"]
    assert "needs at least 72 per side" in finding["message"] and not finding["fails"]


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["compare", "--base", "b.csv"], "required: --head (or --prometheus URL)"),
        (["check", "--head", "h.csv", "--window", "30m"], "--window goes with --prometheus URL"),
        (["compare", "--prometheus", "http://127.0.0.1:9", "--head", "h.csv"], "drop --head"),
        (["check", "--prometheus", "http://u:pw@127.0.0.1:9", "--head-match", "{a=\"b\"}"],
         "the URL holds credentials"),
    ],
)  # fmt: skip
def test_the_flags_go_together(
    argv: list[str], said: str, budget: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*argv, "--budget", budget], environ={}) == 2
    err = capsys.readouterr().err
    assert said in err and len(err.strip().splitlines()) == 1 and "pw" not in err
