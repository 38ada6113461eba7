"""The history store: one JSON Lines file per report id on a branch of the repository
(`budgetdiff-history` by default), read on every run and appended to on pushes to the default
branch. No server: plain git against the repository, in a temporary bare repository, so the
job's checkout is never touched.

Why git and not the contents API: a history of 500 reports is a few MB, over the contents API's
1 MB read limit, and a push is the one atomic compare-and-swap git offers (a concurrent push
makes ours a non-fast-forward, and we fetch and append again). The token travels in an
`http.extraheader` set through the environment (as actions/checkout does), never in a URL or
an argument; every git call is an argument list, never a shell line.
"""

from __future__ import annotations

import base64
import os
import re
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

from budgetdiff import numbers
from budgetdiff.errors import PublishError, UsageError
from budgetdiff.github.context import GitHubContext

DEFAULT_BRANCH = "budgetdiff-history"
DEFAULT_SIZE = 500
ATTEMPTS = 5
DEFAULT_SERVER_URL = "https://github.com"
MAX_BYTES = 64 * 1024**2
_BRANCH = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/-]{0,99}")
_BOT = ("github-actions[bot]", "41898282+github-actions[bot]@users.noreply.github.com")


def validate_branch(branch: str) -> str:
    if not _BRANCH.fullmatch(branch) or ".." in branch or branch.endswith((".lock", "/", ".")):
        raise UsageError(
            f"input `history-branch`: {branch[:80]!r} is not a plain branch name; use letters, "
            "digits, '.', '_', '-' and '/'"
        )
    return branch


class Store:
    """One branch of one remote; every method runs git in its own temporary bare repository."""

    def __init__(self, context: GitHubContext, branch: str) -> None:
        """The repository's own remote, or `context.history_remote` (a git URL or path)."""
        self.branch = validate_branch(branch)
        remote = context.history_remote
        if not remote:
            server = (context.server_url or DEFAULT_SERVER_URL).rstrip("/")
            if not context.repository:
                raise PublishError("GITHUB_REPOSITORY is not set: no repository to keep history")
            remote = f"{server}/{context.repository}.git"
        self.remote = remote
        self._env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
        self._env.update({"LC_ALL": "C", "GIT_TERMINAL_PROMPT": "0"})
        token = context.token
        if token and remote.startswith("https://"):
            basic = base64.b64encode(f"x-access-token:{token}".encode()).decode()
            self._env.update(
                {
                    "GIT_CONFIG_COUNT": "1",
                    "GIT_CONFIG_KEY_0": f"http.{remote}.extraheader",
                    "GIT_CONFIG_VALUE_0": f"AUTHORIZATION: basic {basic}",
                }
            )
        self._context = context

    def read(self, path: str) -> bytes | None:
        """The file on the branch, or None when the branch or the file is not there yet."""
        with tempfile.TemporaryDirectory(prefix="budgetdiff-history-") as tmp:
            git = self._git_in(tmp)
            git("init", "--quiet", "--bare", ".")
            if not self._fetch(git):
                return None
            return self._show(git, path)

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
        """Append `line` to `path` on the branch, keeping the newest `size` lines; retried on a
        concurrent push. A newest line that `replaces` matches (a re-run of the same commit) is
        replaced rather than followed. Returns the number of attempts it took."""
        for attempt in range(1, ATTEMPTS + 1):
            with tempfile.TemporaryDirectory(prefix="budgetdiff-history-") as tmp:
                git = self._git_in(tmp)
                git("init", "--quiet", "--bare", ".")
                parent = self._fetch(git)
                old = (self._show(git, path) or b"") if parent else b""
                lines = [x for x in old.decode("utf-8", "replace").splitlines() if x.strip()]
                if lines and replaces is not None and replaces(lines[-1]):
                    lines.pop()
                lines = [*lines, line][-size:]
                blob = git("hash-object", "-w", "--stdin", stdin="\n".join(lines) + "\n").strip()
                index = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
                if parent:
                    git("read-tree", "FETCH_HEAD", extra=index)
                git("update-index", "--add", "--cacheinfo", f"100644,{blob},{path}", extra=index)
                tree = git("write-tree", extra=index).strip()
                commit = git(
                    "commit-tree", tree, *(["-p", "FETCH_HEAD"] if parent else []), "-m", message
                ).strip()
                if before_push is not None and attempt == 1:
                    before_push()  # the tests' seam: a concurrent push lands here
                pushed = self._run(tmp, "push", "--quiet", self.remote, f"{commit}:{self._ref}")
                if pushed.returncode == 0:
                    return attempt
                why = pushed.stderr
                if not re.search(r"non-fast-forward|fetch first|rejected|stale info", why):
                    raise PublishError(f"git push to {self.branch}: {self._last(why)}")
        raise PublishError(
            f"git push to {self.branch}: still behind after {ATTEMPTS} attempts (busy branch)"
        )

    @property
    def _ref(self) -> str:
        return f"refs/heads/{self.branch}"

    def _fetch(self, git: Callable[..., str]) -> bool:
        try:
            git("fetch", "--quiet", "--depth=1", "--no-tags", self.remote, self._ref)
        except PublishError as e:
            if "couldn't find remote ref" in str(e) or "not found" in str(e).lower():
                return False
            raise
        return True

    def _show(self, git: Callable[..., str], path: str) -> bytes | None:
        try:
            size = int(git("cat-file", "-s", f"FETCH_HEAD:{path}").strip())
        except PublishError:
            return None  # the branch is there, this report id's file is not yet
        if size > MAX_BYTES:
            raise PublishError(
                f"{self.branch}:{path}: {numbers.count(size)} bytes, over the history limit"
            )
        return git("cat-file", "blob", f"FETCH_HEAD:{path}").encode("utf-8", "surrogateescape")

    def _git_in(self, folder: str) -> Callable[..., str]:
        def git(*args: str, stdin: str | None = None, extra: dict[str, str] | None = None) -> str:
            done = self._run(folder, *args, stdin=stdin, extra=extra)
            if done.returncode != 0:
                raise PublishError(f"git {args[0]}: {self._last(done.stderr)}")
            return done.stdout

        return git

    def _run(
        self,
        folder: str,
        *args: str,
        stdin: str | None = None,
        extra: dict[str, str] | None = None,
    ) -> subprocess.CompletedProcess[str]:
        env = {**self._env, **(extra or {})}
        name, email = _BOT
        env.update(
            {
                "GIT_AUTHOR_NAME": name,
                "GIT_AUTHOR_EMAIL": email,
                "GIT_COMMITTER_NAME": name,
                "GIT_COMMITTER_EMAIL": email,
            }
        )
        return subprocess.run(
            ["git", *args],
            cwd=folder,
            input=stdin,
            capture_output=True,
            text=True,
            errors="surrogateescape",
            env=env,
            check=False,
        )

    def _last(self, stderr: str) -> str:
        lines = [x for x in stderr.strip().splitlines() if x.strip()]
        return self._context.redact(lines[-1] if lines else "unknown error")
