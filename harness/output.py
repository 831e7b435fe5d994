"""Render a DataFrame for the terminal or another program: table, csv, json or markdown. A value as text:
harness/cells.py; the terminal table: harness/texttable.py (both named from here too)."""

from __future__ import annotations

import csv
import io
import json
import re
from typing import Callable, Iterable

import pandas as pd

from harness.cells import MAX_CELL, _json_value, _plain, cell, readable, unique_columns, visible  # noqa: F401
from harness.texttable import (GAP, KEPT_TEXT, STYLES, TABLE_CELL, TEXT_MIN, Table, terminal_width,  # noqa: F401
                               text_table, wrap)

FORMATS = ("table", "csv", "json", "markdown")


def to_json(frame: pd.DataFrame) -> str:
    columns = unique_columns(frame.columns)
    records = [dict(zip(columns, map(_json_value, row))) for row in frame.itertuples(index=False, name=None)]
    return json.dumps(records, indent=1, default=str, allow_nan=False)


_TAG = re.compile(r"<(?=[A-Za-z/!?])")  # what a Markdown renderer would take for the start of an HTML tag


def markdown_text(text: str) -> str:
    """Text from the database as Markdown shows it, not runs it: control characters written out (visible) and a
    tag's `<` as `&lt;` (a stored `<script>` reads as text; `< 3` and `<=` stay as they are)."""
    return _TAG.sub("&lt;", visible(text))


def _markdown_cell(text: str) -> str:
    """A cell of a Markdown table: `|` escaped, a tag's `<` too, a line break as <br> (a newline would end the
    row)."""
    return re.sub(r"\r\n|\r|\n", "<br>", _TAG.sub("&lt;", text).replace("|", "\\|"))


def markdown(frame: pd.DataFrame) -> str:
    header = "| " + " | ".join(_markdown_cell(c) for c in unique_columns(frame.columns)) + " |"
    rule = "|" + "|".join("---" for _ in frame.columns) + "|"
    rows = ["| " + " | ".join(_markdown_cell(cell(v)) for v in row) + " |"
            for row in frame.itertuples(index=False)]
    return "\n".join([header, rule, *rows])


def render(frame: pd.DataFrame, fmt: str, first: Iterable[str] = (), wide: bool = False,
           width: int | None = None, color: bool = False, cut: int = TABLE_CELL, keep: Iterable[str] = (),
           below: str | None = None) -> Table:
    """`frame` in `fmt`. A terminal table puts the columns `first` first (those a reader needs; the
    rest follow and are the first left out to fit `width`), never leaves out those of `keep`, and
    prints the column `below` under each row (text_table); other formats keep every column."""
    if fmt == "table" and not frame.empty:
        order = [c for c in first if c in frame.columns]
        frame = frame[order + [c for c in frame.columns if c not in order]]
        return text_table(frame, width, wide, color, cut, keep, below)
    return Table(render_frame(frame, fmt), [])


def render_frame(frame: pd.DataFrame, fmt: str) -> str:
    if fmt == "csv":
        plain = pd.DataFrame([[_plain(v) for v in row] for row in frame.itertuples(index=False, name=None)],
                             columns=unique_columns(frame.columns))
        return plain.to_csv(index=False).rstrip("\n")
    if fmt == "json":
        return to_json(frame)
    if fmt == "markdown":
        return markdown(frame)
    if frame.empty:
        return "(no rows)"
    return text_table(frame).text


def write_rows(columns: list[str], chunks: Iterable[list[tuple]], fmt: str, max_rows: int | None,
               echo: Callable[[str], None], show: Callable[[pd.DataFrame], None] | None = None,
               terminal: bool = False) -> tuple[int, bool]:
    """Write a streamed result: csv and json as the rows come (memory stays that of one chunk),
    table and Markdown once all rows are in (at most `max_rows` of them). Stops after `max_rows`
    rows (None: no bound). Returns (rows written, whether rows were left unread). On a `terminal`,
    csv writes control characters out (visible) as the table and Markdown always do (json escapes
    them itself); into a file or pipe csv keeps every value whole."""
    names = unique_columns(columns)
    taken, more, kept = 0, False, []
    if fmt == "csv":
        echo(_csv_line(names))
    elif fmt == "json":
        echo("[")
    for chunk in chunks:
        if max_rows is not None and taken + len(chunk) > max_rows:
            chunk, more = chunk[:max_rows - taken], True
        if fmt == "csv":
            for row in chunk:
                values = [_plain(v) for v in row]
                echo(_csv_line([visible(v) if terminal and isinstance(v, str) else v for v in values]))
        elif fmt == "json":
            for row in chunk:
                record = json.dumps(dict(zip(names, map(_json_value, row))), default=str, allow_nan=False)
                echo((" " if taken == 0 else ",") + record)
                taken += 1
            taken -= len(chunk)
        else:
            kept += chunk
        taken += len(chunk)
        if more:
            break
    if fmt == "json":
        echo("]")
    elif fmt != "csv":
        frame = pd.DataFrame(kept, columns=names) if names else pd.DataFrame()
        show(frame) if show else echo(render_frame(frame, fmt))
    return taken, more


def _csv_line(values) -> str:
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="").writerow(["" if v is None else v for v in values])
    return buffer.getvalue()
