"""The history store against a real bare git repository served over smart HTTP on 127.0.0.1
(`git http-backend`, tests/support/git_http.py), with 502 and 403 answers and stalls injected
(issue 35, item 3): concurrent writers lose no entry; every git call ends within the deadline;
an entry that still cannot be written is an `::error` annotation and is kept in the job
summary and the `history-entry` output, to be written later."""

from __future__ import annotations

import json
import random
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from budgetdiff import action
from budgetdiff.errors import PublishError
from budgetdiff.github.context import HISTORY_REMOTE_ENV, GitHubContext
from budgetdiff.github.history_store import Store
from tests.support.fake_github import PR, FakeGitHub, make_env, parse_outputs
from tests.support.git_http import Fault, GitHttpServer, serve
from tests.support.paths import DEMO

BRANCH = "budgetdiff-history"
WRITERS = 8
ALWAYS = frozenset(range(1, 10_000))


@pytest.fixture
def served(tmp_path: Path) -> Iterator[GitHttpServer]:
    yield from serve(tmp_path / "served")


def branch_file(repo: Path, path: str = "default.jsonl") -> list[str]:
    done = subprocess.run(
        ["git", "--git-dir", str(repo), "show", f"{BRANCH}:{path}"],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.splitlines()


@pytest.mark.slow
def test_eight_concurrent_writers_through_502s_and_403s_lose_no_entry(
    served: GitHttpServer,
) -> None:
    """8 runs of one report id and 2 of another push at once (a barrier starts them together),
    while the server answers some fetches and pushes 502 or 403: every entry is on the branch,
    once, and the faults were served."""
    served.faults += [
        Fault("git-receive-pack", frozenset(range(2, 400, 7)), 502, method="POST"),
        Fault("info/refs", frozenset(range(3, 800, 11)), 403),
        Fault("git-upload-pack", frozenset(range(4, 400, 13)), 502, method="POST"),
    ]
    context = GitHubContext(history_remote=served.url)
    jobs = [("default.jsonl", n) for n in range(WRITERS)] + [("other.jsonl", n) for n in (0, 1)]
    start = threading.Barrier(len(jobs))
    attempts: dict[tuple[str, int], int | BaseException] = {}

    def write(path: str, n: int) -> None:
        start.wait(timeout=30)
        store = Store(context, BRANCH, deadline_s=120, rng=random.Random(n))
        try:
            attempts[(path, n)] = store.append(path, json.dumps({"n": n}), 500, f"run {n}")
        except BaseException as exc:  # the assertion below shows it
            attempts[(path, n)] = exc

    threads = [threading.Thread(target=write, args=job) for job in jobs]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=150)
    assert not any(t.is_alive() for t in threads)
    assert all(isinstance(a, int) for a in attempts.values()), attempts
    assert sorted(json.loads(x)["n"] for x in branch_file(served.repo)) == list(range(WRITERS))
    assert sorted(json.loads(x)["n"] for x in branch_file(served.repo, "other.jsonl")) == [0, 1]
    assert served.statuses(502) >= 2 and served.statuses(403) >= 1
    assert max(a for a in attempts.values() if isinstance(a, int)) > 1  # some tried again


def test_a_stalled_remote_ends_at_the_deadline_naming_the_host_and_step(
    served: GitHttpServer,
) -> None:
    """The server sends nothing for 30 s: a read with a 3 s deadline gives up after about
    3 s (the call's timeout is what the deadline leaves), naming the host and the git step."""
    served.faults.append(Fault("info/refs", ALWAYS, status=0, stall_s=30))
    store = Store(GitHubContext(history_remote=served.url), BRANCH, deadline_s=3)
    began = time.monotonic()
    with pytest.raises(PublishError) as caught:
        store.read("default.jsonl")
    took = time.monotonic() - began
    assert 2.5 <= took < 8
    message = str(caught.value)
    assert "127.0.0.1" in message and "git fetch" in message and "no answer within 3 s" in message
    assert "deadline is 3 s" in message


