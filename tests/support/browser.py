"""Headless Chromium for the tests of what a person sees: Mermaid charts in the comment, pages.

`scripts/setup-browser.sh` (run by `make test`) installs Debian's Chromium and the npm packages
of `tests/browser/`. Chromium runs with the flags this machine needs: no sandbox as root, and no
background networking (the network is closed; Chromium would keep trying).
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from tests.support.paths import ROOT

NODE_MODULES = ROOT / "tests" / "browser" / "node_modules"
MERMAID_JS = NODE_MODULES / "mermaid" / "dist" / "mermaid.min.js"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
]


def chromium() -> str:
    """The Chromium binary; a test that needs it is skipped, naming what to install, without it."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        pytest.skip("chromium is not installed: run scripts/setup-browser.sh (apt-get chromium)")
    return found


def mermaid_js() -> Path:
    if not MERMAID_JS.is_file():
        pytest.skip("the mermaid npm package is not installed: run scripts/setup-browser.sh")
    return MERMAID_JS


def _run(page: Path, extra: list[str], timeout_s: float) -> subprocess.CompletedProcess[str]:
    with tempfile.TemporaryDirectory() as profile:
        return subprocess.run(
            [chromium(), *FLAGS, f"--user-data-dir={profile}", *extra, page.resolve().as_uri()],
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )


def dump_dom(page: Path, *, budget_ms: int = 10_000, timeout_s: float = 60) -> str:
    """The page's DOM after its scripts ran (virtual time, so a slow machine waits the same)."""
    done = _run(page, ["--dump-dom", f"--virtual-time-budget={budget_ms}"], timeout_s)
    if done.returncode != 0:
        raise AssertionError(f"chromium failed on {page}: {done.stderr[-2000:]}")
    return done.stdout


def screenshot(
    page: Path, png: Path, *, width: int = 900, height: int = 1200, budget_ms: int = 10_000
) -> None:
    """A PNG of the page at `width` px, as a reviewer's browser would show it."""
    done = _run(
        page,
        [
            f"--screenshot={png.resolve()}",
            f"--window-size={width},{height}",
            f"--virtual-time-budget={budget_ms}",
        ],
        60,
    )
    if done.returncode != 0 or not png.is_file():
        raise AssertionError(f"chromium made no screenshot of {page}: {done.stderr[-2000:]}")
