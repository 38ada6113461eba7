"""What the Actions runner tells budgetdiff through its environment, read once into a typed
object, with the token redacted in one place, each network step's deadline, and the API
client's test seams beside it."""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from budgetdiff.errors import redact
from budgetdiff.github import event
from budgetdiff.github.api import GitHubClient
from budgetdiff.sources.deadline import DEFAULT_DEADLINE_S, deadline_seconds

if TYPE_CHECKING:
    import httpx

# a git URL or path for the history store instead of the repository's own (tests, mirrors)
HISTORY_REMOTE_ENV = "BUDGETDIFF_HISTORY_REMOTE"


@dataclass(frozen=True)
class GitHubContext:
    """The runner's variables budgetdiff reads ("" when unset), as python-coverage-comment-action's
    `Config.from_environ`. `transport` and `sleep` are the API client's seams (tests pass a
    stand-in for the network and for the waits between retries)."""

    token: str = field(default="", repr=False)  # GITHUB_TOKEN
    api_url: str = ""  # GITHUB_API_URL ("" means api.github.com)
    repository: str = ""  # GITHUB_REPOSITORY: owner/name
    event_name: str = ""  # GITHUB_EVENT_NAME
    event_path: str = ""  # GITHUB_EVENT_PATH: the event payload's JSON
    step_summary: str = ""  # GITHUB_STEP_SUMMARY: the file the job summary is appended to
    output: str = ""  # GITHUB_OUTPUT: the file the step outputs are appended to
    sha: str = ""  # GITHUB_SHA
    ref: str = ""  # GITHUB_REF, e.g. refs/heads/main
    server_url: str = ""  # GITHUB_SERVER_URL, e.g. https://github.com
    run_id: str = ""  # GITHUB_RUN_ID
    runner_temp: str = ""  # RUNNER_TEMP
    history_remote: str = ""  # BUDGETDIFF_HISTORY_REMOTE
    deadline_s: float = DEFAULT_DEADLINE_S  # BUDGETDIFF_NETWORK_DEADLINE: each network step's
    transport: httpx.BaseTransport | None = field(default=None, repr=False, compare=False)
    sleep: Callable[[float], None] = field(default=time.sleep, repr=False, compare=False)

    @classmethod
    def from_environ(
        cls,
        environ: Mapping[str, str],
        *,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] | None = None,
    ) -> GitHubContext:
        def var(name: str) -> str:
            return environ.get(name, "")

        return cls(
            token=var("GITHUB_TOKEN").strip(),  # a secret's trailing newline is not the token
            api_url=var("GITHUB_API_URL"),
            repository=var("GITHUB_REPOSITORY"),
            event_name=var("GITHUB_EVENT_NAME"),
            event_path=var("GITHUB_EVENT_PATH"),
            step_summary=var("GITHUB_STEP_SUMMARY"),
            output=var("GITHUB_OUTPUT"),
            sha=var("GITHUB_SHA"),
            ref=var("GITHUB_REF"),
            server_url=var("GITHUB_SERVER_URL"),
            run_id=var("GITHUB_RUN_ID"),
            runner_temp=var("RUNNER_TEMP"),
            history_remote=var(HISTORY_REMOTE_ENV),
            deadline_s=deadline_seconds(environ),
            transport=transport,
            sleep=time.sleep if sleep is None else sleep,
        )

    def redact(self, text: str) -> str:
        """`text` with the token (and any `Bearer`/`Basic` credential) replaced by `***`: every
        message that may quote it passes here (`errors.redact`)."""
        return redact(text, (self.token,))

    def client(self, step: str = "the GitHub API") -> GitHubClient:
        """A REST client for this run's API URL and token, for one network step (`step` names
        it when its deadline passes); a bad URL raises `ApiError`."""
        return GitHubClient(
            self.api_url,
            self.token,
            transport=self.transport,
            sleep=self.sleep,
            step=step,
            deadline_s=self.deadline_s,
        )

    @cached_property
    def payload(self) -> dict[str, Any]:
        """The event payload ({} outside Actions), read once; an unreadable one is a
        `PublishError` (each time it is asked for)."""
        return event.read_event(self.event_path)

    def temp_dir(self) -> Path:
        """The runner's temporary folder (emptied after the job), else the system's."""
        return Path(self.runner_temp or tempfile.gettempdir())

    def report_path(self, report_id: str) -> Path:
        """Where the JSON report of `report_id` is kept for the outputs and the history store."""
        return self.temp_dir() / f"budgetdiff-{report_id}.json"

    def artifacts_url(self) -> str | None:
        """The link to this run's artifacts, when the runner says which run this is."""
        if self.server_url and self.repository and self.run_id.isdigit():
            return f"{self.server_url}/{self.repository}/actions/runs/{self.run_id}#artifacts"
        return None
