from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# the real tool files the tests read, cut down from the tools' own outputs (tests/data/SOURCES.md
# names each source); the tests read only these, so a lone clone runs exactly what CI runs
SAMPLES = ROOT / "tests" / "data"
DEMO = ROOT / "budgetdiff" / "demo"


def sample_roots() -> list[Path]:
    """Where the tests' real tool files are: tests/data."""
    return [SAMPLES]


def sample_files() -> list[Path]:
    """Every tool file under the sample roots (not tests/data's GitHub descriptions, notes, the
    fuzzer's seeds, which are cut-downs of these, or the hand-made user tables)."""
    return sorted(
        p
        for root in sample_roots()
        for p in root.rglob("*")
        if p.is_file()
        and p.parent != root
        and p.relative_to(root).parts[0] not in ("github", "fuzz", "user_tables")
    )


def sample_path(path: Path) -> str:
    """`path` relative to the sample root that holds it, e.g. `generated/vllm/base/x.json`."""
    root = next(r for r in sample_roots() if path.is_relative_to(r))
    return path.relative_to(root).as_posix()


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
