"""The Action installs from a lock: uv.lock matches pyproject.toml, pins every runtime dependency
with hashes, and the install step resolves nothing and builds nothing."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from tests.support.paths import ROOT

if sys.version_info >= (3, 11):
    import tomllib
else:  # mypy brings it on 3.10
    import tomli as tomllib

ACTION = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
STEPS = {s.get("id"): s for s in ACTION["runs"]["steps"]}


def uv(args: list[str], cwd: Path, cache: Path) -> subprocess.CompletedProcess[str]:
    """uv offline with an empty cache: the answer depends on the files alone, never the network."""
    return subprocess.run(
        [sys.executable, "-m", "uv", *args, "--offline", "--no-config", "--cache-dir", str(cache)],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
    )


def test_uv_lock_matches_pyproject(tmp_path: Path) -> None:
    done = uv(["lock", "--check", "--python", sys.executable], ROOT, tmp_path)
    assert done.returncode == 0, (
        "uv.lock does not match pyproject.toml: run `.venv/bin/uv lock` (keeps the other pins), "
        f"or `make lock` (takes the newest releases)\n{done.stderr}"
    )


def test_the_lock_check_fails_when_pyproject_changes(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    shutil.copy(ROOT / "uv.lock", project / "uv.lock")
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    changed = text.replace('"pyyaml>=6",', '"pyyaml>=6",\n  "rich>=13",')
    assert changed != text
    (project / "pyproject.toml").write_text(changed, encoding="utf-8")
    done = uv(["lock", "--check", "--python", sys.executable], project, tmp_path / "cache")
    assert done.returncode != 0
    assert (project / "uv.lock").read_bytes() == (ROOT / "uv.lock").read_bytes()  # only checked


def test_every_runtime_dependency_is_pinned_with_hashes(tmp_path: Path) -> None:
    done = uv(
        ["export", "--frozen", "--no-emit-project", "--no-header", "--format", "requirements-txt"],
        ROOT,
        tmp_path,
    )
    assert done.returncode == 0, done.stderr
    entries = re.split(r"\n(?=\S)", done.stdout.strip())
    pinned = {}
    for entry in entries:
        m = re.match(r"([A-Za-z0-9_.-]+)==(\S+)", entry)
        assert m, entry
        assert "--hash=sha256:" in entry, f"{m.group(1)} has no hash in uv.lock"
        pinned[m.group(1).lower().replace("_", "-")] = m.group(2)
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    declared = {
        re.split(r"[<>=!~ \[;]", d)[0].lower().replace(".", "-").replace("_", "-")
        for d in project["dependencies"]
    }
    assert declared <= set(pinned), declared - set(pinned)
    assert "pandas" not in pinned  # an extra: the Action never pays for it


def test_uv_for_the_action_is_pinned_with_every_wheels_hash() -> None:
    text = (ROOT / "uv-requirements.txt").read_text(encoding="utf-8")
    body = [line for line in text.splitlines() if line and not line.startswith("#")]
    assert re.fullmatch(r"uv==[\d.]+ \\", body[0]), body[0]
    hashes = [line for line in body[1:] if "--hash=sha256:" in line]
    assert len(hashes) == len(body) - 1 >= 10  # one per platform's wheel, and the sdist


def test_the_install_step_resolves_nothing_and_builds_nothing() -> None:
    run = STEPS["install"]["run"]
    commands = re.sub(r"\\\n\s*", " ", run)  # one line per command
    [pip] = [line for line in commands.splitlines() if "-m pip install" in line]
    assert "--require-hashes" in pip and "--only-binary :all:" in pip and "--no-deps" in pip
    assert '-r "$ACTION_PATH/uv-requirements.txt"' in pip
    [sync] = [line for line in commands.splitlines() if '"$UV" sync' in line]
    assert "--frozen" in sync and "--no-install-project" in sync
    assert 'UV_PROJECT_ENVIRONMENT="$ENV_DIR/venv"' in sync  # never the action's own .venv
    assert "UV_PYTHON_DOWNLOADS=never" in sync and '--python "$PYTHON"' in sync
    # budgetdiff itself is copied, not built: no build backend is fetched
    assert 'cp -R "$ACTION_PATH/budgetdiff" "$SITE/budgetdiff"' in run
    assert not re.search(r"pip install[^\n]*\$ACTION_PATH\"?\s*$", commands, re.M)


def test_the_environment_is_cached_on_the_lock_and_the_runners_python() -> None:
    key = STEPS["key"]
    assert '"$ACTION_PATH/uv.lock" "$ACTION_PATH/uv-requirements.txt"' in key["run"]
    assert "sys.executable" in key["run"] and "platform.system()" in key["run"]
    restore, save = (
        STEPS["cache"],
        next(
            s
            for s in ACTION["runs"]["steps"]
            if s.get("uses", "").startswith("actions/cache/save@")
        ),
    )
    assert restore["uses"].startswith("actions/cache/restore@")
    for step in (restore, save):
        assert step["with"] == {
            "path": "${{ runner.temp }}/budgetdiff-env",
            "key": "${{ steps.key.outputs.key }}",
        }
    order = [s.get("id") or s.get("uses", "").split("@")[0] for s in ACTION["runs"]["steps"]]
    # saved right after the install, before budgetdiff reads any (untrusted) results file
    assert order.index("key") < order.index("cache") < order.index("install")
    assert order.index("install") < order.index("actions/cache/save") < order.index("run")
