"""The GitHub Action's entry: inputs (env vars set by action.yml) to argv for `budgetdiff.cli`.

action.yml passes every input through `env:` and runs `python -I -m budgetdiff.action` (isolated
mode: the checked-out workspace cannot shadow budgetdiff's modules); nothing a user writes is
ever spliced into a shell line. Values go to argparse as `--opt=value`, so one
that starts with `-` cannot become an option.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path, PurePosixPath

from budgetdiff import cli
from budgetdiff.errors import (
    BUG_EXIT_CODE,
    BudgetdiffError,
    PublishError,
    UsageError,
    bug_message,
)
from budgetdiff.github import GitHubContext, actions, fetch_results_artifact, validate_report_id
from budgetdiff.github.history_store import Store, validate_branch
from budgetdiff.render.text import one_line

# input name -> the env var action.yml sets for it
INPUTS = {
    "base": "INPUT_BASE",
    "head": "INPUT_HEAD",
    "budget": "INPUT_BUDGET",
    "format": "INPUT_FORMAT",
    "fail-on": "INPUT_FAIL_ON",
    "comment": "INPUT_COMMENT",
    "id": "INPUT_ID",
    "github-token": "INPUT_GITHUB_TOKEN",
    "base-ref": "INPUT_BASE_REF",
    "head-ref": "INPUT_HEAD_REF",
    "base-artifact": "INPUT_BASE_ARTIFACT",
    "comment-author": "INPUT_COMMENT_AUTHOR",
    "results-artifact": "INPUT_RESULTS_ARTIFACT",
    "allow-missing-base": "INPUT_ALLOW_MISSING_BASE",
    "accept-label": "INPUT_ACCEPT_LABEL",
    "history-branch": "INPUT_HISTORY_BRANCH",
    "history-size": "INPUT_HISTORY_SIZE",
    "prometheus-url": "INPUT_PROMETHEUS_URL",
    "base-match": "INPUT_BASE_MATCH",
    "head-match": "INPUT_HEAD_MATCH",
    "window": "INPUT_WINDOW",
}
TREND_LINK_ENV = "BUDGETDIFF_TREND_LINK"  # where the comment links the trend page


def _input(environ: Mapping[str, str], name: str) -> str:
    return environ.get(INPUTS[name], "").strip()


def _flag(environ: Mapping[str, str], name: str) -> bool:
    value = _input(environ, name).lower()
    if value in ("", "false"):
        return False
    if value == "true":
        return True
    raise UsageError(f"input `{name}`: {value[:40]!r}: write true or false")


def _files(value: str) -> list[str]:
    """One path per line (a path may contain spaces; commas are legal in file names too)."""
    return [line.strip() for line in value.splitlines() if line.strip()]


def _inside(folder: Path, name: str, what: str) -> str:
    """`name` as a plain relative path inside the extracted artifact `folder`."""
    path = PurePosixPath(name)
    if path.is_absolute() or ".." in path.parts or "\\" in name:
        raise UsageError(
            f"input `{what}`: {name!r} must be a path inside the results artifact "
            "(relative, no `..`)"
        )
    return str(folder.joinpath(*path.parts))


def build(environ: Mapping[str, str]) -> tuple[list[str], dict[str, str]]:
    """(argv for budgetdiff.cli.main, the environment it runs with)."""
    env = dict(environ)
    token = _input(environ, "github-token")
    if token:
        env["GITHUB_TOKEN"] = token
    head = _files(_input(environ, "head"))
    live = _live(environ)
    if not head and not live:
        raise UsageError(
            "input `head` is required: the results file(s) of this commit, e.g. "
            "`head: results/head.csv` (or `prometheus-url` for the deploy gate)"
        )
    base = _files(_input(environ, "base"))
    context = GitHubContext.from_environ(env)
    # Validated before it names anything on disk (the results folder below).
    report_id = validate_report_id(_input(environ, "id") or "default")

    results_artifact = _input(environ, "results-artifact")
    base_artifact = _input(environ, "base-artifact")
    if not base and base_artifact:
        # The base file inside the base artifact has the head's name (cli's default, explicit).
        base = [PurePosixPath(name.replace("\\", "/")).name for name in head]
    if results_artifact and not base:
        raise UsageError(
            "input `base` is required with `results-artifact`: the base results' file name "
            "inside the artifact (e.g. `base: base.csv`), or add `base-artifact` to take the "
            "base from the base branch's latest run; defaulting to the head's name would "
            "compare the head with itself"
        )
    if results_artifact:
        if _input(environ, "base-ref") or _input(environ, "head-ref"):
            raise UsageError(
                "inputs `base-ref`/`head-ref` do not combine with `results-artifact`: "
                "the artifact holds the files themselves"
            )
        temp = context.temp_dir()
        folder = Path(tempfile.mkdtemp(prefix=f"budgetdiff-results-{report_id}-", dir=temp))
        folder = fetch_results_artifact(results_artifact, context, folder)
        head = [_inside(folder, name, "head") for name in head]
        if not base_artifact:  # else `base` names files inside the base artifact
            base = [_inside(folder, name, "base") for name in base]

    argv = ["compare", "--github", f"--id={report_id}"]
    argv += [f"--head={name}" for name in head]
    argv += [f"--base={name}" for name in base]
    argv += live
    argv.append(f"--budget={_input(environ, 'budget') or 'budget.yml'}")
    for name in ("format", "fail-on", "base-ref", "head-ref", "base-artifact", "comment-author"):
        value = _input(environ, name)
        if value:
            argv.append(f"--{name}={value}")
    argv.append(f"--comment={_input(environ, 'comment') or 'true'}")
    if INPUTS["accept-label"] in environ:  # set, even empty (disabled); unset: the default
        argv.append(f"--accept-label={_input(environ, 'accept-label')}")
    if _flag(environ, "allow-missing-base"):
        argv.append("--allow-missing-base")
    argv += _history(environ, context, env, report_id)
    return argv, env


def _live(environ: Mapping[str, str]) -> list[str]:
    """Issue 27: `prometheus-url` and its matchers and window as `compare --prometheus`."""
    url = _input(environ, "prometheus-url")
    given = [n for n in ("base-match", "head-match", "window") if _input(environ, n)]
    if not url and given:
        raise UsageError(f"input `{given[0]}` goes with `prometheus-url` (docs/deploy-gate.md)")
    if not url:
        return []
    return [f"--prometheus={url}", *(f"--{n}={_input(environ, n)}" for n in given)]


def _history(
    environ: Mapping[str, str], context: GitHubContext, env: dict[str, str], report_id: str
) -> list[str]:
    """`--history` from the store's branch (read on every run), and `--html` for the page."""
    branch = _input(environ, "history-branch")
    if not branch:
        return []
    validate_branch(branch)  # bad values stop the run before anything is published
    _history_size(environ)
    temp = context.temp_dir()
    page = temp / f"budgetdiff-trend-{report_id}.html"
    args = [f"--html={page}"]
    try:
        data = Store(context, branch).read(f"{report_id}.jsonl")
    except PublishError as exc:  # no history is a poorer report, never a failed run
        print(actions.command("warning", f"history not read: {exc}", title="budgetdiff"))
        data = None
    if data is not None:
        path = temp / f"budgetdiff-history-{report_id}.jsonl"
        path.write_bytes(data)
        args.append(f"--history={path}")
    link = context.artifacts_url()
    if link is not None:
        env[TREND_LINK_ENV] = link
    _output(context, "trend-page", str(page))
    return args


