"""The GEMM sections of `bench report` ("from instructions to a GEMM"): each section's figure, text and table.

    against the library     the best pipeline's library_fraction at each problem size (the lead)
    the ladder              the seed worklog's kernels that configs.LADDER maps, measured, beside cuBLAS in
                            the same run (and its ratio to each, round by round), with the planner's
                            prediction at the clock each case measured, and the worklog's published
                            figures at their 4096^3 where the database holds them as references
    by their protocol       the worklog's figures against ours in a burst after idle and in sustained rounds,
                            on three kinds of inputs, in MHz and watts (protocol.py; suite gemm-protocol)
    stages                  TFLOPS against stages for each tile of the stage sweep (measured points,
                            the planner's line)
    where the time goes     cycles per k-block against the tensor cores' 2 BM BN 64 / 4096, and per
                            tile: the consumers' mainloop (waiting on a full slot, the rest), their
                            epilogue, and the producer's wait on an empty slot (in-kernel counters)
The rows they read are frame.py's, the figures plots.py's, the worklog's figures and verdicts worklog.py's;
the family's findings are findings.py's."""

from __future__ import annotations

import numpy as np
import pandas as pd
from sqlalchemy.exc import SQLAlchemyError

from harness.families.gemm.configs import LADDER, pipeline
from harness.families.gemm.frame import (CONFIG, ROUND_COLUMNS, best_by_problem, case_frame, config_label,
                                         library_rounds, main_problem, pipeline_rows, planner_params, predict_tflops,
                                         stage_sweeps, stages_needed)
from harness.families.gemm.plots import figure_ladder, figure_sizes, figure_stages, figure_time
from harness.families.gemm.problem import TENSOR_FLOPS_PER_CYCLE
from harness.families.gemm.worklog import WORKLOG_SIZE_SENTENCE, max_clock, worklog_figures, worklog_verdict
from harness.paper import DEFAULT_TOLERANCE


MIN_LADDER_STEPS = 3  # ladder steps a size needs to be drawn as a ladder


def _flagged_left_out(ctx) -> list[str]:
    """The run's gemm cases whose measurements were flagged (throttling or another process) and so are
    not in the report's frame."""
    try:
        rows = ctx.store.query(f"""SELECT DISTINCT case_id FROM results WHERE run_id = {int(ctx.run_id)}
                                   AND family = 'gemm' AND valid AND flagged""")
    except SQLAlchemyError:
        return []
    return sorted(set(rows.case_id) - set(ctx.measured.case_id))


def _against_library(ctx, pipes: pd.DataFrame, library: pd.DataFrame, gpu: str, run) -> list:
    """The GEMM sections' lead (issue 46, item 4): the best pipeline against the library for every problem of the
    run, as a figure and a table that names the configuration shown, the rounds' spread, the per-cycle peak fraction
    and the clock."""
    sections = []
    best = best_by_problem(pipes[pipes.library_fraction.notna()]) if len(pipes) else pd.DataFrame()
    if len(best) >= 2:
        path = ctx.directory / "gemm_library_fraction.png"
        figure_sizes(path, best, f"{gpu}, run {run}: the best pipeline against cuBLAS by problem size")
        theirs = library.set_index("problem")
        best = best.assign(cublas_w=best.problem.map(theirs.power_mean_w),
                           cublas_per_w=best.problem.map(theirs.energy_efficiency))
        table = best[["problem", "case_id", "throughput_tflops", "library_fraction", "library_p10", "library_p90",
                      "peak_fraction", "clock_mhz", "power_mean_w",
                      "energy_efficiency", "cublas_w", "cublas_per_w"]].rename(
            columns={"throughput_tflops": "TFLOPS", **ROUND_COLUMNS,
                     "peak_fraction": "of the peak per cycle", "clock_mhz": "SM MHz", "power_mean_w": "W (solo 2 s)",
                     "energy_efficiency": "TFLOPS/W (solo 2 s)", "cublas_w": "cuBLAS W (solo 2 s)",
                     "cublas_per_w": "cuBLAS TFLOPS/W (solo 2 s)"})
        if table["TFLOPS/W (solo 2 s)"].notna().any():
            table["of cuBLAS's TFLOPS/W"] = table["TFLOPS/W (solo 2 s)"] / table["cuBLAS TFLOPS/W (solo 2 s)"]
        sections += [("From instructions to a GEMM: against cuBLAS by size", [
            "For each problem of the run, the pipeline case with the highest library_fraction: its rate over "
            "the library's on the same inputs, round by round (\"cuBLAS\" here: cublasGemmEx, default algorithm, "
            "for f16 and bf16; cuBLASLt's fp8 matmul without fast accumulation for e4m3). Below 1.0 the library "
            "wins; p10 and p90 are the 10th and 90th percentiles of the ratio over the rounds, 'of the peak per cycle' the "
            "tensor cores' dense peak at the clock measured in the kernel. TFLOPS and SM MHz are the alternating "
            "rounds'; the columns marked solo 2 s come from a window of "
            "their own: each side's launches alone, back to back, for 2 s after the rounds, its mean board power "
            "(NVML's energy counter) and the work it did there per joule (so TFLOPS / W of one row need not equal "
            "its TFLOPS/W)."], path),
            ("From instructions to a GEMM: against cuBLAS, in numbers", [], table.round(3).dropna(axis=1, how="all"))]
    return sections


