"""The GEMM planner scored out of sample over the runs of record (issue 44, item 3): for every pair (fit run, scored
run) that makes sense, the planner fitted to the fit run (fitting.fit: nothing of the scored run enters it) predicts
each pipeline case of the scored run at the clock that case measured (the throughput miss, |measured / predicted - 1|),
and ranks each shape's measured cases at the fit's clock (top-1 regret: the measured loss of its first pick against
the best measured case of the shape, its dtype, sizes and scaling; where several cases tie for the first place, TIE in advice.py, the worst of them,
since the model cannot tell them apart).

Pairs: `nearest`, what `bench model --run N` does by default (score_run: the nearest other run of the same GPU model
whose fit predicts N); `same`, every other run of the same GPU model; `other`, every run of the other GPU model (the
scored GPU's datasheet rates, transfer()). A fit run counts where it holds at least MIN_FIT pipeline cases (a run of a
few cases leaves most parameters at the prior's).

    python scripts/planner_out_of_sample.py [--db results.db] [--only record] [--fits 107,108] [--pairs nearest,other]
        [--cases out.csv] [--worst 10]

Read-only on the database. Prints one line per pair, then the pooled figures per kind of pair, then the worst cases.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict

import numpy as np
import pandas as pd

MIN_FIT = 12
# The GEMM runs of record (issue 44): gemm-full on both GPUs (107 H200, 108 H100), fp8 (111, 124-126, 133, 149, 150),
# shapes and skinny (132, 134-136, 139 H100; 141 H200), nvMatmulHeuristics' picks (128)
RECORD = (107, 108, 111, 124, 125, 126, 128, 132, 133, 134, 135, 136, 139, 141, 149, 150)


def pipeline_runs(store) -> dict[int, str]:
    """{run: GPU name} of every run holding GEMM pipeline cases (gemm.*)."""
    rows = store.query("SELECT DISTINCT m.run_id AS run, d.name AS gpu FROM measurements m JOIN cases c ON c.id = m.case_pk "
                       "JOIN runs r ON r.id = m.run_id LEFT JOIN devices d ON d.id = r.device_id "
                       "WHERE c.family = 'gemm' AND c.case_id LIKE 'gemm.%'")
    return {int(r): g for r, g in zip(rows.run, rows.gpu)}


def gemm_rows(store, run: int) -> pd.DataFrame:
    from harness.analysis.models import measured  # (run_rows.measured, as score_run reads a run)

    frame = measured(store, run)
    return frame[frame.family == "gemm"]


def score(fit_report, rows: pd.DataFrame, gpu: str, fit_run: int) -> tuple[list[dict], list[dict]]:
    """(per case: measured, predicted at its clock, miss; per shape: top-1 regret) of `rows` predicted by the fit."""
    from harness.families.gemm.advice import TIE
    from harness.families.gemm.ids import parse
    from harness.families.gemm.model import predict_case
    from harness.families.gemm.planner import GemmModel

    report = GemmModel().transfer(fit_report, rows, gpu, f"run {fit_run}")
    if report is None:
        return [], []
    cases, shapes = [], defaultdict(list)
    p = report.params
    for r in report.residual_rows:
        if r["metric"] != "throughput_tflops":
            continue
        case = parse(r["case_id"])
        miss = r["measured"] / r["fitted"] - 1
        cases.append({"case_id": r["case_id"], "measured": r["measured"], "predicted": r["fitted"], "miss": miss,
                      "bound": r["bound"]})
        ranked = predict_case(case, p).flops_per_cycle_sm  # at the fit's clock: what a plan ranks by
        # a shape is a problem: its dtype, sizes and scaling (block-scaled fp8 computes another product)
        shapes[(case.dtype, case.m, case.n, case.k, case.scaling)].append((ranked, r["measured"], r["case_id"]))
    regrets = []
    for shape, entries in shapes.items():
        if len(entries) < 2:
            continue
        best_pred = max(e[0] for e in entries)
        best = max(e[1] for e in entries)
        tied = [e for e in entries if e[0] >= best_pred * (1 - TIE)]
        pick = min(tied, key=lambda e: e[1])
        regrets.append({"shape": "{}.{}x{}x{}".format(*shape[:4]) + (".blockscale" if shape[4] == "block" else ""), "cases": len(entries), "tied": len(tied),
                        "regret": 1 - pick[1] / best, "pick": pick[2]})
    return cases, regrets


def evaluate(store, kinds=("nearest", "same", "other"), only=None, fits=None, scored=None):
    """(every (pair, case) row, every (pair, shape) top-1 regret, a line per pair, the number of fits) over the runs
    with pipeline cases (`only`: those of them; `fits`: the runs the `same` and `other` pairs fit; `scored`: the runs
    scored)."""
    from harness.analysis.models import fit_runs_for
    from harness.families.gemm.planner import GemmModel

    runs = pipeline_runs(store)
    if only:
        runs = {r: g for r, g in runs.items() if r in only}
    rows = {r: gemm_rows(store, r) for r in runs}
    npipe = {r: int(f[f.case_id.str.startswith("gemm.")].case_id.nunique()) for r, f in rows.items()}
    fitted_runs: dict[int, object] = {}

    def fitted(run: int):
        if run not in fitted_runs:
            fitted_runs[run] = GemmModel().fit(rows[run], runs[run], f"fitted to run {run}")
        return fitted_runs[run]

    pairs = []  # (kind, fit run, scored run)
    for s in sorted(runs) if not scored else scored:
        if "nearest" in kinds:
            # score_run's choice (the first of its three tries whose fit predicts), among the runs considered
            for other in [r for r in fit_runs_for(store, s, "gemm") if r in runs][:3]:
                if fitted(other) is not None:
                    pairs.append(("nearest", other, s))
                    break
        for f in sorted(runs) if not fits else fits:
            if f == s or f not in runs or npipe[f] < MIN_FIT:
                continue
            kind = "same" if runs[f] == runs[s] else "other"
            if kind in kinds:
                pairs.append((kind, f, s))
    per_case, per_shape, lines = [], [], []
    for kind, f, s in pairs:
        report = fitted(f)
        if report is None:
            continue
        cases, regrets = score(report, rows[s], runs[s], f)
        if not cases:
            continue
        misses = np.abs([c["miss"] for c in cases])
        regret = [g["regret"] for g in regrets]
        lines.append(f"{kind:8s} fit {f:4d} -> run {s:4d} ({runs[s][:11]:11s}) {len(cases):3d} cases: median "
                     f"{100 * np.median(misses):5.1f} %, worst {100 * misses.max():5.1f} %"
                     + (f"; {len(regret)} shapes, top-1 regret median {100 * np.median(regret):4.1f} %, worst "
                        f"{100 * max(regret):4.1f} %" if regret else ""))
        per_case += [{"kind": kind, "fit": f, "run": s, "gpu": runs[s], **c} for c in cases]
        per_shape += [{"kind": kind, "fit": f, "run": s, **g} for g in regrets]
    return pd.DataFrame(per_case), pd.DataFrame(per_shape), lines, len(fitted_runs)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", default="results.db")
    parser.add_argument("--pairs", default="nearest,same,other", help="kinds of pair: nearest, same, other")
    parser.add_argument("--cases", help="write every (pair, case) row here (CSV)")
    parser.add_argument("--shapes", help="write every (pair, shape) top-1 regret here (CSV)")
    parser.add_argument("--worst", type=int, default=12, help="the worst cases of the nearest pairs to list")
    parser.add_argument("--runs", help="score only these runs (comma-separated)")
    parser.add_argument("--only", help="fit and score only these runs (comma-separated; `record`: the runs of record "
                                       f"{','.join(map(str, RECORD))})")
    parser.add_argument("--fits", help="the `same` and `other` pairs fit only these runs (comma-separated), e.g. "
                                       "107,108: the gemm-full runs of record of each GPU")
    args = parser.parse_args(argv)
    kinds = set(args.pairs.split(","))

    from harness.db.store import Store

    started = time.time()
    with Store.open(args.db, read_only=True) as store:
        only = None
        if args.only:
            only = RECORD if args.only == "record" else tuple(int(r) for r in args.only.split(","))
        cases, shapes, lines, fitted = evaluate(
            store, kinds, only=only, fits=None if not args.fits else [int(r) for r in args.fits.split(",")],
            scored=None if not args.runs else [int(r) for r in args.runs.split(",")])
    print("\n".join(lines))
    print("\npooled (every case of every pair of the kind):")
    for kind in ("nearest", "same", "other"):
        c = cases[cases.kind == kind] if len(cases) else cases
        if c.empty:
            continue
        g = shapes[shapes.kind == kind] if len(shapes) else shapes
        a = c.miss.abs()
        print(f"  {kind:8s} {len(c):5d} cases, {c[['fit', 'run']].drop_duplicates().shape[0]:4d} pairs: median "
              f"{100 * a.median():4.1f} %, 90th {100 * a.quantile(0.9):4.1f} %, worst {100 * a.max():5.1f} %; within "
              f"10 %: {100 * (a <= 0.10).mean():4.1f} % of cases"
              + (f"; top-1 regret over {len(g)} shapes: median {100 * g.regret.median():.1f} %, mean "
                 f"{100 * g.regret.mean():.1f} %, worst {100 * g.regret.max():.1f} %, <= 2 %: "
                 f"{100 * (g.regret <= 0.02).mean():.0f} %" if len(g) else ""))
    near = cases[cases.kind == "nearest"] if len(cases) else cases
    if len(near) and args.worst:
        print(f"\nworst {args.worst} cases of the nearest pairs (miss = measured / predicted - 1):")
        worst = near.assign(a=near.miss.abs()).sort_values("a", ascending=False).head(args.worst)
        for _, r in worst.iterrows():
            print(f"  {r.fit:4d} -> {r.run:4d} {100 * r.miss:+6.1f} %  {r.bound:12s} {r.case_id}")
        g = shapes[shapes.kind == "nearest"] if len(shapes) else shapes
        bad = g[g.regret > 0.02].sort_values("regret", ascending=False)
        if len(bad):
            print("\nshapes of the nearest pairs whose first pick loses more than 2 %:")
            for _, r in bad.iterrows():
                print(f"  {r.fit:4d} -> {r.run:4d} {100 * r.regret:5.1f} % ({r.tied} tied of {r.cases}) {r['shape']}: "
                      f"{r.pick}")
    if args.cases:
        cases.to_csv(args.cases, index=False)
    if args.shapes:
        shapes.to_csv(args.shapes, index=False)
    print(f"\n{fitted} fits, {len(lines)} pairs, {time.time() - started:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
