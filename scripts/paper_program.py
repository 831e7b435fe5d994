"""Side by side on one GPU: the paper's own wgmma throughput program and ours, on the same inputs.

The program is HPMLL/NVIDIA-Hopper-Benchmark's TensorCores/wgmma/throughput (arXiv 2501.12084's
code). It is not part of this project: clone it next to the checkout on the GPU node and pass its
path; this script builds it there with nvcc and never copies it. Each of its binaries launches one
block of 128 threads per SM, 100 000 back-to-back m64n256 wgmmas each, timed by CUDA events, on
its "random" fill (uniform in [-1, 1); every value of int8) or on zeros. Ours is `bench run` of the
same instructions, whose N = 256 throughput is measured on `uniform11` (the same fill) and on
`zeros`, among others.

Both rates are computed here from elapsed time and the same work per instruction (2 M N K), so a
difference in how the programs count (b1's K, for one) cannot enter the ratio. Rounds of the paper's
program run before and after ours, so drift of the clock shows.

    python3 scripts/paper_program.py CHECKOUT --db paper.db --out OUTDIR [--repeat 3]

Writes OUTDIR/paper_program.csv (every launch of their program) and OUTDIR/paper_program.md (the
table: their median, ours, the ratio, on each input).
"""

from __future__ import annotations

import argparse
import json
import re
import sqlite3
import statistics
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

# their binary -> (source file, our case id stem at N = 256, K); SS and RS are both measured
PROGRAMS = {
    "fp16": ("test_wgmma_fp16.cu", "wgmma.mma_async.m64n256k16.f32.f16.f16", 16),
    "fp16fp16": ("test_wgmma_fp16fp16.cu", "wgmma.mma_async.m64n256k16.f16.f16.f16", 16),
    "tf32": ("test_wgmma_tf32.cu", "wgmma.mma_async.m64n256k8.f32.tf32.tf32", 8),
    "e4m3": ("test_wgmma_e4m3.cu", "wgmma.mma_async.m64n256k32.f32.e4m3.e4m3", 32),
    "fp16e4m3": ("test_wgmma_fp16e4m3.cu", "wgmma.mma_async.m64n256k32.f16.e4m3.e4m3", 32),
    "s8": ("test_wgmma_s8.cu", "wgmma.mma_async.m64n256k32.satfinite.s32.s8.s8", 32),
    "b1": ("test_wgmma_b1.cu", "wgmma.mma_async.m64n256k256.s32.b1.b1.and.popc", 256),
}
INPUTS = {"random": "uniform11", "zero": "zeros"}  # their fill -> our input distribution
ITERATIONS = 100_000  # wgmmas per block in their kernel (hard-coded there)


def build(checkout: Path, work: Path) -> dict[str, Path]:
    source = checkout / "TensorCores" / "wgmma" / "throughput"
    work.mkdir(parents=True, exist_ok=True)

    def one(name: str) -> tuple[str, Path]:
        binary = work / name
        subprocess.run(["nvcc", str(source / PROGRAMS[name][0]), "-gencode", "arch=compute_90a,code=sm_90a",
                        "-I", str(source.parent), "-o", str(binary)], check=True, capture_output=True, text=True)
        return name, binary

    with ThreadPoolExecutor(len(PROGRAMS)) as pool:
        return dict(pool.map(one, PROGRAMS))


def their_round(binaries: dict[str, Path], repeat: int, sms: int, label: str) -> list[dict]:
    rows = []
    for name, binary in binaries.items():
        k = PROGRAMS[name][2]
        for ops in ("ss", "rs"):
            for fill in INPUTS:
                for _ in range(repeat):
                    done = subprocess.run([str(binary), fill, "256", ops], capture_output=True, text=True)
                    found = re.search(r"elapsed_time:\s*([0-9.eE+-]+)\s*ms", done.stdout)
                    if not found:  # their program failed: say how, measure the rest (b1 and s8 RS print their
                        # time, then exit non-zero: the time is kept)
                        failure = (done.stdout + done.stderr).strip().splitlines()[-1:] or [f"exit {done.returncode}"]
                        rows.append({"program": name, "operands": ops.upper(), "inputs": INPUTS[fill], "round": label,
                                     "elapsed_ms": float("nan"), "tflops": float("nan"), "error": failure[0]})
                        break
                    ms = float(found.group(1))
                    rate = 2.0 * 64 * 256 * k * ITERATIONS * sms / (ms * 1e-3) / 1e12
                    rows.append({"program": name, "operands": ops.upper(), "inputs": INPUTS[fill], "round": label,
                                 "elapsed_ms": ms, "tflops": rate})
    return rows


