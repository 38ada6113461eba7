"""A reader that goes away early (`budgetdiff demo | head -1`): the run ends quietly with 141,
the shell's status for a writer ended by SIGPIPE, not as "a bug" (3) nor as a verdict (1)."""

from __future__ import annotations

import os
import subprocess
import sys

from budgetdiff.errors import BROKEN_PIPE_EXIT_CODE


def test_a_closed_pipe_is_no_bug_and_no_verdict() -> None:
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the first line is written
    try:
        done = subprocess.run(
            [sys.executable, "-m", "budgetdiff", "demo"],
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
            check=False,
        )
    finally:
        os.close(write)
    assert done.returncode == BROKEN_PIPE_EXIT_CODE == 141
    assert done.stderr == ""  # no "bug" line, no "Exception ignored" at the interpreter's exit
