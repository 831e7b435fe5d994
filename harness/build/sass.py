"""Disassemble a cubin and check it against the family's SASS expectation (harness/families/base.py).

For each kernel the expectation names: the measured loop must hold the expected number of the
instruction that really runs (as the family names it), with none of the forbidden instructions
(waits, fences, memory operations) between the first and the last of them, no spills, and no
ptxas note that the family says invalidates the case (e.g. a serialized chain). What really runs
is recorded with the check, and whether the PTX instruction is emulated by other instructions.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import struct
import subprocess
import sysconfig
import tempfile
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from harness.errors import HarnessError

_SECTION = re.compile(r"^\s*\.section\s+\.text\.(\w+)")
_INSTRUCTION = re.compile(r"/\*[0-9a-f]{4,}\*/\s+(.*?)\s*;")
_ADDRESSED = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;")
INSTRUCTION_BYTES = 16  # every sm_90 instruction


def find_nvdisasm() -> str:
    """nvdisasm from PATH, CUDA_HOME, or the nvidia-cuda-nvdisasm wheel."""
    candidates = [shutil.which("nvdisasm")]
    if os.environ.get("CUDA_HOME"):
        candidates.append(str(Path(os.environ["CUDA_HOME"]) / "bin" / "nvdisasm"))
    site = Path(sysconfig.get_paths()["purelib"]) / "nvidia"
    candidates += [str(p) for p in sorted(site.glob("cu*/bin/nvdisasm"))]
    for candidate in candidates:
        if candidate and Path(candidate).is_file():
            return candidate
    raise HarnessError("nvdisasm not found: install the nvidia-cuda-nvdisasm wheel or put CUDA's bin on PATH")


def _elf_kernels(data: bytes) -> dict[str, tuple[bytes, dict[int, str]]]:
    """Every kernel of a 64-bit little-endian ELF cubin (.text.<kernel>): its instruction bytes, and the
    functions of its section ({offset: name}, from the symbol table: the kernel at 0 and the routines
    that ptxas placed after it), which its CALLs and RETs name."""
    if data[:4] != b"\x7fELF" or data[4] != 2:
        raise HarnessError("not a 64-bit ELF cubin")
    (shoff,), (shentsize, shnum, shstrndx) = struct.unpack_from("<Q", data, 0x28), struct.unpack_from("<HHH", data, 0x3A)
    headers = [struct.unpack_from("<IIQQQQII", data, shoff + i * shentsize) for i in range(shnum)]

    def text(table: int, at: int) -> str:
        start = headers[table][4] + at
        return data[start:data.index(b"\0", start)].decode()

    kernels, by_index = {}, {}
    for index, (name, *_, offset, size, _link, _info) in enumerate(headers):
        title = text(shstrndx, name)
        if title.startswith(".text."):
            kernels[title[len(".text."):]] = (data[offset:offset + size], {})
            by_index[index] = title[len(".text."):]
    for _name, kind, *_, offset, size, link, _info in headers:
        if kind != 2:  # SHT_SYMTAB
            continue
        for at in range(offset, offset + size, 24):  # Elf64_Sym: name, info, other, section, value, size
            symbol, info, _other, section, value, _size = struct.unpack_from("<IBBHQQ", data, at)
            if info & 0xF == 2 and section in by_index:  # STT_FUNC: the kernel (at 0) and its routines
                kernels[by_index[section]][1][value] = text(link, symbol)
    return kernels


_CALL_TARGET = re.compile(r"^((?:CALL|RET)\.\S+(?: R\d+)?) 0x([0-9a-f]+)$")


def _disassemble_elf(cubin: Path) -> dict[str, list[str]]:
    result = subprocess.run([find_nvdisasm(), "-c", str(cubin)], capture_output=True, text=True)
    if result.returncode:
        raise HarnessError(f"nvdisasm failed on {cubin}: {result.stderr.strip()}")
    functions: dict[str, list[str]] = {}
    current = None
    for line in result.stdout.splitlines():
        if match := _SECTION.match(line):
            current = functions.setdefault(match.group(1), [])
        elif current is not None and (match := _INSTRUCTION.search(line)):
            current.append(match.group(1))
    return functions


def _cached(cubin: Path) -> Path:
    return cubin.with_suffix(".sass.json")


def disassemble(cubin: Path) -> dict[str, list[str]]:
    """Instructions of every kernel in `cubin`, by kernel name (from the cache disassemble_many fills)."""
    cubin = Path(cubin)
    if _cached(cubin).is_file():
        return json.loads(_cached(cubin).read_text())
    return disassemble_many([cubin])[cubin]


def disassemble_many(cubins: Iterable[Path], batch_bytes: int = 8 << 20,
                     jobs: int | None = None) -> dict[Path, dict[str, list[str]]]:
    """Disassemble many cubins with few nvdisasm processes, `jobs` at a time (default: one per CPU),
    caching each next to its cubin.

    nvdisasm spends about 0.4 s starting on each file, far more than the disassembly of a probe; so the
    kernels' instruction bytes are cut out of their ELF files, concatenated, and disassembled as one raw
    SM90a binary (a batch of at most `batch_bytes`, and as many batches as there are jobs), then split
    again by address. Kernels of the same bytes are disassembled once (the cubins of sources that differ
    in comments only; a kernel that does not depend on what its case varies, such as an empty loop timed
    beside every instruction of a family: a third of the bytes of the conformance sweep). Raw mode
    prints branch and call targets as addresses: each kernel's CALL names its target from its own
    cubin's symbol table as nvdisasm names it (a cubin with a target the table lacks is disassembled
    again from its ELF), so that the routines of emulated instructions stay readable.
    """
    cubins = [Path(c) for c in cubins]
    out = {c: json.loads(_cached(c).read_text()) for c in cubins if _cached(c).is_file()}
    todo = [c for c in dict.fromkeys(cubins) if c not in out]
    jobs = max(1, jobs or os.cpu_count() or 1)
    sections = [(cubin, kernel, code, routines) for cubin in todo
                for kernel, (code, routines) in _elf_kernels(cubin.read_bytes()).items()]
    codes = list(dict.fromkeys(code for _, _, code, _ in sections))  # each distinct kernel once
    total = sum(len(code) for code in codes)
    limit = max(INSTRUCTION_BYTES, min(batch_bytes, -(-total // jobs)))
    batches, pieces, size = [], [], 0
    for code in codes:
        if pieces and size >= limit:
            batches.append(pieces)
            pieces, size = [], 0
        pieces.append((size, code))
        size += len(code)
    if pieces:
        batches.append(pieces)
    unnamed = set()  # cubins with a CALL whose target is no routine of the symbol table
    with ThreadPoolExecutor(jobs) as pool:  # threads wait on nvdisasm processes: the work runs in those
        raws = pool.map(lambda batch: _disassemble_raw(b"".join(code for _, code in batch)), batches)
        read = {code: (start, by_address) for batch, by_address in zip(batches, raws) for start, code in batch}
        for cubin, kernel, code, routines in sections:
            start, by_address = read[code]
            instructions = []
            for a in range(start, start + len(code), INSTRUCTION_BYTES):
                if a not in by_address:
                    continue
                instruction = by_address[a]
                if call := _CALL_TARGET.match(instruction):  # named as nvdisasm names it in the ELF
                    name = routines.get(int(call[2], 16) - start)
                    instruction = f"{call[1]} `({name})" if name else instruction
                    unnamed.update([] if name else [cubin])
                instructions.append(instruction)
            out.setdefault(cubin, {})[kernel] = instructions
        unnamed = sorted(unnamed)
        out.update(zip(unnamed, pool.map(_disassemble_elf, unnamed)))
    for cubin in todo:  # under a temporary name, then renamed: a reader never finds half a file
        tmp = _cached(cubin).with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(out[cubin]))
        tmp.replace(_cached(cubin))
    return out


def _disassemble_raw(code: bytes) -> dict[int, str]:
    with tempfile.NamedTemporaryFile(suffix=".bin") as raw:
        raw.write(code)
        raw.flush()
        result = subprocess.run([find_nvdisasm(), "-b", "SM90a", raw.name], capture_output=True, text=True)
    if result.returncode:
        raise HarnessError(f"nvdisasm failed: {result.stderr.strip()}")
    return {int(m.group(1), 16): m.group(2) for line in result.stdout.splitlines()
            if (m := _ADDRESSED.search(line))}


@dataclass(frozen=True)
class SassCheck:
    ok: bool
    note: str
    executes: str | None = None  # what really runs per PTX instruction
    emulated: bool = False


def _unguarded(instruction: str) -> str:
    """The instruction without its predicate guard: '@!UP0 OP.X [UR4], ...' -> 'OP.X [UR4], ...'."""
    return instruction.split(" ", 1)[1] if instruction.startswith("@") else instruction


def _zeroing(instruction: str) -> bool:
    """ptxas's idiom for a register zero or a move of an immediate, `HFMA2.MMA R13, -RZ, RZ, 0, 0` (-0 x 0 + the
    immediate pair; `..., 0, 0.0078125` is 0x2000): no arithmetic of the probe's."""
    head = instruction.split(" ", 1)[0]
    return head.startswith("HFMA2") and ", -RZ, RZ, " in instruction


