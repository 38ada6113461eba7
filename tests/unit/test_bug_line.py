"""Issue 38, item 2: a bug's line names the frame in budgetdiff's own code, decided by where the
package is installed, not by a `budgetdiff/` anywhere in a path: a clone in a folder named
`budgetdiff` (what `git clone` names it) holds the tests under `budgetdiff/tests/`, which are
not the tool's code."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from budgetdiff.errors import ReaderBug, bug_message
from budgetdiff.formats import ReadOptions, detect, registry
from tests.support.paths import ROOT

VLLM = ROOT / "tests" / "data" / "generated" / "vllm" / "head" / "vllm_bench_serve.json"
ONE_TEST = (
    "tests/formats/test_formats_reader_errors.py::"
    "test_a_key_error_inside_a_reader_is_exit_3_naming_file_and_format"
)


def _reader_defined_in(path: Path) -> object:
    """A reader that raises KeyError, compiled as if it were written in the file `path`."""
    code = compile("def read(data, source, options):\n    return {}['key']\n", str(path), "exec")
    space: dict[str, object] = {}
    exec(code, space)
    return space["read"]


@pytest.mark.parametrize("folder", ["budgetdiff", "work/budgetdiff/src"])
def test_a_reader_bug_raised_in_a_test_file_under_a_budgetdiff_folder_names_our_frame(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, folder: str
) -> None:
    test_file = tmp_path / folder / "tests" / "formats" / "test_x.py"
    monkeypatch.setattr(registry.reader("vllm").module, "read", _reader_defined_in(test_file))
    with pytest.raises(ReaderBug) as caught:
        detect.read(VLLM.read_bytes(), "r.json", "vllm", ReadOptions())
    line = bug_message(caught.value)
    assert "(KeyError at budgetdiff/formats/registry.py:" in line, line
    assert "tests/formats/test_x.py" not in line


def test_a_bug_with_no_frame_of_ours_names_the_innermost_frame(tmp_path: Path) -> None:
    raiser = _reader_defined_in(tmp_path / "budgetdiff" / "tests" / "test_y.py")
    with pytest.raises(KeyError) as caught:
        raiser(b"", "", None)  # type: ignore[operator]
    assert "(KeyError at test_y.py:2: 'key')" in bug_message(caught.value)


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_the_reader_error_test_passes_in_a_clone_named_budgetdiff(tmp_path: Path) -> None:
    """`git clone` of this repository into a folder named `budgetdiff` (at this commit), and
    the test that used to fail there, run in it."""
    head = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True, check=False
    )
    if head.returncode != 0:
        pytest.skip("not a git checkout")
    clone = tmp_path / "budgetdiff"
    git = ["git", "-c", "advice.detachedHead=false"]
    subprocess.run(
        [*git, "clone", "--quiet", "--local", "--no-checkout", str(ROOT), str(clone)], check=True
    )
    subprocess.run([*git, "-C", str(clone), "checkout", "--quiet", head.stdout.strip()], check=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "PYTEST"))}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", ONE_TEST],
        cwd=clone,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]  # 5: none ran
