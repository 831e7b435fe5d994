"""Render a DataFrame for the terminal or another program: table, csv, json or markdown."""

from __future__ import annotations

import csv
import io
import json
import math
import re
import shutil
from dataclasses import dataclass
from datetime import datetime
from typing import Callable, Iterable

import pandas as pd

from harness import verdicts

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


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # C0 and C1 controls but tab and newline


def visible(text: str) -> str:
    """`text` with its control characters written out (ESC as \\x1b): text stored in a database from
    elsewhere never moves the cursor, recolours or rewrites the reader's screen."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def cell(value) -> str:
    value = _plain(value)
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.6g}"
    text = visible(str(value))
    return text if len(text) <= MAX_CELL else text[:MAX_CELL - 3] + "..."


def readable(value: float, digits: int = 4) -> str:
    """A number as a person reads it: `digits` significant digits, no exponent between 1e-4 and 1e9,
    no trailing zeros (108 -> "108", 1755.0 -> "1755", 0.12345 -> "0.1235", 1e-6 -> "1e-06")."""
    if value != value or value in (float("inf"), float("-inf")):
        return str(value)
    if value == 0:
        return "0"
    if not 1e-4 <= abs(value) < 1e9:
        return f"{value:.{digits - 1}e}".replace("e+0", "e").replace("e-0", "e-")
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(value))))
    text = f"{value:.{decimals}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def unique_columns(names) -> list[str]:
    """Column names made unique the way a reader expects: the second `a` becomes `a_2` (or `a_3`, ...
    where the statement has an `a_2` of its own: no two columns ever share a name)."""
    names = [visible(str(name)) for name in names]
    taken = set(names)
    seen: dict[str, int] = {}
    out = []
    for name in names:
        seen[name] = seen.get(name, 0) + 1
        if seen[name] == 1:
            out.append(name)
            continue
        n = seen[name]
        while f"{name}_{n}" in taken:
            n += 1
        seen[name] = n
        taken.add(f"{name}_{n}")
        out.append(f"{name}_{n}")
    return out


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


@dataclass
class Table:
    """A table laid out for a terminal `width` characters wide: `text` to print, and the columns
    left out to fit (a note names them; --wide or another format shows them)."""
    text: str
    hidden: list[str]


def _column_cells(values: pd.Series, cut: int = 0) -> tuple[list[str], bool]:
    """A column's cells as text, and whether it is numeric (then right-aligned). Floats of one column
    share their decimals (chosen by the column's largest magnitude), so their points line up and no
    cell prints 17 digits; dicts print as k=v pairs; long text is cut (csv and json give it whole)."""
    plain = [_plain(v) for v in values]
    present = [v for v in plain if v is not None]
    numbers = [v for v in present if isinstance(v, (int, float)) and not isinstance(v, bool)]
    numeric = bool(present) and len(numbers) == len(present)
    magnitudes = [abs(v) for v in numbers if isinstance(v, float) and math.isfinite(v) and v != 0]
    if any(isinstance(v, float) and not float(v).is_integer() for v in numbers) and magnitudes:
        # Five significant digits for every cell, one count of decimals for the column.
        decimals = max(max(0, min(6, 4 - math.floor(math.log10(m)))) for m in magnitudes)
        if min(magnitudes) < 1e-4 or max(magnitudes) >= 1e9:
            decimals = None  # exponents where a fixed point would print zeros or a wall of digits
    else:
        decimals = 0

    def text(value) -> str:
        if value is None:
            return ""
        if isinstance(value, bool):
            return "yes" if value else "no"
        if isinstance(value, datetime):
            return value.strftime("%Y-%m-%d %H:%M")
        if isinstance(value, float):
            if not math.isfinite(value):
                return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
            return f"{value:.4e}" if decimals is None else f"{value:.{decimals}f}"
        if isinstance(value, str) and value.startswith("{") and value.endswith("}"):
            try:
                value = json.loads(value)
            except ValueError:
                pass
        if isinstance(value, dict):
            value = " ".join(f"{k}={v}" for k, v in value.items())
        value = visible(" ".join(str(value).split()))  # one line per row, no control character
        return value if not cut or len(value) <= cut else value[:cut - 1] + "…"

    return [text(v) for v in plain], numeric


TABLE_CELL = 64  # characters of one text value in a terminal table
TEXT_MIN = 12  # a text column is folded down to this width before a column is left out
KEPT_TEXT = 20  # ... and a text column of `keep` to this width before a column not in `keep` is
GAP = 3  # characters between columns: a space of padding each side of a one-space rule


_PIECES = (re.compile(r"[^ .,=/]*[ .,=/]?"), re.compile(r"[^_-]*[_-]?"))  # break here, else there


def _pieces(text: str, width: int, level: int = 0) -> list[str]:
    pieces = [p for p in _PIECES[level].findall(text) if p]
    if level + 1 < len(_PIECES):
        return [q for p in pieces for q in (_pieces(p, width, level + 1) if len(p.rstrip()) > width else [p])]
    return [p[i:i + width] for p in pieces for i in range(0, len(p), width)]


def wrap(text: str, width: int) -> str:
    """`text` in lines of at most `width` characters, broken after a space, dot, comma, equals sign or
    slash (so a case id breaks between its fields), else after an underscore or dash, else cut."""
    lines, line = [], ""
    for piece in _pieces(text, width):
        if line and len(line) + len(piece.rstrip()) > width:
            lines.append(line.rstrip())
            line = ""
        line += piece
    lines.append(line.rstrip())
    return "\n".join(lines)


def terminal_width() -> int:
    """The terminal's width ($COLUMNS first, 80 when stdout is no terminal)."""
    return shutil.get_terminal_size((80, 24)).columns


STYLES = {verdicts.DISAGREES: "bold red", verdicts.SLOWER: "red", verdicts.FASTER: "green", verdicts.AGREES: "green",
          verdicts.SAME: "green", verdicts.EXPLAINED: "cyan", verdicts.PAPER_CLOCK_DOUBTFUL: "yellow",
          verdicts.CLOCK_NOT_PRINTED: "yellow",
          "failed": "red", "invalid": "red", "interrupted": "yellow", "complete": "green", "yes": "yellow"}
"""How a cell with exactly this text is coloured, when the output is a colour terminal."""


def text_table(frame: pd.DataFrame, width: int | None = None, wide: bool = False, color: bool = False,
               cut: int = TABLE_CELL, keep: Iterable[str] = (), below: str | None = None) -> Table:
    """`frame` as an aligned table no line of which is wider than `width` (unless `wide`): numbers
    right-aligned with one precision a column, text columns folded (wrapped inside their cell) down to
    TEXT_MIN characters, and when that is not enough, first the columns with no value at all, then the
    rightmost columns not in `keep` left out. The frame's column order is its priority: put what a
    reader needs first. The columns of `keep` (what answers the command's question: an id, the values,
    the verdict) are never left out and never cut, only folded, so that two ids stay two ids. Text
    longer than `cut` characters is cut (0: never). `below`: a column of prose (a reason) printed
    under its row across the table's width, where it has a value, rather than as a column."""
    from rich import box
    from rich.console import Console
    from rich.table import Table as RichTable
    from rich.text import Text

    width = width or terminal_width()
    keep = set(keep)
    names = unique_columns(frame.columns)
    columns = [(name, *_column_cells(frame.iloc[:, i], 0 if name in keep or name == below else cut))
               for i, name in enumerate(names)]
    notes = None
    if below in names:
        notes = next(cells for name, cells, _ in columns if name == below)
        columns = [c for c in columns if c[0] != below]
        if not any(notes):
            notes = None
    if not wide:  # a column with no value says nothing: it goes first, unnamed
        columns = [c for c in columns if any(c[1])] or columns[:1]
    widths = [max([len(name)] + [len(c) for c in cells]) for name, cells, _ in columns]
    least = [w if numeric else max(min(w, TEXT_MIN), *(len(p.rstrip()) for p in _pieces(name, w)))
             for (name, _, numeric), w in zip(columns, widths)]
    shown_at = list(range(len(columns)))
    if not wide:
        droppable = [i for i, (name, _, _) in enumerate(columns) if name not in keep][::-1]
        # a column not in `keep` stays only where the kept text columns keep KEPT_TEXT characters (an id
        # folded to a few characters a line is hard to read)
        want = [min(widths[i], max(least[i], KEPT_TEXT)) if columns[i][0] in keep and not columns[i][2] else least[i]
                for i in range(len(columns))]
        while len(shown_at) > 1 and droppable and \
                sum(want[i] for i in shown_at) + GAP * (len(shown_at) - 1) > width:
            shown_at.remove(droppable.pop(0))
        widths, least = [widths[i] for i in shown_at], [least[i] for i in shown_at]
        for j in reversed(range(len(shown_at))):  # fold the text columns, the last (least needed) first
            widths[j] -= min(widths[j] - least[j], max(0, sum(widths) + GAP * (len(shown_at) - 1) - width))
    shown = [columns[i] for i in shown_at]
    hidden = [name for i, (name, _, _) in enumerate(columns) if i not in shown_at]
    console = Console(width=10**6 if wide else width, file=io.StringIO(), force_terminal=color,
                      color_system="standard" if color else None,
                      highlight=False, soft_wrap=False, legacy_windows=False)

    def table_of(rows, header: bool):
        table = RichTable(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=(0, 1),
                          header_style="bold", expand=False, show_header=header)
        for (name, _, numeric), w in zip(shown, widths):  # a header folds between its words
            table.add_column(Text(wrap(name, w), style="bold"), justify="right" if numeric else "left",
                             no_wrap=numeric, overflow="fold", width=w)
        for row in rows:  # Text: a cell's "[...]" is no markup
            table.add_row(*(Text(wrap(cell, w), style=STYLES.get(cell, "") if color else "")
                            for cell, w in zip(row, widths)))
        return table

    rows = list(zip(*(cells for _, cells, _ in shown)))
    if notes is None:
        console.print(table_of(rows, True))
    else:  # row by row, each followed by its note, indented under the row across the whole width
        line_width = (sum(widths) + GAP * (len(widths) - 1)) if wide else width
        console.print(table_of(rows[:1], True))
        for i, row in enumerate(rows):
            if i:
                console.print(table_of([row], False))
            if notes[i]:
                import textwrap  # prose: broken between words, not after a decimal point

                console.print(Text("\n".join(textwrap.wrap(notes[i], max(20, line_width - 4), initial_indent="    ",
                                                            subsequent_indent="    ", break_on_hyphens=False))))
    lines = [line.rstrip() for line in console.file.getvalue().splitlines()]
    return Table("\n".join(line for line in lines if line or lines.index(line) > 0).strip("\n"), hidden)


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