def _count(instructions: list[str], expected) -> list[int]:
    """Positions of the expected instruction, guarded by a predicate or not (e.g. one lane issues it)."""
    return [i for i, ins in enumerate(map(_unguarded, instructions))
            if ins.split(" ", 1)[0] in (expected.mnemonic, *expected.also) and not ins.startswith(expected.exclude)
            and expected.contains in ins and not _zeroing(ins)]


def check_kernel(instructions: list[str], expected) -> tuple[bool, str]:
    """`expected` (KernelExpectation): the count of its mnemonic, nothing forbidden between them."""
    positions = _count(instructions, expected)
    if len(positions) != expected.count:
        opcodes = sorted({ins.split(" ", 1)[0] for ins in instructions if ins.split(".", 1)[0].endswith("MMA")
                          or ins.startswith(expected.mnemonic.split(".", 1)[0])})
        what = expected.mnemonic + (f" {expected.contains}" if expected.contains else "")
        return False, (f"expected {expected.count} x {what}, found {len(positions)} "
                       f"({', '.join(opcodes) or 'none of its kind'})")
    if not positions:
        return True, "none expected"
    between = instructions[positions[0]:positions[-1] + 1]
    stalls = [ins for ins in between if ins.startswith(expected.forbidden)] if expected.forbidden else []
    if stalls:
        return False, (f"{len(stalls)} forbidden instructions between the {expected.mnemonic} ({stalls[0]}): "
                       "the measured sequence is not back to back")
    return True, f"{expected.count} x {expected.mnemonic} back to back"


