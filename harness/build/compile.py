"""Compile rendered probes for sm_90a with NVRTC, cached by content hash, in parallel.

NVRTC is called through cuda.bindings (no GPU or driver needed), so CI compiles every probe.
The cubin it returns is the one the SASS check disassembles and CuPy's RawModule then loads:
what we inspect is what we time.
"""

from __future__ import annotations

import hashlib
import multiprocessing
import os
import re
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Iterator

from harness.errors import CompileError
from harness.build.render import ProbeSource

NVRTC_OPTIONS = ("-arch=sm_90a", "-std=c++17", "--ptxas-options=-v")


def nvrtc_version() -> str:
    from cuda.bindings import nvrtc

    _, major, minor = nvrtc.nvrtcVersion()
    return f"{major}.{minor}"


def cache_dir() -> Path:
    from harness import environment

    path = environment.cache_root() / "cubin"
    path.mkdir(parents=True, exist_ok=True)
    return path


@dataclass(frozen=True)
class Build:
    name: str
    source_hash: str
    build_hash: str  # hash of source + options + NVRTC version: the cache key
    cubin_path: Path
    log: str
    options: tuple[str, ...]
    nvrtc_version: str
    cached: bool = False

    def registers(self, kernel: str) -> int | None:
        """Registers per thread that ptxas reported for `kernel` (None if not in the log)."""
        return _ptxas_report(self.log, kernel, r"Used (\d+) registers")

    def spill_bytes(self, kernel: str | None = None) -> int:
        """Spill stores + loads that ptxas reported for `kernel` (every kernel if None)."""
        if kernel is None:
            return sum(int(n) for n in re.findall(r"(\d+) bytes spill (?:stores|loads)", self.log))
        stores = _ptxas_report(self.log, kernel, r"(\d+) bytes spill stores") or 0
        loads = _ptxas_report(self.log, kernel, r"(\d+) bytes spill loads") or 0
        return stores + loads

    def max_registers(self) -> int | None:
        """The most registers per thread any kernel of the build uses."""
        used = [int(n) for n in re.findall(r"Used (\d+) registers", self.log)]
        return max(used) if used else None


def _ptxas_report(log: str, kernel: str, pattern: str) -> int | None:
    # ptxas reports "Function properties for <kernel>" and "Used N registers" per entry function,
    # after "Compiling entry function '<kernel>'".
    blocks = re.split(r"Compiling entry function '", log)
    for block in blocks[1:]:
        if block.startswith(kernel + "'"):
            match = re.search(pattern, block)
            return int(match.group(1)) if match else None
    return None


def _key(source: ProbeSource, options: tuple[str, ...], version: str) -> str:
    material = "\0".join((source.text, *options, version))
    return hashlib.sha256(material.encode()).hexdigest()[:24]


def _nvrtc_compile(text: str, name: str, options: tuple[str, ...]) -> tuple[bytes | None, str]:
    from cuda.bindings import nvrtc

    _, prog = nvrtc.nvrtcCreateProgram(text.encode(), f"{name}.cu".encode(), 0, [], [])
    try:
        (result,) = nvrtc.nvrtcCompileProgram(prog, len(options), [o.encode() for o in options])
        _, size = nvrtc.nvrtcGetProgramLogSize(prog)
        log = bytearray(size)
        nvrtc.nvrtcGetProgramLog(prog, log)
        log_text = log.rstrip(b"\0").decode(errors="replace")
        if result != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            return None, log_text
        _, size = nvrtc.nvrtcGetCUBINSize(prog)
        cubin = bytearray(size)
        nvrtc.nvrtcGetCUBIN(prog, cubin)
        return bytes(cubin), log_text
    finally:
        nvrtc.nvrtcDestroyProgram(prog)


def _paths(source: ProbeSource, options: tuple[str, ...]) -> tuple[str, str, Path, Path]:
    """(NVRTC version, cache key, cubin path, log path) of `source` compiled with `options`."""
    version = nvrtc_version()
    key = _key(source, options, version)
    directory = cache_dir()
    return version, key, directory / f"{key}.cubin", directory / f"{key}.log"


def cached_build(source: ProbeSource, options: tuple[str, ...] = NVRTC_OPTIONS) -> Build | None:
    """`source`'s build from the cache, or None where it was never compiled."""
    version, key, cubin_path, log_path = _paths(source, options)
    if cubin_path.exists() and log_path.exists():
        return Build(source.name, source.source_hash, key, cubin_path, log_path.read_text(), options, version, True)
    return None