def figures(ctx) -> list:
    """[(heading, paragraphs, Path | DataFrame | None)] for the report (harness/analysis/report.py): ours against
    the library (the lead), the worklog's ladder, TFLOPS against stages, where the time goes."""
    by_protocol = _by_protocol(ctx)
    wide = case_frame(ctx.measured, rounds=library_rounds(ctx.store, ctx.measured))
    if wide.empty:
        return by_protocol
    pipes = pipeline_rows(wide).copy()
    # the library as the anchor: cuBLASLt's fp8 with fast accumulation is a row of its own, not the anchor
    library = wide[wide.library & ~wide.fast_accum]
    sms = int(wide.sms.dropna().max()) if wide.sms.notna().any() else None
    params = planner_params(ctx.gpu, sms)
    pipes["predicted"], pipes["bound"] = zip(*[predict_tflops(c, params, clock) for c, clock in
                                               zip(pipes.case, pipes.clock_mhz)]) if len(pipes) else ([], [])
    pipes["predicted"] = pd.to_numeric(pipes["predicted"])
    notes = {"flagged": _flagged_note(_flagged_left_out(ctx)), "prior": _prior_sentence(params)}
    return (_against_library(ctx, pipes, library, ctx.gpu, ctx.run_id)  # the lead: ours against the library
            + _ladder_sections(ctx, pipes, library, sms, notes) + _stages_sections(ctx, pipes, params, notes)
            + _time_sections(ctx, pipes) + by_protocol)


def _flagged_note(left_out: list[str]) -> str:
    """A sentence naming the run's flagged gemm cases that the report leaves out ("" where none)."""
    return (f" {len(left_out)} of the run's gemm cases were flagged (throttling or another process) and are "
            f"left out here ({', '.join(c.split('.', 2)[2] if c.startswith('gemm.') else c for c in left_out[:6])}"
            f"{', ...' if len(left_out) > 6 else ''}); `bench report --include-flagged` draws them."
            if left_out else "")


def _prior_sentence(params) -> str:
    """What the planner's line is (its prior, at each case's measured clock), or that there is none."""
    return (f"The planner's line is its prior ({params.source}), at the clock each case measured in its kernel: "
            f"FLOP/cycle/SM x {params.sm_count} SMs x MHz / 1e6." if params is not None else
            "The planner has no parameters for this GPU: no prediction is drawn.")


def _ladder_configs() -> dict[str, dict]:
    """Each LADDER step's configuration (CONFIG's fields), to find the run's cases that are ladder steps."""
    return {step: {name: getattr(pipeline("f16", (1, 1, 1), **config), name) for name in CONFIG}
            for step, config in LADDER.items()}


