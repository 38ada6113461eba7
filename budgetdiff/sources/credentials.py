"""What a Prometheus server is sent besides the query, from the environment only (never the
command line, which any process list shows): a bearer token (`PROMETHEUS_TOKEN`) or basic
auth (`PROMETHEUS_USERNAME`, `PROMETHEUS_PASSWORD`), and headers a managed service needs (a
tenant's `X-Scope-OrgID` for Mimir, Cortex or Thanos, an API key) as `Name: value` lines in
`PROMETHEUS_HEADERS` or in the file `PROMETHEUS_HEADERS_FILE` (a mounted secret).

Whitespace around every value is dropped (a Kubernetes secret's trailing newline would make the
header invalid, and httpx's error would quote it). Every value is a secret: `secrets()` lists
them, with basic auth's base64 form, for `errors.redact`; `mask_commands()` are the lines that
hide them in a GitHub Actions log. No error here ever says a value.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from budgetdiff.errors import UsageError

TOKEN_ENV = "PROMETHEUS_TOKEN"
USER_ENV = "PROMETHEUS_USERNAME"
PASSWORD_ENV = "PROMETHEUS_PASSWORD"
HEADERS_ENV = "PROMETHEUS_HEADERS"
HEADERS_FILE_ENV = "PROMETHEUS_HEADERS_FILE"
MAX_HEADERS_BYTES = 64 * 1024
MAX_HEADERS = 32
_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")  # an HTTP field name (RFC 9110 token)
# what the client itself sets, or what would change how the request is framed or routed
RESERVED = frozenset(
    {"host", "content-length", "transfer-encoding", "connection", "keep-alive", "te", "trailer",
     "upgrade", "accept", "accept-encoding", "user-agent", "cookie"}
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class Credentials:
    """The token or the user and password ("" when unset), and the extra headers."""

    token: str = field(default="", repr=False)
    user: str = ""
    password: str = field(default="", repr=False)
    headers: tuple[tuple[str, str], ...] = field(default=(), repr=False)

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> Credentials:
        token = _value(environ, TOKEN_ENV, spaces=False)
        user = _value(environ, USER_ENV, spaces=False)
        password = _value(environ, PASSWORD_ENV, spaces=True)
        if token and (user or password):
            raise UsageError(f"set {TOKEN_ENV} or {USER_ENV} and {PASSWORD_ENV}, not both")
        if bool(user) != bool(password):
            raise UsageError(f"{USER_ENV} and {PASSWORD_ENV} go together: set both")
        if not token.isascii():
            raise UsageError(f"{TOKEN_ENV} holds a non-ASCII character: set the token alone")
        if ":" in user:
            raise UsageError(f"{USER_ENV} holds a ':', which basic auth cannot send")
        headers = _headers(environ)
        if (token or user) and any(name.lower() == "authorization" for name, _ in headers):
            raise UsageError(
                f"an Authorization header in {HEADERS_ENV} and {TOKEN_ENV} or {USER_ENV}: "
                "give the credentials one way"
            )
        return cls(token, user, password, headers)

    def authorization(self) -> str | None:
        """The Authorization header's value, or None."""
        if self.token:
            return f"Bearer {self.token}"
        if self.user:
            return f"Basic {self.basic()}"
        return None

    def basic(self) -> str:
        """Basic auth's base64 of `user:password`, as the header carries it."""
        return base64.b64encode(f"{self.user}:{self.password}".encode()).decode("ascii")

    def secrets(self) -> tuple[str, ...]:
        """Every value that must never be shown: what `errors.redact` replaces."""
        found = [self.token, self.password, *(value for _, value in self.headers)]
        if self.user:
            found.append(self.basic())
        return tuple(dict.fromkeys(s for s in found if s))

    def mask_commands(self) -> list[str]:
        """The workflow commands that hide every secret in a GitHub Actions log."""
        return [f"::add-mask::{secret}" for secret in self.secrets()]


def _value(environ: Mapping[str, str], name: str, *, spaces: bool) -> str:
    """A variable's value with the whitespace around it dropped; a control character (or, in a
    token, a space) inside is refused without saying the value."""
    value = environ.get(name, "").strip()
    if not value.isprintable() or (not spaces and any(c.isspace() for c in value)):
        what = "a control character" if spaces else "a space or a control character"
        raise UsageError(f"{name} holds {what} inside it: set the value alone (it is not shown)")
    return value


def _headers(environ: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """`Name: value` lines of the file, then of the variable; blank and `#` lines skipped."""
    found: list[tuple[str, str]] = []
    path = environ.get(HEADERS_FILE_ENV, "").strip()
    if path:
        found += _lines(_read(path), f"{HEADERS_FILE_ENV} {path}")
    found += _lines(environ.get(HEADERS_ENV, ""), HEADERS_ENV)
    seen: set[str] = set()
    for name, _ in found:
        if name.lower() in seen:
            raise UsageError(f"the header {name} is given twice ({HEADERS_ENV}, its file)")
        seen.add(name.lower())
    if len(found) > MAX_HEADERS:
        raise UsageError(f"{len(found)} headers for Prometheus: at most {MAX_HEADERS}")
    return tuple(found)


def _read(path: str) -> str:
    try:
        with Path(path).open("rb") as f:
            data = f.read(MAX_HEADERS_BYTES + 1)
    except OSError as e:
        raise UsageError(
            f"{HEADERS_FILE_ENV} {path[:200]!r} cannot be read ({e.strerror or e}); "
            "give a file of `Name: value` lines"
        ) from None
    if len(data) > MAX_HEADERS_BYTES:
        raise UsageError(f"{HEADERS_FILE_ENV} {path[:200]!r}: over {MAX_HEADERS_BYTES} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise UsageError(f"{HEADERS_FILE_ENV} {path[:200]!r} is not UTF-8 text") from None


def _lines(text: str, where: str) -> list[tuple[str, str]]:
    out = []
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        name, colon, value = line.partition(":")
        name, value = name.strip(), value.strip()
        if not colon or not _NAME.fullmatch(name) or not value:
            raise UsageError(
                f"{where} line {number}: write `Name: value`, e.g. `X-Scope-OrgID: tenant` "
                "(the line is not shown)"
            )
        if name.lower() in RESERVED:
            raise UsageError(f"{where} line {number}: {name} is budgetdiff's to send")
        if not (value.isascii() and value.isprintable()):
            raise UsageError(
                f"{where} line {number}: the value of {name} holds a control or non-ASCII "
                "character (it is not shown)"
            )
        out.append((name, value))
    return out
