"""The one HTTP edge to a Prometheus server (or Thanos, Mimir, Cortex): instant queries through
`/api/v1/query`, credentials from the environment, timeouts, a bounded retry, one-line errors.

Every failure is a `PrometheusError` (exit 2) naming the server and the query; the server's
answer is held to the documented shape (`{"status": "success", "data": {"resultType":
"vector", ...}}`) and its size bounded, since a proxy or a wrong URL may answer anything.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

import httpx

from budgetdiff.errors import InputError, UsageError

TIMEOUT = httpx.Timeout(30.0, connect=5.0)
MAX_ATTEMPTS = 3
BACKOFF_S = (0.5, 2.0)
RETRY_STATUSES = frozenset({429, 502, 503, 504})
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


def _auth(environ: Mapping[str, str]) -> httpx.Auth | None:
    """A bearer token or basic auth, from the environment only."""
    token = environ.get("PROMETHEUS_TOKEN", "")
    user = environ.get("PROMETHEUS_USERNAME", "")
    password = environ.get("PROMETHEUS_PASSWORD", "")
    if token and (user or password):
        raise UsageError(
            "set PROMETHEUS_TOKEN or PROMETHEUS_USERNAME and PROMETHEUS_PASSWORD, not both"
        )
    if bool(user) != bool(password):
        raise UsageError("PROMETHEUS_USERNAME and PROMETHEUS_PASSWORD go together: set both")
    if token:
        return _Bearer(token)
    return httpx.BasicAuth(user, password) if user else None


class _Bearer(httpx.Auth):
    def __init__(self, token: str) -> None:
        self._token = token

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        request.headers["Authorization"] = f"Bearer {self._token}"
        yield request


class PrometheusClient:
    """Instant queries against one server; `transport` and `sleep` are the seams for tests."""

    def __init__(
        self,
        url: str,
        environ: Mapping[str, str],
        *,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.url = server_url(url)
        self._sleep = sleep
        self._http = httpx.Client(
            timeout=TIMEOUT,
            transport=transport,
            auth=_auth(environ),
            follow_redirects=False,
            headers={"User-Agent": USER_AGENT, "Accept": "application/json"},
        )

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
        """One query, retried on no answer, 429 and 502-504; the decoded JSON body."""
        params = {"query": query, "time": repr(at)}
        for attempt in range(MAX_ATTEMPTS):
            last = attempt == MAX_ATTEMPTS - 1
            try:
                status, content = self._fetch(params, query)
            except httpx.TransportError as e:  # refused, timed out, no such host
                if last:
                    raise self._error(query, f"cannot be reached ({_reason(e)})") from None
                self._sleep(BACKOFF_S[attempt])
                continue
            if status in RETRY_STATUSES and not last:
                self._sleep(BACKOFF_S[attempt])
                continue
            return self._body(status, content, query)
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _fetch(self, params: Mapping[str, str], query: str) -> tuple[int, bytes]:
        """The status and the body, read no further than MAX_BYTES."""
        with self._http.stream("GET", f"{self.url}/api/v1/query", params=params) as response:
            content = bytearray()
            for chunk in response.iter_bytes():
                content += chunk
                if len(content) > MAX_BYTES:
                    raise self._error(query, f"answered with over {MAX_BYTES} bytes")
            return response.status_code, bytes(content)

    def _body(self, status: int, content: bytes, query: str) -> dict[str, object]:
        try:
            body = json.loads(content)
        except (ValueError, UnicodeDecodeError):
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
        return PrometheusError(f"prometheus {self.url} {what}; query: {query}")


def _reason(e: httpx.TransportError) -> str:
    words = " ".join(str(e).split())[:160]
    return f"{type(e).__name__}: {words}" if words else type(e).__name__
