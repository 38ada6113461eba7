"""A release users can pin: the version is written once, the CHANGELOG has its section, and the
release workflow checks what it ships with write access only where it publishes."""

from __future__ import annotations

import re

import pytest
import yaml

import budgetdiff
from budgetdiff.cli import main
from tests.support.paths import ROOT

RELEASE = yaml.safe_load((ROOT / ".github/workflows/release.yml").read_text(encoding="utf-8"))


def test_the_version_is_written_once_and_printed_by_version(
    capsys: pytest.CaptureFixture[str],
) -> None:
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")  # (no tomllib on 3.10)
    project = pyproject.split("[project]\n", 1)[1].split("\n[", 1)[0]
    assert not re.search(r"^version\s*=", project, re.M)
    assert re.search(r'^dynamic = \["version"\]', project, re.M)
    assert 'version = { attr = "budgetdiff.__version__" }' in pyproject
    assert re.fullmatch(r"\d+\.\d+\.\d+", budgetdiff.__version__)
    with pytest.raises(SystemExit) as exited:
        main(["--version"], environ={})
    assert exited.value.code == 0
    assert capsys.readouterr().out == f"budgetdiff {budgetdiff.__version__}\n"


def test_the_changelog_has_a_section_for_this_version() -> None:
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert re.search(rf"^## \[{re.escape(budgetdiff.__version__)}\] - ", changelog, re.M)


def test_the_release_workflow_checks_what_it_ships_and_writes_only_to_publish() -> None:
    on = RELEASE[True]  # YAML 1.1 reads `on` as True
    assert on == {"push": {"tags": ["v[0-9]+.[0-9]+.[0-9]+"]}}
    assert RELEASE["permissions"] == {}
    build, release = RELEASE["jobs"]["build"], RELEASE["jobs"]["release"]
    assert build["permissions"] == {"contents": "read"}
    assert release["permissions"] == {"contents": "write"} and release["needs"] == "build"
    runs = "\n".join(step.get("run", "") for step in build["steps"])
    assert "-m build" in runs and "twine check --strict dist/*" in runs
    assert '[ "$TAG" = "v$version" ]' in runs  # a tag that is not __version__ releases nothing
    for job in (build, release):
        for step in job["steps"]:
            if "uses" in step:
                assert re.search(r"@[0-9a-f]{40}$", step["uses"]), step["uses"]
            if "actions/checkout" in step.get("uses", ""):
                assert step["with"]["persist-credentials"] is False
