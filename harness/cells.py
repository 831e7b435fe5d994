"""A stored value as text: a cell of a table (control characters written out, long text cut), a number as a person
reads it, column names made unique (harness/output.py's formats and harness/texttable.py's table share them)."""

from __future__ import annotations

import math
import re

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
