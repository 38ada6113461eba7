"""The Prometheus edge through its seam (an httpx MockTransport): credentials from the
environment only and never said, the bounded retry, one-line errors, the options checked
before anything is asked, and the budget's own families."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from budgetdiff.budget.file import parse_budget
from budgetdiff.errors import BudgetError, UsageError
from budgetdiff.sources.prometheus import LiveQuery, candidates, read_live
from budgetdiff.sources.prometheus_api import PrometheusClient, PrometheusError
from tests.support.waits import backoff

URL = "http://prometheus.test:9090"


def vector(*series: tuple[dict[str, str], str]) -> httpx.Response:
    result = [{"metric": labels, "value": [1.0, value]} for labels, value in series]
    return httpx.Response(
        200, json={"status": "success", "data": {"resultType": "vector", "result": result}}
    )


def histogram_server(family: str, seen: list[httpx.Request]) -> httpx.MockTransport:
    """Answers `family`'s bucket, count and sum queries (100 requests, 0.5 s to 2 s); nothing
    for any other family."""

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        q = request.url.params["query"]
        if f"{family}_bucket" in q:
            return vector(({"le": "0.5"}, "10"), ({"le": "1"}, "60"), ({"le": "2"}, "100"),
                          ({"le": "+Inf"}, "100"))  # fmt: skip
        if f"{family}_count" in q:
            return vector(({}, "100"))
        if f"{family}_sum" in q:
            return vector(({}, "95.5"))
        return vector()

    return httpx.MockTransport(answer)


def query(**kw: object) -> LiveQuery:
    given: dict[str, object] = {"base_match": None, "head_match": '{version="canary"}',
                                "window": "30m", "compare": False, "now": 1_000_000.0}  # fmt: skip
    return LiveQuery.parse(URL, **{**given, **kw})  # type: ignore[arg-type]


def test_a_bearer_token_from_the_environment_only() -> None:
    seen: list[httpx.Request] = []
    transport = histogram_server("vllm:e2e_request_latency_seconds", seen)
    _, head = read_live(query(), {"PROMETHEUS_TOKEN": "s3cret"}, transport=transport)
    assert {r.headers["authorization"] for r in seen} == {"Bearer s3cret"}
    assert "s3cret" not in json.dumps({k: str(v) for k, v in head.meta.items()}) + head.source


def test_basic_auth_from_the_environment() -> None:
    seen: list[httpx.Request] = []
    env = {"PROMETHEUS_USERNAME": "gate", "PROMETHEUS_PASSWORD": "pw"}
    read_live(query(), env, transport=histogram_server("vllm:e2e_request_latency_seconds", seen))
    assert seen[0].headers["authorization"] == httpx.BasicAuth("gate", "pw")._auth_header


@pytest.mark.parametrize(
    "env",
    [{"PROMETHEUS_TOKEN": "t", "PROMETHEUS_USERNAME": "u", "PROMETHEUS_PASSWORD": "p"},
     {"PROMETHEUS_USERNAME": "u"}],
)  # fmt: skip
def test_half_or_double_credentials_are_refused(env: dict[str, str]) -> None:
    with pytest.raises(UsageError) as e:
        PrometheusClient(URL, env)
    assert "p" not in str(e.value).split("PROMETHEUS")[0]  # the values are never said


def test_credentials_in_the_url_are_refused_unsaid() -> None:
    with pytest.raises(UsageError) as e:
        PrometheusClient("http://gate:hunter2@prometheus.test", {})
    assert "hunter2" not in str(e.value)


def test_a_busy_server_is_asked_again_then_answers() -> None:
    calls: list[int] = []
    inner = histogram_server("vllm:e2e_request_latency_seconds", [])

    def flaky(request: httpx.Request) -> httpx.Response:
        calls.append(1)
        return httpx.Response(503) if len(calls) == 1 else inner.handle_request(request)

    waits: list[float] = []
    _, head = read_live(query(), {}, transport=httpx.MockTransport(flaky), sleep=waits.append)
    assert backoff(waits, [0.5])  # jittered
    assert head.summary_count == 100


def test_a_server_that_stays_down_is_one_line_after_three_tries() -> None:
    tries: list[int] = []

    def down(request: httpx.Request) -> httpx.Response:
        tries.append(1)
        raise httpx.ConnectError("connection refused")

    with pytest.raises(PrometheusError) as e:
        read_live(query(), {}, transport=httpx.MockTransport(down), sleep=lambda s: None)
    assert len(tries) == 3
    message = str(e.value)
    assert "\n" not in message
    assert message.startswith(f"prometheus {URL} cannot be reached (ConnectError")
    assert "query: sum by (le) (increase(" in message


def test_http_401_says_where_credentials_go() -> None:
    transport = httpx.MockTransport(lambda r: httpx.Response(401, text="Unauthorized"))
    with pytest.raises(PrometheusError, match=r"answered HTTP 401 .set PROMETHEUS_TOKEN"):
        read_live(query(), {}, transport=transport)


def test_not_prometheus_json_is_refused() -> None:
    transport = httpx.MockTransport(lambda r: httpx.Response(200, text="<html>login</html>"))
    with pytest.raises(PrometheusError, match="not Prometheus' JSON"):
        read_live(query(), {}, transport=transport)


def test_an_answer_past_the_size_bound_is_refused() -> None:
    big = httpx.MockTransport(lambda r: httpx.Response(200, content=b" " * (9 * 1024 * 1024)))
    with pytest.raises(PrometheusError, match="answered with over 8388608 bytes"):
        read_live(query(), {}, transport=big)


def test_the_histogram_and_the_mean_in_ms() -> None:
    _, head = read_live(
        query(), {}, transport=histogram_server("vllm:e2e_request_latency_seconds", [])
    )
    h = head.histograms["total"]
    assert list(h.bounds) == [500.0, 1000.0, 2000.0, float("inf")]
    assert list(h.counts) == [10.0, 50.0, 40.0, 0.0]
    assert head.meta["sum:total"] == pytest.approx(95_500.0)
    assert head.meta["count:total"] == 100.0


def test_the_budgets_family_is_the_one_asked(tmp_path: Path) -> None:
    budget = parse_budget(
        "slices: {decode: 900}\nprometheus: {metrics: {decode: my_decode_seconds}}\n", "b.yml"
    )
    seen: list[httpx.Request] = []
    q = query(families=budget.prometheus.metrics)
    _, head = read_live(q, {}, transport=histogram_server("my_decode_seconds", seen))
    assert "decode" in head.histograms
    assert candidates(budget.prometheus.metrics)["decode"] == ("my_decode_seconds",)
    assert any(
        'my_decode_seconds_bucket{version="canary"}[30m]' in r.url.params["query"] for r in seen
    )


def test_the_budget_maps_only_rows_of_the_report() -> None:
    with pytest.raises(BudgetError, match=r"prometheus\.metrics\.decoder"):
        parse_budget(
            "slices: {decode: 900}\nprometheus: {metrics: {decoder: x_seconds}}\n", "b.yml"
        )
    with pytest.raises(BudgetError, match=r"prometheus\.metrics"):
        parse_budget("prometheus: {metrics: {decode: 'x{a=\"b\"}'}}\n", "b.yml")


@pytest.mark.parametrize(
    ("kw", "said"),
    [
        ({"head_match": '{version="c"}[1m])) or vector(1) or up{a="b"}'}, "separate the matchers"),
        ({"head_match": '{version="c",}) or vector(1) or up{a="b"}'}, "not label matchers"),
        ({"head_match": '{version="c"}) or vector(1) #'}, "in braces"),
        ({"head_match": 'version="c"'}, "in braces"),
        ({"head_match": '{le="0.5"}'}, "'le' is budgetdiff's"),
        ({"window": "30 minutes"}, "PromQL duration"),
        ({"at": "yesterday"}, "RFC 3339"),
        ({"at": "2026-12-01T21:00:00"}, "time zone"),
        ({"at": "1", "head_at": "2"}, "not both"),
        ({"at": "nan"}, "after 1970"),
        ({"base_match": '{version="s"}'}, "check reads one side"),
    ],
)
def test_options_are_checked_before_anything_is_asked(kw: dict[str, object], said: str) -> None:
    with pytest.raises(UsageError, match=said.replace("(", r"\(")):
        query(**kw)


def test_matchers_and_times_parsed() -> None:
    q = query(head_match='{ version = "canary" , pod=~"a.*" }', at="2026-12-01T21:00:00Z")
    assert q.head.match == 'version="canary",pod=~"a.*"'
    assert q.head.when == "2026-12-01T21:00:00Z"
    with pytest.raises(UsageError, match="same series over the same window"):
        query(base_match='{version="canary"}', compare=True)
