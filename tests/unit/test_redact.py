"""`errors.redact`, the one function every message with a credential in reach is worded
through: the secrets it is given, longest first, and any `Bearer` token or `Basic` credential
it finds, as an echoed header or an HTTP library's error writes them."""

from __future__ import annotations

import base64

import httpx

from budgetdiff.errors import InputError, redact
from tests.support.hostile_http import Answer, HostileServer

TOKEN = "s3cret-token-0123456789"


def test_the_secrets_given_longest_first() -> None:
    said = redact(f"token {TOKEN} and its head {TOKEN[:10]}", [TOKEN[:10], TOKEN, ""])
    assert said == "token *** and its head ***"


def test_bearer_and_basic_as_a_header_writes_them() -> None:
    basic = base64.b64encode(b"gate:pa55-w0rd").decode()
    said = redact(f"echo: Authorization: Bearer {TOKEN}; authorization: basic {basic}")
    assert said == "echo: Authorization: Bearer ***; authorization: basic ***"
    # words after them that are no credential stay
    assert redact("use basic auth, or a Bearer token") == "use basic auth, or a Bearer token"


def test_an_http_librarys_error_that_quotes_the_header() -> None:
    """A token with a newline in a header: h11 refuses it and quotes the header's value."""
    with HostileServer(lambda seen: Answer(200, b"{}")) as server:
        try:
            httpx.get(server.url, headers={"Authorization": f"Bearer {TOKEN}\n"})
        except httpx.LocalProtocolError as e:
            error = str(e)
        else:
            raise AssertionError("httpx sent an invalid header")
    assert TOKEN in error  # what it would have printed
    assert TOKEN not in redact(error)


def test_every_expected_error_is_printed_redacted() -> None:
    assert InputError(f"server said: Bearer {TOKEN}").lines() == ["server said: Bearer ***"]
