"""Classes of traffic in one budget (issue 23 item 9, the budget's side): `classes:` gives a
scenario of that name its own SLO and slices, checked with the same rules and lines."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import numpy as np
import pytest
import yaml

from budgetdiff.budget.file import parse_budget
from budgetdiff.budget.model import json_schema
from budgetdiff.errors import BudgetError
from tests.support.helpers import budgets_shown_with_errors, run, slices, write_table
from tests.support.paths import ROOT

DOC = ROOT / "docs" / "budget.md"
SAMPLE = "generated/vllm/{}/vllm_bench_serve.json"
CLASSES = """\
version: 1
slo: {ttft: 1200, total: 6000}
slices: {queue: 250, prefill: 800, decode: 4200}
first_token_after: prefill
classes:
  chat:
    slo: {ttft: 1000}
  api:
    slo: {total: 10000}
    slices: {queue: 500, prefill: 1500, decode: 8000}
  batch:
    slices: {queue: 900, decode: 9000}
    first_token_after: null
"""


def test_a_scenario_is_held_to_its_class_and_the_rest_to_the_top_level() -> None:
    budget = parse_budget(CLASSES, "b.yml")
    chat, api, batch = (budget.for_scenario(n) for n in ("chat", "api", "batch"))
    assert chat.slo.targets() == {"ttft": 1000}  # a class's slo replaces the top level's whole
    assert {n: s.budget for n, s in chat.slices.items()} == {
        "queue": 250,
        "prefill": 800,
        "decode": 4200,
    }
    assert api.slo.targets() == {"total": 10000}
    assert {n: s.budget for n, s in api.slices.items()} == {
        "queue": 500,
        "prefill": 1500,
        "decode": 8000,
    }
    assert api.ttft_slices == ["queue", "prefill"]  # the top level's first_token_after
    assert batch.slo.targets() == {"ttft": 1200, "total": 6000}
    assert batch.first_token_after is None and batch.ttft_slices == []
    for other in (budget.for_scenario("embeddings"), budget.for_scenario(None)):
        assert other.slo == budget.slo and other.slices == budget.slices
    assert all(b.classes == {} for b in (chat, api, batch))
    plain = parse_budget("version: 1\nslo: {ttft: 900}\n", "b.yml")
    assert plain.for_scenario("chat") is plain


def test_the_docs_wrong_budget_gives_the_lines_the_docs_show(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    shown = budgets_shown_with_errors(DOC.read_text(encoding="utf-8"))
    assert len(shown) == 1
    text, said = shown[0]
    head = write_table(tmp_path / "head.csv", slices(2, n=100))
    (tmp_path / "budget.yml").write_text(text)
    monkeypatch.chdir(tmp_path)  # the docs name the file as the user would: budget.yml
    code, out, err = run(["check", "--head", str(head), "--budget", "budget.yml"], capsys)
    assert code == 2 and out == "" and err.splitlines() == said


def test_a_class_is_checked_by_the_same_rules_with_its_lines() -> None:
    text = """\
version: 1
slo: {ttft: 1200}
classes:
  chat:
    percentile: 99
    slo: {ttft: -1}
  api:
    slices: {decode: 8s}
  batch: 5
  "": {}
"""
    with pytest.raises(BudgetError) as e:
        parse_budget(text, "b.yml")
    assert str(e.value).split("\n") == [
        "b.yml:5: classes.chat.percentile: unknown key; the keys here are slo, slices, "
        "first_token_after",
        "b.yml:6: classes.chat.slo.ttft: must be more than 0 ms, not -1",
        "b.yml:8: classes.api.slices.decode: write the slice's budget in milliseconds, "
        "`decode: 4200` or `decode: {budget: 4200, column: NAME}`, not '8s'",
        "b.yml:9: classes.batch: must be a mapping of keys (`batch: {...}`), not 5",
        "b.yml:10: classes: a class's name must be 1 to 100 characters of visible text: no "
        "control character (newline, tab, ESC, BEL), no invisible format character (bidi "
        "controls such as U+202E, zero-width characters), no space at either end; not ''",
    ]


def test_a_class_is_checked_across_its_keys_and_the_top_levels() -> None:
    text = """\