def test_a_403_on_every_push_is_retried_until_the_deadline(served: GitHttpServer) -> None:
    """A 403 may be GitHub's rate limit: tried again with backoff, then given up at the
    deadline, with the attempts and the status said."""
    served.faults.append(Fault("git-receive-pack", ALWAYS, 403, method="POST"))
    waits: list[float] = []

    def sleep(seconds: float) -> None:
        waits.append(seconds)
        time.sleep(seconds)

    store = Store(
        GitHubContext(history_remote=served.url),
        BRANCH,
        deadline_s=4,
        sleep=sleep,
        rng=random.Random(1),
    )
    with pytest.raises(PublishError, match=r"gave up after \d+ attempts.*HTTP 403"):
        store.append("default.jsonl", '{"n":1}', 500, "run")
    assert len(waits) >= 2
    assert all(0 <= w <= 5 for w in waits)
    assert served.statuses(403) == len(waits) + 1


def action_env(
    tmp_path: Path, gh: FakeGitHub, remote: str, kind: str, sha: str, **extra: str
) -> dict[str, str]:
    env = make_env(tmp_path, gh, kind, GITHUB_SHA=sha)
    env.update(
        {
            HISTORY_REMOTE_ENV: remote,
            "GITHUB_REF": "refs/heads/master" if kind == "push" else f"refs/pull/{PR}/merge",
            "INPUT_HEAD": str(DEMO / "head.csv"),
            "INPUT_BASE": str(DEMO / "base.csv"),
            "INPUT_BUDGET": str(DEMO / "budget.yml"),
            "INPUT_HISTORY_BRANCH": BRANCH,
            "INPUT_COMMENT": "true",
            **extra,
        }
    )
    return env


@pytest.mark.slow
def test_an_entry_that_cannot_be_written_is_an_error_and_is_kept(
    tmp_path: Path, gh: FakeGitHub, served: GitHttpServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every push answered 502 until the deadline (input `history-timeout: 3`): the exit code
    is still the verdict's; the step prints an `::error`; the entry is in the job summary and
    in the `history-entry` output, and once written from there the next run reads it."""
    served.faults.append(Fault("git-receive-pack", ALWAYS, 502, method="POST"))
    sha = "a" * 40
    env = action_env(tmp_path, gh, served.url, "push", sha, INPUT_HISTORY_TIMEOUT="3")
    began = time.monotonic()
    assert action.main(env) == 1  # the demo's verdict
    assert time.monotonic() - began < 30
    out = capsys.readouterr().out
    [error] = [x for x in out.splitlines() if x.startswith("::error title=budgetdiff::history")]
    assert "HTTP 502" in error and "127.0.0.1" in error and "history-entry" in error
    entry = parse_outputs(Path(env["GITHUB_OUTPUT"]).read_text())["history-entry"]
    report = json.loads(entry)
    assert entry.isascii() and "::" not in entry  # inert wherever a later step echoes it
    assert report["commit"] == sha and report["schema"] == "budgetdiff.report/v1"
    assert entry in Path(env["GITHUB_STEP_SUMMARY"]).read_text()

    served.faults.clear()  # written later, as docs/history.md shows, from the output
    Store(GitHubContext(history_remote=served.url), BRANCH).append(
        "default.jsonl", entry, 500, "budgetdiff history: written later"
    )
    env = action_env(tmp_path, gh, served.url, "pull_request.opened", "d" * 40)
    assert action.main(env) == 1
    [comment] = gh.comments_on(PR)
    assert "over 1 run(s)" in comment["body"]


def test_the_deadline_input_is_checked(
    tmp_path: Path, gh: FakeGitHub, served: GitHttpServer, capsys: pytest.CaptureFixture[str]
) -> None:
    env = action_env(tmp_path, gh, served.url, "push", "b" * 40, INPUT_HISTORY_TIMEOUT="5m")
    assert action.main(env) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "history-timeout" in err
