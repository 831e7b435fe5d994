"""The gemm family's findings (the results site's question and a report's first bullets): how many stages each
tile needs and why, what the TMA-store epilogue and multicast buy, where cuBLAS still wins."""

from __future__ import annotations

import pandas as pd

from harness.families.gemm.frame import (ROUND_COLUMNS, best_by_problem, case_frame, config_label, ideal_kblock,
                                         library_rounds, main_problem,
                                         pairs_differing, pipeline_rows, stage_sweeps, stages_needed)
from harness.families.gemm.plots import figure_sizes, figure_stages_needed
from harness.families.gemm.worklog import worklog_observations, worklog_profile


TENSOR_BOUND = 1.10  # a k-block within 10 % of the tensor cores' time is tensor-core bound


def _stage_sentence(label: str, group: pd.DataFrame) -> str:
    """How many stages a tile needs, and why, from the sweep's TFLOPS and in-kernel counters."""
    found = stages_needed(group)
    needed, best, fewer, more = found["needed"], found["best"], found["fewer"], found["more"]
    ideal = ideal_kblock(needed.case)
    s = int(needed.stages)
    text = (f"{label} needs {s} stage{'s' if s > 1 else ''}: {needed.throughput_tflops:.0f} TFLOPS "
            f"(best {best.throughput_tflops:.0f} at {int(best.stages)}).")
    if needed.cycles_per_kblock != needed.cycles_per_kblock:
        return text
    if fewer is not None:
        text += (f" With {int(fewer.stages)} a k-block took {fewer.cycles_per_kblock:.0f} cycles and the consumers "
                 f"waited {fewer.full_wait_cycles_per_tile / 1e3:.0f}k cycles per tile on full slots; with {s}, "
                 f"{needed.cycles_per_kblock:.0f} and {needed.full_wait_cycles_per_tile / 1e3:.0f}k.")
    ratio = needed.cycles_per_kblock / ideal
    if ratio <= TENSOR_BOUND:
        return text + (f" There a k-block is {ratio:.2f} x the tensor cores' {ideal:.0f} cycles and the producer waits "
                       f"{needed.empty_wait_cycles_per_tile / 1e3:.0f}k cycles per tile for an empty slot: the ring "
                       "runs ahead of the tensor cores, so more stages cannot help.")
    deeper = more[more.cycles_per_kblock.notna()]
    return text + (f" There a k-block is still {ratio:.2f} x the tensor cores' {ideal:.0f} cycles while both sides "
                   f"wait (full {needed.full_wait_cycles_per_tile / 1e3:.0f}k, empty "
                   f"{needed.empty_wait_cycles_per_tile / 1e3:.0f}k cycles per tile): every slot is a copy in flight"
                   + (f", and {', '.join(str(int(v)) for v in deeper.stages)} stages did no better than "
                      f"{deeper.cycles_per_kblock.min():.0f} cycles per k-block: the copies' throughput, not their "
                      "number, bounds this tile." if len(deeper) else "; no deeper ring was measured."))


def _pair_sentence(what: str, pairs) -> list[str]:
    out = []
    for a, b in pairs:
        per_cycle = (b.throughput_tflops / b.clock_mhz) / (a.throughput_tflops / a.clock_mhz)
        text = (f"{what} on {config_label(a.case)} at {a.problem}: "
                f"{a.throughput_tflops:.0f} -> {b.throughput_tflops:.0f} "
                f"TFLOPS (x{b.throughput_tflops / a.throughput_tflops:.3f}; per cycle x{per_cycle:.3f})")
        if a.library_fraction == a.library_fraction and b.library_fraction == b.library_fraction:
            text += f", of cuBLAS {a.library_fraction:.3f} -> {b.library_fraction:.3f}"
        if what.startswith("The TMA-store") and a.epilogue_cycles_per_tile == a.epilogue_cycles_per_tile:
            text += (f"; the epilogue took {a.epilogue_cycles_per_tile:.0f} -> {b.epilogue_cycles_per_tile:.0f} "
                     "cycles per tile")
        elif a.cycles_per_kblock == a.cycles_per_kblock:
            text += (f"; a k-block {a.cycles_per_kblock:.0f} -> {b.cycles_per_kblock:.0f} cycles, the consumers' "
                     f"wait on a full slot {a.full_wait_cycles_per_tile:.0f} -> {b.full_wait_cycles_per_tile:.0f} "
                     "per tile")
        out.append(text + ".")
    return out


