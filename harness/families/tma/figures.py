"""The TMA sections of `bench report`: filled in below."""

from __future__ import annotations


def figures(ctx) -> list:
    return []
