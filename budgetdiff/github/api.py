"""The one HTTP edge to GitHub's REST API: headers, timeouts, retries, pagination, no leaks."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx

from budgetdiff.errors import InputError, PublishError

API_VERSION = "2022-11-28"
DEFAULT_API_URL = "https://api.github.com"
USER_AGENT = "budgetdiff"
TIMEOUT = httpx.Timeout(30.0, connect=10.0)
MAX_ATTEMPTS = 5
BACKOFF_S = (1.0, 2.0, 4.0, 8.0)
# A rate-limit reset further away than this is not worth blocking a CI job for.
MAX_WAIT_S = 120.0
# GitHub's documented advice for a secondary rate limit without `retry-after`: wait a minute.
SECONDARY_WAIT_S = 60.0
RETRY_STATUSES = frozenset({500, 502, 503, 504})
_LINK_NEXT = re.compile(r'<([^>]+)>\s*;\s*rel="next"')


class ApiError(PublishError):
    """A request GitHub answered with an error (after retries), or could not be sent at all."""

    def __init__(self, message: str, *, status: int | None = None, method: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.method = method

    @property
    def forbidden(self) -> bool:
        """The token may not do this (fork PRs' read-only token, missing `permissions:`)."""
        return self.status in (401, 403) and "rate limit" not in str(self).lower()

    @property
    def transient(self) -> bool:
        """Worth trying again: a server error or no answer at all."""
        return self.status is None or self.status in RETRY_STATUSES


@dataclass(frozen=True)
class _Wait:
    seconds: float
    why: str


class GitHubClient:
    """A small REST client: `GITHUB_API_URL` based, versioned, retrying, paginating.

    Non-idempotent requests (POST) are retried only where GitHub certainly did not act on them
    (rate limits, connection refused); the caller decides what to do after a 5xx, because a POST
    that failed with 502 may still have created its comment.
    """

    def __init__(
        self,
        api_url: str,
        token: str,
        *,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.api_url = (api_url or DEFAULT_API_URL).rstrip("/")
        if _origin(self.api_url)[1] == "":
            raise ApiError(
                f"GITHUB_API_URL {api_url[:200]!r} is not an http(s) URL "
                "(e.g. https://api.github.com or https://HOST/api/v3)"
            )
        self._token = token
        self._sleep = sleep
        self._clock = clock
        self._http = httpx.Client(
            timeout=TIMEOUT,
            transport=transport,
            follow_redirects=False,
            headers={
                "Accept": "application/vnd.github+json",
                "X-GitHub-Api-Version": API_VERSION,
                "User-Agent": USER_AGENT,
            },
        )

    def __enter__(self) -> GitHubClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    # -- requests -------------------------------------------------------------------------

    def request(
        self,
        method: str,
        path_or_url: str,
        *,
        params: Mapping[str, str | int] | None = None,
        json_body: Any = None,
        idempotent: bool | None = None,
    ) -> httpx.Response:
        """Send one API request; return the 2xx/3xx response or raise `ApiError`."""
        url = self._url(path_or_url)
        if idempotent is None:
            idempotent = method.upper() in ("GET", "HEAD", "PUT", "DELETE", "PATCH")
        headers = {"Authorization": f"Bearer {self._token}"} if self._token else {}
        for attempt in range(1, MAX_ATTEMPTS + 1):
            try:
                response = self._http.request(
                    method, url, params=params, json=json_body, headers=headers
                )
            except httpx.InvalidURL:
                raise ApiError(
                    self._redact(f"{method} {self._where(url)}: not a valid URL"), method=method
                ) from None
            except httpx.TransportError as exc:
                # Connection refused/reset before an answer: safe to repeat unless the request
                # may have reached the server (a POST that timed out while reading).
                sent = not isinstance(exc, (httpx.ConnectError, httpx.ConnectTimeout))
                if attempt == MAX_ATTEMPTS or (sent and not idempotent):
                    raise ApiError(
                        self._redact(
                            f"{method} {self._where(url)}: no answer ({type(exc).__name__})"
                        ),
                        method=method,
                    ) from None
                self.backoff(attempt)
                continue
            if response.status_code < 400:
                return response
            wait = self._retry_wait(response, attempt, idempotent)
            if wait is None or attempt == MAX_ATTEMPTS:
                raise self._error(method, url, response)
            self._sleep(wait.seconds)
        raise AssertionError("unreachable")  # pragma: no cover

    def backoff(self, attempt: int) -> None:
        """Wait before attempt `attempt + 1` of something the caller repeats itself."""
        self._sleep(BACKOFF_S[min(attempt - 1, len(BACKOFF_S) - 1)])

    def get_json(self, path: str, params: Mapping[str, str | int] | None = None) -> Any:
        return _json(self.request("GET", path, params=params))

    def get_object(
        self, path: str, params: Mapping[str, str | int] | None = None
    ) -> dict[str, Any]:
        """GET a JSON object; anything else (a list, HTML from a proxy) is an `ApiError`."""
        return json_object(self.request("GET", path, params=params))

    def paginate(self, path: str, params: Mapping[str, str | int] | None = None) -> Iterator[Any]:
        """Every page of a list endpoint, following `Link: rel="next"` (never off the API host)."""
        url: str | None = path
        query: Mapping[str, str | int] | None = {"per_page": 100, **(params or {})}
        while url is not None:
            response = self.request("GET", url, params=query)
            yield _json(response)
            url = next_link(response.headers.get("link"), self.api_url)
            query = None  # the next link carries its own query

    def download(self, path: str, max_bytes: int) -> bytes:
        """GET an API path that redirects to storage; fetch that without our token, capped."""
        response = self.request("GET", path)
        if response.status_code in (301, 302, 303, 307, 308):
            location = response.headers.get("location", "")
            if not location:
                raise ApiError(f"GET {self._where(path)}: a redirect without a Location")
            try:
                target = str(response.url.join(location))
            except httpx.InvalidURL:
                raise ApiError(f"GET {self._where(path)}: a redirect to an invalid URL") from None
            # The storage URL is pre-signed: it never receives the API token, same host or not.
            return self._fetch_capped(target, max_bytes)
        return _cap(response.content, max_bytes, path)

    # -- internals ------------------------------------------------------------------------

    def _fetch_capped(self, url: str, max_bytes: int) -> bytes:
        for attempt in range(1, MAX_ATTEMPTS + 1):
            try:
                with self._http.stream(
                    "GET", url, headers={"Accept": "*/*"}, follow_redirects=True
                ) as response:
                    if response.status_code in RETRY_STATUSES and attempt < MAX_ATTEMPTS:
                        self.backoff(attempt)
                        continue
                    if response.status_code >= 400:
                        raise ApiError(
                            f"download of the artifact archive failed: HTTP {response.status_code}",
                            status=response.status_code,
                            method="GET",
                        )
                    chunks: list[bytes] = []
                    size = 0
                    for chunk in response.iter_bytes():
                        size += len(chunk)
                        if size > max_bytes:
                            raise InputError(
                                f"the artifact archive is larger than {max_bytes} bytes; "
                                "refusing to download more (upload only the results files)"
                            )
                        chunks.append(chunk)
                    return b"".join(chunks)
            except httpx.InvalidURL:
                raise ApiError("the artifact archive's storage URL is not valid") from None
            except (httpx.TransportError, httpx.DecodingError) as exc:
                if attempt == MAX_ATTEMPTS:
                    raise ApiError(
                        f"download of the artifact archive failed ({type(exc).__name__})"
                    ) from None
                self.backoff(attempt)
        raise AssertionError("unreachable")  # pragma: no cover

    def _url(self, path_or_url: str) -> str:
        if path_or_url.startswith(("http://", "https://")):
            if not _same_origin(path_or_url, self.api_url):
                host = _origin(path_or_url)[1] or "an unparsable URL"
                raise ApiError(f"refusing to send the token to {host}")
            return path_or_url
        return self.api_url + "/" + path_or_url.lstrip("/")

    def _retry_wait(self, response: httpx.Response, attempt: int, idempotent: bool) -> _Wait | None:
        status = response.status_code
        headers = response.headers
        secondary = status in (403, 429) and "secondary rate limit" in _message(response).lower()
        rate_limited = (
            status == 429
            or secondary
            or (
                status == 403
                and (headers.get("x-ratelimit-remaining") == "0" or "retry-after" in headers)
            )
        )
        if rate_limited:
            # GitHub did not act on a rate-limited request: repeating it is safe even for POST.
            seconds = _retry_after(headers, self._clock())
            if seconds is None:
                if secondary or status == 403:
                    seconds = SECONDARY_WAIT_S
                else:
                    seconds = BACKOFF_S[min(attempt - 1, len(BACKOFF_S) - 1)]
            if seconds > MAX_WAIT_S:
                return None
            return _Wait(seconds, "rate limit")
        if status in RETRY_STATUSES and idempotent:
            return _Wait(BACKOFF_S[min(attempt - 1, len(BACKOFF_S) - 1)], f"HTTP {status}")
        return None

    def _error(self, method: str, url: str, response: httpx.Response) -> ApiError:
        detail = _message(response)[:300] or response.reason_phrase
        if response.status_code in (403, 429) and response.headers.get("x-ratelimit-reset"):
            detail += f" (rate limit resets at epoch {response.headers['x-ratelimit-reset']})"
        return ApiError(
            self._redact(
                f"{method} {self._where(url)}: HTTP {response.status_code} {detail}".rstrip()
            ),
            status=response.status_code,
            method=method,
        )

    def _where(self, url: str) -> str:
        return urlsplit(url).path or url

    def _redact(self, text: str) -> str:
        return text.replace(self._token, "***") if self._token else text


def _message(response: httpx.Response) -> str:
    """The `message` of a GitHub error body ("" when the body is not a JSON object)."""
    try:
        payload = response.json()
    except (ValueError, UnicodeDecodeError):
        return ""
    return str(payload.get("message", "")) if isinstance(payload, dict) else ""


def _json(response: httpx.Response) -> Any:
    try:
        return response.json()
    except (ValueError, UnicodeDecodeError):
        raise ApiError(
            f"{response.request.method} {response.request.url.path}: the answer is not JSON",
            status=response.status_code,
            method=response.request.method,
        ) from None


def json_object(response: httpx.Response) -> dict[str, Any]:
    """The response's JSON object; a 2xx answer of any other shape is an `ApiError`."""
    data = _json(response)
    if not isinstance(data, dict):
        raise ApiError(
            f"{response.request.method} {response.request.url.path}: "
            f"expected a JSON object, got {type(data).__name__}",
            status=response.status_code,
            method=response.request.method,
        )
    return data


def _retry_after(headers: httpx.Headers, now: float) -> float | None:
    """Seconds to wait from `retry-after` (seconds) or `x-ratelimit-reset` (epoch seconds)."""
    value = headers.get("retry-after")
    if value is not None:
        try:
            return max(0.0, float(value))
        except ValueError:
            return None
    reset = headers.get("x-ratelimit-reset")
    if reset is not None and headers.get("x-ratelimit-remaining") == "0":
        try:
            return max(0.0, float(reset) - now) + 1.0
        except ValueError:
            return None
    return None


def _cap(data: bytes, max_bytes: int, what: str) -> bytes:
    if len(data) > max_bytes:
        raise InputError(f"{what}: larger than {max_bytes} bytes; upload only the results files")
    return data


def _origin(url: str) -> tuple[str, str]:
    """(scheme, host[:port]) of an http(s) URL; ("", "") for anything else or unparsable."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a port out of range
    except ValueError:
        return "", ""
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return "", ""
    return parts.scheme, parts.netloc.lower()


def _same_origin(url: str, base: str) -> bool:
    origin = _origin(url)
    return origin != ("", "") and origin == _origin(base)


def next_link(link_header: str | None, api_url: str) -> str | None:
    """The `rel="next"` URL of a Link header, if it stays on the API host."""
    if not link_header:
        return None
    match = _LINK_NEXT.search(link_header)
    if match is None:
        return None
    url = match.group(1)
    if not _same_origin(url, api_url):
        host = _origin(url)[1] or "an unparsable URL"
        raise ApiError(f"pagination points off the API host ({host}); stopping")
    return url
