"""The Python API: budgetdiff.compare / check on files, DataFrames, Arrow tables and dicts, the
Report's renderings, budgetdiff.testing, the documented example, and pandas kept off the CLI."""

from __future__ import annotations

import doctest
import json
import sys
from dataclasses import replace

import pandas as pd
import pyarrow as pa
import pytest

import budgetdiff
from budgetdiff.api import Report
from budgetdiff.budget.file import parse_budget
from budgetdiff.cli import main
from budgetdiff.errors import BudgetError, InputError, ReaderBug, UsageError
from budgetdiff.render.frame import FRAME_COLUMNS
from budgetdiff.testing import assert_within_budget
from tests.support.helpers import BUDGET
from tests.support.paths import DEMO, ROOT

BASE, HEAD, DEMO_BUDGET = DEMO / "base.csv", DEMO / "head.csv", DEMO / "budget.yml"


def cli_json(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    main([*args, "--output", "json"], {})
    return capsys.readouterr().out


def test_compare_on_files_is_the_clis_report(capsys: pytest.CaptureFixture[str]) -> None:
    report = budgetdiff.compare(BASE, str(HEAD), DEMO_BUDGET)
    assert isinstance(report, Report)
    expected = cli_json(
        capsys, "compare", "--base", str(BASE), "--head", str(HEAD), "--budget", str(DEMO_BUDGET)
    )
    assert report.to_json() == expected
    assert report.to_dict() == json.loads(expected)
    assert report.verdict == "fail" and report.regressions == ["total", "tpot", "decode"]


def test_check_is_the_clis_check(capsys: pytest.CaptureFixture[str]) -> None:
    report = budgetdiff.check(HEAD, DEMO_BUDGET)
    assert report.mode == "check"
    assert report.to_json() == cli_json(
        capsys, "check", "--head", str(HEAD), "--budget", str(DEMO_BUDGET)
    )
    main(["check", "--head", str(HEAD), "--budget", str(DEMO_BUDGET)], {})
    assert report.to_text() == capsys.readouterr().out
    main(["check", "--head", str(HEAD), "--budget", str(DEMO_BUDGET), "--output", "markdown"], {})
    assert report.to_markdown() == capsys.readouterr().out


def frames() -> dict[str, tuple[object, object]]:
    base, head = pd.read_csv(BASE), pd.read_csv(HEAD)
    as_dict = {
        "dict of arrays": tuple({c: df[c].to_numpy() for c in df.columns} for df in (base, head)),
        "dict of lists": tuple({c: df[c].tolist() for c in df.columns} for df in (base, head)),
    }
    tables = [pa.Table.from_pandas(df) for df in (base, head)]
    return {
        "DataFrame": (base, head),
        # any object that speaks the Arrow C stream interface (polars, DuckDB results, ...)
        "Arrow stream": tuple(
            pa.RecordBatchReader.from_batches(t.schema, t.to_batches()) for t in tables
        ),  # type: ignore[dict-item]
        "pyarrow Table": tuple(tables),  # type: ignore[dict-item]
        **as_dict,  # type: ignore[dict-item]
    }


@pytest.mark.parametrize("kind", list(frames()))
def test_tables_in_memory_give_the_report_of_the_files(kind: str) -> None:
    base, head = frames()[kind]
    from_files = budgetdiff.compare(BASE, HEAD, DEMO_BUDGET).to_dict()
    in_memory = budgetdiff.compare(base, head, DEMO_BUDGET).to_dict()  # type: ignore[arg-type]
    # the same numbers and findings; only the inputs say where the data came from
    inputs = in_memory.pop("inputs")
    assert inputs["head"]["format"] == "native"
    assert inputs["head"]["schema"] == "in-memory table"
    assert inputs["head"]["source"].startswith("head")
    from_files.pop("inputs")
    for s in [*(in_memory.get("scenarios") or []), *(from_files.get("scenarios") or [])]:
        s.pop("inputs", None)
    assert in_memory == from_files


def test_the_budget_as_a_file_yaml_text_a_dict_or_a_budget() -> None:
    text = DEMO_BUDGET.read_text(encoding="utf-8")
    parsed = parse_budget(text, "x")
    as_dict = parsed.model_dump()
    reports = [
        budgetdiff.check(HEAD, budget).to_dict()
        for budget in (DEMO_BUDGET, str(DEMO_BUDGET), text, as_dict, parsed)
    ]
    assert all(r == reports[0] for r in reports[1:])


def test_one_row_per_slo_metric_and_slice() -> None:
    report = budgetdiff.compare(BASE, HEAD, DEMO_BUDGET)
    frame = report.to_frame()
    data = report.to_dict()
    assert list(frame.columns) == list(FRAME_COLUMNS)
    assert list(frame.name) == [r["metric"] for r in data["slo"]] + [
        r["name"] for r in data["slices"]
    ]
    assert list(frame.kind) == ["slo"] * len(data["slo"]) + ["slice"] * len(data["slices"])
    rows = {
        (k, n): row
        for k, n, row in zip(frame.kind, frame.name, frame.to_dict("records"), strict=True)
    }
    for r in data["slices"]:
        row = rows[("slice", r["name"])]
        assert row["head_ms"] == pytest.approx(r["head_ms"], abs=1e-3)
        assert [row["ci_low_ms"], row["ci_high_ms"]] == pytest.approx(r["ci_ms"], abs=1e-3)
        assert row["over_budget"] == r["over_budget"] and row["change"] == r["change"]
    total = rows[("slo", "total")]
    assert total["status"] == "low_headroom" and total["target_ms"] == 6000


def test_a_row_per_metric_and_slice_of_every_scenario() -> None:
    one = budgetdiff.compare(BASE, HEAD, DEMO_BUDGET).scenarios[0]
    named = [
        replace(one, comparison=replace(one.comparison, name=name)) for name in ("c=8", "c=16")
    ]
    frame = Report(id="default", mode="compare", scenarios=tuple(named)).to_frame()
    rows = len(one.comparison.slo) + len(one.comparison.slices)
    assert list(frame.scenario) == ["c=8"] * rows + ["c=16"] * rows


def test_check_frames_have_no_base_values() -> None:
    frame = budgetdiff.check(HEAD, DEMO_BUDGET).to_frame()
    assert frame.base_ms.isna().all() and frame.head_ms.notna().all()


def test_to_frame_without_pandas_says_how_to_get_it(monkeypatch: pytest.MonkeyPatch) -> None:
    report = budgetdiff.check(HEAD, DEMO_BUDGET)
    monkeypatch.setitem(sys.modules, "pandas", None)  # `import pandas` raises ImportError
    with pytest.raises(ImportError, match=r"pip install 'budgetdiff\[pandas\]'"):
        report.to_frame()


@pytest.mark.parametrize(
    ("results", "budget", "error", "message"),
    [
        ({"decode_ms": [1.0, 2.0], "prefill_ms": [1.0]}, BUDGET, InputError, r"^head \(dict\): "),
        (
            {"queue_ms": [1, 2], "prefill_ms": [3, 4], "decode_ms": ["5", "x"]},
            BUDGET,
            InputError,
            r"^native: head \(dict\): row 2, column 'decode_ms': 'x' is not a number",
        ),
        (42, BUDGET, InputError, r"^head: a int is not results"),
        ("missing.csv", BUDGET, InputError, r"^missing\.csv: no such file"),
        (HEAD, {"slo": {"totl": 5}}, BudgetError, r"^budget: slo\.totl: unknown key"),
        (HEAD, "slo: [", BudgetError, r"^budget:\d: not valid YAML"),
        (HEAD, "nope.yml", BudgetError, r"^nope\.yml: no such budget file"),
        (HEAD, 3.5, BudgetError, r"^budget: a float is not a budget"),
    ],
)
def test_bad_input_raises_the_clis_one_line_errors(
    results: object, budget: object, error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message) as caught:
        budgetdiff.check(results, budget)  # type: ignore[arg-type]
    assert "\n" not in str(caught.value)


def test_a_bug_in_the_in_memory_reader_is_a_bug_not_bad_input(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A KeyError inside the native reader of a DataFrame is budgetdiff's bug (ReaderBug, exit
    3 in the CLI), never an InputError that blames the user's table."""
    from budgetdiff.formats.native import build as native

    def broken(*args: object) -> None:
        raise KeyError("stands for any bug")

    monkeypatch.setattr(native, "read_arrow", broken)
    with pytest.raises(ReaderBug) as caught:
        budgetdiff.check(pd.read_csv(HEAD), DEMO_BUDGET)
    assert not isinstance(caught.value, InputError)
    assert (caught.value.format, caught.value.file) == ("native", "head (DataFrame)")
    assert isinstance(caught.value.original, KeyError)


def test_fail_on_and_id() -> None:
    assert budgetdiff.compare(BASE, HEAD, DEMO_BUDGET, fail_on=[]).verdict == "warn"
    assert budgetdiff.compare(BASE, HEAD, DEMO_BUDGET, fail_on="never").verdict == "warn"
    assert (
        budgetdiff.compare(BASE, HEAD, DEMO_BUDGET, fail_on="breach, regression").verdict == "fail"
    )
    report = budgetdiff.compare(BASE, HEAD, DEMO_BUDGET, fail_on=["breach"], id="nightly")
    assert report.verdict == "warn" and report.id == "nightly"
    with pytest.raises(UsageError, match="fail_on: unknown kind 'regresion'"):
        budgetdiff.check(HEAD, DEMO_BUDGET, fail_on=["regresion"])
    with pytest.raises(UsageError, match=r"^id: "):
        budgetdiff.check(HEAD, DEMO_BUDGET, id="a b")


def test_a_list_of_files_is_one_run_in_several_files() -> None:
    assert (
        budgetdiff.check([HEAD], DEMO_BUDGET).to_dict()
        == budgetdiff.check(HEAD, DEMO_BUDGET).to_dict()
    )


def test_the_package_exports_the_api() -> None:
    assert callable(budgetdiff.compare) and callable(budgetdiff.check)
    assert budgetdiff.Report is Report


# ---- budgetdiff.testing --------------------------------------------------------------------


def test_assert_within_budget_passes_and_returns_the_report() -> None:
    report = assert_within_budget(BASE, DEMO_BUDGET)
    assert report.verdict == "pass"
    assert assert_within_budget(HEAD, DEMO_BUDGET, base=BASE, fail_on=["breach"]).verdict == "warn"


def test_assert_within_budget_fails_with_the_terminal_report() -> None:
    with pytest.raises(AssertionError) as caught:
        assert_within_budget(pd.read_csv(HEAD), DEMO_BUDGET, base=pd.read_csv(BASE))
    expected = budgetdiff.compare(pd.read_csv(BASE), pd.read_csv(HEAD), DEMO_BUDGET).to_text()
    assert str(caught.value) == expected
    assert str(caught.value).startswith("budgetdiff: FAIL\n")


# ---- the documented example ----------------------------------------------------------------


def test_the_readme_python_example_runs() -> None:
    doc = ROOT / "docs" / "python.md"
    result = doctest.testfile(
        str(doc),
        module_relative=False,
        optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE,
        verbose=False,
    )
    assert result.attempted >= 12 and result.failed == 0, f"{doc}: {result.failed} failed"
