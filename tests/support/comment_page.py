"""The PR comment as GitHub shows it: cmark-gfm's HTML in a small GitHub-like stylesheet, each
```mermaid fence drawn by the real Mermaid library (for `make screenshot`), and a page that
renders a list of charts and reports each one's result (for the test that fails on a syntax
error)."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import cmarkgfm
from cmarkgfm.cmark import Options

STYLE = """
body { font: 14px/1.5 -apple-system, "Segoe UI", "Noto Sans", Helvetica, Arial, sans-serif;
       color: #1f2328; margin: 0; padding: 16px; background: #fff; }
.comment { border: 1px solid #d0d7de; border-radius: 6px; padding: 16px; max-width: 868px; }
h3 { font-size: 1.25em; margin: 0 0 16px; } h4 { font-size: 1em; }
table { border-collapse: collapse; margin: 0 0 16px; display: block; overflow: auto; }
th, td { border: 1px solid #d0d7de; padding: 6px 13px; }
tr:nth-child(2n) { background: #f6f8fa; } th { font-weight: 600; }
code { background: rgba(175,184,193,.2); border-radius: 6px; padding: .2em .4em;
       font-size: 85%; }
sub { color: #59636e; } details { margin: 0 0 8px; } summary { cursor: pointer; }
ul { padding-left: 2em; }
"""
_FENCE = re.compile(r'<pre lang="mermaid"><code>(.*?)</code></pre>', re.S)


def gfm(markdown: str) -> str:
    """GitHub-flavoured HTML (tables, strikethrough, autolinks; raw HTML kept as GitHub keeps
    `<details>`, `<sub>`)."""
    options = Options.CMARK_OPT_GITHUB_PRE_LANG | Options.CMARK_OPT_UNSAFE
    return cmarkgfm.github_flavored_markdown_to_html(markdown, options)


def comment_page(markdown: str, mermaid_js: Path, *, open_details: bool = True) -> str:
    """A page showing the comment, its Mermaid fences drawn (and every <details> open)."""
    body = _FENCE.sub(lambda m: f'<pre class="mermaid">{m.group(1)}</pre>', gfm(markdown))
    if open_details:
        body = body.replace("<details>", "<details open>")
    return f"""<!doctype html><html><head><meta charset="utf-8"><style>{STYLE}</style>
<script src="{mermaid_js.resolve().as_uri()}"></script></head>
<body><div class="comment">{body}</div>
<script>mermaid.initialize({{startOnLoad: false, securityLevel: "strict"}});
mermaid.run({{querySelector: "pre.mermaid"}}).then(() => {{ document.title = "done"; }},
  (e) => {{ document.title = "error: " + e; }});</script></body></html>"""


def charts(markdown: str) -> list[str]:
    """The text of every ```mermaid fence, as GitHub would hand it to Mermaid."""
    return [html.unescape(m.group(1)) for m in _FENCE.finditer(gfm(markdown))]


def check_page(sources: list[str], mermaid_js: Path) -> str:
    """A page that parses and renders each chart and writes the results, as JSON, into
    <pre id="results"> (one {"ok": bool, "error": str} per chart)."""
    return f"""<!doctype html><html><head><meta charset="utf-8">
<script src="{mermaid_js.resolve().as_uri()}"></script></head>
<body><pre id="results">pending</pre><div id="scratch"></div>
<script>
mermaid.initialize({{startOnLoad: false, securityLevel: "strict"}});
const sources = {json.dumps(sources)};
(async () => {{
  const out = [];
  for (let i = 0; i < sources.length; i++) {{
    try {{
      await mermaid.parse(sources[i]);
      const r = await mermaid.render("chart" + i, sources[i], document.getElementById("scratch"));
      out.push({{ok: r.svg.includes("<svg"), error: ""}});
    }} catch (e) {{
      out.push({{ok: false, error: String(e && e.message || e)}});
    }}
  }}
  document.getElementById("results").textContent = JSON.stringify(out);
}})();
</script></body></html>"""


def results(dom: str) -> list[dict[str, object]]:
    found = re.search(r'<pre id="results">(.*?)</pre>', dom, re.S)
    assert found is not None, "the check page wrote no results"
    text = html.unescape(found.group(1))
    assert text != "pending", "the check page did not finish: Mermaid did not load or hung"
    parsed: list[dict[str, object]] = json.loads(text)
    return parsed