def _history_size(environ: Mapping[str, str]) -> int:
    raw = _input(environ, "history-size") or "500"
    if not raw.isdigit() or not 1 <= int(raw) <= 100_000:
        raise UsageError(
            f"input `history-size`: {raw[:40]!r}: write a whole number of runs, 1 to 100000"
        )
    return int(raw)


def _commit(line: str) -> object:
    """The `commit` of a history line (None when it is not a JSON object)."""
    try:
        doc = json.loads(line)
    except ValueError:
        return None
    return doc.get("commit") if isinstance(doc, dict) else None


def _output(context: GitHubContext, name: str, value: str) -> None:
    if context.output:
        with open(context.output, "a", encoding="utf-8") as f:
            f.write(actions.format_outputs({name: value}))


def record(environ: Mapping[str, str], env: Mapping[str, str], code: int) -> None:
    """On a push to the default branch: append this run's JSON report to the history branch.
    A pull request (a fork's included) never writes; a failure to write is a warning."""
    branch = _input(environ, "history-branch")
    context = GitHubContext.from_environ(env)
    if not branch or code not in (0, 1) or context.event_name != "push":
        return
    report_id = validate_report_id(_input(environ, "id") or "default")
    try:
        repository = context.payload.get("repository")
        default = repository.get("default_branch") if isinstance(repository, dict) else None
        if not isinstance(default, str) or not default or context.ref != f"refs/heads/{default}":
            return
        report = json.loads(context.report_path(report_id).read_text("utf-8"))
        sha = context.sha
        if sha:
            report["commit"] = sha
        line = json.dumps(report, separators=(",", ":"), ensure_ascii=False)
        Store(context, branch).append(
            f"{report_id}.jsonl",
            line,
            _history_size(environ),
            f"budgetdiff history: {report_id} at {sha[:12]}",
            replaces=lambda old: bool(sha) and _commit(old) == sha,
        )
    except (PublishError, OSError, ValueError) as exc:
        print(actions.command("warning", f"history not written: {exc}", title="budgetdiff"))


def main(environ: Mapping[str, str] | None = None) -> int:
    environ = os.environ if environ is None else environ
    try:
        argv, env = build(environ)
    except BudgetdiffError as exc:
        print(f"budgetdiff: error: {one_line(str(exc))}", file=sys.stderr)
        return exc.exit_code
    except Exception as exc:  # a bug, as in cli.main
        print(f"budgetdiff: error: {one_line(bug_message(exc))}", file=sys.stderr)
        return BUG_EXIT_CODE
    code = cli.main(argv, env)
    record(environ, env, code)
    return code


if __name__ == "__main__":
    cli.as_process(main)
