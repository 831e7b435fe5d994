"""What the attention probe's launches are (ptx/attention.cu.in): its by-value Problem, the counters, grids, and the
reference and tolerance its checks use. Shared by the family object and gpu.py.

The tolerance is the arithmetic's bound, element by element (`bound`). For row i and head-dim column d, with
p_ij = exp(s_ij - max_i) the exact softmax weights of the row, l_i their sum, O_id = sum_j p_ij v_jd / l_i and
A_id = sum_j p_ij |v_jd| / l_i (both in f64 from the same inputs), the kernel's O is within

    A_id x (u + 2^-22 + scale x G_i x (D + 1) x 2^-23 + (L + 2 L / BN) x 2^-23)      P, ex2, S, the sums of P V
    + |O_id| x (L + 4) x 2^-24                                                       the row sum and the division
    + u x (|O_id| + the above) + 2^-24                                               O rounded to its type

where u is the input type's unit roundoff (P is rounded to it before P V: the largest term), 2^-22 ex2.approx's
2 ulp, G_i = max_j sum_d |q_id k_jd| bounds every partial sum of S (each of D + 1 roundings, the last the FFMA of
S x scale x log2 e less the max, moves p by scale x its error), and L the keys summed (each addition of P V in f32,
and the output's rescaling once a block). A key block left out moves O by the block's share of the row's weight
(a fifth in the check problem) times |v - O|: well beyond the bound; so does a wrong scale
(tests/test_attention.py shows both failing).

cuDNN's case (cases.CudnnCase, an anchor) is held to the same bound: its arithmetic is the same kind (P rounded to the
inputs' type before P V, f32 scores and sums) but its block of keys is its own and not known here, so the bound takes
ANCHOR_KEY_BLOCK, the smallest a wgmma can hold, whose rescalings of O are the most (`key_block`).
"""

from __future__ import annotations

import numpy as np

from harness.families.attention.cases import AttentionCase, CudnnCase, check_case
from harness.families.pipeline import COUNTER_WORDS, TENSOR_FLOPS_PER_CYCLE, KernelStruct, counter_metrics  # noqa: F401

# The kernel's by-value argument, twice (the check problem, the measured one): maps over Q, K and V as
# [batch x seq, heads, D] (3-D: D innermost, boxes of 64 columns x 1 head x rows), O's address, the skeleton's walk
# (m = batch x heads x seq query rows, n = one key block: one column of tiles, k = seq keys), the shape, and a map
# over O as Q's with boxes of 64 rows (a consumer warpgroup's; the TMA store's epilogue, `.tmastore`).
PROBLEM = KernelStruct("Problem", (("q_map", "map"), ("k_map", "map"), ("v_map", "map"), ("o_ptr", "u64"),
                                   ("m", "i32"), ("n", "i32"), ("k", "i32"), ("seq", "i32"), ("heads", "i32"),
                                   ("pad", "i32"), ("o_map", "map")),
                       comment="One attention problem: maps over Q, K, V, O's address, the skeleton's walk and the "
                               "shape, a map over O (harness/families/attention/problem.py PROBLEM).")
SAMPLED_ROWS = 256  # query rows of each head the measured problem's check computes: its first and last 64, 128 between
LOG2E = 1.4426950408889634
EX2_RELATIVE = 2.0 ** -22  # ex2.approx.ftz.f32: 2 ulp (PTX ISA 9.7.4)
F32_UNIT = 2.0 ** -24
COUNTERS = counter_metrics(apart=False)  # the template builds the counting kernel only (ptx/attention.cu.in)
ANCHOR_KEY_BLOCK = 16  # cuDNN's key block as the bound takes it (module docstring)
MUFU_PER_CYCLE = 16  # ex2 results per cycle per SM: the CUDA C++ Programming Guide's, CC 9.0 (the simt family measures 16.0)


def scale_log2(case: AttentionCase) -> float:
    """1 / sqrt(D) x log2(e), as the f32 nearest it: the kernel's one multiplier of S."""
    return float(np.float32(case.scale * LOG2E))


def c_float(value: float) -> str:
    """An f32 value as an exact C hexadecimal literal."""
    return float(np.float32(value)).hex() + "f"


def grid(case: AttentionCase, sm_count: int = 132) -> int:
    """CTAs of the measured launch: one per tile, or (persistent) one per SM, at most one per tile."""
    return min(case.tiles, sm_count) if case.persistent else case.tiles


def check_grid(case: AttentionCase) -> int:
    """CTAs of the check launch: one per tile, or (persistent) two, each walking several tiles (Q's buffer reused)."""
    return 2 if case.persistent else check_case(case).tiles


def tensor_elements(case: AttentionCase) -> int:
    """Elements of one of Q, K, V or O."""
    return case.batch * case.seq * case.heads * case.head_dim


def reference(xp, q, k, v, causal: bool, rows=None):
    """O, A (the |V|-weighted mean of each row, as O's weights give it) and G (the largest sum of |q k| of each row)
    in f64, for Q, K, V as [seq, D] arrays of one head (f64). `rows`: the query rows to compute (all by default);
    a causal row i sees keys 0..i."""
    rows = xp.arange(q.shape[0]) if rows is None else rows
    qr = q[rows]
    s = qr @ k.T
    g = (xp.abs(qr) @ xp.abs(k).T)
    if causal:
        keys = xp.arange(k.shape[0])[None, :]
        visible = keys <= rows[:, None]
        s = xp.where(visible, s, -xp.inf)
        g = xp.where(visible, g, 0.0)
    scale = q.shape[1] ** -0.5
    p = xp.exp((s - s.max(axis=1, keepdims=True)) * scale)
    total = p.sum(axis=1, keepdims=True)
    return (p @ v) / total, (p @ xp.abs(v)) / total, g.max(axis=1, keepdims=True)


def key_block(case: AttentionCase | CudnnCase) -> int:
    """The keys between two rescalings of O, as the bound takes them: the kernel's block, or cuDNN's as
    ANCHOR_KEY_BLOCK (module docstring)."""
    return ANCHOR_KEY_BLOCK if isinstance(case, CudnnCase) else case.bn


def bound(xp, case: AttentionCase | CudnnCase, seq: int, o, weighted, g):
    """The largest |ours - O| where the kernel (or cuDNN) is right, element by element (module docstring)."""
    from harness.dtypes import unit_roundoff

    u = unit_roundoff(case.dtype)
    d = case.head_dim
    relative = (u + EX2_RELATIVE + case.scale * g * (d + 1) * 2.0 ** -23
                + (seq + 2 * seq / key_block(case)) * 2.0 ** -23)
    error = weighted * relative + xp.abs(o) * (seq + 4) * F32_UNIT
    return error + u * (xp.abs(o) + error) + F32_UNIT


def check_reference(case: AttentionCase | CudnnCase, values: dict) -> tuple[np.ndarray, np.ndarray]:
    """The check problem's O as [batch, seq, heads, D] (f64) and its bound, from the inputs' exact values."""
    small = check_case(case)
    q, k, v = (values[name] for name in ("Q", "K", "V"))
    o = np.zeros_like(q)
    tolerance = np.zeros_like(q)
    for b in range(small.batch):
        for h in range(small.heads):
            head_o, weighted, g = reference(np, q[b, :, h], k[b, :, h], v[b, :, h], case.causal)
            o[b, :, h] = head_o
            tolerance[b, :, h] = bound(np, case, small.seq, head_o, weighted, g)
    return o, tolerance
