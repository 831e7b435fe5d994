"""Render a DataFrame for the terminal or another program: table, csv, json or markdown."""

from __future__ import annotations

import csv
import io
import json
import math
from typing import Callable, Iterable

import pandas as pd

FORMATS = ("table", "csv", "json", "markdown")


MAX_CELL = 1000  # characters of one value in a table or Markdown (csv and json give it whole)


def _plain(value):
    """A value every format can print: bytes as SQL's x'..' hex, NaN and None as None, numpy scalars
    as Python numbers."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return f"x'{bytes(value).hex()}'"
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return value.item() if hasattr(value, "item") else value


def _json_value(value):
    """JSON has no infinities: they are written as the strings "Infinity" and "-Infinity"."""
    value = _plain(value)
    if isinstance(value, float) and math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return value


def _cell(value) -> str:
    value = _plain(value)
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.6g}"
    text = str(value)
    return text if len(text) <= MAX_CELL else text[:MAX_CELL - 3] + "..."


def unique_columns(names) -> list[str]:
    """Column names made unique the way a reader expects: the second `a` becomes `a_2`."""
    seen: dict[str, int] = {}
    out = []
    for name in map(str, names):
        seen[name] = seen.get(name, 0) + 1
        out.append(name if seen[name] == 1 else f"{name}_{seen[name]}")
    return out


def to_json(frame: pd.DataFrame) -> str:
    columns = unique_columns(frame.columns)
    records = [dict(zip(columns, map(_json_value, row))) for row in frame.itertuples(index=False, name=None)]
    return json.dumps(records, indent=1, default=str, allow_nan=False)


def markdown(frame: pd.DataFrame) -> str:
    header = "| " + " | ".join(map(str, frame.columns)) + " |"
    rule = "|" + "|".join("---" for _ in frame.columns) + "|"
    rows = ["| " + " | ".join(_cell(v).replace("|", "\\|") for v in row) + " |"
            for row in frame.itertuples(index=False)]
    return "\n".join([header, rule, *rows])


def text_table(frame: pd.DataFrame) -> str:
    cells = [[str(c) for c in frame.columns]] + [[_cell(v) for v in row] for row in frame.itertuples(index=False)]
    widths = [max(len(row[i]) for row in cells) for i in range(len(frame.columns))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


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
    return text_table(frame)


def write_rows(columns: list[str], chunks: Iterable[list[tuple]], fmt: str, max_rows: int | None,
               echo: Callable[[str], None]) -> tuple[int, bool]:
    """Write a streamed result: csv and json as the rows come (memory stays that of one chunk),
    table and Markdown once all rows are in (at most `max_rows` of them). Stops after `max_rows`
    rows (None: no bound). Returns (rows written, whether rows were left unread)."""
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
                echo(_csv_line([_plain(v) for v in row]))
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
        echo(render_frame(pd.DataFrame(kept, columns=names) if names else pd.DataFrame(), fmt))
    return taken, more


def _csv_line(values) -> str:
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="").writerow(["" if v is None else v for v in values])
    return buffer.getvalue()
