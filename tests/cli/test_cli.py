"""The main path end to end: two native tables and a budget in, report and exit code out."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from budgetdiff.cli import guarded
from budgetdiff.errors import BudgetError, InputError
from budgetdiff.measure.results import METRIC_LABELS
from tests.support.helpers import BUDGET, compare_json, run, slices, write_table


@pytest.fixture
def tail_pair(tmp_path: Path) -> tuple[Path, Path, Path]:
    base = write_table(tmp_path / "base.csv", slices(1))
    head = write_table(tmp_path / "head.csv", slices(2, decode_tail=1.35))
    budget = tmp_path / "budget.yml"
    budget.write_text(BUDGET)
    return base, head, budget


def test_tail_regression_is_found_in_all_three_outputs(
    tail_pair: tuple[Path, Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base, head, budget = tail_pair
    hb = np.loadtxt(head, delimiter=",", skiprows=1, usecols=3)
    bb = np.loadtxt(base, delimiter=",", skiprows=1, usecols=3)
    assert abs(np.median(hb) / np.median(bb) - 1) < 0.03  # the median did not move
    args = ["compare", "--base", str(base), "--head", str(head), "--budget", str(budget)]
    md_file, json_file = tmp_path / "r.md", tmp_path / "r.json"
    code, table, _ = run([*args, "--json", str(json_file), "--markdown", str(md_file)], capsys)
    assert code == 1
    report = json.loads(json_file.read_text())
    changes = {s["name"]: s["change"] for s in report["slices"]}
    assert changes == {"queue": "none", "prefill": "none", "decode": "regression"}
    assert "decode" in report["regressions"] and report["verdict"] == "fail"
    # at 80 columns (no COLUMNS, not a terminal) each slice has a line in both folded tables
    decode = " ".join(line for line in table.splitlines() if line.startswith("decode"))
    assert "regression" in decode
    assert "regression" not in " ".join(ln for ln in table.splitlines() if ln.startswith("prefill"))
    markdown = md_file.read_text()
    heading = markdown.splitlines()[0]  # the answer in words: which SLO, which slice
    assert heading.startswith("### ❌ End to end p95 +")
    assert heading.endswith("decode regressed") or "decode regressed (+" in heading
    code, _, _ = run([*args, "--fail-on", "never"], capsys)
    assert code == 0


def test_unchanged_runs_pass(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = write_table(tmp_path / "base.csv", slices(1))
    head = write_table(tmp_path / "head.csv", slices(2))
    budget = tmp_path / "budget.yml"
    budget.write_text(BUDGET)
    code, report = compare_json(capsys, base, head, budget)
    assert code == 0
    assert report["regressions"] == []
    assert {r["change"] for r in report["slices"]} == {"none"}


def test_json_report_has_every_contract_key(
    tail_pair: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    base, head, budget = tail_pair
    _, report = compare_json(capsys, base, head, budget)
    top = {
        "schema",
        "verdict",
        "percentile",
        "requests",
        "slo",
        "slices",
        "findings",
        "regressions",
        "rebudget",
    }
    assert top <= set(report)
    assert report["schema"] == "budgetdiff.report/v1"
    assert report["requests"] == {"base": 2000, "head": 2000}
    slo_keys = {
        "metric",
        "target_ms",
        "base_ms",
        "head_ms",
        "delta_ms",
        "delta_pct",
        "ci_ms",
        "change",
        "headroom_pct",
        "status",
    }
    slice_keys = {
        "name",
        "budget_ms",
        "base_ms",
        "head_ms",
        "delta_ms",
        "delta_pct",
        "ci_ms",
        "change",
        "over_budget",
        "tail_share_pct",
        "tail_change_ms",
    }
    assert all(slo_keys <= set(r) for r in report["slo"])
    assert all(slice_keys <= set(r) for r in report["slices"])
    assert {"kind", "subject", "fails", "message"} <= set(report["findings"][0])
    assert abs(sum(r["tail_share_pct"] for r in report["slices"]) - 100) < 0.5


def test_check_has_no_base(
    tail_pair: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    _, head, budget = tail_pair
    code, out, _ = run(
        ["check", "--head", str(head), "--budget", str(budget), "--output", "json"], capsys
    )
    report = json.loads(out)
    assert report["requests"]["base"] is None
    assert all(r["base_ms"] is None and r["change"] is None for r in report["slices"])
    assert code == 0


def test_missing_base_is_a_finding_never_a_silent_pass(
    tail_pair: tuple[Path, Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, head, budget = tail_pair
    args = [
        "compare",
        "--base",
        str(tmp_path / "gone.csv"),
        "--head",
        str(head),
        "--budget",
        str(budget),
        "--output",
        "json",
        "--allow-missing-base",
    ]
    code, out, _ = run(args, capsys)
    report = json.loads(out)
    assert report["verdict"] == "warn" and code == 0
    assert report["findings"][0]["kind"] == "no_base"
    code, out, _ = run([*args, "--fail-on", "no_base"], capsys)
    assert code == 1


def test_demo_runs_and_exits_zero(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(["demo"], capsys)
    assert code == 0, err
    assert out.startswith("budgetdiff demo:") and "decode" in out
    code, out, err = run(["demo", "--output", "json"], capsys)
    assert code == 0 and json.loads(out)["verdict"] == "fail"  # stdout stays pure JSON
    assert "budgetdiff demo:" in err


def test_schema_is_json_schema(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["schema"], capsys)
    schema = json.loads(out)
    assert code == 0
    assert {"percentile", "slo", "slices", "fail_on"} <= set(schema["properties"])
    assert schema["additionalProperties"] is False


def test_base_ref_reads_the_file_from_git(
    tail_pair: tuple[Path, Path, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import subprocess

    base, head, budget = tail_pair
    repo = tmp_path / "repo"
    repo.mkdir()
    monkeypatch.chdir(repo)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]
    subprocess.run(["git", "init", "-q"], check=True)
    (repo / "results.csv").write_bytes(base.read_bytes())
    subprocess.run([*git, "add", "results.csv"], check=True)
    subprocess.run([*git, "commit", "-qm", "base"], check=True)
    (repo / "results.csv").write_bytes(head.read_bytes())  # the work tree holds head now
    code, out, err = run(
        [
            "compare",
            "--base",
            "results.csv",
            "--base-ref",
            "HEAD",
            "--head",
            "results.csv",
            "--budget",
            str(budget),
            "--output",
            "json",
        ],
        capsys,
    )
    assert code == 1, err
    assert "decode" in json.loads(out)["regressions"]
    code, _, err = run(
        [
            "compare",
            "--base",
            "results.csv",
            "--base-ref",
            "nosuchref",
            "--head",
            "results.csv",
            "--budget",
            str(budget),
        ],
        capsys,
    )
    assert code == 2 and "nosuchref" in err and "Traceback" not in err
    code, out, err = run(
        [
            "compare",
            "--base",
            "other.csv",
            "--base-ref",
            "HEAD",
            "--head",
            "results.csv",
            "--budget",
            str(budget),
            "--output",
            "json",
        ],
        capsys,
    )
    assert code == 0 and json.loads(out)["findings"][0]["kind"] == "no_base"


def _page_data(page: Path) -> dict[str, Any]:
    text = page.read_text(encoding="utf-8")
    start = text.index('<script type="application/json" id="budgetdiff-data">')
    body = text[text.index(">", start) + 1 : text.index("</script>", start)]
    data: dict[str, Any] = json.loads(body)
    return data


def test_the_page_draws_base_and_head_of_every_row(
    tail_pair: tuple[Path, Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base, head, budget = tail_pair
    page = tmp_path / "page.html"
    _, report = compare_json(capsys, base, head, budget, "--html", str(page))
    cdfs = _page_data(page)["cdfs"]
    rows = [METRIC_LABELS[r["metric"]] for r in report["slo"]]
    rows += [r["name"] for r in report["slices"]]
    assert [c["title"] for c in cdfs] == [f"{r}: base vs head" for r in rows]
    for c in cdfs:  # both sides drawn: each CDF climbs to 1
        assert c["base"][-1] == 1 and c["head"][-1] == 1
    # check has no base: the head alone
    code, _, err = run(
        ["check", "--head", str(head), "--budget", str(budget), "--html", str(page)], capsys
    )
    assert code == 0, err
    assert all(set(c["base"]) == {None} for c in _page_data(page)["cdfs"])


def test_the_demo_leaves_its_options_as_given(capsys: pytest.CaptureFixture[str]) -> None:
    """demo compares the bundled pair by handing compare new options, never by rewriting the
    parsed ones: a second run in the same process prints the same."""
    first = run(["demo", "--output", "json"], capsys)
    assert first == run(["demo", "--output", "json"], capsys)
    assert first[0] == 0 and json.loads(first[1])["verdict"] == "fail"


# ---- issue 26: check takes no base; whatif without a budget file --------------------------


@pytest.mark.parametrize(
    "flags",
    [
        ["--base", "x.csv"],
        ["--base-ref", "main"],
        ["--base-artifact", "results"],
        ["--allow-missing-base"],
    ],
)
def test_check_refuses_every_base_flag(
    flags: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    head = write_table(tmp_path / "head.csv", slices(1, 50))
    budget = tmp_path / "budget.yml"
    budget.write_text(BUDGET, encoding="utf-8")
    code, out, err = run(["check", "--head", str(head), "--budget", str(budget), *flags], capsys)
    assert code == 2 and out == ""
    assert err == f"budgetdiff: error: {flags[0]}: check takes no base; use compare\n"


ESTIMATE = ["whatif", "--ttft", "850", "--tokens-per-s", "22", "--tokens", "1200", "--tail", "300"]


def test_whatif_takes_the_slo_from_flags_with_no_budget_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)  # no budget.yml here
    code, out, err = run([*ESTIMATE, "--slo-total", "6000"], capsys)
    total = 850 + (1200 - 1) * 1000 / 22 + 300  # the first token is in TTFT
    assert round(total) == 55_650
    assert code == 1 and err == ""
    assert "= 55,650 ms" in out
    # no headroom was set: the target is the SLO itself, and 55,650 / 6,000 is 9.3 times it
    assert re.search(r"^  end to end +55,650 ms +6,000 ms +9\.3x over$", out, re.M), out
    longest = int((6000 - 850 - 300) // (1000 / 22)) + 1
    assert f"at this rate: {longest} tokens\n" in out and "% headroom" not in out
    code, out, _ = run([*ESTIMATE, "--slo-total", "60000", "--slo-ttft", "800"], capsys)
    assert code == 1  # TTFT 850 ms over 800 ms: 6.2% over, not "x over"
    assert re.search(r"^  TTFT +850 ms +800 ms +6\.2% over$", out, re.M), out
    room = f"+{100 * (60000 - total) / 60000:.1f}%"
    assert re.search(rf"^  end to end +55,650 ms +60,000 ms +\{room} +fits$", out, re.M), out


def test_whatif_without_any_slo_says_how_to_give_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    code, _, err = run(ESTIMATE, capsys)
    assert code == 2 and "budget.yml" in err and err.count("\n") == 1


# ---- the one error mapping ------------------------------------------------------------------


def test_a_message_of_several_lines_is_one_error_line_each(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def fails() -> int:
        raise BudgetError(
            "budget.yml:3: slo.total: must be > 0\nbudget.yml:7: slices.dcode: unknown"
        )

    assert guarded(fails) == 2
    assert capsys.readouterr().err == (
        "budgetdiff: error: budget.yml:3: slo.total: must be > 0\n"
        "budgetdiff: error: budget.yml:7: slices.dcode: unknown\n"
    )


def test_a_line_break_inside_a_results_files_text_stays_on_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    def fails() -> int:
        raise InputError("head.csv: no column 'a\n::warning::x'")

    assert guarded(fails) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("budgetdiff: error: head.csv")


_IN_HEAP = """
import sys
import numpy as np
from budgetdiff.cli import keep_freed_memory
took = keep_freed_memory() if sys.argv[1] == "kept" else False
x = np.ones(10_000_000)  # 80 MB: past glibc's 32 MB cap on its mmap threshold
at = x.__array_interface__["data"][0]
for line in open("/proc/self/maps"):
    low, high = (int(v, 16) for v in line.split()[0].split("-"))
    if low <= at < high:
        print(took, line.rstrip().endswith("[heap]"))
"""


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="Linux's /proc")
def test_the_console_script_takes_large_columns_from_the_heap_it_keeps() -> None:
    """With keep_freed_memory (the console script's first step) a column of 10,000,000 values
    comes from the heap, whose freed blocks are reused; without it, from a fresh mapping."""
    import subprocess
    import sys

    def where(mode: str) -> str:
        run = subprocess.run([sys.executable, "-c", _IN_HEAP, mode], capture_output=True, text=True)
        return run.stdout.strip()

    if where("kept") == "False False":  # not glibc: nothing to set, nothing changed
        pytest.skip("not glibc")
    assert where("kept") == "True True"
    assert where("as is") == "False False"
