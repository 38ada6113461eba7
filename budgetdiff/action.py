"""The GitHub Action's entry: its inputs (env vars set by action.yml) to the options of a compare.

action.yml passes every input through `env:` and runs `python -I -m budgetdiff.action` (isolated
mode: the checked-out workspace cannot shadow budgetdiff's modules); nothing a user writes is
ever spliced into a shell line or an argument list. `commands.options.ACTION_INPUTS` turns
the inputs into the `RunOptions` the CLI's flags also become, and the compare runs as the CLI's does
(`budgetdiff.commands.compare`, through `cli.guarded`). What is the Action's own: the token, the
results artifact of a `workflow_run` (the fork-PR flow), and the history branch.
"""

from __future__ import annotations

import json
import math
import os
import re
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path, PurePosixPath

from budgetdiff import cli
from budgetdiff.commands import check, compare
from budgetdiff.commands.edge import Edge
from budgetdiff.commands.options import ACTION_INPUTS, RunOptions, action_input, from_action
from budgetdiff.errors import PublishError, UsageError
from budgetdiff.evaluate.orchestrator import TREND_LINK_ENV
from budgetdiff.github import GitHubContext, actions, event, fetch_results_artifact
from budgetdiff.github.git import DEFAULT_DEADLINE_S
from budgetdiff.github.history_store import Store, validate_branch
from budgetdiff.numbers import given

# input name -> the env var action.yml sets for it
INPUTS = {name: spec.env for name, spec in ACTION_INPUTS.items()}
_input = action_input
BUDGET_LABEL = "budgetdiff:budget"  # action.yml's default for `budget-label`


def _inside(folder: Path, name: str, what: str) -> str:
    """`name` as a plain relative path inside the extracted artifact `folder`."""
    path = PurePosixPath(name)
    if path.is_absolute() or ".." in path.parts or "\\" in name:
        raise UsageError(
            f"input `{what}`: {name!r} must be a path inside the results artifact "
            "(relative, no `..`)"
        )
    return str(folder.joinpath(*path.parts))


def build(environ: Mapping[str, str]) -> tuple[RunOptions, dict[str, str]]:
    """(the compare's options, the environment it runs with). Nothing is downloaded before
    every input is checked."""
    env = dict(environ)
    token = _input(environ, "github-token")
    if token:
        env["GITHUB_TOKEN"] = token
    o = from_action(environ)  # the id is checked before it names anything on disk
    _live_inputs(environ)
    if not o.head and not o.prometheus:
        raise UsageError(
            "input `head` is required: the results file(s) of this commit, e.g. "
            "`head: results/head.csv` (or `prometheus-url` for the deploy gate)"
        )
    context = GitHubContext.from_environ(env)
    o = _budget_source(o, environ, context)
    results_artifact = _input(environ, "results-artifact")
    if results_artifact:
        o = _from_results_artifact(o, results_artifact, context)
    return _with_history(o, environ, context, env), env


def _budget_source(o: RunOptions, environ: Mapping[str, str], context: GitHubContext) -> RunOptions:
    """Issue 38: on a pull request the budget is read as it is in the base commit, so that a
    PR cannot loosen its own gate; the PR's own budget only with `budget-from: head` or the
    label `budget-label` names (set by a maintainer). Either way a change is a finding."""
    frm = (_input(environ, "budget-from") or "base").lower()
    if frm not in ("base", "head"):
        raise UsageError(f"input `budget-from`: {frm[:40]!r}: write base or head")
    pull = context.payload.get("pull_request") if context.event_name in event.PR_EVENTS else None
    base = pull.get("base") if isinstance(pull, dict) else None
    sha = base.get("sha") if isinstance(base, dict) else None
    if not isinstance(sha, str) or not sha:
        return o  # a push, a schedule, a workflow_run: the work tree is the trusted side
    label = environ.get(INPUTS["budget-label"], BUDGET_LABEL).strip()  # set but empty: off
    labelled = event.acceptance(context.payload, label) if label else None
    own = "budget-from: head" if frm == "head" else None
    if own is None and labelled is not None:
        own = f"the label {labelled.label} by {labelled.by}"
    return replace(o, budget_ref=sha, budget_ref_name="the base commit", budget_own=own)


def _live_inputs(environ: Mapping[str, str]) -> None:
    """Issue 27: `base-match`, `head-match` and `window` say nothing without `prometheus-url`
    (named as inputs here; the compare names the same mistakes as flags)."""
    given = [n for n in ("base-match", "head-match", "window") if _input(environ, n)]
    if given and not _input(environ, "prometheus-url"):
        raise UsageError(f"input `{given[0]}` goes with `prometheus-url` (docs/deploy-gate.md)")


def _from_results_artifact(o: RunOptions, name: str, context: GitHubContext) -> RunOptions:
    """head (and base, unless it comes from the base artifact) inside the results artifact of
    the run that triggered this `workflow_run` job, downloaded."""
    if not o.base and not o.base_artifact:
        raise UsageError(
            "input `base` is required with `results-artifact`: the base results' file name "
            "inside the artifact (e.g. `base: base.csv`), or add `base-artifact` to take the "
            "base from the base branch's latest run; defaulting to the head's name would "
            "compare the head with itself"
        )
    if o.base_ref or o.head_ref:
        raise UsageError(
            "inputs `base-ref`/`head-ref` do not combine with `results-artifact`: "
            "the artifact holds the files themselves"
        )
    folder = Path(tempfile.mkdtemp(prefix=f"budgetdiff-results-{o.id}-", dir=context.temp_dir()))
    folder = fetch_results_artifact(name, context, folder)
    head = tuple(_inside(folder, n, "head") for n in o.head)
    if o.base_artifact:  # `base` names files inside the base artifact
        return replace(o, head=head)
    return replace(o, head=head, base=tuple(_inside(folder, n, "base") for n in o.base))


