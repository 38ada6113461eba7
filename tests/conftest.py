from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT.parent / "shared" / "samples"
DEMO = ROOT / "budgetdiff" / "demo"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden", action="store_true", help="rewrite tests/golden/ from the output"
    )


@pytest.fixture
def samples() -> Path:
    if not SAMPLES.is_dir():
        pytest.skip("../shared/samples is not beside the repository")
    return SAMPLES