def compile_probe(source: ProbeSource, options: tuple[str, ...] = NVRTC_OPTIONS) -> Build:
    """Compile `source` (or take it from the cache); raises CompileError with NVRTC's log."""
    if (build := cached_build(source, options)) is not None:
        return build
    version, key, cubin_path, log_path = _paths(source, options)
    cubin, log = _nvrtc_compile(source.text, source.name, options)
    if cubin is None:
        failed = cubin_path.with_suffix(".failed.cu")
        failed.write_text(source.text)
        first = next((line for line in log.splitlines() if "error" in line), log.strip()[:200])
        raise CompileError(f"NVRTC failed on {source.name}: {first} (source: {failed})", log)
    return _store(source, options, cubin, log)


def _store(source: ProbeSource, options: tuple[str, ...], cubin: bytes, log: str) -> Build:
    """`source`'s build, its cubin and log written into the cache."""
    version, key, cubin_path, log_path = _paths(source, options)
    # Write under a temporary name and rename: concurrent compilers never see half a file.
    for path, data in ((log_path, log.encode()), (cubin_path.with_suffix(".cu"), source.text.encode()),
                       (cubin_path, cubin)):
        tmp = path.with_suffix(path.suffix + f".{os.getpid()}.tmp")
        tmp.write_bytes(data)
        tmp.replace(path)
    return Build(source.name, source.source_hash, key, cubin_path, log, options, version, False)


def code_key(source: ProbeSource) -> str:
    """`source` with its comment lines blanked: sources that share it differ in comments only, and NVRTC
    makes the same cubin of them (a GEMM or an attention probe at another problem size differs from its
    sibling only in the comment naming its case: the sizes are launch arguments)."""
    code = "\n".join("" if line.lstrip().startswith("//") else line for line in source.text.splitlines())
    return hashlib.sha256(code.encode()).hexdigest()


def same_code_build(build: Build, source: ProbeSource) -> Build:
    """`source`'s build from `build`, whose source has the same code_key: the same cubin, and the log with
    NVRTC's diagnostics naming `source`'s file (name.cu(line): ...) instead, as its own compile names it."""
    log = build.log.replace(f"{build.name}.cu(", f"{source.name}.cu(")
    return _store(source, build.options, build.cubin_path.read_bytes(), log)


def compile_many(sources: Iterable[ProbeSource], jobs: int | None = None,
                 on_done: Callable[[Build], None] | None = None) -> dict[str, Build]:
    """Compile many probes in worker processes; returns builds by source name."""
    return {build.name: build for build in compile_each(sources, jobs, on_done)}


def compile_each(sources: Iterable[ProbeSource], jobs: int | None = None,
                 on_done: Callable[[Build], None] | None = None) -> Iterator[Build]:
    """Each source's build, in the order of `sources`, as soon as it and those before it are done.

    The work starts at the call, not at the first build asked for: builds in the cache are looked up,
    and the rest handed to `jobs` worker processes (default: one per CPU), which work ahead while the
    caller uses the builds it has (bench run measures them); a lone missing one compiles here. NVRTC
    runs in this process only then (a compiler crash ends a worker process, not the caller). Sources
    that differ in comments only (code_key) are compiled once: the others take that cubin, which is the
    one their own compile makes (tests/test_compile.py). Closing the iterator cancels the compilations
    not started."""
    sources = list(sources)
    found = [cached_build(source) for source in sources]
    missing = [source for source, build in zip(sources, found) if build is None]
    first = {}  # one compile per code_key: the others of a key take its cubin (same_code_build)
    for source in missing:
        first.setdefault(code_key(source), source)
    distinct = list(first.values())
    jobs = jobs or max(1, min(len(distinct), os.cpu_count() or 1))
    pool = None
    if len(distinct) < 2:
        compiled = map(compile_probe, distinct)
    else:  # spawn, not fork: the parent may have threads (CUDA, NVML) that a forked child would inherit
        pool = ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn"))
        compiled = pool.map(compile_probe, distinct)
    return _in_order(found, _fresh(missing, compiled), pool, on_done)


def _fresh(missing: list[ProbeSource], compiled: Iterator[Build]) -> Iterator[Build]:
    """The builds of `missing` in order: the first source of each code_key from `compiled`, the rest from it."""
    by_code: dict[str, Build] = {}
    for source in missing:
        key = code_key(source)
        yield same_code_build(by_code[key], source) if key in by_code else by_code.setdefault(key, next(compiled))


def _in_order(found: list[Build | None], fresh: Iterator[Build], pool, on_done) -> Iterator[Build]:
    try:
        for build in found:
            build = build if build is not None else next(fresh)
            if on_done:
                on_done(build)
            yield build
    finally:
        if pool is not None:  # the processes end on their own once their work is done or cancelled
            pool.shutdown(wait=False, cancel_futures=True)
