"""Issue 38, item 8: `make test` says what it installs as root before it installs it, and
`make test-fast` leaves out the browser and Prometheus tests and installs nothing.

scripts/test.sh runs against a stand-in venv (VENV) whose tools log their arguments, as root
(a stand-in `id`) on a machine with a stand-in `apt-get` that logs its calls: what runs, and
in which order, is read from the log.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_TOOL = '#!/bin/sh\necho "{name} $*" >> "$LOG"\n{extra}exit 0\n'


def _stand_ins(tmp_path: Path) -> tuple[dict[str, str], Path]:
    """An environment whose venv, `id` and `apt-get` only log (no chromium, npm, prometheus)."""
    log = tmp_path / "log"
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    stamp = subprocess.run(
        ["cksum", "pyproject.toml"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()[0]
    (venv / f".installed-dev-{stamp}").touch()  # setup.sh: installed already
    listing = 'case "$*" in *zipfile*) echo budgetdiff/templates/budget.yml;; esac\n'
    tools = {"ruff": "", "mypy": "", "zizmor": "", "twine": "", "pytest": "", "python": listing}
    system = tmp_path / "system"
    system.mkdir()
    tools_sys = {"id": "echo 0\n", "apt-get": ""}  # no npm: nothing is written in the repo
    for folder, names in ((venv / "bin", tools), (system, tools_sys)):
        for name, extra in names.items():
            path = folder / name
            path.write_text(_TOOL.format(name=name, extra=extra))
            path.chmod(0o755)
    # the rest of the machine: the shell's own tools, without any chromium or prometheus
    for name in ("bash", "sh", "cat", "cksum", "cut", "dirname", "mktemp", "rm", "grep", "touch"):
        found = shutil.which(name)
        if found and not (system / name).exists():
            (system / name).symlink_to(found)
    env = {"PATH": str(system), "VENV": str(venv), "LOG": str(log), "HOME": str(tmp_path)}
    return env, log


def _run(tmp_path: Path, *args: str) -> tuple[str, list[str]]:
    env, log = _stand_ins(tmp_path)
    done = subprocess.run(
        ["bash", "scripts/test.sh", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout + done.stderr, log.read_text().splitlines() if log.exists() else []


@pytest.mark.skipif(os.name != "posix", reason="the make targets are bash")
def test_make_test_says_what_it_installs_as_root_before_installing_it(tmp_path: Path) -> None:
    said, calls = _run(tmp_path)
    for package in ("chromium", "nodejs", "npm", "fonts-noto-color-emoji", "prometheus"):
        assert package in said.split("== ruff")[0], package  # said before anything runs
    installs = [c for c in calls if c.startswith("apt-get install")]
    assert installs, calls  # as root, with apt-get there, it does install
    assert "installing chromium with apt-get (as root)" in said
    assert "installing prometheus with apt-get (as root)" in said
    assert calls[-1] == "pytest "  # every test


@pytest.mark.skipif(os.name != "posix", reason="the make targets are bash")
def test_make_test_fast_skips_the_browser_and_prometheus_tests_and_installs_nothing(
    tmp_path: Path,
) -> None:
    said, calls = _run(tmp_path, "--fast")
    assert not [c for c in calls if c.startswith(("apt-get", "npm"))], calls
    assert "apt-get" not in said
    assert calls[-1] == "pytest --ignore=tests/browser --ignore=tests/prometheus"
    make = (ROOT / "Makefile").read_text()
    assert "test-fast:\n\t@bash scripts/test.sh --fast\n" in make
