"""Disassemble a cubin and check that the measured loop holds the instructions we meant.

For a wgmma chain: the loop body must hold UNROLL HGMMA of the case's shape and types, back to
back, with no WARPGROUP.DEPBAR (a wait) or WARPGROUP.ARRIVE (a fence) between them. ptxas puts
one ARRIVE at the head of each loop body; that is reported, and measured as part of the interval.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sysconfig
from dataclasses import dataclass
from pathlib import Path

from harness.errors import HarnessError

_SECTION = re.compile(r"^\s*\.section\s+\.text\.(\w+)")
_INSTRUCTION = re.compile(r"/\*[0-9a-f]{4,}\*/\s+(.*?)\s*;")


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


def disassemble(cubin: Path) -> dict[str, list[str]]:
    """Instructions of every kernel in `cubin`, by kernel name."""
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


@dataclass(frozen=True)
class SassCheck:
    ok: bool
    note: str


def check_chain(instructions: list[str], mnemonic: str, unroll: int) -> SassCheck:
    """The chain kernel's loop: `unroll` x `mnemonic`, with no fence or wait between them."""
    positions = [i for i, ins in enumerate(instructions) if _is_mma(ins, mnemonic)]
    if len(positions) != unroll:
        found = sorted({ins.split()[0] for ins in instructions if "GMMA" in ins})
        return SassCheck(False, f"expected {unroll} x {mnemonic} in the chain loop, found "
                                f"{len(positions)} ({', '.join(found) or 'no GMMA'})")
    between = instructions[positions[0]:positions[-1] + 1]
    stalls = [ins for ins in between if ins.startswith(("WARPGROUP.DEPBAR", "WARPGROUP.ARRIVE"))]
    if stalls:
        return SassCheck(False, f"{len(stalls)} wait/fence instructions between the HGMMAs of the "
                                f"chain ({stalls[0]}): ptxas serialized the wgmma")
    arrives = sum(ins.startswith("WARPGROUP.ARRIVE") for ins in instructions[:positions[0]])
    return SassCheck(True, f"{unroll} x {mnemonic} back to back per loop body; "
                           f"{arrives} WARPGROUP.ARRIVE before them (one per body, at the loop head)")


def _is_mma(instruction: str, mnemonic: str) -> bool:
    """`mnemonic` writing real registers; wgmma.commit_group compiles to an HGMMA into RZ."""
    return instruction.startswith(mnemonic + " ") and not instruction.startswith(mnemonic + " RZ,")


def check_contains(instructions: list[str], mnemonic: str) -> SassCheck:
    count = sum(_is_mma(ins, mnemonic) for ins in instructions)
    return SassCheck(count >= 1, f"{count} x {mnemonic}")
