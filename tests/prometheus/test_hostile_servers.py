"""`compare --prometheus` against hostile servers on 127.0.0.1 (issue 35): a real HTTP server in
a thread that dribbles, echoes credentials, nests its JSON a million deep, or has a side with
no requests; every case through the CLI, each ending as docs/security.md and
docs/deploy-gate.md say."""

from __future__ import annotations

import base64
import json
import math
import re
import time
from pathlib import Path

import pytest

from budgetdiff.cli import main
from budgetdiff.sources.deadline import DEADLINE_ENV
from tests.support.hostile_http import Answer, HostileServer, Seen, json_answer

FAMILY = "vllm:e2e_request_latency_seconds"
STABLE, CANARY = '{version="stable"}', '{version="canary"}'
TOKEN = "s3cret-token-0123456789"
# a budget on the end to end alone: the fake servers have only that family
BUDGET = "percentile: 95\nslo: {total: 6000}\n"


@pytest.fixture
def budget(tmp_path: Path) -> str:
    path = tmp_path / "budget.yml"
    path.write_text(BUDGET, encoding="utf-8")
    return str(path)


def vector(*series: tuple[dict[str, str], float]) -> Answer:
    result = [{"metric": labels, "value": [1.0, repr(value)]} for labels, value in series]
    return json_answer({"status": "success", "data": {"resultType": "vector", "result": result}})


def prometheus(requests: dict[str, int]) -> object:
    """A Prometheus with the end-to-end family only: `requests[version]` requests a side,
    10% under 0.5 s, 60% under 1 s, all under 2 s."""

    def answer(seen: Seen) -> Answer:
        q = seen.query.get("query", "")
        side = next((v for v in requests if f'version="{v}"' in q), None)
        if side is None or FAMILY not in q:
            return vector()
        n = requests[side]
        if "_bucket" in q:
            cumulative = (("0.5", 0.1 * n), ("1", 0.6 * n), ("2", n), ("+Inf", n))
            return vector(*(({"le": le}, c) for le, c in cumulative))
        return vector(({}, float(n) if "_count" in q else 0.9 * n))

    return answer


def compare(url: str, budget: str, *more: str) -> list[str]:
    return ["compare", "--prometheus", url, "--base-match", STABLE, "--head-match", CANARY,
            "--at", "1000000", "--budget", budget, "--output", "json", *more]  # fmt: skip


def run(
    capsys: pytest.CaptureFixture[str], argv: list[str], env: dict[str, str] | None = None
) -> tuple[int, str, str]:
    code = main(argv, environ=env or {}, sleep=lambda s: None)
    out, err = capsys.readouterr()
    return code, out, err


def one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("budgetdiff: error: prometheus "), err
    assert "bug" not in lines[0] and "Traceback" not in err
    return lines[0]


# -- the deadline (item 2) ------------------------------------------------------------------


