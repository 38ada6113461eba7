"""The README is short, starts with a workflow, and cannot drift: its table of the Action's
inputs is generated from action.yml, its examples run, its links resolve. The depth lives in
docs/, whose examples run here too (the command line's `whatif` outputs)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
import yaml

from budgetdiff.cli import main
from budgetdiff.formats.registry import names
from tests.support.paths import ROOT
from tools.build_readme import BEGIN, END, build

README = (ROOT / "README.md").read_text(encoding="utf-8")
ACTION = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))


def fences(text: str, lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", text, re.S)


def test_readme_is_short_and_shows_a_uses_line_early() -> None:
    raw = README.encode("utf-8")
    assert len(raw) < 12_000, f"README.md is {len(raw)} bytes: move depth to docs/ and link it"
    assert 0 <= raw.find(b"uses: budgetdiff/budgetdiff@") < 4_000


def test_the_inputs_table_is_generated_from_action_yml() -> None:
    for name, text in build().items():
        assert (ROOT / name).read_text(encoding="utf-8") == text, (
            f"{name}'s table is out of date: python tools/build_readme.py"
        )
    table = README.split(BEGIN, 1)[1].split(END, 1)[0]
    named = re.findall(r"^\| `([\w-]+)` \|", table, re.M)
    assert named == [*ACTION["inputs"], *ACTION["outputs"]]
    for name, spec in ACTION["inputs"].items():
        row = next(line for line in table.splitlines() if line.startswith(f"| `{name}` |"))
        assert ("**required**" in row) == bool(spec.get("required"))
        assert str(spec.get("default", "")) in row


def test_the_readme_workflow_uses_the_action_as_the_examples_do() -> None:
    [workflow] = fences(README, "yaml")[:1]
    document = yaml.safe_load(workflow)
    [job] = document["jobs"].values()
    assert document["permissions"] == {}
    assert job["permissions"] == {"contents": "read", "pull-requests": "write"}
    assert "labeled" in document[True]["pull_request"]["types"]  # YAML 1.1 reads `on` as True
    [ours] = [s for s in job["steps"] if s.get("uses", "").startswith("budgetdiff/")]
    assert ours["uses"] == "budgetdiff/budgetdiff@v1"
    assert set(ours["with"]) <= set(ACTION["inputs"]) and "head" in ours["with"]
    for step in job["steps"]:
        assert "${{" not in step.get("run", "")  # expressions go through env:
        uses = step.get("uses", "")
        assert not uses or uses == ours["uses"] or re.search(r"@[0-9a-f]{40}$", uses)


def test_every_relative_link_resolves() -> None:
    for page in [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = page.read_text(encoding="utf-8")
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            file = (page.parent / path).resolve() if path else page
            assert file.exists(), f"{page.name}: link to {target}: no such file"
            if anchor and file.suffix == ".md":
                headings = re.findall(r"^#+ (.*)$", file.read_text(encoding="utf-8"), re.M)
                slugs = {
                    re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in headings
                }
                assert anchor in slugs, f"{page.name}: link to {target}: no such heading"


def test_contributing_is_exactly_make_demo_and_make_test() -> None:
    block = re.search(r"## Contributing\n\n```sh\n(.*?)```", README, re.S)
    assert block is not None
    commands = [ln.split("#")[0].strip() for ln in block.group(1).splitlines()]
    assert commands == ["make demo", "make test"]
    assert "apt-get" in README and "Chromium" in README  # what `make test` does as root


def test_the_local_commands_and_python_run_on_the_files_init_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["init"], environ={}) == 0
    for name in ("base.csv", "head.csv"):
        (tmp_path / name).write_bytes((tmp_path / "budgetdiff-example" / name).read_bytes())
    (tmp_path / "results.csv").write_bytes((tmp_path / "head.csv").read_bytes())
    capsys.readouterr()
    [local] = fences(README, "sh")[:1]
    codes = {}
    for line in local.splitlines():
        command = shlex.split(line, comments=True)
        if command and command[0] == "budgetdiff" and command[1] != "init":
            codes[command[1]] = main(command[1:], environ={})
    # compare: the decode regression fails; check: decode over its budget only warns
    assert codes == {"demo": 0, "compare": 1, "check": 0, "inspect": 0}
    [snippet] = fences(README, "python")
    scope: dict[str, object] = {}
    exec(compile(snippet, "README.md", "exec"), scope)  # the API's five lines, as shown
    out = capsys.readouterr().out
    assert out.splitlines()[-1] == "fail ['total', 'tpot', 'decode']"


def test_the_readme_budget_is_the_template_without_its_comments() -> None:
    """The README's short budget says what `budgetdiff init` writes."""
    [budget] = [b for b in fences(README, "yaml") if b.startswith("version: 1")]
    template = (ROOT / "budgetdiff" / "templates" / "budget.yml").read_text()
    shown, written = yaml.safe_load(budget), yaml.safe_load(template)
    assert shown == {k: v for k, v in written.items() if k in shown}


def test_cli_doc_whatif_and_fix_first_outputs_are_current(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """docs/cli.md's `whatif` commands, run on the demo's files, print what the page shows;
    its what-to-fix-first ranking is the demo's."""
    text = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    tour = text[text.index("## What to fix first") : text.index("## Exit codes")]
    for name in ("budget.yml", "head.csv"):
        (tmp_path / name).write_bytes((ROOT / "budgetdiff" / "demo" / name).read_bytes())
    monkeypatch.chdir(tmp_path)
    shown = re.findall(r"```sh\n(budgetdiff whatif [^\n]*)\n```\n\n```text\n(.*?)```", tour, re.S)
    assert len(shown) == 2
    for command, output in shown:
        code = main(shlex.split(command)[1:], environ={})
        out, _ = capsys.readouterr()
        assert out == output
        assert code == (1 if "does not fit" in out else 0)
    ranking = re.search(r"```text\n(what to fix first.*?)```", tour, re.S)
    assert ranking is not None
    main(["demo"], environ={})
    assert ranking.group(1) in capsys.readouterr().out


def test_supported_inputs_name_every_format_the_readers_know() -> None:
    section = README[README.index("## Supported inputs") : README.index("## The Action's inputs")]
    shown = set(re.findall(r"`([\w-]+)`", section))
    assert set(names()) <= shown
