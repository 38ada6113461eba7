"""Series of merges through the command line (issue 39): each merge writes a run, compares it
with the run before it against the history so far, and appends its report to the history, as
the Action does. What bench/drift_simulation.py counts, and its small version in the tests."""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from budgetdiff.cli import main as cli_main
from tests.support.history import BUDGET, write_run

ROOT = Path(__file__).resolve().parents[2]
REQUESTS = 600
START = 20  # the merge whose run first carries a change, in the bench's series
CHANGED = ("decode", "total")  # the rows a change of decode moves


@dataclass(frozen=True)
class Kind:
    name: str
    merges: int
    start: int | None  # the merge (1-based) whose run first carries the change
    scale: Callable[[int], float]  # decode's scale in the run of merge i (0: the first run)


def noise(merges: int) -> Kind:
    return Kind("noise", merges, None, lambda i: 1.0)


def creep(start: int, merges: int) -> Kind:
    """Decode +1% a merge from merge `start`, for 20 merges."""
    return Kind("creep", merges, start, lambda i: 1.01 ** min(max(i - start + 1, 0), 20))


def step(start: int, merges: int) -> Kind:
    """Decode +15% from merge `start` on."""
    return Kind("step", merges, start, lambda i: 1.15 if i >= start else 1.0)


KINDS = {
    "noise": noise(100),
    "creep": creep(START, START + 19),
    "step": step(START, START + 19),
}


@dataclass(frozen=True)
class Merge:
    drift: tuple[str, ...]  # the subjects of its drift findings
    regression: tuple[str, ...]
    code: int
    messages: dict[str, str]  # each drift finding's message, by subject
    decode: dict[str, Any]  # decode's trend, as the JSON report has it


class Runner:
    """One CLI call: the console script's entry in this process, or a fresh interpreter."""

    def __init__(self, fresh: bool = False) -> None:
        self.fresh = fresh

    def __call__(self, argv: Sequence[str]) -> tuple[int, str]:
        if self.fresh:
            done = subprocess.run(
                [sys.executable, "-m", "budgetdiff", *argv],
                capture_output=True,
                text=True,
                check=False,
                cwd=ROOT,
            )
            return done.returncode, done.stdout
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            code = cli_main(list(argv), {})
        return code, out.getvalue()


def series(
    kind: Kind, seed: int, folder: Path, run: Runner, merges: int | None = None
) -> list[Merge]:
    """One series of merges through the CLI (the first `merges` of the kind's); each merge's
    findings."""
    history = folder / "history.jsonl"
    previous = write_run(folder / "base.csv", seed, kind.scale(0), n=REQUESTS)
    code, out = run(["check", "--budget", BUDGET, "--head", str(previous), "--output", "json"])
    assert code in (0, 1), code
    history.write_text(_line(out))
    found = []
    for i in range(1, (merges or kind.merges) + 1):
        head = write_run(folder / "head.csv", seed + i, kind.scale(i), n=REQUESTS)
        argv = ["compare", "--budget", BUDGET, "--base", str(previous), "--head", str(head)]
        argv += ["--history", str(history), "--fail-on", "drift,regression", "--output", "json"]
        code, out = run(argv)
        assert code in (0, 1), (code, argv)
        report = json.loads(out)
        findings = report["findings"]
        drift = {f["subject"]: f["message"] for f in findings if f["kind"] == "drift"}
        found.append(
            Merge(
                tuple(drift),
                tuple(f["subject"] for f in findings if f["kind"] == "regression"),
                code,
                drift,
                next(t for t in report["history"]["trends"] if t["name"] == "decode"),
            )
        )
        with history.open("a") as f:
            f.write(_line(out))
        previous.write_bytes(head.read_bytes())
    return found


def delay(kind: Kind, merges: list[Merge]) -> int | None:
    """Merges from the change's start to the first drift on a row it moves (1: the first run
    that carries it); None when none comes."""
    assert kind.start is not None
    after = [j for j, m in enumerate(merges[kind.start - 1 :]) if set(m.drift) & set(CHANGED)]
    return after[0] + 1 if after else None


def _line(out: str) -> str:
    return json.dumps(json.loads(out), separators=(",", ":")) + "\n"
