"""The options of a run, parsed once for the three edges (the CLI, the Python API, the Action).

Each value that a person types (`fail_on`, the report id, a yes/no, the comment mode, a comma
list) has one parser here, so `--fail-on`, the `fail-on` input and `fail_on=` read alike.
`RunOptions` is what the CLI's flags and the Action's inputs both become; `ACTION_INPUTS` is the
one table from the Action's inputs (the variables action.yml sets) to its fields: adding an
input touches action.yml and that table.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Final, Literal, Protocol, TypeAlias

from budgetdiff.budget.model import FAIL_KINDS
from budgetdiff.errors import UsageError
from budgetdiff.report.ids import REPORT_ID_RULE, is_report_id

FAIL_NEVER = "never"
ON_FINDINGS: Final = "on-findings"
CommentMode: TypeAlias = bool | Literal["on-findings"]
TRUE = ("true", "yes", "on", "1")
FALSE = ("false", "no", "off", "0")


def fail_on(value: str | Iterable[str] | None, where: str = "--fail-on") -> tuple[str, ...] | None:
    """The finding kinds that fail a run: a comma list (or a list), `never` for none; None
    keeps the budget's own `fail_on`."""
    if value is None:
        return None
    raw = value if isinstance(value, str) else ",".join(value)
    kinds = [k.strip() for k in raw.split(",") if k.strip()]
    if kinds == [FAIL_NEVER] or (not kinds and not isinstance(value, str)):
        return ()  # never; from Python an empty list says the same
    bad = [k for k in kinds if k not in FAIL_KINDS]
    if bad or not kinds:
        raise UsageError(
            f"{where}: unknown kind {bad[0][:40] if bad else '(empty)'!r}; use a comma list of "
            f"{', '.join(FAIL_KINDS)}, or {FAIL_NEVER}"
        )
    return tuple(kinds)


def report_id(value: str, where: str = "--id") -> str:
    """A report's name: what tells its PR comment, JSON file and history apart."""
    if not is_report_id(value):
        raise UsageError(f"{where}: {value[:80]!r}: use {REPORT_ID_RULE} (e.g. llama-8b.chat)")
    return value


def boolean(value: str, where: str) -> bool:
    """true/false, yes/no, on/off, 1/0 (any case), for a flag or an Action input alike."""
    v = value.strip().lower()
    if v in TRUE:
        return True
    if v in FALSE:
        return False
    raise UsageError(f"{where}: {value[:40]!r}: write true or false")


def comment_mode(value: str, where: str = "--comment") -> CommentMode:
    """Whether to post the PR comment: a boolean, or `on-findings`."""
    if value.strip().lower() == ON_FINDINGS:
        return ON_FINDINGS
    try:
        return boolean(value, where)
    except UsageError:
        raise UsageError(f"{where}: {value[:40]!r}: write true, false or {ON_FINDINGS}") from None


def names(value: str) -> tuple[str, ...]:
    """A comma list: `c=8,c=16`."""
    return tuple(s.strip() for s in value.split(",") if s.strip())


def lines(value: str) -> tuple[str, ...]:
    """One per line (an Action's file list: a path may hold spaces and commas)."""
    return tuple(line.strip() for line in value.splitlines() if line.strip())


class SqlFlags(Protocol):
    """`--sql CONNECTION` and the flags naming its rows: compare's, check's and inspect's."""

    @property
    def sql(self) -> str | None: ...
    @property
    def sql_table(self) -> str | None: ...
    @property
    def sql_query(self) -> str | None: ...
    @property
    def sql_time(self) -> str | None: ...


@dataclass(frozen=True)
class RunOptions:
    """compare, check, rebudget and demo: what to read, what to write, where to publish. The
    names are the flags' (`--fail-on` is `fail_on`); the Action's inputs fill the same fields."""

    head: tuple[str, ...] = ()
    budget: str = "budget.yml"
    # issue 38: the budget as it is in this git commit holds the run (the Action: the PR's
    # base), and a work tree budget that differs is the `budget_change` finding
    budget_ref: str | None = None
    budget_ref_name: str | None = None  # how the finding names the commit (the Action's words)
    budget_own: str | None = None  # why the work tree's (the PR's own) budget holds instead
    base: tuple[str, ...] = ()
    allow_missing_base: bool = False
    history: str | None = None  # JSON Lines of earlier reports
    html: str | None = None  # the page to write
    format: str = "auto"
    base_ref: str | None = None
    head_ref: str | None = None
    scenario: tuple[str, ...] = ()
    output: str = "table"
    json: str | None = None
    markdown: str | None = None
    fail_on: tuple[str, ...] | None = None  # None: the budget's
    github: bool = False
    id: str = "default"
    base_artifact: str | None = None
    comment_author: str = "github-actions[bot]"
    comment: CommentMode = True
    accept_label: str = "budgetdiff:accept"
    write: bool = False  # rebudget: update the budget file
    pair: bool | None = None  # compare: --pair True, --no-pair False, neither: where proven
    engine: str | None = None  # issue 36: compare --engine duckdb, out of core
    # issue 27: `--prometheus URL` reads the sides from a live Prometheus
    prometheus: str | None = None
    base_match: str | None = None
    head_match: str | None = None
    window: str | None = None
    at: str | None = None
    base_at: str | None = None
    head_at: str | None = None
    # issue 36: `--sql CONNECTION` reads the sides' requests from a SQL engine
    sql: str | None = None
    sql_table: str | None = None
    sql_query: str | None = None
    sql_time: str | None = None

    def base_flags(self) -> list[str]:
        """The flags given that name a base of some kind (files, a git ref, an artifact, a
        Prometheus matcher or time): none means a check of head alone."""
        given = (
            ("--base", self.base),
            ("--base-ref", self.base_ref),
            ("--base-artifact", self.base_artifact),
            ("--allow-missing-base", self.allow_missing_base),
            ("--base-match", self.base_match),
            ("--base-at", self.base_at),
        )
        return [flag for flag, value in given if value]


