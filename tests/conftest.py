from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.paths import SAMPLES

BROWSER_TESTS = Path(__file__).parent / "browser"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test under tests/browser/ launches headless Chromium: marked `browser`, so
    `-m "not browser"` deselects them on a machine without it (CI runs them all)."""
    for item in items:
        if item.path.is_relative_to(BROWSER_TESTS):
            item.add_marker(pytest.mark.browser)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden", action="store_true", help="rewrite tests/golden/ from the output"
    )


@pytest.fixture
def samples() -> Path:
    return SAMPLES


@pytest.fixture
def golden(request: pytest.FixtureRequest) -> Callable[[Path, str], None]:
    """`golden(path, text)`: `text` must equal the golden file; `make golden` (pytest
    --update-golden) rewrites the file from it instead, for review in the diff."""

    def check(path: Path, text: str) -> None:
        if request.config.getoption("--update-golden"):
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        assert text == path.read_text(encoding="utf-8"), f"{path.name} changed: `make golden`"

    return check
