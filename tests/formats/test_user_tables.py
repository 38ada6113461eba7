"""Tables people write themselves (tests/data/user_tables, written by tools/user_tables.py):
each gives the right answer, or a finding or an exit 2 that says why not. Never a silent
wrong answer.

The truth is computed here with pandas and numpy from the file and the manifest's word on
which columns hold TTFT, the end to end and the failures, in which unit; never from
budgetdiff's own reading.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from budgetdiff.cli import main
from tests.support.paths import ROOT, SAMPLES

DATA = SAMPLES / "user_tables"
MANIFEST: dict[str, dict[str, Any]] = json.loads((DATA / "MANIFEST.json").read_text())
MS = {"ms": 1.0, "s": 1000.0, "us": 0.001}
OK_ERRORS = {"", "ok", "none", "null", "nan", "false", "0"}


def _run(name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, Any, str]:
    budget = DATA / (MANIFEST[name]["budget"] or "budget.yml")
    out = tmp_path / "report.json"
    argv = ["check", "--head", str(DATA / name), "--budget", str(budget), "--json", str(out)]
    code = main([*argv, "--output", "json"], {})
    err = capsys.readouterr().err
    return code, json.loads(out.read_text()) if out.exists() else None, err


def _scenarios(report: dict[str, Any]) -> list[dict[str, Any]]:
    return list(report.get("scenarios") or [report])


def _frame(name: str, m: dict[str, Any]) -> pd.DataFrame:
    path = DATA / name
    if name.endswith((".jsonl", ".json")):
        return pd.read_json(path, lines=name.endswith(".jsonl"), dtype=False)
    return pd.read_csv(
        path,
        sep=m.get("sep", ","),
        decimal=m.get("decimal", "."),
        encoding="utf-8-sig",
        keep_default_na=False,
        na_values=[""],
    )


def _latency(frame: pd.DataFrame, spec: dict[str, Any]) -> np.ndarray:
    scale = MS[spec.get("unit", "ms")]
    if "column" in spec:
        return frame[spec["column"]].to_numpy(dtype=float) * scale
    if "sum" in spec:
        return frame[spec["sum"]].to_numpy(dtype=float).sum(axis=1) * scale
    start, end = spec["span"]
    return (frame[end].to_numpy(dtype=float) - frame[start].to_numpy(dtype=float)) * scale


def _failed(frame: pd.DataFrame, m: dict[str, Any], ttft: np.ndarray, total: np.ndarray) -> Any:
    rule = m.get("failed", {}).get("rule")
    empty = (np.isnan(ttft) | (ttft == 0)) & (np.isnan(total) | (total == 0))
    if rule is None or rule == "zero":
        return empty
    column = frame[m["failed"]["column"]]
    if rule == "error":
        texts = column.map(lambda v: "" if v is None or v != v else str(v).strip().lower())
        return texts.map(lambda t: t not in OK_ERRORS).to_numpy(dtype=bool) | empty
    if rule == "status":
        words = column.map(lambda v: str(v).strip().lower())
        codes = pd.to_numeric(column, errors="coerce").to_numpy(dtype=float)
        ok = ((codes >= 200) & (codes < 300)) | words.isin(["ok", "success"]).to_numpy()
        return ~ok | empty
    values = column.map(lambda v: str(v).strip().lower() in ("true", "1"))
    return ~values.to_numpy(dtype=bool) | empty


def _check_right(m: dict[str, Any], name: str, report: dict[str, Any]) -> None:
    frame = _frame(name, m)
    if "drop_last" in m:
        frame = frame.iloc[: -m["drop_last"]]
    groups = (
        [(str(k), g) for k, g in frame.groupby(m["classes"], sort=False)]
        if "classes" in m
        else [(None, frame)]
    )
    scenarios = {s["name"]: s for s in _scenarios(report)}
    assert len(scenarios) == len(groups)
    for key, group in groups:
        s = scenarios[key]
        ttft, total = _latency(group, m["ttft"]), _latency(group, m["total"])
        failed = _failed(group, m, ttft, total)
        assert s["failed"]["head"] == int(failed.sum())
        assert s["requests"]["head"] == len(group)
        rows = {r["metric"]: r["head_ms"] for r in s["slo"]}
        for metric, values in (("ttft", ttft), ("total", total)):
            want = float(np.percentile(values[~failed], 95))
            assert rows[metric] == pytest.approx(want, rel=1e-4, abs=2e-3), (key, metric)
        if "itl" in m:
            lists = group[m["itl"]["column"]][~failed]
            gaps = np.concatenate(
                [np.asarray(g[1:] if m["itl"]["drop_first"] else g) for g in lists]
            )
            assert rows["itl"] == pytest.approx(float(np.percentile(gaps, 95)), abs=2e-3)
        wrong = [f for f in s["findings"] if f["kind"] in ("units", "impossible") and f["fails"]]
        assert not wrong, wrong
    if "finding" in m:
        assert any(f["kind"] == m["finding"] for f in report["findings"])
    if "note" in m:
        assert any(m["note"] in n for n in report["notes"])


@pytest.mark.parametrize("name", sorted(MANIFEST))
def test_user_table_gives_the_right_answer_or_says_why_not(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    m = MANIFEST[name]
    code, report, err = _run(name, tmp_path, capsys)
    if m["expect"] == "exit2":
        assert code == 2
        assert m["message"] in err
        assert err.count("\n") == 1  # one line
        return
    assert code in (0, 1), err
    if m["expect"] == "finding":
        found = [f for s in _scenarios(report) for f in s["findings"] if f["kind"] == m["kind"]]
        assert any(m["subject"] in f["subject"] and f["fails"] for f in found), found
        assert code == 1
        return
    _check_right(m, name, report)


def test_the_corpus_covers_every_outcome() -> None:
    outcomes = [m["expect"] for m in MANIFEST.values()]
    assert len(outcomes) >= 35
    assert {"right", "finding", "exit2"} == set(outcomes)


def test_the_corpus_files_are_what_the_tool_writes(tmp_path: Path) -> None:
    """The committed files are the generator's output (no hand edit drifts from it)."""
    import runpy

    tool = ROOT / "tools" / "user_tables.py"
    ns = runpy.run_path(str(tool))
    corpus = ns["Corpus"]()
    for part in ("names", "spreadsheet", "slices", "units", "failures", "impossible"):
        ns[part](corpus)
    ns["classes_and_times"](corpus)
    for name, text in corpus.files.items():
        assert (DATA / name).read_bytes() == text.encode("utf-8"), name
    assert json.loads((DATA / "MANIFEST.json").read_text()) == corpus.manifest