def test_a_dribbling_answer_ends_by_the_deadline_naming_host_and_step(
    budget: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A valid body, one byte every 3 s: no per-read timeout (30 s) trips, so only a total
    deadline ends it, and it ends it on time: not at the next byte, but at the deadline."""
    body = json.dumps({"status": "success", "data": {"resultType": "vector", "result": []}})

    def dribble(seen: Seen) -> Answer:
        return Answer(200, body.encode(), {"Content-Type": "application/json"}, gap_s=3.0)

    with HostileServer(dribble) as server:
        code, out, err = run(capsys, compare(server.url, budget), {DEADLINE_ENV: "2"})
        took = time.monotonic() - server.seen[0].at  # from the first request on
    assert code == 2 and out == ""
    line = one_line(err)
    assert server.host in line
    assert re.search(r"reading the (base|head) side did not finish within its 2 s deadline", line)
    assert DEADLINE_ENV in line
    assert len(server.seen) == 1  # the step gave up: no retry past its deadline
    assert took < 2.8  # by the 2 s deadline (the first byte comes at 3 s), give or take load


def test_the_deadline_is_checked_before_anything_is_asked(
    budget: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with HostileServer(prometheus({"stable": 100, "canary": 100})) as server:
        code, _, err = run(capsys, compare(server.url, budget), {DEADLINE_ENV: "soon"})
    assert code == 2
    assert DEADLINE_ENV in err and "at most 3600" in err
    assert server.seen == []


def test_a_rate_limit_is_waited_out_as_the_server_asks(
    budget: str, capsys: pytest.CaptureFixture[str]
) -> None:
    healthy = prometheus({"stable": 100, "canary": 100})
    calls: list[int] = []

    def limited(seen: Seen) -> Answer:
        calls.append(1)
        if len(calls) == 1:
            return Answer(429, b"slow down", {"Retry-After": "3"})
        return healthy(seen)  # type: ignore[operator]

    waits: list[float] = []
    with HostileServer(limited) as server:
        code = main(compare(server.url, budget), environ={}, sleep=waits.append)
    assert code == 0, capsys.readouterr().err
    assert len(waits) == 1 and 3.0 <= waits[0] <= 3.3  # retry-after, and a little jitter


def test_a_retry_after_past_the_deadline_is_not_waited(
    budget: str, capsys: pytest.CaptureFixture[str]
) -> None:
    def limited(seen: Seen) -> Answer:
        return Answer(503, b"maintenance", {"Retry-After": "30"})

    waits: list[float] = []
    with HostileServer(limited) as server:
        code = main(compare(server.url, budget), environ={DEADLINE_ENV: "10"}, sleep=waits.append)
        assert len(server.seen) == 1  # asked once: waiting 30 s would pass the 10 s deadline
    assert code == 2 and waits == []
    assert "answered HTTP 503" in one_line(capsys.readouterr().err)


# -- secrets (item 6) -----------------------------------------------------------------------


def echo(seen: Seen) -> Answer:
    """A server that repeats what it was sent in its error: the credentials, the headers."""
    said = " ".join(f"{k}={v}" for k, v in sorted(seen.headers.items()))
    return json_answer({"status": "error", "errorType": "bad_data", "error": said}, 400)


def test_a_token_with_a_trailing_newline_is_sent_stripped(
    budget: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with HostileServer(prometheus({"stable": 100, "canary": 100})) as server:
        code, _, err = run(capsys, compare(server.url, budget), {"PROMETHEUS_TOKEN": TOKEN + "\n"})
    assert code == 0, err
    assert {s.headers["authorization"] for s in server.seen} == {f"Bearer {TOKEN}"}
    assert TOKEN not in err


def test_a_token_with_a_space_inside_is_refused_unsaid(
    budget: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with HostileServer(prometheus({"stable": 100, "canary": 100})) as server:
        code, _, err = run(capsys, compare(server.url, budget), {"PROMETHEUS_TOKEN": "ab cd12"})
        assert server.seen == []
    assert code == 2 and "PROMETHEUS_TOKEN" in err
    assert "ab cd12" not in err and "cd12" not in err


@pytest.mark.parametrize(
    "env",
    [
        {"PROMETHEUS_TOKEN": TOKEN},
        {"PROMETHEUS_USERNAME": "gate", "PROMETHEUS_PASSWORD": "pa55-w0rd-long"},
        {"PROMETHEUS_HEADERS": "X-Scope-OrgID: tenant-secret-42"},
    ],
    ids=["bearer", "basic", "header"],
)
def test_credentials_echoed_by_the_server_are_redacted(
    env: dict[str, str], budget: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with HostileServer(echo) as server:
        code, out, err = run(capsys, compare(server.url, budget), env)
    assert code == 2
    line = one_line(err)
    assert "refused the query (HTTP 400 bad_data" in line
    secrets = [v.strip() for v in env.values() if v != "gate"]
    secrets += [v.split(": ", 1)[1] for v in secrets if ": " in v]
    if "PROMETHEUS_USERNAME" in env:  # basic auth's header: base64 of user:password
        secrets.append(base64.b64encode(b"gate:pa55-w0rd-long").decode())
    for secret in secrets:
        assert secret not in line and secret not in out
    assert "***" in line  # said redacted, not dropped


def test_credentials_are_masked_in_actions(budget: str, capsys: pytest.CaptureFixture[str]) -> None:
    env = {"GITHUB_ACTIONS": "true", "PROMETHEUS_USERNAME": "gate",
           "PROMETHEUS_PASSWORD": "pa55-w0rd-long\n",
           "PROMETHEUS_HEADERS": "X-Scope-OrgID: tenant-7"}  # fmt: skip
    with HostileServer(prometheus({"stable": 100, "canary": 100})) as server:
        code, _, err = run(capsys, compare(server.url, budget), env)
    assert code == 0, err
    masked = {line.removeprefix("::add-mask::") for line in err.splitlines()}
    basic = base64.b64encode(b"gate:pa55-w0rd-long").decode()
    assert {"pa55-w0rd-long", basic, "tenant-7"} <= masked
    assert server.seen[0].headers["authorization"] == f"Basic {basic}"


def test_no_mask_commands_outside_actions(budget: str, capsys: pytest.CaptureFixture[str]) -> None:
    with HostileServer(prometheus({"stable": 100, "canary": 100})) as server:
        code, _, err = run(capsys, compare(server.url, budget), {"PROMETHEUS_TOKEN": TOKEN})
    assert code == 0 and "::add-mask::" not in err


# -- hostile JSON (item 7) ------------------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [b"[" * 1_000_000, b'{"status": "success", "data": ' + b"[" * 1_000_000],
    ids=["bare", "inside-data"],
)
def test_json_nested_a_million_deep_is_bad_input_in_one_line(
    body: bytes, budget: str, capsys: pytest.CaptureFixture[str]
) -> None:
    def deep(seen: Seen) -> Answer:
        return Answer(200, body, {"Content-Type": "application/json"})

    with HostileServer(deep) as server:
        code, _, err = run(capsys, compare(server.url, budget))
    assert code == 2
    line = one_line(err)
    assert "not Prometheus' JSON" in line and server.url in line


# -- managed Prometheus: headers (item 8) ---------------------------------------------------


def test_tenant_and_custom_headers_from_the_environment(
    budget: str, capsys: pytest.CaptureFixture[str]
) -> None:
    env = {"PROMETHEUS_HEADERS": "X-Scope-OrgID: team-a\n\n# a comment\nX-Api-Key:  k-123  \n"}
    with HostileServer(prometheus({"stable": 100, "canary": 100})) as server:
        code, _, err = run(capsys, compare(server.url, budget), env)
    assert code == 0, err
    assert {s.headers["x-scope-orgid"] for s in server.seen} == {"team-a"}
    assert {s.headers["x-api-key"] for s in server.seen} == {"k-123"}


def test_headers_from_a_file(
    budget: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    headers = tmp_path / "headers"
    headers.write_text("X-Scope-OrgID: team-b\r\n", encoding="utf-8")
    env = {"PROMETHEUS_HEADERS_FILE": str(headers)}
    with HostileServer(prometheus({"stable": 100, "canary": 100})) as server:
        code, _, err = run(capsys, compare(server.url, budget), env)
    assert code == 0, err
    assert {s.headers["x-scope-orgid"] for s in server.seen} == {"team-b"}


@pytest.mark.parametrize(
    ("env", "said"),
    [
        ({"PROMETHEUS_HEADERS": "X-Scope-OrgID team-a"}, "PROMETHEUS_HEADERS line 1"),
        ({"PROMETHEUS_HEADERS": "X Scope: team-a"}, "PROMETHEUS_HEADERS line 1"),
        ({"PROMETHEUS_HEADERS": "Host: team-a"}, "Host"),
        ({"PROMETHEUS_HEADERS": "A: team-a\na: team-a"}, "twice"),
        ({"PROMETHEUS_TOKEN": "t0ken-team-a", "PROMETHEUS_HEADERS": "Authorization: team-a"},
         "Authorization"),
        ({"PROMETHEUS_HEADERS_FILE": "/nonexistent/team-a"}, "PROMETHEUS_HEADERS_FILE"),
    ],
)  # fmt: skip
def test_bad_headers_are_refused_before_asking_and_unsaid(
    env: dict[str, str], said: str, budget: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with HostileServer(prometheus({"stable": 100, "canary": 100})) as server:
        code, _, err = run(capsys, compare(server.url, budget), env)
        assert server.seen == []
    assert code == 2 and said in err, err
    assert len(err.strip().splitlines()) == 1
    assert "team-a" not in err or "PROMETHEUS_HEADERS_FILE" in said  # a value is never said


def test_headers_never_come_from_the_command_line(
    budget: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:  # argparse's own exit 2
        main([*compare("http://127.0.0.1:9", budget), "--header", "A: b"], environ={})
    assert exited.value.code == 2
    assert "unrecognized arguments: --header" in capsys.readouterr().err


# -- a side with no requests (item 1) -------------------------------------------------------


def fewest(percentile: float) -> int:
    """The fewest requests that put at least one above the percentile: n (1 - p) >= 1."""
    return math.ceil(round(100 / (100 - percentile), 9))


@pytest.mark.parametrize("head", [0, fewest(95) - 1])
def test_a_side_with_no_or_too_few_requests_fails_the_gate(
    head: int, budget: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with HostileServer(prometheus({"stable": 1000, "canary": head})) as server:
        code, out, err = run(capsys, compare(server.url, budget))
    assert code == 1, err
    report = json.loads(out)
    assert report["verdict"] == "fail" and report["requests"]["head"] == head
    side = [f for f in report["findings"] if f["kind"] == "unmeasured" and f["subject"] == "head"]
    assert len(side) == 1 and side[0]["fails"]
    assert f"needs at least {fewest(95)}" in side[0]["message"]


def test_the_side_fails_whatever_fail_on_names_but_never(
    budget: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with HostileServer(prometheus({"stable": 0, "canary": 1000})) as server:
        code, out, _ = run(capsys, compare(server.url, budget, "--fail-on", "low_headroom"))
        assert code == 1
        assert [f["subject"] for f in json.loads(out)["findings"] if f["fails"]] == ["base"]
        code, out, _ = run(capsys, compare(server.url, budget, "--fail-on", "never"))
        assert code == 0 and json.loads(out)["verdict"] == "warn"


def test_enough_requests_pass(budget: str, capsys: pytest.CaptureFixture[str]) -> None:
    with HostileServer(prometheus({"stable": 1000, "canary": fewest(95)})) as server:
        code, out, err = run(capsys, compare(server.url, budget))
    assert code == 0, err
    assert not [f for f in json.loads(out)["findings"] if f["subject"] in ("base", "head")]
