"""A run's probes compiled and disassembled ahead of the measurement (harness/orchestration/run.py takes them): the
compiler's processes and a thread of their own, stopped when the run closes the iterator."""

from __future__ import annotations

import os
import queue
import threading
from concurrent.futures.process import BrokenProcessPool
from typing import Iterator

from harness.anchors import has_probe
from harness.build import sass
from harness.build.compile import Build, compile_each
from harness.build.render import render
from harness.errors import CompileError
from harness.families.base import Family
from harness.registry import family_of
from harness.spec import Case

DISASSEMBLY_BATCH = 16  # builds disassembled at once by bench run (nvdisasm takes about 0.4 s to start)


def compiled(cases: list[Case], jobs: int | None = None,
             families: tuple[Family, ...] | None = None) -> Iterator[tuple[Case, Build | None]]:
    """Each case with its build, in the plan's order, as soon as it is compiled and disassembled (an anchor, a
    library call, with None: it has no template, harness/anchors). The
    work starts at the call and runs ahead of the caller (bench run starts it before the GPU worker
    and measures while it goes on): the compiler's processes (default: half the CPUs), and a thread
    that disassembles their builds (cached for the SASS checks) in batches that double in size up to
    DISASSEMBLY_BATCH, so that the first case waits for one build and nvdisasm starts a few times,
    not once a case. Closing the iterator stops both. `families`: each case's (RunPlan.families), else looked up."""
    jobs = jobs or max(1, (os.cpu_count() or 2) // 2)  # the other half: the measuring worker and this process
    families = families if families is not None else tuple(family_of(c) for c in cases)
    sources = [render(c, f) for c, f in zip(cases, families) if has_probe(c)]  # an anchor has no source
    return _Ahead(_disassembled(cases, compile_each(sources, jobs)))


def _disassembled(cases: list[Case], builds: Iterator[Build]) -> Iterator[tuple[Case, Build | None]]:
    ready, batch = [], 1
    try:
        try:
            for case in cases:
                ready.append((case, next(builds) if has_probe(case) else None))
                if len(ready) == batch:
                    sass.disassemble_many((b.cubin_path for _, b in ready if b), jobs=1)
                    yield from ready
                    ready, batch = [], min(batch * 2, DISASSEMBLY_BATCH)
        except (CompileError, BrokenProcessPool):  # a probe that does not compile: the builds before it first
            sass.disassemble_many((b.cubin_path for _, b in ready if b), jobs=1)
            yield from ready
            raise
        sass.disassemble_many((b.cubin_path for _, b in ready if b), jobs=1)
        yield from ready
    finally:
        builds.close()


class _Ahead:
    """An iterator filled by a thread of its own from `source`, ahead of its reader; an exception of
    `source` is raised to the reader in its place. close() stops the thread after its current item."""

    _END = object()

    def __init__(self, source: Iterator):
        self._items: queue.Queue = queue.Queue()
        self._stop = threading.Event()
        threading.Thread(target=self._fill, args=(source,), daemon=True, name="bench-compile").start()

    def _fill(self, source: Iterator) -> None:
        try:
            for item in source:
                if self._stop.is_set():
                    break
                self._items.put((item, None))
            self._items.put((self._END, None))
        except BaseException as exc:  # noqa: BLE001  (the reader raises it)
            self._items.put((self._END, exc))
        finally:
            source.close()

    def __iter__(self) -> "_Ahead":
        return self

    def __next__(self):
        item, error = self._items.get()
        if item is self._END:
            self._items.put((item, error))  # every later call ends the same way
            if error is not None:
                raise error
            raise StopIteration
        return item

    def close(self) -> None:
        self._stop.set()
