"""The one HTTP edge to GitHub's REST API: headers, timeouts, retries, pagination, no leaks.

One client is one network step (posting the PR comment, fetching the base artifact): its
`Deadline` (sources/deadline.py) bounds every request, every read of an answer and every wait
between tries; the retries and their waits are the shared `Retry`'s.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any
from urllib.parse import urlsplit

import httpx
import orjson

from budgetdiff.errors import InputError, PublishError, redact
from budgetdiff.sources.deadline import (
    ARTIFACT,
    DEFAULT_DEADLINE_S,
    GITHUB_API,
    Deadline,
    Policy,
    Retry,
    hang_up,
    retry_after,
)

API_VERSION = "2022-11-28"
DEFAULT_API_URL = "https://api.github.com"
USER_AGENT = "budgetdiff"
READ_TIMEOUT_S = 30.0  # each read; the step's deadline cuts it to what is left
CONNECT_TIMEOUT_S = 10.0
MAX_ANSWER_BYTES = 64 * 1024 * 1024  # over the artifact cap; 100 comments of 65,536 chars fit
# GitHub's documented advice for a secondary rate limit without `retry-after`: wait a minute.
SECONDARY_WAIT_S = 60.0
RETRY_STATUSES = frozenset({500, 502, 503, 504})
_LINK_NEXT = re.compile(r'<([^>]+)>\s*;\s*rel="next"')
# what a whole body read here no longer carries (it is decoded, and its length is its own)
_FRAMING = frozenset({"content-encoding", "content-length", "transfer-encoding"})


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


class GitHubClient:
    """A small REST client: `GITHUB_API_URL` based, versioned, retrying, paginating, and done
    within its step's deadline (`step` names it in the message when it is not).

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
        step: str = "the GitHub API",
        deadline_s: float = DEFAULT_DEADLINE_S,
    ) -> None:
        self.api_url = (api_url or DEFAULT_API_URL).rstrip("/")
        if _origin(self.api_url)[1] == "":
            raise ApiError(
                f"GITHUB_API_URL {api_url[:200]!r} is not an http(s) URL "
                "(e.g. https://api.github.com or https://HOST/api/v3)"
            )
        self._token = token.strip()  # a secret's trailing newline is no part of the token
        self.sleep = sleep
        self._clock = clock
        self.deadline = Deadline.start(step, _origin(self.api_url)[1], deadline_s)
        self.retry = self.retrying(GITHUB_API)
        self._http = httpx.Client(
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

    def retrying(self, policy: Policy) -> Retry:
        """Tries of `policy` within this client's step (the comment's own, the download's)."""
        return Retry(policy, self.deadline, self.sleep)

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
        for attempt in range(1, GITHUB_API.attempts + 1):
            try:
                response = self._send(method, url, params=params, json=json_body, headers=headers)
            except httpx.InvalidURL:
                raise ApiError(
                    self._redact(f"{method} {self._where(url)}: not a valid URL"), method=method
                ) from None
            except httpx.TransportError as exc:
                self._late(method, url)
                # Connection refused/reset before an answer: safe to repeat unless the request
                # may have reached the server (a POST that timed out while reading).
                sent = not isinstance(exc, (httpx.ConnectError, httpx.ConnectTimeout))
                if (sent and not idempotent) or not self.retry.wait(attempt):
                    raise ApiError(
                        self._redact(
                            f"{method} {self._where(url)}: no answer ({type(exc).__name__})"
                        ),
                        method=method,
                    ) from None
                continue
            if response.status_code < 400:
                return response
            retry, after = self._retry_wait(response, idempotent)
            if not retry or not self.retry.wait(attempt, after=after):
                raise self._error(method, url, response)
        raise AssertionError("unreachable")  # pragma: no cover

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

    def _send(
        self,
        method: str,
        url: str,
        *,
        cap: int = MAX_ANSWER_BYTES,
        follow: bool = False,
        **kw: Any,
    ) -> httpx.Response:
        """One request, its answer read whole within the step's deadline: each read waits at
        most what is left, and an answer still arriving at the deadline is given up."""
        timeout = httpx.Timeout(
            self.deadline.cap(READ_TIMEOUT_S), connect=self.deadline.cap(CONNECT_TIMEOUT_S)
        )
        request = self._http.build_request(method, url, timeout=timeout, **kw)
        response = self._http.send(request, stream=True, follow_redirects=follow)
        try:
            with self.deadline.watch(hang_up(response)):
                body = bytearray()
                for chunk in response.iter_bytes():
                    body += chunk
                    if len(body) > cap:
                        raise InputError(
                            f"{method} {_origin(str(response.url))[1]}{self._where(url)}: the "
                            f"answer is over {cap} bytes; refusing to read more"
                        )
                    self._late(method, str(response.url))
        finally:
            response.close()
        headers = [(k, v) for k, v in response.headers.multi_items() if k not in _FRAMING]
        return httpx.Response(
            response.status_code, headers=headers, content=bytes(body), request=response.request
        )

    def _late(self, method: str, url: str) -> None:
        """An `ApiError` naming the host and the step once the step's deadline has passed."""
        if self.deadline.expired:
            host = _origin(url)[1] or self.deadline.host
            raise ApiError(self._redact(self.deadline.message(host)), method=method)

    def _fetch_capped(self, url: str, max_bytes: int) -> bytes:
        retry = self.retrying(ARTIFACT)
        for attempt in range(1, ARTIFACT.attempts + 1):
            try:
                response = self._send(
                    "GET", url, headers={"Accept": "*/*"}, follow=True, cap=max_bytes
                )
            except httpx.InvalidURL:
                raise ApiError("the artifact archive's storage URL is not valid") from None
            except InputError:
                raise InputError(
                    f"the artifact archive is larger than {max_bytes} bytes; "
                    "refusing to download more (upload only the results files)"
                ) from None
            except (httpx.TransportError, httpx.DecodingError) as exc:
                self._late("GET", url)
                if not retry.wait(attempt):
                    raise ApiError(
                        f"download of the artifact archive failed ({type(exc).__name__})"
                    ) from None
                continue
            if response.status_code in RETRY_STATUSES and retry.wait(attempt):
                continue
            if response.status_code >= 400:
                raise ApiError(
                    f"download of the artifact archive failed: HTTP {response.status_code}",
                    status=response.status_code,
                    method="GET",
                )
            return response.content
        raise AssertionError("unreachable")  # pragma: no cover

    def _url(self, path_or_url: str) -> str:
        if path_or_url.startswith(("http://", "https://")):
            if not _same_origin(path_or_url, self.api_url):
                host = _origin(path_or_url)[1] or "an unparsable URL"
                raise ApiError(f"refusing to send the token to {host}")
            return path_or_url
        return self.api_url + "/" + path_or_url.lstrip("/")

    def _retry_wait(self, response: httpx.Response, idempotent: bool) -> tuple[bool, float | None]:
        """Whether to try again, and the wait the server asks for (None: the backoff's)."""
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
            seconds = retry_after(headers, self._clock())
            if seconds is None and (secondary or status == 403):
                seconds = SECONDARY_WAIT_S
            return True, seconds
        return status in RETRY_STATUSES and idempotent, None

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
        return redact(text, (self._token,))


def _message(response: httpx.Response) -> str:
    """The `message` of a GitHub error body ("" when the body is not a JSON object)."""
    try:
        payload = orjson.loads(response.content)
    except orjson.JSONDecodeError:  # also JSON nested past orjson's 1,024 levels
        return ""
    return str(payload.get("message", "")) if isinstance(payload, dict) else ""


def _json(response: httpx.Response) -> Any:
    try:
        return orjson.loads(response.content)
    except orjson.JSONDecodeError:
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