def ours(db: Path) -> dict[tuple[str, str, bool], tuple[float, float]]:
    """(case id, inputs, burst) -> (median TFLOPS, in-kernel MHz) of the newest run in `db`; burst: the
    launches that follow idle (the `idle_ms` launch key), like each of their program's."""
    con = sqlite3.connect(db)
    found = {}
    for case_id, launch, value, mhz in con.execute(
            "SELECT case_id, launch, value, sm_clock_mhz FROM results WHERE metric = 'throughput_tflops' "
            "AND run_id = (SELECT MAX(id) FROM runs) AND valid"):
        key = json.loads(launch)
        if key.get("warpgroups") == 1:
            found[(case_id, key.get("inputs", "normal"), bool(key.get("idle_ms")))] = (value, mhz)
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkout", type=Path, help="a clone of HPMLL/NVIDIA-Hopper-Benchmark")
    parser.add_argument("--db", type=Path, required=True, help="database for our run (created)")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--repeat", type=int, default=3, help="launches of their program per form, per round")
    args = parser.parse_args()
    import cupy

    sms = cupy.cuda.runtime.getDeviceProperties(0)["multiProcessorCount"]
    gpu = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
    binaries = build(args.checkout, args.out / "paper-bin")
    rows = their_round(binaries, args.repeat, sms, "before")
    cases = ",".join(f"{stem}.{ops}" for _, stem, _ in PROGRAMS.values() for ops in ("SS", "RS"))
    subprocess.run([sys.executable, "-m", "harness", "run", "--suite", "wgmma-all", "--filter", cases,
                    "--db", str(args.db)], check=True)
    rows += their_round(binaries, args.repeat, sms, "after")
    mine = ours(args.db)
    args.out.mkdir(parents=True, exist_ok=True)
    with open(args.out / "paper_program.csv", "w") as csv:
        csv.write("program,operands,inputs,round,elapsed_ms,tflops\n")
        csv.writelines(f"{r['program']},{r['operands']},{r['inputs']},{r['round']},{r['elapsed_ms']},{r['tflops']:.2f}\n"
                       for r in rows)
    lines = [f"# The paper's throughput program and ours, {gpu}, N = 256, same inputs", "",
             "| instruction | inputs | paper's program TFLOPS (median, min..max) | ours, sustained | ours / paper "
             "| MHz | ours, burst | ours / paper | MHz |", "|---|---|---|---|---|---|---|---|---|"]
    for name, (_, stem, _) in PROGRAMS.items():
        for ops in ("SS", "RS"):
            for inputs in INPUTS.values():
                mine_rows = [r for r in rows if (r["program"], r["operands"], r["inputs"]) == (name, ops, inputs)]
                theirs = [r["tflops"] for r in mine_rows if r["tflops"] == r["tflops"]]
                nan = (float("nan"), float("nan"))
                value, mhz = mine.get((f"{stem}.{ops}", inputs, False), nan)
                burst, burst_mhz = mine.get((f"{stem}.{ops}", inputs, True), nan)
                if not theirs:
                    error = next((r["error"] for r in mine_rows if "error" in r), "no output")
                    lines.append(f"| {stem}.{ops} | {inputs} | failed: {error} | {value:.1f} | | {mhz:.0f} | "
                                 f"{burst:.1f} | | {burst_mhz:.0f} |")
                    continue
                median = statistics.median(theirs)
                lines.append(f"| {stem}.{ops} | {inputs} | {median:.1f} ({min(theirs):.1f}..{max(theirs):.1f}) | "
                             f"{value:.1f} | {value / median:.3f} | {mhz:.0f} | {burst:.1f} | {burst / median:.3f} | "
                             f"{burst_mhz:.0f} |")
    (args.out / "paper_program.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
