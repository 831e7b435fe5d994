"""The GEMM planner at decode shapes, out of sample (issue 44, item 3; docs/gemm.md, The planner, "Decode shapes"): the
H200 decode runs (208-210, 213-216) scored by the prior (an H100 fit with the H200's datasheet), by fits to some of them
(each scoring the others) and by the H100's decode fits (134, 136; transfer), |measured / predicted - 1| at each case's
clock; then the top-1 regret over the decode shapes, each case's median TFLOPS over the cold runs 208, 210, 213, 215 and
216, among the cases the planner can choose (configs.configurations: the tight box where M is below a tile's rows).

    python scripts/planner_decode.py [--db results.db] [--cases out.csv] [--shapes]

Read-only on the database; reuses scripts/planner_out_of_sample.py's scoring.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

DECODE = (208, 209, 210, 213, 214, 215, 216)
GROUPS = {  # (fit runs, scored runs); None: the prior
    "the prior -> 208-216": ((None,), DECODE),
    "208, 213, 214 -> 215, 216": ((208, 213, 214), (215, 216)),
    "215, 216 -> 208, 213, 214": ((215, 216), (208, 213, 214)),
    "209, 210 (warm) -> 215, 216": ((209, 210), (215, 216)),
    "H100 134, 136 -> 208, 213, 215, 216": ((134, 136), (208, 213, 215, 216)),
}
POOL = (208, 210, 213, 215, 216)  # the cold runs, pooled for the regret


def _oos():
    spec = importlib.util.spec_from_file_location("planner_out_of_sample", Path(__file__).with_name("planner_out_of_sample.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", default="results.db")
    parser.add_argument("--cases", help="write every (group, fit, run, case) row here (CSV)")
    parser.add_argument("--shapes", action="store_true", help="print each shape's pick and regret")
    args = parser.parse_args(argv)
    from harness.db.store import Store
    from harness.families.gemm.advice import TIE
    from harness.families.gemm.fitting import FitReport, pipeline_table
    from harness.families.gemm.ids import parse
    from harness.families.gemm.model import predict_case
    from harness.families.gemm.planner import GemmModel

    oos = _oos()
    rows = []
    with Store.open(args.db, read_only=True) as store:
        gpus = oos.pipeline_runs(store)
        frames = {r: oos.gemm_rows(store, r) for r in set(DECODE) | {134, 136}}
        prior = GemmModel().prior("NVIDIA H200")
        fits = {None: FitReport(prior.gpu, prior, [])}
        for name, (fit_runs, scored) in GROUPS.items():
            for f in fit_runs:
                if f not in fits:
                    fits[f] = GemmModel().fit(frames[f], gpus[f], f"fitted to run {f}")
                for s in scored:
                    cases, _ = oos.score(fits[f], frames[s], gpus[s], f or 0)
                    rows += [{"group": name, "fit": f or 0, "run": s, **c} for c in cases]
        tables = {r: pipeline_table(frames[r]) for r in POOL}
    cases = pd.DataFrame(rows)
    cases["in_space"] = [not (c.m < c.bm and not c.tight_a) for c in map(parse, cases.case_id)]
    print("|miss| median / 90th / worst (cases): all; the planner's space (no full box below a tile's rows)")
    for name, g in cases.groupby("group", sort=False):
        a, b = g.miss.abs(), g[g.in_space].miss.abs()
        print(f"  {name:38s} {100 * a.median():4.1f} / {100 * a.quantile(.9):4.1f} / {100 * a.max():4.1f} % ({len(a)}); "
              f"{100 * b.median():4.1f} / {100 * b.quantile(.9):4.1f} / {100 * b.max():4.1f} % ({len(b)})")
    measured = pd.concat([t.throughput_tflops.rename(r) for r, t in tables.items()], axis=1).median(axis=1)
    shapes: dict[tuple, list] = {}
    for cid, tflops in measured.items():
        c = parse(cid)
        if c.m < c.bm and not c.tight_a:
            continue
        shapes.setdefault((c.dtype, c.m, c.n, c.k), []).append((cid, tflops, c))
    for name, p in (("the prior", prior),) + tuple((f"fit {f}", fits[f].params) for f in (208, 213, 215, 134)):
        p = replace(p, flops_per_cycle=prior.flops_per_cycle, hbm_gbps=prior.hbm_gbps, sm_count=prior.sm_count)
        regrets = []
        for shape, entries in sorted(shapes.items()):
            if len(entries) < 2:
                continue
            ranked = [predict_case(c, p).flops_per_cycle_sm for _, _, c in entries]
            tied = [e for e, r in zip(entries, ranked) if r >= max(ranked) * (1 - TIE)]
            pick = min(tied, key=lambda e: e[1])
            regrets.append(1 - pick[1] / max(e[1] for e in entries))
            if args.shapes:
                print(f"    {name} {shape}: {len(entries)} cases, {len(tied)} tied, regret {100 * regrets[-1]:.1f} %, {pick[0]}")
        print(f"top-1 regret, {name}: {len(regrets)} shapes, median {100 * np.median(regrets):.1f} %, mean "
              f"{100 * np.mean(regrets):.1f} %, worst {100 * max(regrets):.1f} %")
    if args.cases:
        cases.to_csv(args.cases, index=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