def _library_sentence(best: pd.DataFrame) -> str:
    parts = [f"{r.shape_label} {r.series}: {r.library_fraction:.3f}" for r in
             best.sort_values(["dtype", "flops", "m"]).itertuples()]
    losing = best[best.library_fraction < 1.0]
    verdict = ("cuBLAS wins at " + ", ".join(f"{r.shape_label} {r.series} ({1 / r.library_fraction - 1:.1%} faster; "
                                             f"our best there: {config_label(r.case)})" for r in losing.itertuples())
               if len(losing) else "cuBLAS wins at none of them")
    return f"The best pipeline against cuBLAS, round by round: {'; '.join(parts)}. {verdict}."


def findings(ctx) -> list:
    """The site's GEMM findings: stages and the library (below), then the worklog's figures by their protocol."""
    return _stages_findings(ctx) + protocol_findings(ctx)


def protocol_findings(ctx) -> list:
    """Per GPU model, its newest run of the gemm-protocol suite (a case with a burst): the worklog's figures (its
    H100 SXM, 4096^3) beside ours and cuBLAS by protocol and inputs, each figure's verdict in MHz and watts."""
    from types import SimpleNamespace

    from sqlalchemy.exc import SQLAlchemyError

    import harness.families.gemm.protocol as protocol
    from harness.families.gemm.worklog import max_clock
    from harness.paper import DEFAULT_TOLERANCE

    latest = ctx.latest[ctx.latest.family == "gemm"]
    bursts = latest[latest.case_id.str.endswith(".burst")]
    if bursts.empty:
        return []
    try:
        refs = ctx.store.query(f"""SELECT source, case_id, m, metric, value, notes FROM reference_figures
                                   WHERE source = '{protocol.SOURCE}'""")
    except SQLAlchemyError:
        return []
    figures = protocol.published(refs)
    panels, text = {}, []
    for gpu, part in sorted(bursts.groupby("gpu_name")):
        run_id = int(part.run_id.max())
        found = protocol.table(latest[latest.run_id == run_id])
        if found.empty:
            continue
        panels[gpu] = (found, figures)
        top = max_clock(SimpleNamespace(store=ctx.store, run_id=run_id))
        for figure in figures:
            verdict, why = protocol.verdict(figure, found, top, DEFAULT_TOLERANCE)
            text.append(f"{gpu} (run {run_id}): the worklog's {figure.label}, {figure.value:.0f} TFLOPS: "
                        f"{verdict or 'not judged'} ({why}).")
    if not panels:
        return []
    path = protocol.figure(ctx.directory / "gemm_protocol.png", panels)
    return [("Do the worklog's GEMM figures hold, by their protocol?", text + [
        "The seed worklog times one batch of 8 launches after 5 s idle on normal(0, 1) inputs; the project, sustained "
        "rounds at the power cap. Suite gemm-protocol runs the best f16 pipeline and cuBLAS both ways on normal, "
        "integer and zero inputs (docs/gemm.md)."], path)]


LIBRARY_QUESTION = "Where does cuBLAS still win? The best GEMM pipeline against the library by size"
STAGES_QUESTION = "How many stages does a GEMM tile need?"


