"""Fixtures shared by CPU and GPU tests; `gpu` tests skip cleanly without an sm_90 GPU."""

from __future__ import annotations

import functools

import pytest


@functools.cache
def sm90_gpu_reason() -> str | None:
    """None if an sm_90 GPU is usable, else why not."""
    try:
        from harness.device import open_device

        open_device(0)
    except Exception as exc:  # DeviceError, or CuPy missing entirely
        return str(exc)
    return None


def pytest_collection_modifyitems(config, items):
    gpu_items = [item for item in items if "gpu" in item.keywords]
    if gpu_items and (reason := sm90_gpu_reason()):
        for item in gpu_items:
            item.add_marker(pytest.mark.skip(reason=f"needs an sm_90 GPU: {reason}"))


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    """A private compile cache (so tests never see another run's cubins)."""
    monkeypatch.setenv("HOPPER_BENCH_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"
