"""The fake GitHub every test here runs against (tests/support/fake_github.py): one server per
test on 127.0.0.1, for the repository the simulated runs name; a request the OpenAPI description
does not allow fails the test when it ends."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.fake_github import REPO, FakeGitHub


@pytest.fixture
def gh() -> Iterator[FakeGitHub]:
    with FakeGitHub(repo=REPO) as server:
        yield server
    assert server.errors == []
