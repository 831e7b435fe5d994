"""Alembic migrations of the results database, run programmatically by harness/db/store.py.

Revisions are numbered 0001, 0002, ...; the number is the schema version that `meta` records
(older harnesses read it to refuse a newer file). Each migration spells out its own DDL rather than
importing harness/db/tables.py, which only ever describes the newest schema.
"""

from __future__ import annotations

import functools
from pathlib import Path

from alembic.config import Config
from alembic.script import ScriptDirectory

LOCATION = Path(__file__).resolve().parent


def config(connection=None) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(LOCATION))
    cfg.attributes["connection"] = connection
    return cfg


@functools.cache
def head() -> str:
    """The newest revision (the migration scripts are read once a process: they do not change under it)."""
    return ScriptDirectory.from_config(config()).get_current_head()


def known_revisions() -> list[str]:
    """Every revision, oldest first."""
    return list(_revisions())


@functools.cache
def _revisions() -> tuple[str, ...]:
    return tuple(script.revision for script in reversed(list(ScriptDirectory.from_config(config()).walk_revisions())))
