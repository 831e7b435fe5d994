"""The published rates the SIMT family is compared with: the CUDA C++ Programming Guide's table "Throughput of
Native Arithmetic Instructions (Number of Results per Clock Cycle per Multiprocessor)", column 9.0.

No primary copy of that column was reachable from here (the project has no network at run time, and the
corpora searched held no 12.x guide). The values below are the ones two secondary copies give (docs/simt.md
names them and says how far each agrees); rows found in neither are left out, so a case of those rows has no
peak: MUFU (the 7.x column, the newest found, says 16), 32-bit integer multiply, popc, clz. A row's key is an
Op's `throughput` (ops.py).
"""

from __future__ import annotations

PEAK_RESULTS_PER_SM = {
    "fp32": 128,  # 32-bit floating-point add, multiply, multiply-add (two copies agree)
    "fp16": 256,  # 16-bit floating-point add, multiply, multiply-add: an f16x2 instruction is two results (two agree)
    "minmax": 64,  # compare, minimum, maximum (one copy): FMNMX; not mapped to the packed HMNMX2
    "shuffle": 32,  # warp shuffle (one copy)
}
# Not mapped: "all other type conversions" (16 in one copy) counts single conversions (F2F, I2F): the packed
# converts F2FP measure 63 instructions a cycle per SM (126 results), the ALU's half rate, nothing like it.
