"""The HTML pieces a run's report (report.py) and the results site (site.py) share: the stylesheet, a
table of a DataFrame (verdicts coloured), and the slug a heading or a GPU becomes in an anchor or a
folder name."""

from __future__ import annotations

import html
import re

import pandas as pd

from harness import output
from harness.verdicts import AGREES, DISAGREES

CSS = """body{font:15px/1.5 system-ui,sans-serif;max-width:1200px;margin:2em auto;padding:0 1em;color:#222}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:1.8em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;font-size:13px;margin:.5em 0;display:block;overflow-x:auto}
th,td{border:1px solid #ddd;padding:3px 7px;text-align:left;white-space:nowrap}th{background:#f4f4f4}
td.bad{color:#b00;font-weight:600}td.good{color:#070}img{max-width:100%;height:auto}
li{margin:.3em 0}footer{margin-top:3em;color:#777;font-size:13px}"""


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def html_table(frame: pd.DataFrame) -> str:
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in frame.columns)
    rows = []
    for row in frame.itertuples(index=False):
        cells = []
        for value in row:
            text = output.cell(value)
            cls = ' class="bad"' if text == DISAGREES else ' class="good"' if text == AGREES else ""
            cells.append(f"<td{cls}>{html.escape(text)}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
