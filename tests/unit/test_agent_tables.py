"""Agent step tables in memory through the Python API (issue 28's gap): a DataFrame, a pyarrow
Table or a dict of arrays with the step table's columns is read as agent tasks, as its file is.
The tables are built here from the tasks `tools/make_agent_data.py` draws, and the report's rows
are numpy's percentiles of the same draw."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import budgetdiff
from budgetdiff.errors import InputError
from tests.support.paths import SAMPLES
from tools import make_agent_data as gen

BUDGET = SAMPLES / "agent" / "agent.yml"


def _columns(drawn: list[Any]) -> dict[str, list[Any]]:
    """One row per model call: task ids are numbers (0 too), the answer's tool_ms NaN."""
    out: dict[str, list[Any]] = {k: [] for k in ("task_id", "step", "model_ms", "tool_ms")}
    out |= {"tool_name": [], "between_ms": []}
    for t, steps in enumerate(drawn):
        for s, (model, tool, between, name) in enumerate(steps, 1):
            out["task_id"].append(t)
            out["step"].append(s)
            out["model_ms"].append(model)
            out["tool_ms"].append(tool if tool >= 0 else float("nan"))
            out["tool_name"].append(name or None)
            out["between_ms"].append(between)
    return out


def _truth(drawn: list[Any]) -> dict[str, float]:
    steps = [s for t in drawn for s in t[:-1]]
    return {
        "total": float(
            np.percentile([sum(s[0] + max(s[1], 0) + s[2] for s in t) for t in drawn], 95)
        ),
        "steps": float(np.percentile([len(t) - 1 for t in drawn], 95)),
        "step": float(np.percentile([s[0] + s[1] + s[2] for s in steps], 95)),
        "tool": float(np.percentile([s[1] for s in steps], 95)),
    }


@pytest.mark.parametrize("kind", ["DataFrame", "Table", "dict"])
def test_a_step_table_in_memory_is_read_as_agent_tasks(kind: str) -> None:
    base = gen.draw(gen.Spec(seed=21, tasks=300, steps=[5]))
    head = gen.draw(gen.Spec(seed=22, tasks=300, steps=[6, 7]))
    make = {"DataFrame": pd.DataFrame, "Table": pa.table, "dict": dict}[kind]
    report = budgetdiff.compare(make(_columns(base)), make(_columns(head)), BUDGET)
    data = report.to_dict()
    rows = {r["name"]: r for r in data["agent"]["rows"]}
    for side, drawn in (("base", base), ("head", head)):
        truth = _truth(drawn)
        total = next(r for r in data["slo"] if r["metric"] == "total")
        assert total[f"{side}_ms"] == pytest.approx(truth["total"], rel=1e-6)
        assert rows["steps"][side] == truth["steps"]
        assert rows["step"][side] == pytest.approx(truth["step"], rel=1e-6)
        assert rows["tool"][side] == pytest.approx(truth["tool"], rel=1e-6)
    assert data["agent"]["tasks"] == {"base": 300, "head": 300}
    assert ("agent_steps", "steps", True) in [
        (f["kind"], f["subject"], f["fails"]) for f in data["findings"]
    ]
    assert report.verdict == "fail" and "300 tasks" in report.to_text()


def test_a_table_in_memory_reads_as_its_file(tmp_path: Any) -> None:
    """The same steps as a DataFrame and as the file `make_agent_data` writes: one report."""
    drawn = gen.draw(gen.Spec(seed=23, tasks=200, steps=[5]))
    gen.write_steps(tmp_path / "steps.csv", drawn)
    from_file = budgetdiff.check(tmp_path / "steps.csv", BUDGET).to_dict()
    in_memory = budgetdiff.check(pd.DataFrame(_columns(drawn)), BUDGET).to_dict()
    for key in ("slo", "agent", "findings", "summary", "requests"):
        assert in_memory[key] == from_file[key], key


def test_a_bad_row_in_memory_is_named_by_its_row() -> None:
    columns = _columns(gen.draw(gen.Spec(seed=24, tasks=3, steps=[2])))
    columns["model_ms"][4] = None
    with pytest.raises(InputError, match=r"row 5: column 'model_ms': empty"):
        budgetdiff.check(pd.DataFrame(columns), BUDGET)
    columns["model_ms"][4] = -3.0
    with pytest.raises(InputError, match=r"row 5: column 'model_ms': -3.0 is not a latency"):
        budgetdiff.check(columns, BUDGET)
