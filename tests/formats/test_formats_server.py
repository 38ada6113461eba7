"""Server-side and aggregate readers (OTLP, Prometheus, inference-perf) and combining files."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from budgetdiff.errors import InputError
from budgetdiff.formats import ReadOptions, aiperf, inference_perf, otlp, prometheus
from budgetdiff.formats.agent import traces as agent_traces
from budgetdiff.formats.combine import combine
from budgetdiff.table import Histogram, Itl, Run, histogram_quantile
from tests.support.paths import SAMPLES, sample_files, sample_path

GEN = SAMPLES / "generated"
OPTS = ReadOptions()


def truth(folder: str) -> list[dict[str, float]]:
    path = GEN / folder / "mock_server_timings.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def expected_format(path: Path) -> str | None:
    rel = sample_path(path)
    if rel.startswith("generated/otlp-json/") or rel == "fetched/otel/trace.json":
        return "otlp"
    if rel.startswith("otel-genai/") and path.name == "spans.otlp.jsonl":  # client spans
        return "otlp"
    if rel.startswith("agent/traces-"):
        return "agent-traces"
    if path.suffix == ".prom":
        return "prometheus"
    if "inference-perf" in rel and (
        path.name.endswith(
            ("lifecycle_metrics.json", "prometheus_metrics.json", "lifecycle_metrics.yaml")
        )
        or "_partial_stage_" in path.name  # its llm-d benchmark report
    ):
        return "inference-perf"
    return None


def test_sniff_claims_exactly_our_files() -> None:
    claimed = 0
    for path in sample_files():
        head = path.read_bytes()[:65536]
        want = expected_format(path)
        for mod in (agent_traces, otlp, prometheus, inference_perf):
            # agent traces are OTLP/JSON too: detection asks agent-traces first
            claims = ("otlp", "agent-traces") if mod is otlp else (mod.NAME,)
            assert mod.sniff(head, path.name) == (want in claims), (mod.NAME, path)
        claimed += want is not None
    assert claimed >= 20


def test_every_sample_of_ours_loads() -> None:
    mods = {
        "otlp": otlp,
        "agent-traces": agent_traces,
        "prometheus": prometheus,
        "inference-perf": inference_perf,
    }
    for path in sample_files():
        fmt = expected_format(path)
        if fmt is None or path.name == "trace.json":
            continue
        runs = mods[fmt].read(path.read_bytes(), path.name, OPTS)
        assert len(runs) == 1, path
        run = runs[0]
        assert run.n > 0 or run.summary or run.histograms, path


# ------------------------------------------------------------------ OTLP


@pytest.mark.parametrize(
    ("spans", "server"),
    [
        ("otlp-json/vllm-base/vllm_style_server_spans.otlp.json", "vllm/base"),
        ("otlp-json/vllm-head/vllm_style_server_spans.otlp.json", "vllm/head"),
        ("otlp-json/aiperf-base/server_spans.otlp.json", "aiperf/base"),
        ("otlp-json/aiperf-head/server_spans.otlp.json", "aiperf/head"),
    ],
)
def test_otlp_matches_server_ground_truth(spans: str, server: str) -> None:
    path = GEN / spans
    (run,) = otlp.read(path.read_bytes(), path.name, OPTS)
    rows = truth(server)
    assert run.n == len(rows)
    assert list(run.slices) == ["queue", "prefill", "decode"]
    for ours, key in ((run.slices["queue"], "queue_ms"), (run.slices["decode"], "decode_ms")):
        theirs = np.array([r[key] for r in rows])
        assert np.median(ours) == pytest.approx(np.median(theirs), abs=1e-6)
        np.testing.assert_allclose(np.sort(ours), np.sort(theirs), atol=1e-6)
    assert run.ttft is not None and run.total is not None
    theirs_ttft = np.sort([r["ttft_server_ms"] for r in rows])
    np.testing.assert_allclose(np.sort(run.ttft), theirs_ttft, atol=1e-6)
    # the server's TTFT is its queue + prefill
    np.testing.assert_allclose(run.slices["queue"] + run.slices["prefill"], run.ttft, atol=1e-3)
    assert run.request_id is not None and all(r.startswith("chatcmpl-") for r in run.request_id)
    assert np.nanmedian(run.output_tokens) > 0  # type: ignore[arg-type]


def _span(
    trace: str, name: str, start: int, end: int, attrs: dict[str, object]
) -> dict[str, object]:
    def typed(v: object) -> dict[str, object]:
        if isinstance(v, str):
            return {"stringValue": v}
        if isinstance(v, int):
            return {"intValue": str(v)}
        return {"doubleValue": v}

    return {
        "traceId": trace,
        "spanId": f"{start:016x}",
        "name": name,
        "startTimeUnixNano": str(start),
        "endTimeUnixNano": str(end),
        "attributes": [{"key": k, "value": typed(v)} for k, v in attrs.items()],
    }


def _otlp(spans: list[dict[str, object]]) -> bytes:
    doc = {"resourceSpans": [{"resource": {}, "scopeSpans": [{"scope": {}, "spans": spans}]}]}
    return json.dumps(doc).encode()


def test_otlp_user_spans_per_slice_and_status() -> None:
    ms = 1_000_000
    spans = [
        _span(
            "t1",
            "llm_request",
            10 * ms,
            500 * ms,
            {
                "gen_ai.request.id": "chatcmpl-a",
                "gen_ai.latency.time_in_queue": 0.02,
                "gen_ai.latency.time_in_model_prefill": 0.08,
                "gen_ai.latency.time_in_model_decode": 0.3,
                "gen_ai.latency.time_to_first_token": 0.1,
                "gen_ai.usage.completion_tokens": 30,
            },
        ),
        _span("t1", "app", 0, 4 * ms, {}),
        _span("t1", "app", 500 * ms, 506 * ms, {}),
        _span("t2", "app", 0, 7 * ms, {}),
        _span("t2", "ignored", 0, 9 * ms, {}),
    ]
    spans[0]["status"] = {"code": 2}
    (run,) = otlp.read(_otlp(spans), "s.json", ReadOptions(slices=("queue", "app")))
    assert run.n == 2
    assert list(run.request_id) == ["chatcmpl-a", "t2"]  # type: ignore[arg-type]
    np.testing.assert_allclose(run.slices["app"], [10, 7])
    np.testing.assert_allclose(run.slices["queue"][:1], [20])
    assert np.isnan(run.slices["queue"][1])
    assert list(run.ok) == [False, True]  # type: ignore[arg-type]
    assert run.output_tokens[0] == 30  # type: ignore[index]


def test_otlp_json_lines_export() -> None:
    one = _span("t", "queue", 0, 3_000_000, {})
    two = _span("u", "queue", 0, 5_000_000, {})
    data = _otlp([one]) + b"\n" + _otlp([two]) + b"\n"
    (run,) = otlp.read(data, "f.jsonl", ReadOptions(slices=("queue",)))
    np.testing.assert_allclose(run.slices["queue"], [3, 5])


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda s: s.pop("startTimeUnixNano"), r"spans\[0\]: no 'startTimeUnixNano'"),
        (
            lambda s: s["attributes"].__setitem__(
                0, {"key": "gen_ai.latency.e2e", "value": {"doubleValue": "slow"}}
            ),
            r"attribute 'gen_ai.latency.e2e': doubleValue 'slow' is not valid",
        ),
        (
            lambda s: s["attributes"].__setitem__(
                0, {"key": "gen_ai.usage.prompt_tokens", "value": {"intValue": "1.5x"}}
            ),
            r"attribute 'gen_ai.usage.prompt_tokens': intValue '1.5x'",
        ),
        (lambda s: s.__setitem__("endTimeUnixNano", "1"), "ends before it starts"),
    ],
)
def test_otlp_broken_spans(mutate: object, message: str) -> None:
    span = _span("t", "llm_request", 5, 10, {"gen_ai.latency.time_in_queue": 0.1, "x": 1})
    mutate(span)  # type: ignore[operator]
    with pytest.raises(InputError, match=rf"^otlp: b\.json: .*{message}"):
        otlp.read(_otlp([span]), "b.json", OPTS)


def test_otlp_truncated_and_wrong_files() -> None:
    path = GEN / "otlp-json/vllm-base/vllm_style_server_spans.otlp.json"
    data = path.read_bytes()
    with pytest.raises(InputError, match=r"^otlp: cut.json: invalid JSON"):
        otlp.read(data[: len(data) // 2], "cut.json", OPTS)
    other = GEN / "aiperf/base/profile_export.jsonl"
    with pytest.raises(InputError, match=r"^otlp: profile_export.jsonl: no 'resourceSpans'"):
        otlp.read(other.read_bytes(), "profile_export.jsonl", OPTS)
    example = SAMPLES / "fetched/otel/trace.json"
    with pytest.raises(InputError, match=r"no request spans .*span names are: I'm a server span"):
        otlp.read(example.read_bytes(), "trace.json", OPTS)


# ------------------------------------------------------------------ Prometheus


def _scrape(side: str, which: str) -> list[Run]:
    path = GEN / f"prometheus/vllm-{side}/metrics_{which}.prom"
    return prometheus.read(path.read_bytes(), path.name, OPTS)


@pytest.mark.parametrize("side", ["base", "head"])
def test_prometheus_scrape_difference_matches_server(side: str) -> None:
    after, before = _scrape(side, "after"), _scrape(side, "before")
    assert set(after[0].histograms) == {"queue", "prefill", "decode", "ttft", "total", "tpot"}
    assert after[0].histograms["decode"].bounds[-1] == np.inf
    (run,) = combine([after, before], ["after.prom", "before.prom"])  # order does not matter
    rows = truth(f"vllm/{side}")
    assert run.summary_count == after[0].summary_count - before[0].summary_count  # type: ignore[operator]
    assert run.n == 0 and run.summary_count and run.summary_count <= len(rows)
    decode = np.array([r["decode_ms"] for r in rows])
    est, low, high = histogram_quantile(run.histograms["decode"], 50)
    assert low < np.median(decode) <= high
    assert low <= est <= high
    # the mean from _sum/_count is exact, unlike the buckets
    mean = float(run.meta["sum:decode"]) / float(run.meta["count:decode"])
    assert mean == pytest.approx(decode.mean(), rel=0.03)
    _, q_low, q_high = histogram_quantile(run.histograms["queue"], 50)
    assert (q_low, q_high) == (0.0, 300.0)  # vLLM's buckets are far too coarse for queue


def test_prometheus_base_head_decode_grows() -> None:
    runs = {
        s: combine([_scrape(s, "before"), _scrape(s, "after")], ["b", "a"])[0]
        for s in ("base", "head")
    }
    base = float(runs["base"].meta["sum:decode"]) / float(runs["base"].meta["count:decode"])
    head = float(runs["head"].meta["sum:decode"]) / float(runs["head"].meta["count:decode"])
    assert head / base == pytest.approx(1.19, abs=0.04)


PROM = """# HELP vllm:e2e_request_latency_seconds x
# TYPE vllm:e2e_request_latency_seconds histogram
vllm:e2e_request_latency_seconds_bucket{le="0.1",model_name="a \\"q\\", b"} 1
vllm:e2e_request_latency_seconds_bucket{le="0.5",model_name="a \\"q\\", b"} 3
vllm:e2e_request_latency_seconds_bucket{le="+Inf",model_name="a \\"q\\", b"} 4
vllm:e2e_request_latency_seconds_bucket{model_name="other",le="0.1"} 0
vllm:e2e_request_latency_seconds_bucket{model_name="other",le="0.5"} 2
vllm:e2e_request_latency_seconds_bucket{model_name="other",le="+Inf"} 2 1700000000000
vllm:e2e_request_latency_seconds_count{model_name="other"} 2
vllm:e2e_request_latency_seconds_sum{model_name="other"} 0.6
vllm:num_requests_running{model_name="other"} 3
"""


def test_prometheus_labels_escaping_and_sum_over_label_sets() -> None:
    assert prometheus.sniff(PROM.encode(), "metrics")
    (run,) = prometheus.read(PROM.encode(), "m.prom", OPTS)
    h = run.histograms["total"]
    np.testing.assert_array_equal(h.bounds, [100, 500, np.inf])
    np.testing.assert_array_equal(h.counts, [1, 4, 1])
    assert run.summary_count == 6
    assert run.meta["sum:total"] == pytest.approx(600)


def test_histogram_quantile_like_prometheus() -> None:
    h = Histogram(bounds=np.array([100.0, 200.0, 400.0, np.inf]), counts=np.array([10.0, 10, 0, 0]))
    assert histogram_quantile(h, 50) == (100.0, 0.0, 100.0)
    assert histogram_quantile(h, 75) == (150.0, 100.0, 200.0)
    assert histogram_quantile(h, 25) == (50.0, 0.0, 100.0)
    tail = Histogram(bounds=np.array([100.0, np.inf]), counts=np.array([1.0, 3]))
    assert histogram_quantile(tail, 95) == (100.0, 100.0, np.inf)
    empty = Histogram(bounds=np.array([1.0, np.inf]), counts=np.zeros(2))
    assert all(np.isnan(histogram_quantile(empty, 50)))
    with pytest.raises(ValueError):
        histogram_quantile(h, 0)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (PROM.replace(" 3\n", " three\n", 1), r"line 4: 'three' is not a number"),
        (PROM[: PROM.index("le=", 200) + 5], r"line \d: not a sample line"),
        (PROM.replace('le="+Inf"', 'le="9"'), r"no le=\"\+Inf\" bucket"),
        (PROM.replace("} 4\n", "} 0\n", 1), "not cumulative"),
        ("# TYPE up gauge\nup 1\n", "no latency histogram"),
        ("", "the file is empty"),
    ],
)
def test_prometheus_broken(text: str, message: str) -> None:
    with pytest.raises(InputError, match=rf"^prometheus: m\.prom: .*{message}"):
        prometheus.read(text.encode(), "m.prom", OPTS)


def test_prometheus_counter_reset_and_wrong_file() -> None:
    after, before = _scrape("base", "after"), _scrape("base", "before")
    h = after[0].histograms["decode"]
    top = int(np.argmax(h.counts))
    moved = h.counts.copy()
    moved[-1] += moved[top] + 10
    moved[top] = 0
    reset = Run(
        source="restarted.prom",
        n=0,
        histograms={**after[0].histograms, "decode": Histogram(h.bounds, moved)},
    )
    with pytest.raises(InputError, match=r"counter reset between scrapes .'decode' went down"):
        combine([after, [reset]], ["after.prom", "restarted.prom"])
    path = GEN / "prometheus/vllm-base/metrics_after.prom"
    text = path.read_text().replace("_created{", '_created{x="1",', 1)
    first = text.index("_created{")
    line_end = text.index("\n", first)
    restarted = text[:first] + text[first:line_end].rsplit(" ", 1)[0] + " 2e9" + text[line_end:]
    again = prometheus.read(restarted.encode(), "restarted.prom", OPTS)
    with pytest.raises(InputError, match=r"counter reset between scrapes .* created anew"):
        combine([before, again], ["before.prom", "restarted.prom"])
    with pytest.raises(InputError, match="no request finished between the scrapes"):
        combine([before, before], ["before.prom", "again.prom"])
    other = GEN / "vllm/base/vllm_bench_serve.json"
    with pytest.raises(InputError, match=r"^prometheus: vllm_bench_serve.json: line 1"):
        prometheus.read(other.read_bytes(), "vllm_bench_serve.json", OPTS)


# ------------------------------------------------------------------ inference-perf


@pytest.mark.parametrize("side", ["base", "head"])
def test_inference_perf_per_request(side: str) -> None:
    path = GEN / f"inference-perf/{side}/per_request_lifecycle_metrics.json"
    (run,) = inference_perf.read(path.read_bytes(), path.name, OPTS)
    rows = truth(f"inference-perf/{side}")
    assert run.n == len(rows) == 100
    assert list(run.slices) == ["first_token", "decode"]
    assert run.ttft is not None and run.total is not None and run.itl is not None
    np.testing.assert_allclose(run.slices["first_token"] + run.slices["decode"], run.total)
    server_decode = np.median([r["decode_ms"] for r in rows])
    # the client sees the server's decode plus a little network and parsing
    assert 0 <= np.median(run.slices["decode"]) - server_decode < 10
    assert np.median(run.ttft) > np.median([r["ttft_server_ms"] for r in rows])
    assert np.median(run.itl.values) == pytest.approx(10 if side == "base" else 12, rel=0.1)
    assert len(run.itl.offsets) == run.n + 1
    assert np.nanmin(run.output_tokens) == 64  # type: ignore[arg-type]


def test_inference_perf_stage_aggregates() -> None:
    path = SAMPLES / "fetched/inference-perf/vllm_stage_0_lifecycle_metrics.json"
    raw = json.loads(path.read_text())
    (run,) = inference_perf.read(path.read_bytes(), path.name, OPTS)
    assert run.n == 0 and run.scenario == "stage 0"
    assert run.summary_count == raw["successes"]["count"]
    ttft = raw["successes"]["latency"]["time_to_first_token"]
    assert run.summary["ttft"][95.0] == pytest.approx(ttft["p95"] * 1000)
    assert run.summary["ttft"][50.0] == pytest.approx(ttft["median"] * 1000)
    assert run.summary["first_token"] == run.summary["ttft"]
    assert run.meta["requested_rate"] == raw["load_summary"]["requested_rate"]
    server = SAMPLES / "fetched/inference-perf/vllm_summary_prometheus_metrics.json"
    (srv,) = inference_perf.read(server.read_bytes(), server.name, OPTS)
    assert srv.meta["side"] == "server" and srv.summary_count == 81418
    assert srv.summary["ttft"][99.0] == pytest.approx(4961.079)
    assert set(srv.summary) == {"total", "ttft", "itl"}


def test_inference_perf_base_head_pair_share_a_scenario() -> None:
    base = SAMPLES / "fetched/inference-perf/vllm_stage_6_lifecycle_metrics.json"
    head = SAMPLES / "fetched/inference-perf/vllm-eagle_stage_6_lifecycle_metrics.json"
    (b,) = inference_perf.read(base.read_bytes(), base.name, OPTS)
    (h,) = inference_perf.read(head.read_bytes(), head.name, OPTS)
    assert b.scenario == h.scenario == "stage 6"
    assert b.summary["tpot"][50.0] != h.summary["tpot"][50.0]


def test_inference_perf_broken() -> None:
    path = GEN / "inference-perf/base/per_request_lifecycle_metrics.json"
    data = path.read_bytes()
    with pytest.raises(InputError, match=r"^inference-perf: p.json: is not valid JSON at line 6"):
        cut = data.index(b'"response"') + 60  # inside the first response string, on line 6
        inference_perf.read(data[:cut], "p.json", OPTS)
    records = json.loads(data)
    records[3]["start_time"] = "soon"
    with pytest.raises(InputError, match=r"request 3: 'start_time' is 'soon'"):
        inference_perf.read(json.dumps(records).encode(), "p.json", OPTS)
    del records[3]["start_time"]
    with pytest.raises(InputError, match=r"request 3: 'start_time' is None"):
        inference_perf.read(json.dumps(records).encode(), "p.json", OPTS)
    stage = {"load_summary": {}, "successes": {"count": 3, "latency": {"x": {"p50": 1}}}}
    with pytest.raises(InputError, match=r"no latency percentiles under 'successes.latency'"):
        inference_perf.read(json.dumps(stage).encode(), "s.json", OPTS)
    stage["successes"]["latency"] = {"request_latency": {"p50": "fast"}}  # type: ignore[index]
    with pytest.raises(InputError, match=r"successes.latency.request_latency.p50 is 'fast'"):
        inference_perf.read(json.dumps(stage).encode(), "s.json", OPTS)
    other = GEN / "guidellm/base/benchmarks.json"
    with pytest.raises(InputError, match=r"^inference-perf: benchmarks.json: expected"):
        inference_perf.read(other.read_bytes(), "benchmarks.json", OPTS)


# ------------------------------------------------------------------ combine


def _client(
    ids: list[str], ttft: list[float], total: list[float], ok: list[bool] | None = None
) -> Run:
    n = len(ids)
    t = np.array(ttft)
    return Run(
        source="client.jsonl",
        n=n,
        slices={"first_token": t, "decode": np.array(total) - t},
        ttft=t,
        total=np.array(total),
        ok=None if ok is None else np.array(ok),
        request_id=np.array(ids),
        itl=Itl(values=np.arange(2.0 * n), offsets=np.arange(0, 2 * n + 1, 2)),
    )


def _server(ids: list[str], queue: list[float], prefill: list[float], decode: list[float]) -> Run:
    q, p = np.array(queue), np.array(prefill)
    return Run(
        source="spans.json",
        n=len(ids),
        slices={"queue": q, "prefill": p, "decode": np.array(decode)},
        ttft=q + p,
        request_id=np.array(ids),
        meta={"side": "server"},
    )


def test_combine_passthrough() -> None:
    run = _client(["a"], [1], [2])
    assert combine([[run]], ["c"]) == [run]


def test_join_strips_vllm_prefix_and_splits_network() -> None:
    ids = [f"r{i}" for i in range(10)]
    client = _client(ids, [110.0] * 9 + [99.0], [500.0] * 10)
    server = _server(
        [f"chatcmpl-{i}" for i in reversed(ids)], [20.0] * 10, [80.0] * 10, [390.0] * 10
    )
    (run,) = combine([[client], [server]], ["client.jsonl", "spans.json"])
    assert list(run.slices) == ["network", "queue", "prefill", "decode"]
    np.testing.assert_allclose(run.slices["network"], [10.0] * 9 + [0.0])
    assert run.meta["network_clipped"] == 1 and run.meta["network_clipped_max_ms"] == 1.0
    np.testing.assert_allclose(run.ttft, client.ttft)  # type: ignore[arg-type]
    np.testing.assert_allclose(run.total, client.total)  # type: ignore[arg-type]
    assert run.meta["matched"] == 10


def test_join_meta_counts_are_always_set() -> None:
    ids = [f"r{i}" for i in range(10)]
    client = _client(ids, [110.0] * 10, [500.0] * 10)
    server = _server(ids, [20.0] * 10, [80.0] * 10, [390.0] * 10)
    (run,) = combine([[client], [server]], ["client.jsonl", "spans.json"])
    assert run.meta["matched"] == 10.0 and run.meta["unmatched"] == 0.0
    assert run.meta["network_clipped"] == 0.0 and run.meta["network_clipped_max_ms"] == 0.0


def test_join_needs_90_percent() -> None:
    ids = [f"r{i}" for i in range(10)]
    client = _client(ids, [110.0] * 10, [500.0] * 10)
    server = _server([*ids[:8], "x", "y"], [20.0] * 10, [80.0] * 10, [390.0] * 10)
    with pytest.raises(InputError, match=r"client.jsonl \+ spans.json: only 8 of 10 requests"):
        combine([[client], [server]], ["client.jsonl", "spans.json"])


def test_join_keeps_failed_unmatched_and_drops_succeeded_unmatched() -> None:
    ids = [f"r{i}" for i in range(12)]
    ok = [True] * 11 + [False]
    client = _client(ids, [110.0] * 12, [500.0] * 12, ok)
    server = _server(ids[:10], [20.0] * 10, [80.0] * 10, [390.0] * 10)
    (run,) = combine([[client], [server]], ["client.jsonl", "spans.json"])
    assert run.n == 11  # r10 (succeeded, no span) dropped, r11 (failed) kept
    assert list(run.request_id)[-1] == "r11"  # type: ignore[index]
    assert run.ok is not None and not run.ok[-1]
    assert run.meta["unmatched"] == 1
    assert run.itl is not None and len(run.itl.offsets) == 12
    np.testing.assert_allclose(run.itl.values[-2:], [22, 23])


def test_join_errors_without_ids() -> None:
    client = _client(["a"], [1], [2])
    client = Run(**{**client.__dict__, "request_id": None})
    with pytest.raises(InputError, match="no request ids"):
        combine([[client], [_server(["a"], [1], [1], [1])]], ["c", "s"])
    # two client files are runs of one side only when they have the same columns
    with pytest.raises(InputError, match="cannot combine these files"):
        combine([[_client(["a"], [1], [2])], [client]], ["c1", "c2"])


@pytest.mark.parametrize("side", ["base", "head"])
def test_join_aiperf_client_with_server_spans(side: str) -> None:
    client_path = GEN / f"aiperf/{side}/profile_export.jsonl"
    span_path = GEN / f"otlp-json/aiperf-{side}/server_spans.otlp.json"
    client = aiperf.read(client_path.read_bytes(), client_path.name, OPTS)
    spans = otlp.read(span_path.read_bytes(), span_path.name, OPTS)
    (run,) = combine([client, spans], [client_path.name, span_path.name])
    rows = truth(f"aiperf/{side}")
    assert run.n == len(rows) == 100 and run.meta["matched"] == 100
    by_id = {r["x_request_id"]: r for r in rows}
    queue = np.array([by_id[str(i)]["queue_ms"] for i in run.request_id])  # type: ignore[union-attr]
    np.testing.assert_allclose(run.slices["queue"], queue, atol=1e-6)
    assert (run.slices["network"] >= 0).all()
    assert 0 < np.median(run.slices["network"]) < 20  # localhost: a few ms
    assert run.ttft is not None
    unclipped = run.slices["network"] > 0
    parts = run.slices["network"] + run.slices["queue"] + run.slices["prefill"]
    np.testing.assert_allclose(parts[unclipped], run.ttft[unclipped], atol=1e-6)
