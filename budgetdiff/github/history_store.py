"""The history store: one JSON Lines file per report id on a branch of the repository
(`budgetdiff-history` by default), read on every run and appended to on pushes to the default
branch. No server: plain git against the repository, in a temporary bare repository, so the
job's checkout is never touched.

Why git and not the contents API: a history of 500 reports is a few MB, over the contents API's
1 MB read limit, and a push is the one atomic compare-and-swap git offers. No entry is lost to a
race: a push another run beat is rebuilt on the new tip (its lines and ours: the union a
`merge=union` would keep) and pushed again; runs of other report ids touch other files, so a
retry never conflicts. A 5xx, a 403 or 429 (GitHub's rate limits) and a stall are tried again,
with backoff and jitter, until the deadline (`budgetdiff.github.git`); every git call has a
timeout within it. The token travels in an `http.extraheader` set through the environment (as
actions/checkout does), never in a URL or an argument; every git call is an argument list,
never a shell line.
"""

from __future__ import annotations

import base64
import os
import random
import re
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from budgetdiff import numbers
from budgetdiff.errors import PublishError, UsageError
from budgetdiff.github import git
from budgetdiff.github.context import GitHubContext
from budgetdiff.sources.deadline import Deadline

DEFAULT_BRANCH = "budgetdiff-history"
DEFAULT_SIZE = 500
DEFAULT_SERVER_URL = "https://github.com"
MAX_BYTES = 64 * 1024**2
_BRANCH = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/-]{0,99}")
_BOT = ("github-actions[bot]", "41898282+github-actions[bot]@users.noreply.github.com")
_NETWORK = ("fetch", "push")  # the steps that reach the remote: their failures name its host
T = TypeVar("T")


def validate_branch(branch: str) -> str:
    if not _BRANCH.fullmatch(branch) or ".." in branch or branch.endswith((".lock", "/", ".")):
        raise UsageError(
            f"input `history-branch`: {branch[:80]!r} is not a plain branch name; use letters, "
            "digits, '.', '_', '-' and '/'"
        )
    return branch


