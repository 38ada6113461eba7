"""The one HTTP edge to a Prometheus server (or Thanos, Mimir, Cortex): instant queries through
`/api/v1/query`, credentials and headers from the environment (`sources.credentials`), each
side read within its deadline and retried by the one helper (`sources.deadline`), one-line
errors with every credential redacted.

Every failure is a `PrometheusError` (exit 2) naming the server and the query; the server's
answer is held to the documented shape (`{"status": "success", "data": {"resultType":
"vector", ...}}`), its size bounded and its nesting (orjson stops at 1,024 levels), since a
proxy or a wrong URL may answer anything.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TextIO
from urllib.parse import urlsplit

import httpx
import orjson

from budgetdiff.errors import InputError, UsageError, redact
from budgetdiff.sources.credentials import Credentials
from budgetdiff.sources.deadline import (
    PROMETHEUS,
    RETRY_STATUSES,
    Deadline,
    Retry,
    deadline_seconds,
    hang_up,
    retry_after,
)

READ_TIMEOUT_S = 30.0  # each read; the side's deadline cuts it to what is left
CONNECT_TIMEOUT_S = 5.0
MAX_BYTES = 8 * 1024 * 1024  # a `sum by (le)` answer is a few kB
USER_AGENT = "budgetdiff"


class PrometheusError(InputError):
    """The server could not be asked, or refused the query: one line, exit 2."""


@dataclass(frozen=True, slots=True)
class Sample:
    """One series of an instant vector: its labels and its value."""

    labels: Mapping[str, str]
    value: float


def server_url(url: str) -> str:
    """The server's base URL, checked: http(s), a host, no credentials in it."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UsageError(
            f"--prometheus {url[:200]!r} is not an http(s) URL (e.g. http://prometheus:9090)"
        )
    if parts.username is not None or parts.password is not None:
        raise UsageError(
            "--prometheus: the URL holds credentials; give them in PROMETHEUS_TOKEN or "
            "PROMETHEUS_USERNAME and PROMETHEUS_PASSWORD, never on the command line"
        )
    if parts.query or parts.fragment:
        raise UsageError(f"--prometheus {url[:200]!r}: give the server's URL without ?query")
    return url.strip().rstrip("/")


