"""Golden files for what a person reads: the demo as markdown and as a terminal table.

Regenerate after an intended change with `make golden` (pytest --update-golden) and review the diff.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import run

GOLDEN = Path(__file__).parent / "golden"


@pytest.mark.parametrize("output,name", [("markdown", "demo.md"), ("table", "demo.txt")])
def test_demo_output_matches_golden(
    output: str, name: str, request: pytest.FixtureRequest, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(["demo", "--output", output], capsys)
    assert code == 0, err
    path = GOLDEN / name
    if request.config.getoption("--update-golden"):
        GOLDEN.mkdir(exist_ok=True)
        path.write_text(out, encoding="utf-8")
    assert out == path.read_text(encoding="utf-8"), f"{name} changed: review, then `make golden`"
