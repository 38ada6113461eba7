"""Where a Report goes: the files the options name, stdout, and with --github the run's page
and the pull request."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from budgetdiff.budget.file import write_atomically
from budgetdiff.commands.edge import Edge
from budgetdiff.commands.options import RunOptions
from budgetdiff.commands.terminal import width
from budgetdiff.errors import UsageError
from budgetdiff.render.json import render_json
from budgetdiff.render.markdown import render_markdown
from budgetdiff.render.table import render_table
from budgetdiff.report.model import Report

if TYPE_CHECKING:
    from budgetdiff.github import GitHubContext


def finish(report: Report, o: RunOptions, edge: Edge) -> int:
    """Write every output first, then publish; the exit code is the verdict's alone."""
    if o.json:
        write_atomic(Path(o.json), render("json", report))
    if o.markdown:
        write_atomic(Path(o.markdown), render("markdown", report))
    edge.out.write(render(o.output, report, width(edge.environ, edge.out)))
    edge.out.flush()
    if edge.github is not None:
        _publish(report, o, edge.github)
    return 1 if report.verdict == "fail" else 0


def render(output: str, report: Report, columns: int | None = None) -> str:
    """One output; the terminal report folded to `columns` (None: every table whole)."""
    if output == "json":
        return render_json(report)
    if output == "markdown":
        return render_markdown(report)
    return render_table(report, columns)


def _publish(report: Report, o: RunOptions, context: GitHubContext) -> None:
    from budgetdiff import github  # the GitHub client only with --github

    json_path = Path(o.json) if o.json else context.report_path(o.id)
    if not o.json:
        write_atomic(json_path, render_json(report))
    pub = github.Publication(
        report_id=o.id,
        verdict=report.verdict,
        regressions=report.regressions,
        findings=report.findings,
        json_path=json_path,
        render_markdown=lambda limit: render_markdown(report, limit),
        render_resolved=lambda limit: render_markdown(report, limit, resolved=True),
    )
    github.publish(pub, context, comment=o.comment, comment_author=o.comment_author)


def write_atomic(path: Path, text: str) -> None:
    """Whole or not at all: a reader never sees half a report."""
    try:
        write_atomically(path, text.encode("utf-8"))
    except OSError as e:
        raise UsageError(f"{path}: cannot write the report ({e.strerror})") from None
