"""The attention sections of `bench report` and the results site: each case's rate beside cuDNN's on the same inputs,
and where a block of keys' cycles go against the two bounds a block has (the tensor cores' FLOP and MUFU's
exponentials)."""

from __future__ import annotations

import pandas as pd

from harness.anchors import has_probe
from harness.db.distributions import ROUND_HEADERS, library_rounds, round_percentiles
from harness.errors import HarnessError
from harness.families.attention.cases import cudnn
from harness.families.attention.ids import parse
from harness.families.attention.model import terms


def _case(case_id: str):
    """The case of an id (a report's frame has no params column); None for an id this version cannot read."""
    try:
        return parse(case_id)
    except HarnessError:
        return None


def _round(value: float, digits: int | None = None):
    """`value` rounded, or None where it was not measured (NaN)."""
    return None if value != value else round(value, digits)


def table(frame: pd.DataFrame, rounds: dict | None = None) -> pd.DataFrame:
    """One row per kernel case of `frame` (the attention rows of one run or GPU): rates, cuDNN's in its rounds and
    alone (its own case, cudnn.sdpa.*, where the frame holds it), and a block's cycles. `rounds` (harness/db/
    distributions.py library_rounds): the per-round ratios, whose 10th and 90th percentiles are shown beside their
    median, as the GEMM tables show them (None where the rounds are not at hand)."""
    wide = frame.pivot_table(index="case_id", columns="metric", values="value", aggfunc="first")
    low, high = round_percentiles(frame[frame.metric == "library_fraction"], ["case_id"], rounds or {})
    rates = wide["throughput_tflops"] if "throughput_tflops" in wide else pd.Series(dtype=float)
    rows = []
    for case_id in wide.index:
        case = _case(case_id)
        if case is None or not has_probe(case):  # cuDNN's own case: a column of its kernels' rows
            continue
        ours = rates.get(case_id, float("nan"))
        alone = rates.get(cudnn(case).case_id, float("nan"))
        fraction = wide.at[case_id, "library_fraction"] if "library_fraction" in wide else float("nan")
        cycles = wide.at[case_id, "cycles_per_kblock"] if "cycles_per_kblock" in wide else float("nan")
        tensor, mufu, _ = terms(case)  # the block's two bounds, as the model has them
        rows.append({"dtype": case.dtype, "head dim": case.head_dim, "seq": case.seq,
                     "causal": "yes" if case.causal else "no", "batch x heads": f"{case.batch} x {case.heads}",
                     "TFLOPS": _round(ours, 1), "cuDNN TFLOPS": _round(ours / fraction, 1),
                     "cuDNN alone TFLOPS": _round(alone, 1),
                     "of cuDNN": _round(fraction, 3), ROUND_HEADERS[0]: _round(low.get(case_id, float("nan")), 3),
                     ROUND_HEADERS[1]: _round(high.get(case_id, float("nan")), 3),
                     "cycles a block": _round(cycles), "tensor-core bound": round(tensor), "MUFU bound": round(mufu),
                     "tensor cores busy": _round(tensor / cycles, 3),
                     "case_id": case_id})
    out = pd.DataFrame(rows)
    return out.sort_values(["dtype", "head dim", "causal", "seq"]).reset_index(drop=True) if len(out) else out


NOTE = ("Ours: ptx/attention.cu.in (docs/attention.md); cuDNN: its fused attention on the same inputs through the cuDNN"
        " frontend, timed in the same rounds (the ratio taken round by round: 'of cuDNN' is the rounds' median, p10 and"
        " p90 the 10th and 90th percentiles of the ratio over the rounds). 'cuDNN alone': its own case (cudnn.sdpa.*) "
        "in the same run, the call alone timed by the same method. 'cycles a block': the first consumer warpgroup's "
        "mainloop cycles per block of keys (in-kernel counters); the bounds are a block's cycles at the tensor cores' "
        "dense peak (4 x BM x BN x D FLOP at 4096 a cycle) and at MUFU's rate beside wgmma (2 x (BN / 2 + 2) ex2 a "
        "scheduler at 10.75 cycles each: the model's X, docs/attention.md, 'The model'). The two consumer warpgroups "
        "each run their block serially (S, softmax, P V): one's softmax can only hide under the other's wgmma.")


def figures(ctx) -> list:
    frame = ctx.measured[ctx.measured.family == "attention"]
    if frame.empty:
        return []
    return [(f"Attention forward beside cuDNN ({ctx.gpu}, run {ctx.run_id})", [NOTE],
             table(frame, library_rounds(ctx.store, frame)))]


def findings(ctx) -> list:
    """Per GPU model, from the newest measurements: the issue's target point (bf16, head dim 128, sequence >= 4k,
    not causal) against cuDNN, and the range over every case."""
    latest = ctx.latest
    frame = latest[latest.family == "attention"]
    rounds = library_rounds(ctx.store, frame) if len(frame) else {}
    sections = []
    for gpu, part in frame.groupby("gpu_name"):
        rows = table(part, rounds)
        if rows.empty or rows["of cuDNN"].isna().all():
            continue
        target = rows[(rows.dtype == "bf16") & (rows["head dim"] == 128) & (rows.causal == "no") & (rows.seq >= 4096)]
        lines = [f"bf16, head dim 128, sequence 4k..16k, not causal: {target['of cuDNN'].min():.2f}-"
                 f"{target['of cuDNN'].max():.2f} of cuDNN" if len(target) else "",
                 f"every case: {rows['of cuDNN'].min():.2f}-{rows['of cuDNN'].max():.2f} of cuDNN; the tensor cores busy "
                 f"{rows['tensor cores busy'].min():.2f}-{rows['tensor cores busy'].max():.2f} of a block's cycles", NOTE]
        sections.append((f"Attention: how close to cuDNN? ({gpu})", [line for line in lines if line],
                         rows.drop(columns=["case_id"])))
    return sections