def _ladder_rows(pipes: pd.DataFrame, ladder_configs: dict[str, dict]) -> pd.DataFrame:
    """The run's square f16 cases that are ladder steps, at the sizes with three steps or more, in step order
    (largest size first); empty where none."""
    steps = []
    for row in pipes[(pipes.dtype == "f16") & (pipes.m == pipes.n) & (pipes.n == pipes.k)].itertuples():
        config = {name: getattr(row.case, name) for name in CONFIG}
        for step, wanted in ladder_configs.items():
            if config == wanted:
                steps.append({"step": step, "size": row.m, "case": row.case, "case_id": row.case_id,
                              "throughput_tflops": row.throughput_tflops, "library_fraction": row.library_fraction,
                              "predicted": row.predicted, "bound": row.bound, "clock_mhz": row.clock_mhz,
                              "power_mean_w": row.power_mean_w, "energy_efficiency": row.energy_efficiency})
    steps = pd.DataFrame(steps)
    if len(steps):  # a size is a ladder where the run measured three steps or more at it, not a lone best case
        steps = steps[steps.groupby("size").step.transform("nunique") >= MIN_LADDER_STEPS]
    if not len(steps):
        return steps
    order = {step: i for i, step in enumerate(LADDER)}
    return steps.sort_values(["size", "step"], key=lambda s: s.map(order) if s.name == "step" else -s)


def _ladder_sections(ctx, pipes: pd.DataFrame, library: pd.DataFrame, sms: int | None, notes: dict) -> list:
    """The worklog's ladder: a figure of the steps measured beside cuBLAS and the worklog's figures, and its table."""
    ladder_configs = _ladder_configs()
    ladder = _ladder_rows(pipes, ladder_configs)
    if not len(ladder):
        return []
    cublas = {int(r.m): float(r.throughput_tflops) for r in library.itertuples()
              if r.dtype == "f16" and r.m == r.n == r.k and r.m in set(ladder["size"])}
    worklog = worklog_figures(ctx, ladder_configs)
    path = ctx.directory / "gemm_ladder.png"
    figure_ladder(path, ladder, cublas, worklog,
                  f"{ctx.gpu}, run {ctx.run_id}: from instructions to a GEMM, the worklog's ladder (f16 -> f32)")
    text = [_ladder_text(ladder, cublas, worklog, notes)]
    table = _ladder_table(ladder, cublas)
    if len(worklog):
        published = worklog.set_index(["step", "size"]).value
        table["worklog TFLOPS"] = [published.get((s, n), np.nan) for s, n in zip(table.step, table["size"])]
        top = max_clock(ctx)
        judged = [worklog_verdict(r.TFLOPS, r["worklog TFLOPS"], r["SM MHz"], sms or 132, top)
                  for _, r in table.iterrows()]
        table["verdict"] = [v for v, _ in judged]
        table["why"] = [w for _, w in judged]
        text.append(WORKLOG_SIZE_SENTENCE)
    return [("From instructions to a GEMM: the worklog's ladder", text, path),
            ("From instructions to a GEMM: the ladder in numbers", [], table.round(3).dropna(axis=1, how="all"))]


def _ladder_text(ladder: pd.DataFrame, cublas: dict[int, float], worklog: pd.DataFrame, notes: dict) -> str:
    """The ladder figure's paragraph: what the bars are, cuBLAS's figures, the worklog's, the steps missing."""
    missing = [s for s in LADDER if s not in set(ladder.step)]
    return (f"Each step of the seed worklog that this family expresses (harness/families/gemm/configs.py LADDER), "
            f"as measured here; the number over each bar is its library_fraction, its rate over cuBLAS's in "
            f"rounds alternating with it (the same clock and power state). {notes['prior']}"
            + (" cuBLAS on the same problem, measured in this run: "
               + ", ".join(f"{v:.0f} TFLOPS at {s}^3" for s, v in sorted(cublas.items())) + "." if cublas else
               " cuBLAS's own measurement of the ladder's problem is not in this report (flagged or not run); "
               "the ratios over the bars are round by round against it all the same.")
            + (f" The worklog's published figures ({worklog.gpu.iloc[0]}) are the hollow diamonds." if len(worklog)
               else "")
            + (f" Steps not measured in this run: {', '.join(missing)}." if missing else "") + notes["flagged"])


