"""The terminal table (harness/output.py's `table` format): a frame's columns laid out to a width, numbers aligned,
text folded inside its cell, the columns least needed left out, verdicts coloured."""

from __future__ import annotations

import io
import json
import math
import re
import shutil
from dataclasses import dataclass
from datetime import datetime
from typing import Iterable

import pandas as pd

from harness import verdicts
from harness.cells import _plain, unique_columns, visible


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
