"""Time the Action's install step outside GitHub, beside the `pip install .` it replaces.

The steps run are action.yml's own: the `run:` blocks of the steps `key` and `install`, read from
the file, with their `env:` expressions filled in as a runner fills them, in `bash --noprofile
--norc -eo pipefail` (GitHub's `shell: bash`) and the environment of a fresh runner: an empty
HOME (no pip or uv cache), a fresh RUNNER_TEMP, no pip configuration.

- cold: nothing cached (the cache restore misses);
- warm: a new job whose cache restore brought back the folder the cold job saved (emulated with
  the tar + zstd that actions/cache uses; the extract is timed apart, the network is not);
- pip: the step before this change: `python -m venv` then `pip install` of the checkout, which
  resolves pyproject.toml's ranges and builds budgetdiff with setuptools, pip's cache empty.

Each is run `--repeat` times back to back, alternating, and the best time is kept. Run:
`.venv/bin/python bench/bench_install.py` (needs the network to PyPI, about 2 minutes).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
TLS_TRUST = ("SSL_CERT_FILE", "SSL_CERT_DIR", "PIP_CERT")
EXPRESSION = re.compile(r"\$\{\{\s*([^}]+?)\s*\}\}")
# The step before uv, verbatim in what it did (`git show c86f3e0:action.yml`, step `install`).
PIP_STEP = """set -euo pipefail
"$PYTHON" -I -m venv "$VENV"
"$VENV/bin/python" -I -m pip install --quiet --disable-pip-version-check --no-input "$ACTION_PATH"
"""


def runner_env(home: Path, temp: Path) -> dict[str, str]:
    """What a hosted runner's job starts with, as far as an install can tell."""
    (temp / "_runner_file_commands").mkdir(parents=True, exist_ok=True)
    return {
        "PATH": os.environ["PATH"],
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "CI": "true",
        "GITHUB_ACTIONS": "true",
        "RUNNER_OS": "Linux",
        "RUNNER_TEMP": str(temp),
        "GITHUB_OUTPUT": str(temp / "_runner_file_commands" / "output"),
        "GITHUB_ENV": str(temp / "_runner_file_commands" / "env"),
        # a runner has no pip.conf; this machine has one pointing at local wheel folders
        "PIP_CONFIG_FILE": os.devnull,
        # this machine's TLS trust (a proxy's CA), which a runner has built in
        **{k: v for k, v in os.environ.items() if k in TLS_TRUST},
    }


def step(action: Mapping[str, object], step_id: str) -> dict[str, object]:
    runs = action["runs"]
    assert isinstance(runs, dict)
    [found] = [s for s in runs["steps"] if s.get("id") == step_id]
    return dict(found)


def fill(value: str, contexts: Mapping[str, str]) -> str:
    """`${{ a.b }}` -> its value; an expression this script does not know stops it."""

    def one(m: re.Match[str]) -> str:
        if m.group(1) not in contexts:
            raise SystemExit(f"action.yml: {m.group(0)} is new to bench_install.py: add it")
        return contexts[m.group(1)]

    return EXPRESSION.sub(one, value)


def outputs(env: Mapping[str, str]) -> dict[str, str]:
    path = Path(env["GITHUB_OUTPUT"])
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    path.unlink(missing_ok=True)
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


def run_step(script: str, step_env: Mapping[str, str], env: Mapping[str, str]) -> float:
    with tempfile.NamedTemporaryFile("w", suffix=".sh", delete=False) as f:
        f.write(script)
    t0 = time.perf_counter()
    subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", f.name],
        env={**env, **step_env},
        check=True,
    )
    seconds = time.perf_counter() - t0
    os.unlink(f.name)
    return seconds


def action_install(python: str, home: Path, temp: Path, restore: Path | None) -> dict[str, float]:
    """The key step, (the restore), the install step; seconds of each, and a smoke run."""
    action = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
    env = runner_env(home, temp)
    contexts = {
        "steps.python.outputs.python-path": python,
        "github.action_path": str(ROOT),
        "runner.temp": str(temp),
    }
    out: dict[str, float] = {}
    key = step(action, "key")
    key_env = {k: fill(str(v), contexts) for k, v in dict(key["env"]).items()}
    out["key"] = run_step(str(key["run"]), key_env, env)
    contexts["steps.key.outputs.key"] = outputs(env)["key"]
    if restore is not None:
        t0 = time.perf_counter()
        subprocess.run(
            ["tar", "--use-compress-program", "zstd -d", "-xf", str(restore), "-C", str(temp)],
            check=True,
        )
        out["restore"] = time.perf_counter() - t0
    install = step(action, "install")
    install_env = {k: fill(str(v), contexts) for k, v in dict(install["env"]).items()}
    out["install"] = run_step(str(install["run"]), install_env, env)
    python_out = outputs(env)["python"]
    smoke(python_out)
    return out


def pip_install(python: str, home: Path, temp: Path) -> float:
    env = runner_env(home, temp)
    step_env = {"PYTHON": python, "ACTION_PATH": str(ROOT), "VENV": str(temp / "venv")}
    seconds = run_step(PIP_STEP, step_env, env)
    smoke(str(temp / "venv" / "bin" / "python"))
    return seconds


def smoke(python: str) -> None:
    """The installed budgetdiff runs (outside the timing)."""
    subprocess.run([python, "-I", "-m", "budgetdiff", "--version"], check=True, capture_output=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--python", default=sys.executable, help="the runner's Python")
    args = parser.parse_args()
    python = str(Path(args.python).resolve())
    best: dict[str, float] = {}

    def keep(name: str, seconds: float) -> None:
        best[name] = min(best.get(name, seconds), seconds)

    with tempfile.TemporaryDirectory(prefix="bench-install-") as scratch:
        base = Path(scratch)
        for i in range(args.repeat):
            job = base / f"cold{i}"
            times = action_install(python, job / "home", job / "temp", None)
            keep("cold", times["key"] + times["install"])
            # what actions/cache/save uploads: the environment folder, tar + zstd
            archive = base / f"env{i}.tar.zst"
            t0 = time.perf_counter()
            tar = ["tar", "--use-compress-program", "zstd -T0", "-cf", str(archive)]
            subprocess.run([*tar, "-C", str(job / "temp"), "budgetdiff-env"], check=True)
            keep("save", time.perf_counter() - t0)
            best["size_mb"] = archive.stat().st_size / 1e6
            warm = base / f"warm{i}"
            times = action_install(python, warm / "home", warm / "temp", archive)
            keep("warm", times["key"] + times["install"])
            keep("restore", times["restore"])
            keep("pip", pip_install(python, base / f"pip{i}" / "home", base / f"pip{i}" / "temp"))
            for folder in (job, warm, base / f"pip{i}"):
                shutil.rmtree(folder)
    v = sys.version_info
    print(f"Python {v.major}.{v.minor}, best of {args.repeat}:")
    print("| install step | seconds | vs pip |")
    print("|---|---:|---:|")
    for name, label in (
        ("pip", "before: `python -m venv` + `pip install .` (empty pip cache)"),
        ("cold", "uv from the lock, nothing cached"),
        ("warm", "uv from the lock, environment restored from the cache"),
    ):
        print(f"| {label} | {best[name]:.2f} | {best[name] / best['pip']:.2f}x |")
    print(
        f"cache archive {best['size_mb']:.0f} MB (tar + zstd): save {best['save']:.2f} s, "
        f"extract {best['restore']:.2f} s here, plus the transfer on GitHub"
    )


if __name__ == "__main__":
    main()