def _ladder_table(ladder: pd.DataFrame, cublas: dict[int, float]) -> pd.DataFrame:
    """The ladder's table: each step's configuration, TFLOPS, ratio to cuBLAS, the planner's figure, clock, power."""
    table = ladder.assign(**{"our configuration": [config_label(c) for c in ladder.case]})
    table = table[["step", "size", "our configuration", "throughput_tflops", "library_fraction", "predicted",
                   "bound", "clock_mhz", "power_mean_w", "energy_efficiency"]].rename(
        columns={"throughput_tflops": "TFLOPS", "predicted": "planner TFLOPS", "bound": "planner's bound",
                 "clock_mhz": "SM MHz", "power_mean_w": "W (solo 2 s)", "energy_efficiency": "TFLOPS/W (solo 2 s)"})
    if cublas:
        table["of cuBLAS's TFLOPS"] = [t / cublas[s] if s in cublas else np.nan
                                       for t, s in zip(table.TFLOPS, table["size"])]
    return table


def _stages_sections(ctx, pipes: pd.DataFrame, params, notes: dict) -> list:
    """TFLOPS against stages for each tile of the first problem's stage sweeps, and the stages each needs."""
    sweeps = stage_sweeps(pipes)
    if not sweeps:
        return []
    path = ctx.directory / "gemm_stages.png"
    problem = sweeps[0][1].problem.iloc[0]
    shown = [(label, g) for label, g in sweeps if g.problem.iloc[0] == problem]
    figure_stages(path, shown, params, f"{ctx.gpu}, run {ctx.run_id}: TFLOPS against stages per tile, {problem}")
    rows = []
    for label, group in shown:
        found = stages_needed(group)
        rows.append({"tile": label, "stages needed (within 2 % of the best)": int(found["needed"].stages),
                     "TFLOPS there": found["needed"].throughput_tflops, "best stages": int(found["best"].stages),
                     "best TFLOPS": found["best"].throughput_tflops,
                     "stages measured": ", ".join(str(int(s)) for s in group.stages)})
    return [("From instructions to a GEMM: TFLOPS against stages", [
        "Each tile's stage sweep: the same configuration but the depth of the ring (the epilogue from registers, "
        "whose shared memory would otherwise take a stage or two). Points are measured; dashed lines the planner's "
        f"prediction at the sweep's median clock. {notes['prior']}" + notes["flagged"]], path),
        ("From instructions to a GEMM: stages each tile needs", [], pd.DataFrame(rows).round(1))]


def _time_sections(ctx, pipes: pd.DataFrame) -> list:
    """Where the time goes, from the in-kernel counters of the run's main problem."""
    main = main_problem(pipes)
    counted = pipes[(pipes.problem == main) & pipes.cycles_per_kblock.notna()] if main else pipes.iloc[:0]
    if not len(counted):
        return []
    path = ctx.directory / "gemm_time.png"
    figure_time(path, counted, f"{ctx.gpu}, run {ctx.run_id}: where the time goes, {main}")
    return [("From instructions to a GEMM: where the time goes", [
        "In-kernel counters (clock64), the median over blocks. Left: a k-block's cycles (the first consumer "
        "warpgroup's mainloop over its k-blocks) against the tensor cores alone, 2 x BM x BN x 64 FLOP at "
        f"{TENSOR_FLOPS_PER_CYCLE} FLOP per cycle per SM. Right: one tile, the consumers' mainloop split into "
        "its waits on a full slot (the data had not landed; a wait can overlap the previous k-block's wgmma, "
        "which is still in flight) and the rest, then their epilogue; below it the producer's waits on an empty "
        "slot (every slot was taken: loaded and not yet consumed, or still in flight). Large waits on both sides "
        "mean the slots are copies in flight: the copies, not the ring's depth, set the pace."], path)]


def _by_protocol(ctx) -> list:
    """The worklog's figures by their protocol (protocol.py), where the run has the gemm-protocol suite's bursts."""
    import harness.families.gemm.protocol as protocol

    try:
        refs = ctx.store.query(f"""SELECT source, case_id, m, metric, value, notes FROM reference_figures
                                   WHERE source = '{protocol.SOURCE}'""")
    except SQLAlchemyError:
        refs = pd.DataFrame(columns=["source", "case_id", "m", "metric", "value", "notes"])
    return protocol.sections(ctx.measured, refs, max_clock(ctx), DEFAULT_TOLERANCE)
