"""No input text can run a workflow command (issue 35, item 5): every step output is encoded
(one line, control characters as escapes, `::` broken) inside a heredoc whose delimiter it
does not contain, and every annotation is escaped as GitHub's toolkit does (`%`, CR, LF) with
ESC, BEL and the bidi controls removed. Through publish() with GITHUB_OUTPUT set, as the
Action's entry point calls it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from budgetdiff.github import Publication, publish
from budgetdiff.github.actions import command, format_outputs
from budgetdiff.measure.results import Finding
from tests.support.fake_github import FakeGitHub, make_env, parse_outputs

HOSTILE = [
    "decode\n::add-mask::secret",
    "ttft\r\n::error::forged",
    "\x1b[2Jtotal\x07",
    "edoc\u202eprefill",
    "50% done %0A::warning::x",
]
# What the runner would act on or a log viewer would turn around.
CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def test_an_output_value_is_one_inert_line() -> None:
    text = format_outputs({"regressions": ",".join(HOSTILE)})
    [head, value, tail, end] = text.split("\n")
    delimiter = head.removeprefix("regressions<<")
    assert re.fullmatch(r"ghadelimiter_[0-9a-f-]{36}", delimiter) and tail == delimiter
    assert end == "" and delimiter not in value
    assert "::" not in value and not CONTROLS.search(value) and "\r" not in value
    assert value.split(",")[0] == "decode\\n:\u200b:add-mask:\u200b:secret"
    assert "\\x1b[2Jtotal\\x07" in value and "edoc\\u202eprefill" in value


@pytest.mark.parametrize("text", HOSTILE)
def test_an_annotation_is_one_command_with_its_text_escaped(text: str) -> None:
    line = command("error", text, title=f"budgetdiff: {text}")
    assert line.startswith("::error title=budgetdiff%3A ") and "\n" not in line and "\r" not in line
    assert not CONTROLS.search(line)
    message = line.split("::", 2)[2]
    assert "%" not in message.replace("%25", "").replace("%0A", "").replace("%0D", "")


def test_the_toolkit_escapes_are_exact() -> None:
    assert command("warning", "a%b\r\nc") == "::warning::a%25b%0D%0Ac"
    assert command("notice", "x", title="a:b,c%") == "::notice title=a%3Ab%2Cc%25::x"
    assert command("error", "bell\x07 esc\x1b[31m rlo\u202e lri\u2066 bom\ufeff") == (
        "::error::bell esc[31m rlo lri bom"
    )


def test_publish_encodes_every_output_and_annotation(
    tmp_path: Path, gh: FakeGitHub, capsys: pytest.CaptureFixture[str]
) -> None:
    json_path = tmp_path / "report.json"
    json_path.write_text("{}", encoding="utf-8")
    pub = Publication(
        report_id="default",
        verdict="fail",
        regressions=HOSTILE,
        findings=[Finding("regression", name, True, f"{name} p95 +15%") for name in HOSTILE],
        json_path=json_path,
        render_markdown=lambda limit: "## budgetdiff: **fail**\n",
    )
    env = make_env(tmp_path, gh, GITHUB_EVENT_NAME="push")
    publish(pub, env, comment=False)
    written = Path(env["GITHUB_OUTPUT"]).read_text()
    assert not any(x.startswith("::") for x in written.splitlines())
    assert not CONTROLS.search(written)
    outputs = parse_outputs(written)
    assert outputs["verdict"] == "fail"
    assert len(outputs["regressions"].split(",")) == len(HOSTILE)
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert len(lines) == len(HOSTILE) and all(x.startswith("::error title=") for x in lines)
    assert not CONTROLS.search(out)  # `::` inside a line's message starts nothing