def _stages_findings(ctx) -> list:
    """The results site's question for GEMM (harness/analysis/site.py), and a report's first bullets. First (issue
    46, item 4) one figure and one table: ours against the library by size and dtype on each GPU, naming the
    configuration shown; then how many stages each tile needs on each GPU and why, and what the TMA store and
    multicast buy. From the newest measurements of every GPU model (or one run's)."""
    latest = ctx.latest[ctx.latest.family == "gemm"]
    if latest.empty:
        return []
    wide = case_frame(latest, ("gpu_name", "case_id"), library_rounds(ctx.store, latest))
    if wide.empty:
        return []
    text, per_gpu, rows, library, bests = [], {}, [], [], []
    profile = worklog_profile(ctx.store)
    for gpu, part in wide.groupby("gpu_name"):
        pipes = pipeline_rows(part)
        best = best_by_problem(pipes[pipes.library_fraction.notna()])
        if len(best):
            library.append(f"{gpu}: {_library_sentence(best)}")
            bests.append(best.assign(gpu=gpu, series=gpu + " " + best.series))
        main = main_problem(pipes)
        sweeps = [(label, g) for label, g in stage_sweeps(pipes) if g.problem.iloc[0] == main]
        if sweeps:
            per_gpu[gpu] = sweeps
            text += [f"{gpu}, {main}: " + _stage_sentence(label, g) for label, g in sweeps]
            for label, g in sweeps:
                found = stages_needed(g)
                rows.append({"gpu": gpu, "problem": main, "tile": label, "stages needed": int(found["needed"].stages),
                             "TFLOPS there": found["needed"].throughput_tflops,
                             "best stages": int(found["best"].stages), "best TFLOPS": found["best"].throughput_tflops,
                             "cycles per k-block there": found["needed"].cycles_per_kblock,
                             "tensor cores alone": ideal_kblock(found["needed"].case)})
        for bought in (_pair_sentence("The TMA-store epilogue", pairs_differing(pipes, "epilogue", "regs", "tmastore")),
                       _pair_sentence("Multicast (a cluster of 2 sharing B)", pairs_differing(pipes, "cluster", 1, 2))):
            if bought:  # a paragraph each (one of both ran past 2000 characters)
                text.append(f"{gpu}: " + " ".join(bought))
        text += [f"{gpu}: {line}" for line in worklog_observations(pipes, profile)]
    if not per_gpu:  # no stage sweep (a quick run): the library's figure answers, with what the pairs say
        sections = _library_sections(ctx, library + text, bests)
        return sections or ([(STAGES_QUESTION, text, None)] if text else [])
    sections = _library_sections(ctx, library, bests)
    if text:
        text.append("Stages: the smallest count within 2 % of the tile's best TFLOPS, its why from the in-kernel "
                    "counters (cycles per k-block against the tensor cores' 2 BM BN 64 / 4096, the consumers' waits "
                    "on full slots, the producer's on empty ones); pairs: cases that differ in that alone.")
        path = ctx.directory / "gemm_stages_needed.png"
        figure_stages_needed(path, per_gpu)
        sections += [(STAGES_QUESTION, text, path),
                     ("GEMM: stages each tile needs, in numbers", [], pd.DataFrame(rows).round(2))]
    return sections


def _library_sections(ctx, library: list[str], bests: list[pd.DataFrame]) -> list:
    """Ours against the library: one figure (the best pipeline's ratio by problem and dtype, a bar per GPU) and one
    table naming each bar's configuration, with the rounds' spread, the per-cycle peak fraction and the clock."""
    if not bests:
        return []
    best = pd.concat(bests, ignore_index=True)
    path = ctx.directory / "gemm_library_fraction.png"
    figure_sizes(path, best, "GEMM pipelines: the best against cuBLAS (newest measurements)")
    table = best.sort_values(["gpu", "dtype", "flops", "m"])[
        ["gpu", "shape_label", "dtype", "case", "case_id", "throughput_tflops", "library_fraction", "library_p10",
         "library_p90", "peak_fraction", "clock_mhz"]]
    table = table.assign(case=[config_label(c) for c in table.case]).rename(columns={
        "shape_label": "problem", "case": "configuration", "throughput_tflops": "TFLOPS",
        "library_fraction": "of cuBLAS", **ROUND_COLUMNS,
        "peak_fraction": "of the peak per cycle", "clock_mhz": "SM MHz"})
    note = ("Each bar is the pipeline case of the highest library_fraction at that problem (the table names it): our "
            "rate over the library's on the same inputs, round by round (cuBLAS: cublasGemmEx for f16 and bf16, "
            "cuBLASLt for e4m3); below 1.0 the library wins. p10 and p90: the 10th and 90th percentiles of the ratio "
            "over the rounds; of the peak per cycle, the tensor cores' dense peak at the clock measured in the kernel.")
    return [(LIBRARY_QUESTION, [*library, note], path),
            ("GEMM: ours against cuBLAS, in numbers", [],
             table.round(3).dropna(axis=1, how="all").reset_index(drop=True).rename_axis(columns=None))]