class Store:
    """One branch of one remote; each read or write runs git in its own temporary bare
    repository, within one deadline (`deadline_s`, input `history-timeout`)."""

    def __init__(
        self,
        context: GitHubContext,
        branch: str,
        *,
        deadline_s: float = git.DEFAULT_DEADLINE_S,
        sleep: Callable[[float], None] = time.sleep,
        rng: random.Random | None = None,
    ) -> None:
        """The repository's own remote, or `context.history_remote` (a git URL or path)."""
        self.branch = validate_branch(branch)
        remote = context.history_remote
        if not remote:
            server = (context.server_url or DEFAULT_SERVER_URL).rstrip("/")
            if not context.repository:
                raise PublishError("GITHUB_REPOSITORY is not set: no repository to keep history")
            remote = f"{server}/{context.repository}.git"
        self.remote = remote
        self.host = git.where(remote)
        self.deadline_s = deadline_s
        self._sleep = sleep
        self._rng = rng
        self._env = _environment(remote, context.token)
        self._context = context

    def read(self, path: str) -> bytes | None:
        """The file on the branch, or None when the branch or the file is not there yet."""
        deadline = Deadline.start("the history branch", self.host, self.deadline_s)
        with tempfile.TemporaryDirectory(prefix="budgetdiff-history-") as tmp:
            run = self._git_in(tmp, deadline)
            run("init", "--quiet", "--bare", ".")

            def attempt(_: int) -> bytes | None:
                return self._show(run, path) if self._fetch(run) else None

            data, _ = self._retry(attempt, deadline, f"reading {self.branch}:{path}")
            return data

    def append(
        self,
        path: str,
        line: str,
        size: int,
        message: str,
        *,
        before_push: Callable[[], None] | None = None,
        replaces: Callable[[str], bool] | None = None,
    ) -> int:
        """Append `line` to `path` on the branch, keeping the newest `size` lines. A push that
        another run beat is rebuilt on the new tip (both lines kept) and pushed again, as are a
        5xx, a rate limit and a stall, until the deadline. A newest line that `replaces` matches
        (a re-run of the same commit) is replaced rather than followed. Returns the number of
        attempts it took; a PublishError when the deadline passed first."""
        deadline = Deadline.start("the history branch", self.host, self.deadline_s)
        with tempfile.TemporaryDirectory(prefix="budgetdiff-history-") as tmp:
            run = self._git_in(tmp, deadline)
            run("init", "--quiet", "--bare", ".")

            def attempt(n: int) -> None:
                commit = self._commit(run, tmp, path, line, size, message, replaces)
                if before_push is not None and n == 1:
                    before_push()  # the tests' seam: a concurrent push lands here
                run("push", "--quiet", self.remote, f"{commit}:{self._ref}")

            _, attempts = self._retry(attempt, deadline, f"writing {self.branch}:{path}")
            return attempts

    def _commit(
        self,
        run: Callable[..., str],
        tmp: str,
        path: str,
        line: str,
        size: int,
        message: str,
        replaces: Callable[[str], bool] | None,
    ) -> str:
        """A commit on the branch's tip as fetched now, with `line` appended to `path`."""
        parent = self._fetch(run)
        old = (self._show(run, path) or b"") if parent else b""
        lines = [x for x in old.decode("utf-8", "replace").splitlines() if x.strip()]
        if lines and replaces is not None and replaces(lines[-1]):
            lines.pop()
        lines = [*lines, line][-size:]
        blob = run("hash-object", "-w", "--stdin", stdin="\n".join(lines) + "\n").strip()
        index = Path(tmp) / "index"
        index.unlink(missing_ok=True)  # a new tree each attempt: the tip's, and this file
        extra = {"GIT_INDEX_FILE": str(index)}
        if parent:
            run("read-tree", "FETCH_HEAD", extra=extra)
        run("update-index", "--add", "--cacheinfo", f"100644,{blob},{path}", extra=extra)
        tree = run("write-tree", extra=extra).strip()
        parents = ["-p", "FETCH_HEAD"] if parent else []
        return run("commit-tree", tree, *parents, "-m", message).strip()

    def _retry(self, attempt: Callable[[int], T], deadline: Deadline, what: str) -> tuple[T, int]:
        where = f"{what} on {self.host}"
        return git.retry(attempt, deadline, where, sleep=self._sleep, rng=self._rng)

    @property
    def _ref(self) -> str:
        return f"refs/heads/{self.branch}"

    def _fetch(self, run: Callable[..., str]) -> bool:
        try:
            run("fetch", "--quiet", "--depth=1", "--no-tags", self.remote, self._ref)
        except git.GitFailure as e:
            if "couldn't find remote ref" in str(e) or "not found" in str(e).lower():
                return False
            raise
        return True

    def _show(self, run: Callable[..., str], path: str) -> bytes | None:
        try:
            size = int(run("cat-file", "-s", f"FETCH_HEAD:{path}").strip())
        except git.GitFailure:
            return None  # the branch is there, this report id's file is not yet
        if size > MAX_BYTES:
            raise PublishError(
                f"{self.branch}:{path}: {numbers.count(size)} bytes, over the history limit"
            )
        return run("cat-file", "blob", f"FETCH_HEAD:{path}").encode("utf-8", "surrogateescape")

    def _git_in(self, folder: str, deadline: Deadline) -> Callable[..., str]:
        """`git ARGS` in `folder`, its output; a GitFailure naming the step and the host. Each
        call's timeout is what the deadline leaves, at most git.CALL_TIMEOUT_S."""

        def run(*args: str, stdin: str | None = None, extra: dict[str, str] | None = None) -> str:
            step = f"git {args[0]}" + (f" ({self.host})" if args[0] in _NETWORK else "")
            timeout = max(0.1, min(git.CALL_TIMEOUT_S, deadline.remaining()))
            try:
                done = git.run(
                    list(args),
                    cwd=folder,
                    env={**self._env, **(extra or {})},
                    timeout=timeout,
                    stdin=stdin,
                )
            except subprocess.TimeoutExpired:
                raise git.GitFailure(
                    f"{step}: no answer within {numbers.given(round(timeout))} s", retryable=True
                ) from None
            if done.returncode != 0:
                failure = git.classify(step, self._context.redact(done.stderr))
                raise failure
            return done.stdout

        return run


def _environment(remote: str, token: str) -> dict[str, str]:
    """git's environment: none of the job's GIT_ variables, no prompt, the bot as author, and
    the token (for an https remote) as an extra header set through GIT_CONFIG_*."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    name, email = _BOT
    env.update(
        {
            "LC_ALL": "C",
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_AUTHOR_NAME": name,
            "GIT_AUTHOR_EMAIL": email,
            "GIT_COMMITTER_NAME": name,
            "GIT_COMMITTER_EMAIL": email,
        }
    )
    if token and remote.startswith("https://"):
        basic = base64.b64encode(f"x-access-token:{token}".encode()).decode()
        env.update(
            {
                "GIT_CONFIG_COUNT": "1",
                "GIT_CONFIG_KEY_0": f"http.{remote}.extraheader",
                "GIT_CONFIG_VALUE_0": f"AUTHORIZATION: basic {basic}",
            }
        )
    return env
