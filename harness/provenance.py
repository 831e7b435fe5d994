"""Where a run came from: host, git commit and dirty flag, and tool versions."""

from __future__ import annotations

import platform
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from harness.version import __version__


@dataclass(frozen=True)
class Provenance:
    command_line: str
    host: str
    git_commit: str | None
    git_dirty: bool | None
    harness_version: str
    python_version: str
    cupy_version: str | None
    nvrtc_version: str | None


def _git(*args: str) -> str | None:
    root = Path(__file__).resolve().parent.parent  # the checkout holding harness/
    try:
        result = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return result.stdout.strip() if result.returncode == 0 else None


def git_state() -> tuple[str | None, bool | None]:
    """(commit, dirty). HOPPER_BENCH_GIT_COMMIT/_DIRTY override, for copies without .git."""
    from harness import environment

    override = environment.git_override()
    if override is not None:
        return override
    commit = _git("rev-parse", "HEAD")
    if commit is None:
        return None, None
    status = _git("status", "--porcelain", "--untracked-files=no")
    return commit, bool(status)


def collect(argv: list[str] | None = None) -> Provenance:
    from harness.build.compile import nvrtc_version

    try:
        import cupy

        cupy_version = cupy.__version__
    except ImportError:
        cupy_version = None
    commit, dirty = git_state()
    return Provenance(
        command_line=" ".join(argv if argv is not None else sys.argv),
        host=socket.gethostname(), git_commit=commit, git_dirty=dirty,
        harness_version=__version__, python_version=platform.python_version(),
        cupy_version=cupy_version, nvrtc_version=nvrtc_version())