version: 1
slices: {queue: 250, prefill: 800}
first_token_after: prefill
classes:
  api:
    slices: {queue: 500, decode: 8000}
  chat:
    first_token_after: decode
  batch:
    slices: {queue: 500, prefill: {budget: 900, column: prefill_s}}
"""
    with pytest.raises(BudgetError) as e:
        parse_budget(text, "b.yml")
    assert str(e.value).split("\n") == [
        "b.yml:6: classes.api.slices: the top level's first_token_after 'prefill' is not one "
        "of the slices (queue, decode)",
        "b.yml:8: classes.chat.first_token_after: 'decode' is not one of the slices "
        "(queue, prefill)",
        "b.yml:10: classes.batch.slices.prefill: reads another column or unit than the same "
        "slice elsewhere in the budget; one table holds every class: give a slice one column "
        "and unit",
    ]


def test_the_schema_takes_classes_as_the_model_does() -> None:
    validator = jsonschema.Draft202012Validator(json_schema())
    validator.validate(yaml.safe_load(CLASSES))
    wrong = yaml.safe_load(CLASSES)
    wrong["classes"]["chat"]["percentile"] = 99
    assert not validator.is_valid(wrong)
    with pytest.raises(BudgetError):
        parse_budget(yaml.safe_dump(wrong), "b.yml")


def vllm_runs(samples: Path, tmp_path: Path) -> tuple[Path, list[dict[str, object]]]:
    """One vLLM results file holding two runs (concurrency 8 and 16), as --append-result
    writes them: two scenarios, `concurrency=8` and `concurrency=16`."""
    docs = []
    for concurrency, side in ((8, "head"), (16, "base")):
        doc = json.loads((samples / SAMPLE.format(side)).read_text())
        doc["max_concurrency"] = concurrency
        docs.append(doc)
    path = tmp_path / "head.json"
    path.write_text("\n".join(json.dumps(d) for d in docs) + "\n")
    return path, docs


def test_check_holds_each_scenario_to_its_class(
    samples: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    head, docs = vllm_runs(samples, tmp_path)
    ttft = {
        n: np.percentile(np.array(d["ttfts"]) * 1000, 95)
        for n, d in zip((8, 16), docs, strict=True)
    }
    assert max(ttft.values()) < 1200  # the top level's target: every scenario within it
    tight = round(ttft[16] * 0.9)  # the class's target: concurrency=16 breaches it
    budget = tmp_path / "budget.yml"
    budget.write_text(
        "version: 1\nslo: {ttft: 1200, total: 6000}\n"
        f"classes:\n  concurrency=16:\n    slo: {{ttft: {tight}}}\n"
        "    slices: {first_token: 100, decode: 2000}\n"
    )
    code, out, err = run(
        ["check", "--head", str(head), "--budget", str(budget), "--output", "json"], capsys
    )
    assert code == 1, err
    by_name = {s["name"]: s for s in json.loads(out)["scenarios"]}
    held, free = by_name["concurrency=16"], by_name["concurrency=8"]
    # the class's TTFT target and its first_token budget (ttft is first_token in vLLM's files)
    assert ttft[16] > 100
    findings = {(f["kind"], f["subject"]) for f in held["findings"]}
    assert findings == {("breach", "ttft"), ("over_budget", "first_token")}
    targets = {r["metric"]: r["target_ms"] for r in held["slo"] if r["target_ms"] is not None}
    assert targets == {"ttft": tight}
    row = next(r for r in held["slo"] if r["metric"] == "ttft")
    assert row["head_ms"] == pytest.approx(ttft[16], abs=1e-3)
    assert {r["name"]: r["budget_ms"] for r in held["slices"]} == {
        "first_token": 100,
        "decode": 2000,
    }
    assert free["verdict"] == "pass" and free["findings"] == []
    assert {r["metric"]: r["target_ms"] for r in free["slo"] if r["target_ms"]} == {
        "ttft": 1200,
        "total": 6000,
    }
    assert all(r["budget_ms"] is None for r in free["slices"])


def test_rebudget_of_a_class_splits_its_slo_and_will_not_write_the_top_levels(
    samples: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    head, _ = vllm_runs(samples, tmp_path)
    budget = tmp_path / "budget.yml"
    text = (
        "version: 1\nslo: {ttft: 1200, total: 6000}\nslices: {first_token: 200, decode: 3000}\n"
        "classes:\n  concurrency=16:\n    slo: {total: 2000}\n"
        "    slices: {first_token: 150, decode: 1500}\n"
    )
    budget.write_text(text)
    args = ["rebudget", "--head", str(head), "--budget", str(budget)]
    code, out, err = run([*args, "--scenario", "concurrency=16"], capsys)
    assert code == 0, err
    assert "target 1,800 ms = total SLO 2,000 ms x (1 - 10% headroom)" in out  # the class's
    rows = [line.split() for line in out.splitlines()]
    budgets = [(r[0], r[3]) for r in rows if r and r[0] in ("first_token", "decode")]
    assert budgets == [("first_token", "150"), ("decode", "1,500")]  # the class's, not 200/3,000
    code, out, err = run([*args, "--scenario", "concurrency=16", "--write"], capsys)
    assert code == 2 and out == "" and "class 'concurrency=16'" in err
    assert budget.read_text() == text
    code, out, err = run([*args, "--scenario", "concurrency=8"], capsys)
    assert code == 0 and "target 5,400 ms = total SLO 6,000 ms" in out  # the top level's


def test_whatif_on_a_class_holds_it_to_the_classs_slo(
    samples: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    head, _ = vllm_runs(samples, tmp_path)
    budget = tmp_path / "budget.yml"
    budget.write_text(
        "version: 1\nslo: {ttft: 1200, total: 6000}\n"
        "classes:\n  concurrency=16:\n    slo: {total: 2000}\n"
    )
    args = ["whatif", "--head", str(head), "--budget", str(budget), "--scale", "decode=0.9"]
    code, out, err = run([*args, "--scenario", "concurrency=16"], capsys)
    assert code == 0, err
    assert targets_of(out) == [("end to end", "2,000")]  # the class's, and no TTFT target
    code, out, err = run([*args, "--scenario", "concurrency=8"], capsys)
    assert code == 0 and targets_of(out) == [("TTFT", "1,200"), ("end to end", "6,000")]


def targets_of(whatif: str) -> list[tuple[str, str]]:
    """The (SLO, target ms) rows of whatif's table."""
    lines = whatif.splitlines()
    start = next(i for i, line in enumerate(lines) if line.split()[:3] == ["SLO", "what", "if"])
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("  ") or "ms" not in line:
            break
        name, _, rest = line.strip().partition("  ")
        rows.append((name, rest.split()[2]))
    return rows


def test_a_class_that_names_no_scenario_is_said(
    samples: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A misspelt class would hold its traffic to the top level without a word."""
    head, _ = vllm_runs(samples, tmp_path)
    budget = tmp_path / "budget.yml"
    budget.write_text(
        "version: 1\nslo: {ttft: 1200, total: 6000}\n"
        "classes:\n  concurency=16:\n    slo: {total: 2000}\n  concurrency=8:\n    slo: {}\n"
    )
    code, out, err = run(
        ["check", "--head", str(head), "--budget", str(budget), "--output", "json"], capsys
    )
    assert code == 0, err
    notes = [n for s in json.loads(out)["scenarios"] for n in s["notes"] if "budget's" in n]
    assert notes == [
        "the budget's class 'concurency=16' matches no scenario (the data has: concurrency=8, "
        "concurrency=16); did you mean `concurrency=16`?; a class holds the scenario of its "
        "name, the others are held to the top level"
    ]
