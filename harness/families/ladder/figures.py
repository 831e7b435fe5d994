"""The ladder's report section: each step of the run at its largest size, from the naive kernel to the best wgmma
pipeline (the gemm family's rows of the same run and size, read by metric from the database), with the model's
bound per step (model.py) and cuBLAS beside them; then the seed GEMM chapter's and the worklog's figures beside ours
with a verdict."""

from __future__ import annotations

import re
from types import SimpleNamespace

import numpy as np
import pandas as pd

from harness.families.ladder.cases import ORDER, STEPS, parse
from harness.families.ladder.model import Params, bound

# seed_chapter.range_note's form of a range figure (published.py writes it; the families sit below it)
RANGE = re.compile(r"^stated as the range ([0-9.]+)-([0-9.]+) ")
# A fraction of peak read off a ranking that prints round numbers ("~", ranges): agreement within 15 % of its ends
FRACTION_SLACK = 0.15
SOURCES = ("seed-gemm-chapter", "hgemm-worklog-h100")
# The gemm family's protocol variants (suite gemm-protocol: integer or zero inputs, a burst after idle) run the same
# kernels on other inputs or clocks: the ladder's pipeline is the sustained one on normal inputs, as its own steps.
VARIANT = re.compile(r"\.inputs-[a-z]+|\.burst$")


