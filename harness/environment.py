"""The HOPPER_BENCH_* environment variables: each one read and checked here, so that a bad value is
one clear line before any work starts (`bench` checks them all first), never a worker's traceback.

    HOPPER_BENCH_DB          the results database when --db is not given (a path or URL)
    HOPPER_BENCH_CACHE       the compile cache's folder (default ~/.cache/hopper-bench)
    HOPPER_BENCH_BACKEND     cuda (default) or fake: the simulated GPU that CI drives
    HOPPER_BENCH_FAKE_DELAY  seconds each simulated case takes (0 to 3600, default 0)
    HOPPER_BENCH_FAKE_GPUS   how many simulated GPUs `--gpus all` finds (1 to 64, default 2)
    HOPPER_BENCH_GIT_COMMIT  the commit recorded for a run, for copies without .git (hex)
    HOPPER_BENCH_GIT_DIRTY   1 if that copy had changes, else 0
"""

from __future__ import annotations

import math
import os
import re
from pathlib import Path

from harness.errors import SpecError

BACKENDS = ("cuda", "fake")


def _raw(name: str) -> str | None:
    value = os.environ.get(name)
    return value if value not in (None, "") else None


def _bad(name: str, value: str, expected: str) -> SpecError:
    shown = value if len(value) <= 40 else value[:37] + "..."
    return SpecError(f"environment variable {name}={shown!r} is not valid: expected {expected}")


def number(name: str, default: float, low: float, high: float, integer: bool = False) -> float | int:
    value = _raw(name)
    if value is None:
        return default
    expected = f"{'a whole number' if integer else 'a number'} from {low:g} to {high:g}"
    try:
        parsed = int(value) if integer else float(value)
    except ValueError:
        raise _bad(name, value, expected) from None
    if not (math.isfinite(parsed) and low <= parsed <= high):
        raise _bad(name, value, expected)
    return parsed


def backend() -> str:
    value = _raw("HOPPER_BENCH_BACKEND") or "cuda"
    if value not in BACKENDS:
        raise _bad("HOPPER_BENCH_BACKEND", value, f"one of {', '.join(BACKENDS)}")
    return value


def fake_delay_s() -> float:
    return number("HOPPER_BENCH_FAKE_DELAY", 0.0, 0.0, 3600.0)


def fake_gpus() -> int:
    return number("HOPPER_BENCH_FAKE_GPUS", 2, 1, 64, integer=True)


def cache_root() -> Path:
    value = _raw("HOPPER_BENCH_CACHE")
    # absolute: a relative folder would move with the working directory, and one named "-x" would reach
    # nvdisasm as an option (Hypothesis found HOPPER_BENCH_CACHE=-56807807)
    root = Path(value).expanduser().absolute() if value else Path.home() / ".cache" / "hopper-bench"
    if root.exists() and not root.is_dir():
        raise _bad("HOPPER_BENCH_CACHE", str(value), "a folder (it names a file)")
    return root


def git_override() -> tuple[str, bool] | None:
    commit = _raw("HOPPER_BENCH_GIT_COMMIT")
    if commit is None:
        return None
    if not re.fullmatch(r"[0-9a-fA-F]{4,64}", commit):
        raise _bad("HOPPER_BENCH_GIT_COMMIT", commit, "a commit hash (hex digits)")
    dirty = _raw("HOPPER_BENCH_GIT_DIRTY") or "0"
    if dirty not in ("0", "1"):
        raise _bad("HOPPER_BENCH_GIT_DIRTY", dirty, "0 or 1")
    return commit, dirty == "1"


def check() -> None:
    """Every variable that is set, checked (the database's is checked when it is opened)."""
    backend()
    fake_delay_s()
    fake_gpus()
    cache_root()
    git_override()
