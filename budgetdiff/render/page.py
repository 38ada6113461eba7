"""The trend page: one self-contained HTML file (no network needed to open it) with a chart per
SLO metric and slice over the history, its budget or SLO target drawn, and the current run's
base vs head distributions (CDF). The charts are drawn by uPlot, embedded inline
(`budgetdiff/vendor/uplot`). Every value from the input is data: it travels as JSON inside a
`<script type="application/json">` block (`<`, `>`, `&` escaped) and reaches the page through
`textContent`, never as markup."""

from __future__ import annotations

import html
import json
from dataclasses import dataclass
from importlib.resources import files
from typing import Any

import numpy as np

from budgetdiff import numbers
from budgetdiff.measure.history import History

CDF_POINTS = 200  # per side: enough for a smooth curve, small enough for a large run


@dataclass(frozen=True)
class Cdf:
    """One metric's distribution at base and head: sorted values, thinned to CDF_POINTS."""

    label: str
    base: tuple[float, ...]
    head: tuple[float, ...]


def render_page(title: str, percentile: float, history: History | None, cdfs: list[Cdf]) -> str:
    """The page: `title` (who made it, which report) followed by what its charts show."""
    p = numbers.percentile(percentile)
    trends = []
    for t in history.trends if history is not None else ():
        labels = [e.label for e in t.runs] + (["this run"] if len(t.values) > len(t.runs) else [])
        trends.append(
            {
                "title": f"{t.label} at {p}"
                + (" (steps)" if t.unit == "steps" else "")
                + (" (drift)" if t.drift else ""),
                "labels": labels,
                "values": [round(v, 3) for v in t.values],
                "target": t.target,
                "target_name": "SLO target" if t.kind == "slo" else "budget",
                "change_points": list(t.change_points),
            }
        )
    data = {
        "trends": trends,
        "cdfs": [{"title": f"{c.label}: base vs head", **_cdf(c)} for c in cdfs],
    }
    heading = f"{title}: {_shown(p, trends, len(cdfs), history)}"
    payload = json.dumps(data, allow_nan=False)
    for ch, esc in (("&", "\\u0026"), ("<", "\\u003c"), (">", "\\u003e")):
        payload = payload.replace(ch, esc)
    vendor = files("budgetdiff") / "vendor" / "uplot"
    script = (vendor / "uPlot.iife.min.js").read_text(encoding="utf-8")
    style = (vendor / "uPlot.min.css").read_text(encoding="utf-8")
    return _PAGE.format(
        title=html.escape(heading),
        style=style,
        uplot=script,
        data=payload,
        code=_CODE,
        catch=_CATCH,
    )


def _shown(p: str, trends: list[dict[str, Any]], cdfs: int, history: History | None) -> str:
    """What the charts draw, in words (the page's title and heading)."""
    parts = []
    if trends:
        runs = max(len(t["values"]) for t in trends)
        parts.append(f"{p} of each SLO metric and slice over the last {runs} run(s)")
    if cdfs:
        parts.append("this run's base vs head distributions")
    if not parts:
        return "no history and no per-request data to draw" if history is None else "no trend"
    return ", and ".join(parts)


def _cdf(c: Cdf) -> dict[str, Any]:
    """Both sides' empirical CDFs on the union of their (thinned) values, for one x axis."""
    base, head = np.asarray(c.base, dtype=float), np.asarray(c.head, dtype=float)
    xs = np.unique(np.concatenate([_thin(base), _thin(head)]))

    def at(v: Any) -> list[float | None]:
        if v.size == 0:
            return [None] * xs.size
        return [round(float(y), 5) for y in np.searchsorted(np.sort(v), xs, "right") / v.size]

    return {"x": [round(float(x), 3) for x in xs], "base": at(base), "head": at(head)}


def _thin(v: Any) -> Any:
    if v.size == 0:
        return v
    return np.quantile(v, np.linspace(0, 1, min(CDF_POINTS, v.size)))


_CODE = r"""
(function () {
  var fail = window.budgetdiffFail;
  var data = JSON.parse(document.getElementById("budgetdiff-data").textContent);
  var root = document.getElementById("charts");
  function box(title) {
    var div = document.createElement("section");
    var h = document.createElement("h2");
    h.textContent = title;
    div.appendChild(h);
    root.appendChild(div);
    return div;
  }
  var width = Math.min(860, document.documentElement.clientWidth - 40);
  data.trends.forEach(function (t) {
    try {
      var x = t.values.map(function (_, i) { return i + 1; });
      var series = [{label: "run"}, {label: "value (ms)", stroke: "#1f6feb", width: 2,
                                      points: {show: true}}];
      var columns = [x, t.values];
      if (t.target !== null) {
        series.push({label: t.target_name + " (ms)", stroke: "#d1242f", dash: [6, 4],
                     points: {show: false}});
        columns.push(x.map(function () { return t.target; }));
      }
      new uPlot({
        title: "", width: width, height: 220, series: series, legend: {live: false},
        scales: {x: {time: false}},
        axes: [{values: function (u, ticks) {
                  return ticks.map(function (v) { return t.labels[v - 1] || ""; }); }},
               {label: "ms"}],
      }, columns, box(t.title + (t.change_points.length ? " · level changed at run(s) " +
           t.change_points.map(function (i) { return t.labels[i]; }).join(", ") : "")));
    } catch (e) { fail(e); }
  });
  data.cdfs.forEach(function (c) {
    try {
      new uPlot({
        title: "", width: width, height: 220, legend: {live: false},
        scales: {x: {time: false}, y: {range: [0, 1]}},
        series: [{label: "ms"}, {label: "base", stroke: "#6e7781", width: 2},
                 {label: "head", stroke: "#1f6feb", width: 2}],
        axes: [{label: "ms"}, {label: "share of requests"}],
      }, [c.x, c.base, c.head], box(c.title));
    } catch (e) { fail(e); }
  });
  document.body.dataset.charts = String(document.querySelectorAll(".uplot canvas").length);
})();
"""

# Before anything else runs: a script error or a console error is kept on <body data-errors>,
# where a reader (and the browser test) sees that a chart is missing and why.
_CATCH = r"""
(function () {
  var errors = [];
  function fail(msg) {
    errors.push(String(msg));
    document.body.dataset.errors = errors.join(" | ");
  }
  window.budgetdiffFail = fail;
  window.addEventListener("error", function (e) { fail(e.message); });
  var original = console.error;
  console.error = function () {
    fail(Array.prototype.join.call(arguments, " "));
    original.apply(console, arguments);
  };
})();
"""

_PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>{style}
body {{ font-family: system-ui, sans-serif; margin: 20px; color: #1f2328; }}
h1 {{ font-size: 20px; }} h2 {{ font-size: 15px; margin: 18px 0 4px; }}
</style>
</head>
<body>
<h1>{title}</h1>
<div id="charts"></div>
<script type="application/json" id="budgetdiff-data">{data}</script>
<script>{catch}</script>
<script>{uplot}</script>
<script>{code}</script>
</body>
</html>
"""