# ---- the Action's inputs --------------------------------------------------------------------


def _text(value: str, where: str) -> str:
    return value


@dataclass(frozen=True)
class ActionInput:
    """One input of action.yml: the variable its `env:` sets, the RunOptions field it fills
    (None: the Action itself reads it) and how its text becomes the field's value."""

    env: str
    field: str | None
    parse: Callable[[str, str], object] = _text
    empty_is_a_value: bool = False  # set but empty still says something (accept-label: off)


ACTION_INPUTS: Mapping[str, ActionInput] = {
    "head": ActionInput("INPUT_HEAD", "head", lambda v, _: lines(v)),
    "base": ActionInput("INPUT_BASE", "base", lambda v, _: lines(v)),
    "budget": ActionInput("INPUT_BUDGET", "budget"),
    "budget-from": ActionInput("INPUT_BUDGET_FROM", None),
    "budget-label": ActionInput("INPUT_BUDGET_LABEL", None, empty_is_a_value=True),
    "format": ActionInput("INPUT_FORMAT", "format"),
    "fail-on": ActionInput("INPUT_FAIL_ON", "fail_on", fail_on),
    "comment": ActionInput("INPUT_COMMENT", "comment", comment_mode),
    "id": ActionInput("INPUT_ID", "id", report_id),
    "scenario": ActionInput("INPUT_SCENARIO", "scenario", lambda v, _: names(v)),
    "github-token": ActionInput("INPUT_GITHUB_TOKEN", None),
    "base-ref": ActionInput("INPUT_BASE_REF", "base_ref"),
    "head-ref": ActionInput("INPUT_HEAD_REF", "head_ref"),
    "base-artifact": ActionInput("INPUT_BASE_ARTIFACT", "base_artifact"),
    "comment-author": ActionInput("INPUT_COMMENT_AUTHOR", "comment_author"),
    "results-artifact": ActionInput("INPUT_RESULTS_ARTIFACT", None),
    "allow-missing-base": ActionInput("INPUT_ALLOW_MISSING_BASE", "allow_missing_base", boolean),
    "accept-label": ActionInput("INPUT_ACCEPT_LABEL", "accept_label", empty_is_a_value=True),
    "history-branch": ActionInput("INPUT_HISTORY_BRANCH", None),
    "history-size": ActionInput("INPUT_HISTORY_SIZE", None),
    "history-timeout": ActionInput("INPUT_HISTORY_TIMEOUT", None),
    "prometheus-url": ActionInput("INPUT_PROMETHEUS_URL", "prometheus"),
    "base-match": ActionInput("INPUT_BASE_MATCH", "base_match"),
    "head-match": ActionInput("INPUT_HEAD_MATCH", "head_match"),
    "window": ActionInput("INPUT_WINDOW", "window"),
}


def action_input(environ: Mapping[str, str], name: str) -> str:
    """An input's text as action.yml passed it ("" when unset)."""
    return environ.get(ACTION_INPUTS[name].env, "").strip()


def from_action(environ: Mapping[str, str]) -> RunOptions:
    """The run the Action's inputs ask for: a compare, published to GitHub. An input left
    empty keeps the field's default; a bad value is a UsageError naming the input."""
    given: dict[str, object] = {"github": True}
    for name, spec in ACTION_INPUTS.items():
        if spec.field is None or spec.env not in environ:
            continue
        raw = environ[spec.env].strip()
        if raw or spec.empty_is_a_value:
            given[spec.field] = spec.parse(raw, f"input `{name}`")
    return RunOptions(**given)  # type: ignore[arg-type]


# The options of the commands that take neither base nor head results (`RunOptions` is
# compare's, check's, rebudget's and demo's): here, so the parser needs no command module.


@dataclass(frozen=True)
class WhatifOptions:
    """whatif: the estimate's numbers, or measured requests and the changes to their slices."""

    budget: str | None = None  # None: budget.yml, which --slo-total/--slo-ttft do without
    slo_total: float | None = None
    slo_ttft: float | None = None
    ttft: float | None = None
    tokens_per_s: float | None = None
    tpot: float | None = None
    tokens: float | None = None
    tail: float = 0.0
    head: tuple[str, ...] = ()
    head_ref: str | None = None
    format: str = "auto"
    scenario: tuple[str, ...] = ()
    scale: tuple[str, ...] = ()  # SLICE=FACTOR, as given
    add: tuple[str, ...] = ()  # SLICE=MS, as given
    steps: float | None = None  # an agent task's steps (commands.agent_whatif)
    step_ms: float | None = None  # and its ms per step


@dataclass(frozen=True)
class HistoryOptions:
    """history: the JSON Lines file, and the page to draw it on."""

    file: str
    html: str | None = None


@dataclass(frozen=True)
class InspectOptions:
    """inspect: the file, and the budget whose `column:`/`unit:` mappings apply."""

    file: str = ""
    budget: str | None = None
    format: str = "auto"
    # issue 36: the rows of a SQL engine instead of a file (the query is shown)
    sql: str | None = None
    sql_table: str | None = None
    sql_query: str | None = None
    sql_time: str | None = None
    head_match: str | None = None
    window: str | None = None
    at: str | None = None


@dataclass(frozen=True)
class InitOptions:
    dir: str = "."
    force: bool = False
    head: str | None = None  # issue 38: a results file the written budget fits


@dataclass(frozen=True)
class NoOptions:
    """schema takes none."""