_DEPBAR = re.compile(r"WARPGROUP\.DEPBAR\.LE gsb0, (0x[0-9a-f]+|\d+)")


def issued_in_flight(instructions: list[str], expected) -> int:
    """How many instructions starting with `expected.mnemonic` (InFlight) are issued while an asynchronous
    tensor-core group holding `expected.group` is in flight, walking the kernel in order: a `*GMMA` instruction
    carrying `gsb0` closes a group, `WARPGROUP.DEPBAR.LE gsb0, N` retires all but the newest N."""
    pending: list[bool] = []  # the groups in flight, oldest first: whether each holds expected.group
    count = 0
    for ins in map(_unguarded, instructions):
        opcode = ins.split(" ", 1)[0]
        if opcode.split(".", 1)[0].endswith("GMMA") and "gsb0" in ins:
            pending.append(expected.group in ins)
        elif (wait := _DEPBAR.search(ins)) is not None:
            keep = int(wait.group(1), 0)
            pending = pending[max(0, len(pending) - keep):] if keep else []
        elif opcode.startswith(expected.mnemonic) and any(pending):
            count += 1
    return count


def ptxas_notes(log: str) -> list[str]:
    """ptxas performance notes (codes like C7515), each as one line, without the function name."""
    return sorted({line.split(":", 1)[-1].split(" in function")[0].strip()
                   for line in log.splitlines() if re.search(r"\(C\d{4}\)", line)})


def check(build, expectation) -> SassCheck:
    """The whole check of one build against the family's SassExpectation."""
    kernels = disassemble(build.cubin_path)
    ok, notes = True, []
    for kernel, expected in expectation.kernels:
        good, note = check_kernel(kernels.get(kernel, []), expected)
        ok &= good
        notes.append(f"{kernel}: {note}")
    for kernel, expected in expectation.in_flight:
        issued = issued_in_flight(kernels.get(kernel, []), expected)
        good = issued >= expected.count
        ok &= good
        notes.append(f"{kernel}: {issued} x {expected.mnemonic} under a tensor-core group {expected.group} in flight"
                     + ("" if good else f", expected {expected.count} at least: the overlap is not in the SASS"))
    spills = sum(build.spill_bytes(k) for k in expectation.spill_kernels)
    if expectation.spill_kernels:
        ok &= spills == 0
        notes.append(f"spills: {spills} B")
    found = ptxas_notes(build.log)
    bad = [n for n in found if any(f"({code})" in n for code in expectation.invalidating_notes)]
    if found:
        notes.append("ptxas: " + " | ".join(found))
    if bad:
        ok = False
    if expectation.emulated:
        notes.append(f"emulated: {expectation.executes}")
    return SassCheck(ok, "; ".join(notes), expectation.executes, expectation.emulated)