def _with_history(
    o: RunOptions, environ: Mapping[str, str], context: GitHubContext, env: dict[str, str]
) -> RunOptions:
    """`history` from the store's branch (read on every run), and `html` for the page."""
    branch = _input(environ, "history-branch")
    if not branch:
        return o
    validate_branch(branch)  # bad values stop the run before anything is published
    _history_size(environ)
    deadline = _history_timeout(environ)
    temp = context.temp_dir()
    page = temp / f"budgetdiff-trend-{o.id}.html"
    o = replace(o, html=str(page))
    try:
        data = Store(context, branch, deadline_s=deadline).read(f"{o.id}.jsonl")
    except PublishError as exc:  # no history is a poorer report, never a failed run
        print(actions.command("warning", f"history not read: {exc}", title="budgetdiff"))
        data = None
    if data is not None:
        path = temp / f"budgetdiff-history-{o.id}.jsonl"
        path.write_bytes(data)
        o = replace(o, history=str(path))
    link = context.artifacts_url()
    if link is not None:
        env[TREND_LINK_ENV] = link
    _output(context, "trend-page", str(page))
    return o


def _history_size(environ: Mapping[str, str]) -> int:
    raw = _input(environ, "history-size") or "500"
    if not raw.isdigit() or not 1 <= int(raw) <= 100_000:
        raise UsageError(
            f"input `history-size`: {raw[:40]!r}: write a whole number of runs, 1 to 100000"
        )
    return int(raw)


def _history_timeout(environ: Mapping[str, str]) -> float:
    raw = _input(environ, "history-timeout") or given(DEFAULT_DEADLINE_S)
    try:
        seconds = float(raw)
    except ValueError:
        seconds = math.nan
    if not 1 <= seconds <= 3600:
        raise UsageError(
            f"input `history-timeout`: {raw[:40]!r}: write the seconds the history read or "
            "write may take, 1 to 3600 (e.g. 60)"
        )
    return seconds


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
    A pull request (a fork's included) never writes. An entry not written (the deadline passed,
    the token may not push) is an error annotation, and is kept (`_keep`) to be written later;
    the exit code stays the verdict's."""
    branch = _input(environ, "history-branch")
    context = GitHubContext.from_environ(env)
    if not branch or code not in (0, 1) or context.event_name != "push":
        return
    report_id = from_action(environ).id
    try:
        repository = context.payload.get("repository")
        default = repository.get("default_branch") if isinstance(repository, dict) else None
        if not isinstance(default, str) or not default or context.ref != f"refs/heads/{default}":
            return
        report = json.loads(context.report_path(report_id).read_text("utf-8"))
    except (PublishError, OSError, ValueError) as exc:
        print(actions.command("error", f"history not written: {exc}", title="budgetdiff"))
        return
    sha = context.sha
    if sha:
        report["commit"] = sha
    try:
        Store(context, branch, deadline_s=_history_timeout(environ)).append(
            f"{report_id}.jsonl",
            json.dumps(report, separators=(",", ":"), ensure_ascii=False),
            _history_size(environ),
            f"budgetdiff history: {report_id} at {sha[:12]}",
            replaces=lambda old: bool(sha) and _commit(old) == sha,
        )
    except PublishError as exc:
        _keep(context, f"{branch}:{report_id}.jsonl", report, exc)


def _keep(context: GitHubContext, where: str, report: dict[str, object], exc: Exception) -> None:
    """The entry not written: an `::error`, and the line in the `history-entry` output and the
    job summary, as ASCII JSON without `::` (`:\\u003a` is the same string), inert in a log."""
    line = json.dumps(report, separators=(",", ":"), ensure_ascii=True).replace("::", ":\\u003a")
    print(
        actions.command(
            "error",
            f"history not written: {exc}. The entry is kept in the step output `history-entry` "
            f"and the job summary: append it to {where} (docs/history.md, 'An entry not written')",
            title="budgetdiff",
        )
    )
    try:
        _output(context, "history-entry", line)
        if context.step_summary:
            actions.append_summary(Path(context.step_summary), _kept_markdown(where, line))
    except (OSError, ValueError) as err:  # the log is the last place left to keep it
        print(
            f"budgetdiff: could not keep the history entry ({err}); it is: {line}", file=sys.stderr
        )


def _kept_markdown(where: str, line: str) -> str:
    """The job summary's section for an entry not written: the line in a code block (a fence
    longer than any run of backticks in it), or where to find it when it would not fit."""
    fence = "`" * max(3, 1 + max((len(r) for r in re.findall("`+", line)), default=0))
    head = f"\n### budgetdiff: history entry not written\n\nAppend this line to `{where}`:\n\n"
    if len(line) > actions.SUMMARY_MAX_BYTES // 4:
        return head.replace("this line", "the step output `history-entry`") + "\n"
    return f"{head}{fence}json\n{line}\n{fence}\n"


def main(environ: Mapping[str, str] | None = None) -> int:
    environ = os.environ if environ is None else environ
    env: dict[str, str] = dict(environ)

    def run() -> int:
        nonlocal env
        o, env = build(environ)
        edge = Edge(environ=env, out=sys.stdout, github=GitHubContext.from_environ(env))
        if not o.base_flags():  # the push-to-main history job: no base of any kind
            print(
                actions.command("notice", "no base given: head checked alone", title="budgetdiff")
            )
            return check.run(o, edge)
        return compare.run(o, edge)

    code = cli.guarded(run)
    record(environ, env, code)
    return code


if __name__ == "__main__":
    sys.exit(main())
