"""Attacker-controlled names cannot break the comment: rendered by a real GFM renderer."""

from __future__ import annotations

import json
import re
from pathlib import Path

import cmarkgfm
import numpy as np
import pytest
from cmarkgfm.cmark import Options

from tests.support.helpers import run, write_table

HOSTILE = [
    "a|b",
    "`code` span",
    "<details><summary>x",
    "</table></details>",
    "@someone",
    "x" * 10_000,
    "[link](https://evil.example) **bold** ~~strike~~ #1",
]


def gfm(text: str) -> str:
    return cmarkgfm.github_flavored_markdown_to_html(text, options=Options.CMARK_OPT_UNSAFE)


@pytest.fixture
def hostile_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[str, dict]:
    rng = np.random.default_rng(3)
    columns = {f"c{i}": rng.lognormal(4, 0.3, 300).round(2) for i in range(len(HOSTILE))}
    base = write_table(tmp_path / "base.csv", columns)
    columns = {k: v * (1.3 if k == "c0" else 1.0) for k, v in columns.items()}
    head = write_table(tmp_path / "head.csv", columns)
    budget = {
        "version": 1,
        "percentile": 95,
        "slo": {"total": 900},
        "slices": {name[:100]: {"budget": 80, "column": f"c{i}"} for i, name in enumerate(HOSTILE)},
    }
    (tmp_path / "budget.yml").write_text(json.dumps(budget))  # JSON is YAML
    md_file = tmp_path / "r.md"
    code, _, err = run(
        [
            "compare",
            "--base",
            str(base),
            "--head",
            str(head),
            "--budget",
            str(tmp_path / "budget.yml"),
            "--markdown",
            str(md_file),
        ],
        capsys,
    )
    assert code in (0, 1), err
    return md_file.read_text(), budget


def test_tables_keep_their_shape(hostile_report: tuple[str, dict]) -> None:
    markdown, budget = hostile_report
    html = gfm(markdown)
    tables = re.findall(r"<table>.*?</table>", html, flags=re.S)
    slice_table = next(t for t in tables if "slice at p95" in t)
    rows = re.findall(r"<tr>.*?</tr>", slice_table, flags=re.S)
    assert len(rows) == 1 + len(budget["slices"])  # header + one row per slice, none split
    header_cells = len(re.findall(r"<th", rows[0]))
    assert all(len(re.findall(r"<td", r)) == header_cells for r in rows[1:])


def test_no_html_no_mention_no_markup(hostile_report: tuple[str, dict]) -> None:
    markdown, _ = hostile_report
    html = gfm(markdown)
    # only our own tags: the folds, the table, the small print
    tags = set(re.findall(r"</?([a-zA-Z][a-zA-Z0-9]*)", html))
    assert tags <= {
        "h3",
        "p",
        "strong",
        "table",
        "thead",
        "tbody",
        "tr",
        "th",
        "td",
        "details",
        "summary",
        "sub",
        "ul",
        "li",
        "code",
        "em",
        "h4",
        "pre",  # the budget chart's ```mermaid fence (its text: test_chart_names_...)
    }
    assert html.count("<details>") == html.count("</details>")
    assert html.count("<table>") == html.count("</table>")
    assert not re.search(r"@someone", html)  # a zero-width space keeps it from mentioning
    assert "<a " not in html and "<del>" not in html
    assert max(len(line) for line in markdown.splitlines()) < 5_000  # names are shortened


def test_terminal_table_has_no_control_characters(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rng = np.random.default_rng(4)
    evil = "dec\x1b[31mode\x07"
    base = write_table(tmp_path / "b.csv", {"x": rng.lognormal(4, 0.3, 200)})
    head = write_table(tmp_path / "h.csv", {"x": rng.lognormal(4, 0.3, 200)})
    (tmp_path / "budget.yml").write_text(
        json.dumps({"slices": {evil: {"budget": 100, "column": "x"}}})
    )
    code, out, err = run(
        [
            "compare",
            "--base",
            str(base),
            "--head",
            str(head),
            "--budget",
            str(tmp_path / "budget.yml"),
        ],
        capsys,
    )
    # since issue 35 the budget refuses such a name, on one line that shows it escaped
    assert code == 2 and err.count("\n") == 1 and "dec\\x1b[31mode\\x07" in err
    assert "\x1b" not in out + err and "\x07" not in out + err


def test_the_pr_comment_keeps_its_tables(hostile_report: tuple[str, dict]) -> None:
    """The body GitHub gets: our marker, then the report, fitted under the comment limit."""
    from budgetdiff.github.comment import comment_body

    markdown, budget = hostile_report
    body = comment_body("default", lambda limit: markdown[:limit])
    assert body.startswith("<!-- budgetdiff:default -->") and len(body) <= 65_536
    html = gfm(body)
    slice_table = next(
        t for t in re.findall(r"<table>.*?</table>", html, flags=re.S) if "slice at p95" in t
    )
    assert len(re.findall(r"<tr>", slice_table)) == 1 + len(budget["slices"])
    assert not re.search(r"@someone", html)


def test_chart_names_are_inert_inside_mermaid(hostile_report: tuple[str, dict]) -> None:
    """Inside the ```mermaid fence no name can end the fence, start a comment or directive, or
    end a task's text: each is reduced to safe characters (the Chromium test renders it)."""
    markdown, budget = hostile_report
    fences = re.findall(r"```mermaid\n(.*?)\n```", markdown, flags=re.S)
    assert len(fences) == 1
    lines = fences[0].split("\n")
    tasks = lines[lines.index("    section head") + 1 :]
    assert len(tasks) == len(budget["slices"])  # one line per slice: no name broke a line
    for task in tasks:
        text, meta = task.rsplit(" :", 1)
        assert re.fullmatch(r"    [\w .()+/,-]+", text), task
        assert re.fullmatch(r"(crit, )?\d+, \d+", meta), task
    assert "`" not in fences[0] and "%%" not in fences[0] and "click" not in fences[0]


def test_tabulate_lays_out_the_escaped_cells_as_given() -> None:
    """The comment's tables are tabulate's, of cells `md` has already escaped: none parsed as
    a number, padded, stripped of its entities or escaped twice, and `|` stays `&#124;`."""
    from budgetdiff.render.markdown import _table
    from budgetdiff.render.text import md

    cells = [md("a|b"), "1e5", "False", "1,200", "", md("x\\y")]
    lines = _table(["name", "v", "w", "x", "y", "z"], [cells], "lrrrrl")
    assert lines == [
        "| name | v | w | x | y | z |",
        "| --- | ---: | ---: | ---: | ---: | --- |",
        "| a&#124;b | 1e5 | False | 1,200 |  | x&#92;y |",
    ]
    html = gfm("\n".join(lines))
    assert html.count("<td") == 6 and "a|b" in html  # one cell, the bar shown, not a border
