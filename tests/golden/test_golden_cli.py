"""Golden files for every command's output a person or a script reads, through `cli.main`:
the JSON report, check mode, several scenarios, aggregate inputs, rebudget (printed and
written), whatif (estimate and data) and the workflow annotations.

Each golden file holds the command, its exit code, stdout and stderr, run in a directory that
holds copies of the inputs under short names, so the output names no temporary path.
Regenerate after an intended change with `make golden` and review the diff.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.support.helpers import appended, run
from tests.support.paths import DEMO, GOLDEN, SAMPLES

CLI_GOLDEN = GOLDEN / "cli"
DEMO_FILES = {
    "base.csv": DEMO / "base.csv",
    "head.csv": DEMO / "head.csv",
    "budget.yml": DEMO / "budget.yml",
}
SLO_ONLY = "version: 1\nslo: {ttft: 1200, total: 6000}\n"
AGGREGATE = {
    "base.json": SAMPLES / "vllm" / "vllm_aggregate_base_vllm_bench_serve.json",
    "head.json": SAMPLES / "vllm" / "vllm_aggregate_head_vllm_bench_serve.json",
}
PROMETHEUS = {
    "base.prom": SAMPLES / "generated" / "prometheus" / "vllm-base" / "metrics_after.prom",
    "head.prom": SAMPLES / "generated" / "prometheus" / "vllm-head" / "metrics_after.prom",
}


@dataclass(frozen=True)
class Case:
    command: str  # split on spaces: no argument holds one
    files: dict[str, Path] = field(default_factory=lambda: dict(DEMO_FILES))
    # files the command writes, shown after its output
    writes: tuple[str, ...] = ()
    setup: Callable[[Path], None] | None = None
    github: bool = False


def _scenario_files(tmp: Path) -> None:
    """Two vLLM runs appended per side (concurrency 8 and 16), as `--append-result` writes them."""
    for side in ("base", "head"):
        appended(SAMPLES, side, tmp)
    _slo_only(tmp)


def _slo_only(tmp: Path) -> None:
    """Aggregate inputs hold the SLO metrics and no slices: a budget of the SLO alone."""
    (tmp / "budget.yml").write_text(SLO_ONLY)


DEMO_PAIR = "--base base.csv --head head.csv --budget budget.yml"
AGG_PAIR = "--base base.json --head head.json --budget budget.yml"
CASES: dict[str, Case] = {
    "compare.json": Case(f"compare {DEMO_PAIR} --output json"),
    "check.txt": Case("check --head head.csv --budget budget.yml"),
    "check.md": Case("check --head head.csv --budget budget.yml --output markdown"),
    "check.json": Case("check --head head.csv --budget budget.yml --output json"),
    "scenarios.txt": Case(f"compare {AGG_PAIR}", files={}, setup=_scenario_files),
    "scenarios.json": Case(f"compare {AGG_PAIR} --output json", files={}, setup=_scenario_files),
    "aggregate.txt": Case(f"compare {AGG_PAIR}", files=AGGREGATE, setup=_slo_only),
    "aggregate.md": Case(f"compare {AGG_PAIR} --output markdown", files=AGGREGATE, setup=_slo_only),
    "aggregate.json": Case(f"compare {AGG_PAIR} --output json", files=AGGREGATE, setup=_slo_only),
    "prometheus.txt": Case(
        "compare --base base.prom --head head.prom --budget budget.yml",
        files=PROMETHEUS,
        setup=_slo_only,
    ),
    "rebudget.txt": Case("rebudget --head head.csv --budget budget.yml"),
    "rebudget-write.txt": Case(
        "rebudget --head head.csv --budget budget.yml --write", writes=("budget.yml",)
    ),
    "whatif-estimate.txt": Case(
        "whatif --budget budget.yml --ttft 850 --tokens-per-s 22 --tokens 1200 --tail 300"
    ),
    "whatif-data.txt": Case(
        "whatif --head head.csv --budget budget.yml --scale decode=0.8 --add queue=-50"
    ),
    "annotations.txt": Case(
        f"compare {DEMO_PAIR} --github --comment false --json report.json", github=True
    ),
}


def _transcript(name: str, case: Case, tmp: Path, capsys: pytest.CaptureFixture[str]) -> str:
    for short, source in case.files.items():
        shutil.copyfile(source, tmp / short)
    if case.setup is not None:
        case.setup(tmp)
    env = {}
    if case.github:
        env = {"GITHUB_OUTPUT": "outputs.txt", "GITHUB_STEP_SUMMARY": "summary.md"}
    code, out, err = run(case.command.split(), capsys, env=env)
    parts = [
        f"$ budgetdiff {' '.join(case.command.split())}",
        f"exit {code}",
        "-- stdout",
        out,
        "-- stderr",
        err,
    ]
    for written in case.writes:
        parts += [f"-- {written}", (tmp / written).read_text(encoding="utf-8")]
    return "\n".join(parts)


@pytest.mark.parametrize("name", list(CASES))
def test_command_output_matches_golden(
    name: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    golden: Callable[[Path, str], None],
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    text = _transcript(name, CASES[name], tmp_path, capsys)
    assert "Traceback" not in text and str(tmp_path) not in text
    golden(CLI_GOLDEN / name, text)
