"""Where the tests' files are: the repository, the sample tool files, the demo, the golden files.
Every test names a path through these, never through its own `__file__`, so moving a test
between folders cannot change what it reads."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# the real tool files the tests read, cut down from the tools' own outputs (tests/data/SOURCES.md
# names each source); the tests read only these, so a lone clone runs exactly what CI runs
SAMPLES = ROOT / "tests" / "data"
DEMO = ROOT / "budgetdiff" / "demo"
GOLDEN = ROOT / "tests" / "golden"


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
