"""Regenerate docs/images/trend-page.png: the trend page of a simulated history (fixed seeds)
in which decode grows 2% per merge, then a PR adds 2% more. Needs Chromium
(scripts/setup-browser.sh). `python tools/trend_page.py`"""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from budgetdiff.cli import main  # noqa: E402
from tests.support.history import BUDGET, write_run  # noqa: E402 (the tests' simulated runs)


def run(path: Path, seed: int, decode: float) -> str:
    return str(write_run(path, seed, decode))


def main_() -> None:
    out = ROOT / "docs" / "images" / "trend-page.png"
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        history = t / "history.jsonl"
        with history.open("w") as f:
            for i in range(15):
                buf = io.StringIO()
                with contextlib.redirect_stdout(buf):
                    main(["check", "--head", run(t / f"{i}.csv", i, 1.02**i), "--budget", BUDGET,
                          "--output", "json"], {})  # fmt: skip
                f.write(json.dumps(json.loads(buf.getvalue()), separators=(",", ":")) + "\n")
        page = t / "trend.html"
        with contextlib.redirect_stdout(io.StringIO()):
            head = run(t / "pr.csv", 99, 1.02**15)
            main(["compare", "--base", str(t / "14.csv"), "--head", head, "--budget", BUDGET,
                  "--history", str(history), "--html", str(page)], {})  # fmt: skip
        browser = shutil.which("chromium") or "chromium"
        out.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
             f"--user-data-dir={t / 'profile'}", f"--screenshot={out}", "--window-size=900,760",
             "--virtual-time-budget=10000", page.as_uri()],
            check=True, capture_output=True,
        )  # fmt: skip
    print(f"wrote {out}")


if __name__ == "__main__":
    main_()
