"""What a command touches besides its options: the environment, the output stream and, with
--github, the runner's context. Light on purpose: the parser and the console script import it
before they know which command runs."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from budgetdiff.github import GitHubContext


@dataclass(frozen=True, slots=True)
class Edge:
    """The environment, the output stream and, with --github, the runner's context (read from
    the environment once, by `cli.main` or the Action); `sleep` waits between a live
    Prometheus' retries (None: really wait; tests pass a stand-in)."""

    environ: Mapping[str, str]
    out: TextIO
    github: GitHubContext | None = None
    sleep: Callable[[float], None] | None = None
