"""What a `bench sql` statement is before it runs: its leading keyword past comments, whether it holds any
statement at all, and the keywords a read-only statement may start with."""

from __future__ import annotations

import re


# What a read-only statement on PostgreSQL may start with. A read-only transaction does not stop
# everything: COPY ... TO PROGRAM runs a server command for a superuser, so other statements are
# refused before they reach the server. (Functions with effects outside the database, such as
# lo_export, need a role without those rights: see the README.)
READING_KEYWORDS = ("SELECT", "WITH", "VALUES", "TABLE", "SHOW", "EXPLAIN")


def leading_keyword(sql: str) -> str:
    """The statement's first word, past whitespace, comments (-- and nested /* */) and "("."""
    match = re.match(r"[A-Za-z]+", sql[_past_comments(sql, parens=True):])
    return match.group(0).upper() if match else ""


def only_comments(sql: str) -> bool:
    """Whether `sql` holds nothing but whitespace, comments and semicolons: no statement at all."""
    return not sql[_past_comments(sql, parens=False, semicolons=True):].strip()


def _past_comments(sql: str, parens: bool, semicolons: bool = False) -> int:
    """Where the first thing of `sql` that is not whitespace or a comment (nor "(" with `parens`, nor
    ";" with `semicolons`) starts."""
    i, n = 0, len(sql)
    while i < n:
        if sql[i].isspace() or (parens and sql[i] == "(") or (semicolons and sql[i] == ";"):
            i += 1
        elif sql.startswith("--", i):
            end = sql.find("\n", i)
            i = n if end < 0 else end + 1
        elif sql.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if sql.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif sql.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    i += 1
        else:
            break
    return i
