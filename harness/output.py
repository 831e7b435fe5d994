"""Render a DataFrame for the terminal or another program: table, csv, json or markdown."""

from __future__ import annotations

import json
import math

import pandas as pd

FORMATS = ("table", "csv", "json", "markdown")


def _plain(value):
    """A value every format can print: bytes as SQL's x'..' hex, NaN and None as None, numpy scalars
    as Python numbers."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return f"x'{bytes(value).hex()}'"
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return value.item() if hasattr(value, "item") else value


def _cell(value) -> str:
    value = _plain(value)
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


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
    records = [dict(zip(columns, map(_plain, row))) for row in frame.itertuples(index=False, name=None)]
    return json.dumps(records, indent=1, default=str)


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
                             columns=list(map(str, frame.columns)))
        return plain.to_csv(index=False).rstrip("\n")
    if fmt == "json":
        return to_json(frame)
    if fmt == "markdown":
        return markdown(frame)
    if frame.empty:
        return "(no rows)"
    return text_table(frame)