def _ours(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per ladder case of the run: its step, size, TFLOPS, peak and library fractions, clock and SMs."""
    rows = []
    for case_id, part in frame.groupby("case_id"):
        case = parse(case_id.split("+")[0])
        values = part.groupby("metric").value.first()
        clock = part[part.metric == "throughput_tflops"].sm_clock_mhz.dropna()
        rows.append({"case_id": case_id, "case": case, "step": case.step, "size": case.m, "square": case.m == case.n == case.k,
                     "tflops": values.get("throughput_tflops", np.nan), "peak_fraction": values.get("peak_fraction", np.nan),
                     "library_fraction": values.get("library_fraction", np.nan),
                     "clock_mhz": float(clock.iloc[0]) if len(clock) else np.nan, "sm_count": part.sm_count.iloc[0]})
    return pd.DataFrame(rows)


def _pipeline(ctx, gpu: str, size: int) -> tuple[float, str | None, float, int | None]:
    """The best f16 wgmma pipeline (the gemm family's rows) and cuBLAS f16 at size^3, by their rows: this run's, else
    the newest run of the same GPU that measured them (its id returned; None: this run)."""
    shape = f".f16.{size}x{size}x{size}"

    def pick(rates: pd.DataFrame) -> tuple[float, str | None, float]:
        rates = rates[rates.metric == "throughput_tflops"]
        pipes = rates[rates.case_id.str.startswith("gemm" + shape + ".") & ~rates.case_id.str.contains(VARIANT)]
        best = pipes.loc[pipes.value.idxmax()] if len(pipes) else None
        library = rates[rates.case_id == "cublas" + shape]
        return (float(best.value) if best is not None else np.nan, best.case_id if best is not None else None,
                float(library.value.iloc[0]) if len(library) else np.nan)

    found = pick(ctx.measured)
    if found[1] is not None:
        return (*found, None)
    quoted = gpu.replace("'", "''")
    rows = ctx.store.query(f"""SELECT run_id, case_id, metric, value FROM results
                               WHERE family = 'gemm' AND gpu_name = '{quoted}' AND valid AND NOT flagged
                               AND metric = 'throughput_tflops' AND value IS NOT NULL
                               AND (case_id LIKE 'gemm{shape}.%' OR case_id = 'cublas{shape}')""")
    rows = rows[rows.case_id.str.startswith("gemm" + shape + ".") & ~rows.case_id.str.contains(VARIANT)]
    if rows.empty:
        return (*found, None)
    run = int(rows.run_id.max())
    every = ctx.store.query(f"""SELECT case_id, metric, value FROM results WHERE run_id = {run} AND family = 'gemm'
                                AND valid AND NOT flagged AND value IS NOT NULL""")
    return (*pick(every), run)


def _climb(ctx, frame: pd.DataFrame, gpu: str, label: str, name: str, here: str = "this run"):
    """The ladder at the largest square size `frame` holds (every step, its bound, the best pipeline and cuBLAS f16
    beside it): (ours, size, text, figure path, table); None where no square size was measured."""
    ours = _ours(frame)
    square = ours[ours.square]
    if square.empty:
        return None
    size = int(square["size"].max())
    at = square[square["size"] == size].set_index("step")
    at = at.loc[[s for s in ORDER if s in at.index]]
    clock = float(np.nanmedian(at.clock_mhz)) if at.clock_mhz.notna().any() else np.nan
    sms = int(at.sm_count.iloc[0])
    params = Params(gpu, sms, clock)
    found = {step: bound(row.case, params) for step, row in at.iterrows()}
    table = pd.DataFrame({
        "step": at.index, "TFLOPS": at.tflops.to_numpy(),
        "model bound TFLOPS": [found[s][0] * sms * (c if c == c else clock) / 1e6 if found[s] else np.nan
                               for s, c in zip(at.index, at.clock_mhz)],
        "bound by": [found[s][1] if found[s] else "" for s in at.index],
        "of the bound": np.nan, "peak_fraction": at.peak_fraction.to_numpy(),
        "library_fraction": at.library_fraction.to_numpy(), "SM MHz": at.clock_mhz.to_numpy(),
        "runs": [STEPS[s].what if s in STEPS else at.loc[s].case.anchor.description for s in at.index]})
    table["of the bound"] = table.TFLOPS / table["model bound TFLOPS"]
    best, best_id, cublas16, other = _pipeline(ctx, gpu, size)
    where = here if other is None else f"run {other} (the newest of this GPU to measure it)"
    if best == best:
        table = pd.concat([table, pd.DataFrame([{"step": "best wgmma pipeline", "TFLOPS": best,
                                                  "runs": f"the gemm family's fastest at {size}^3 in {where}: {best_id}"}])])
    if cublas16 == cublas16:
        table = pd.concat([table, pd.DataFrame([{"step": "cuBLAS f16", "TFLOPS": cublas16,
                                                  "runs": f"the gemm family's library case (cublasGemmEx, f16 in), {where}"}])])
    path = ctx.directory / name
    _figure(path, table, f"{gpu}, {label}: the GEMM ladder at {size}^3, from the naive kernel to wgmma")
    text = [f"Each step of the ladder at {size}^3 (f32 on the CUDA cores, then f16 in and f32 accumulate on the tensor "
            f"cores), timed in rounds alternating with cuBLAS on the same inputs (library_fraction), beside the model's "
            f"bound per step (harness/families/ladder/model.py: the least of the unit's issue rate, the L1/shared "
            f"wavefronts its tiles need and the L2 bytes its tiles load, at the step's own SM clock and {sms} SMs)."
            + ("" if best == best else " No wgmma pipeline of the gemm family was measured at this size on this GPU.")
            + ("" if other is None else f" The pipeline and cuBLAS f16 are run {other}'s (the ladder's run measured "
                                        f"none at {size}^3).")]
    return ours, size, text, path, table


def _library(ctx, gpu: str, case_id: str) -> float:
    """A library case's TFLOPS (the gemm family's, by id): this run's, else the newest run of the GPU to measure it."""
    rates = ctx.measured[(ctx.measured.case_id == case_id) & (ctx.measured.metric == "throughput_tflops")]
    if len(rates):
        return float(rates.value.iloc[0])
    quoted, wanted = gpu.replace("'", "''"), case_id.replace("'", "''")
    rows = ctx.store.query(f"""SELECT run_id, value FROM results WHERE case_id = '{wanted}' AND gpu_name = '{quoted}'
                               AND metric = 'throughput_tflops' AND valid AND NOT flagged AND value IS NOT NULL""")
    return float(rows.sort_values("run_id").value.iloc[-1]) if len(rows) else np.nan

def figures(ctx) -> list:
    frame = ctx.measured[ctx.measured.family == "ladder"]
    if frame.empty:
        return []
    climbed = _climb(ctx, frame, ctx.gpu, f"run {ctx.run_id}", "ladder.png")
    if climbed is None:
        return []
    ours, size, text, path, table = climbed
    sections = [("The GEMM ladder below the tensor-core pipeline", text, path),
                ("The GEMM ladder in numbers", [], table.round(3).dropna(axis=1, how="all"))]
    published = _published(ctx, ours)
    if len(published):
        sections.append(("The GEMM ladder against the seed chapter and the worklog", [
            "The seed GEMM chapter's ranking is of one 1024^3 MatMul on an A100 (protocol and clock not stated): its "
            "fractions of peak are judged against ours (each against its own GPU's peak: FFMA's for f32, the dense "
            f"f16 tensor peak for f16; a range, or a round figure, within {FRACTION_SLACK:.0%} of its ends agrees), "
            "its TFLOPS are another GPU's and shown for context. The worklog's step 1 (H100 SXM, 4096^3, a CUDA-core "
            "kernel, one batch after idle) is set beside our best f32 step; `bench compare` judges it per cycle per "
            "SM."], published))
    return sections



def summary(gpu: str, runs: list[int], size: int, table: pd.DataFrame) -> str:
    """One line: the ladder's TFLOPS from the naive step to the best pipeline, and the best CUDA-core step against
    cuBLAS SGEMM."""
    rates = table.set_index("step").TFLOPS.dropna()
    climb = ", ".join(f"{step} {rates[step]:.3g}" for step in rates.index)
    line = f"{gpu} (run{'s' * (len(runs) > 1)} {', '.join(map(str, runs))}), {size}^3, TFLOPS: {climb}"
    fractions = table.set_index("step").library_fraction.dropna()
    f32 = [s for s in ("reg-tiled", "smem-tiled", "naive") if s in fractions.index]
    if f32:
        line += f"; the {f32[0]} step makes {fractions[f32[0]]:.2f} of cuBLAS SGEMM"
    return line + "."


def findings(ctx) -> list:
    """Per GPU model, the ladder of its newest measurements: the steps' TFLOPS from the naive kernel to the best
    wgmma pipeline, each beside its model bound and cuBLAS (the report's figure)."""
    newest = ctx.latest[ctx.latest.family == "ladder"]
    sections = []
    for gpu, part in sorted(newest.groupby("gpu_name")):
        mine = SimpleNamespace(store=ctx.store, directory=ctx.directory,
                               measured=ctx.latest[ctx.latest.gpu_name == gpu])
        name = f"ladder_{re.sub('[^a-z0-9]+', '-', gpu.lower()).strip('-')}.png"
        climbed = _climb(mine, part, gpu, "newest runs", name, "the newest measurements")
        if climbed is None:
            continue
        _, size, text, path, table = climbed
        at = {int(r) for r, c in zip(part.run_id, part.case_id) if parse(c).m == size}
        sections.append((f"The GEMM ladder from a naive kernel to wgmma ({gpu})",
                         [summary(gpu, sorted(at), size, table)] + text, path))
    return sections

def _published(ctx, ours: pd.DataFrame) -> pd.DataFrame:
    wanted = ", ".join(f"'{s}'" for s in SOURCES)
    refs = ctx.store.query(f"""SELECT case_id, metric, value, unit, gpu_name, source, notes FROM reference_values
                               WHERE source IN ({wanted}) AND (case_id LIKE 'ladder.%'
                               OR (source = 'seed-gemm-chapter' AND case_id LIKE 'cublas.f16.%'))""")
    if refs.empty:
        return refs
    mine = {(r.case_id, m): getattr(r, m if m != "throughput_tflops" else "tflops")
            for r in ours.itertuples() for m in ("throughput_tflops", "peak_fraction")}
    gpu = str(ctx.measured.gpu_name.iloc[0]) if len(ctx.measured) else ctx.gpu
    rows = []
    for ref in refs.itertuples():
        value = mine.get((ref.case_id, ref.metric), np.nan)
        if ref.case_id.startswith("cublas."):  # the chapter's cuBLAS f16: the gemm family's library case, its size
            value = _library(ctx, gpu, ref.case_id)
        rows.append({"case_id": ref.case_id, "metric": ref.metric, "published": ref.value, "unit": ref.unit,
                     "their GPU": ref.gpu_name, "ours": value, "verdict": verdict(ref.metric, value, ref.value, ref.notes),
                     "source": ref.source})
    return pd.DataFrame(rows)


def verdict(metric: str, ours: float, published: float, notes: str | None) -> str:
    """A fraction of peak: agrees within FRACTION_SLACK of the published range (or figure), else which is higher;
    TFLOPS: for context (the other GPU's, or `bench compare`'s per-cycle verdict)."""
    if ours != ours:
        return "not measured in this run"
    if metric != "peak_fraction":
        return f"for context: ours / theirs = {ours / published:.2f}"
    match = RANGE.match(notes or "")
    low, high = (float(match.group(1)), float(match.group(2))) if match else (published, published)
    if low * (1 - FRACTION_SLACK) <= ours <= high * (1 + FRACTION_SLACK):
        return "agrees"
    return f"ours {'higher' if ours > high else 'lower'} ({ours:.2f} against {low:g}" + (f"-{high:g})" if high != low else ")")


def _figure(path, table: pd.DataFrame, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    x = np.arange(len(table))
    fig, ax = plt.subplots(figsize=(9, 5))
    ax.plot(x, table.TFLOPS, "o", ms=8, color="tab:blue", label="measured")
    bound = table["model bound TFLOPS"] if "model bound TFLOPS" in table else pd.Series(np.nan, index=table.index)
    ax.plot(x, bound, "_", ms=22, mew=2.5, color="tab:red", label="the model's bound")
    anchor = table.TFLOPS / table.library_fraction if "library_fraction" in table else None
    if anchor is not None and anchor.notna().any():
        ax.plot(x, anchor, "s", mfc="none", mec="tab:gray", ms=8, label="cuBLAS beside it (ours / library_fraction)")
    for i, value in enumerate(table.TFLOPS):
        if value == value:
            ax.annotate(f"{value:.3g}", (i, value), textcoords="offset points", xytext=(8, -3), fontsize=7)
    ax.set_yscale("log")
    ax.set_xticks(x, labels=[s.replace(" ", "\n") for s in table.step], fontsize=8)
    ax.set_ylabel("TFLOPS (log scale)")
    ax.grid(True, axis="y", which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    ax.set_title(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
