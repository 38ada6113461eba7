"""PNGs of the PR comment as a reviewer sees it: `make screenshot`.

Renders the demo's comment (and every golden comment state, with --all) the way GitHub does:
cmark-gfm's HTML in a GitHub-like stylesheet, the ```mermaid fences drawn by the real Mermaid
pinned in tests/browser/, shot by headless Chromium at 900 px. Writes docs/comment-demo.png (shown
in the README) and, with --all, build/screenshots/comment-<state>.png to look at.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from budgetdiff.cli import main  # noqa: E402
from tests.support.browser import mermaid_js, screenshot  # noqa: E402
from tests.support.comment_page import comment_page  # noqa: E402


def shoot(markdown: str, png: Path, height: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        page = Path(tmp) / "comment.html"
        page.write_text(comment_page(markdown, mermaid_js(), open_details=False), encoding="utf-8")
        screenshot(page, png, width=900, height=height)
    print(f"wrote {png.relative_to(ROOT)}")


def demo_markdown() -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        main(["demo", "--output", "markdown"], environ={})
    return out.getvalue()


def run(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--all", action="store_true", help="every golden comment state too")
    args = parser.parse_args(argv)
    shoot(demo_markdown(), ROOT / "docs" / "comment-demo.png", height=1100)
    if args.all:
        folder = ROOT / "build" / "screenshots"
        folder.mkdir(parents=True, exist_ok=True)
        for golden in sorted((ROOT / "tests" / "golden").glob("comment-*.md")):
            shoot(golden.read_text(encoding="utf-8"), folder / f"{golden.stem}.png", 1600)
    return 0


if __name__ == "__main__":
    sys.exit(run())