class PrometheusClient:
    """Instant queries against one server for one network step (`step`, e.g. "reading the
    head side"), all within its deadline; `transport` and `sleep` are the seams for tests. In
    GitHub Actions (`GITHUB_ACTIONS=true`) every credential is masked in the log first
    (`::add-mask::` on `log`, stderr: stdout may be the JSON report)."""

    def __init__(
        self,
        url: str,
        environ: Mapping[str, str],
        *,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
        step: str = "reading from Prometheus",
        log: TextIO | None = None,
    ) -> None:
        self.url = server_url(url)
        credentials = Credentials.from_environ(environ)
        self._secrets = credentials.secrets()
        if environ.get("GITHUB_ACTIONS") == "true" and self._secrets:
            print(*credentials.mask_commands(), sep="\n", file=log or sys.stderr, flush=True)
        self.deadline = Deadline.start(step, self.url, deadline_seconds(environ))
        self._retry = Retry(PROMETHEUS, self.deadline, sleep)
        headers = {"User-Agent": USER_AGENT, "Accept": "application/json"}
        headers.update(credentials.headers)
        authorization = credentials.authorization()
        if authorization is not None:
            headers["Authorization"] = authorization
        self._http = httpx.Client(transport=transport, follow_redirects=False, headers=headers)

    def __enter__(self) -> PrometheusClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self._http.close()

    def vector(self, query: str, at: float) -> list[Sample]:
        """The instant vector `query` evaluates to at `at` (Unix seconds)."""
        body = self._get(query, at)
        data = body.get("data")
        if not isinstance(data, dict) or data.get("resultType") != "vector":
            raise self._error(query, "answered without an instant vector (is it Prometheus?)")
        result = data.get("result")
        if not isinstance(result, list):
            raise self._error(query, "answered without a result list (is it Prometheus?)")
        return [self._sample(item, query) for item in result]

    def _get(self, query: str, at: float) -> dict[str, object]:
        """One query, retried on no answer, 429 and 5xx (`retry-after` honoured) within the
        deadline; the decoded JSON body."""
        params = {"query": query, "time": repr(at)}
        for attempt in range(1, PROMETHEUS.attempts + 1):
            try:
                status, headers, content = self._fetch(params, query)
            except httpx.TransportError as e:  # refused, timed out, no such host
                self._late(query)
                if not self._retry.wait(attempt):
                    raise self._error(query, f"cannot be reached ({_reason(e)})") from None
                continue
            after = retry_after(headers, time.time())
            if status in RETRY_STATUSES and self._retry.wait(attempt, after=after):
                continue
            return self._body(status, content, query)
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _fetch(self, params: Mapping[str, str], query: str) -> tuple[int, httpx.Headers, bytes]:
        """The status, the headers and the body, read no further than MAX_BYTES and no later
        than the deadline (each read waits at most what is left of it)."""
        timeout = httpx.Timeout(
            self.deadline.cap(READ_TIMEOUT_S), connect=self.deadline.cap(CONNECT_TIMEOUT_S)
        )
        url = f"{self.url}/api/v1/query"
        with (
            self._http.stream("GET", url, params=params, timeout=timeout) as response,
            self.deadline.watch(hang_up(response)),
        ):
            content = bytearray()
            for chunk in response.iter_bytes():
                content += chunk
                if len(content) > MAX_BYTES:
                    raise self._error(query, f"answered with over {MAX_BYTES} bytes")
                self._late(query)
            return response.status_code, response.headers, bytes(content)

    def _late(self, query: str) -> None:
        """Once the deadline has passed: the error naming the server and the step."""
        if self.deadline.expired:
            message = f"prometheus {self.deadline.message()}; query: {query}"
            raise PrometheusError(redact(message, self._secrets))

    def _body(self, status: int, content: bytes, query: str) -> dict[str, object]:
        try:
            body = orjson.loads(content)
        except orjson.JSONDecodeError:  # not JSON, not UTF-8, or nested past 1,024 levels
            body = None
        if isinstance(body, dict) and body.get("status") == "error":
            what = str(body.get("errorType", "error"))[:40]
            said = " ".join(str(body.get("error", ""))[:300].split())
            raise self._error(query, f"refused the query (HTTP {status} {what}: {said})")
        if status != 200:
            hint = (
                " (set PROMETHEUS_TOKEN or PROMETHEUS_USERNAME/PASSWORD)"
                if status in (401, 403)
                else ""
            )
            raise self._error(query, f"answered HTTP {status}{hint}")
        if not isinstance(body, dict) or body.get("status") != "success":
            raise self._error(query, "answered with something that is not Prometheus' JSON")
        return body

    def _sample(self, item: object, query: str) -> Sample:
        if not isinstance(item, dict):
            raise self._error(query, "answered a result that is not a series")
        labels, value = item.get("metric"), item.get("value")
        if (
            not isinstance(labels, dict)
            or not isinstance(value, list)
            or len(value) != 2
            or not isinstance(value[1], str)
        ):
            raise self._error(query, "answered a series without labels and a value")
        try:
            number = float(value[1])
        except ValueError:
            raise self._error(query, f"answered the value {value[1][:40]!r}") from None
        return Sample({str(k): str(v) for k, v in labels.items()}, number)

    def _error(self, query: str, what: str) -> PrometheusError:
        """One line naming the server and the query, every credential redacted (a server's
        answer may echo them)."""
        message = f"prometheus {self.url} {what}; query: {query}"
        return PrometheusError(redact(message, self._secrets))


def _reason(e: httpx.TransportError) -> str:
    words = " ".join(str(e).split())[:160]
    return f"{type(e).__name__}: {words}" if words else type(e).__name__
