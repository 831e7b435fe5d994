"""`bench gemm` (issue 44, item 1): any problem on the GPU. For each shape the planner's first `top` configurations
(the ranking `bench plan` gives) and the library (cuBLAS; cuBLASLt for fp8), with any case the user names, measured in
one run (suite label `gemm-shape`); then the ranking the planner predicted beside what the run measured.

Everything a bad input can be is refused here, in one line, before the database is touched: a shape's text, a
dimension out of 1..MAX_DIM, a dtype the family lacks, a shape no configuration tiles, a shapes file that is not
one `M,N,K[,dtype]` a line, a shape whose buffers exceed the GPU's memory (memory_bytes, against DeviceInfo's)."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path

from harness.errors import SpecError
import harness.families.gemm.cases as _cases
import harness.families.gemm.configs as _configs
import harness.families.gemm.ids as _ids
from harness.families.gemm.model import predict_case

LABEL = "gemm-shape"  # the run's suite label (its filter: the case ids, which `bench run --resume` reads back)
TOP = 5
TIE = 5e-4  # advice.TIE: predictions this close share a rank
SHAPE_HELP = "M,N,K[,dtype]"


@dataclass(frozen=True)
class Shape:
    m: int
    n: int
    k: int
    dtype: str

    @property
    def label(self) -> str:
        return f"{self.m}x{self.n}x{self.k} {self.dtype}"


def parse_shape(text: str, dtype: str = "f16", where: str = "--shape") -> Shape:
    """`M,N,K[,dtype]` (spaces allowed around the commas); the dtype defaults to `dtype`."""
    fields = [f.strip() for f in text.split(",")]
    if len(fields) not in (3, 4) or not all(re.fullmatch(r"-?[0-9]+", f) for f in fields[:3]):
        raise SpecError(f"{where} {text.strip()!r}: expected {SHAPE_HELP}, M, N and K whole numbers "
                        f"(e.g. 4096,14336,4096,bf16)")
    shape = Shape(*(int(f) for f in fields[:3]), fields[3].lower() if len(fields) == 4 else dtype)
    for name in ("m", "n", "k"):
        value = getattr(shape, name)
        if not 1 <= value <= _cases.MAX_DIM:
            raise SpecError(f"{where} {text.strip()!r}: {name.upper()} = {value}: expected 1..{_cases.MAX_DIM}")
    if shape.dtype not in _cases.DTYPES:
        raise SpecError(f"{where} {text.strip()!r}: dtype {shape.dtype!r}: expected one of {', '.join(_cases.DTYPES)}")
    return shape


def read_shapes(path: str | Path, dtype: str = "f16") -> list[Shape]:
    """A file of shapes, one `M,N,K[,dtype]` a line; `#` starts a comment, blank lines are skipped."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise SpecError(f"--shapes {path}: not a text file (expected one {SHAPE_HELP} a line)") from None
    shapes = [parse_shape(line.split("#", 1)[0], dtype, f"--shapes {path} line {number}:")
              for number, line in enumerate(text.splitlines(), 1) if line.split("#", 1)[0].strip()]
    if not shapes:
        raise SpecError(f"--shapes {path}: no shapes in it (expected one {SHAPE_HELP} a line, # for comments)")
    return shapes


def candidates(shape: Shape, placement: str = "warm") -> list[_cases.GemmCase]:
    """Every configuration the family can run for the shape (configs.configurations: a shape that is not a whole
    number of a configuration's tiles leaves it out), its inputs placed as asked (cases.PLACEMENTS); none is one
    line."""

    found = [replace(case, placement=placement)
             for case in _configs.configurations(shape.dtype, shape.m, shape.n, shape.k)]
    if not found:
        raise SpecError(f"{shape.label}: no pipeline configuration tiles it: M, N and K must be multiples of a tile "
                        f"({', '.join(f'{a}x{b}' for a, b in _cases.TILES)}; M of twice it for a cluster of 2) and K "
                        f"of {_cases.bk_for(shape.dtype)}")
    return found


def memory_bytes(case: _cases.GemmCase | _cases.LibraryCase, l2_bytes: int = 0) -> int:
    """What the family allocates on the GPU for a case's measured problem at once (gpu.attach and its verify): A and
    B, C and the reference C (and cuBLASLt's C for fp8), then the check's f32 copies of both Cs, its bound, their
    difference and the mask; fp8 adds A and B as f16 (cuBLAS's inputs) and, for the exact product, A and B as f64,
    |B| and the product, its sums of |products| and the bound in f64. The library alone (gpu.attach_library): A, B
    and C. A cold placement adds its copies of A, B and C (problem.placement_copies, for an L2 of `l2_bytes`)."""
    from harness.families.gemm.problem import footprint_bytes, placement_copies

    mn, mk_nk, elem = case.m * case.n, (case.m + case.n) * case.k, case.in_bytes
    more = (placement_copies(case, l2_bytes) - 1) * footprint_bytes(case)
    if isinstance(case, _cases.LibraryCase):
        return mk_nk * elem + mn * 2 + more
    if not case.promote:
        return mk_nk * elem + mn * (2 + 2 + 4 + 4 + 4 + 4 + 1) + more
    return mk_nk * (elem + 2 + 8) + case.n * case.k * 8 + mn * (2 + 2 + 2 + 4 + 8 + 8 + 8 + 8 + 1) + more


def check_memory(cases: list[_cases.GemmCase], device) -> None:
    """Refuses (one line) a case whose buffers (memory_bytes) exceed the GPU's memory (DeviceInfo)."""
    total = device.total_memory_bytes
    for case in cases:
        need = memory_bytes(case, device.l2_bytes)
        if total and need > total:
            raise SpecError(f"{case.dtype} {case.m}x{case.n}x{case.k}: A, B, C and the reference buffers the family "
                            f"allocates take {need / 2**30:.1f} GiB, more than the {total / 2**30:.1f} GiB of "
                            f"{device.name}")


def check_memory_before_planning(shapes: dict[Shape, list[_cases.GemmCase]], device) -> None:
    """check_memory's refusal where the planner's ranking cannot change it, before the ranking (a shape of 65536^2
    took seconds to rank, to be refused): the shapes in the run's order, each of whose candidates and library fit
    passed over, the first whose candidates all need the same bytes, more than the GPU's, refused as check_memory
    refuses its first case (its top k lead the run's cases after the shapes before it). Any other shape ends the
    look: which of its cases comes first is the ranking's."""
    total = device.total_memory_bytes
    if not total:
        return
    for shape, found in shapes.items():
        library = _configs.library(shape.dtype, (shape.m, shape.n, shape.k), placement=found[0].placement)
        needs = {memory_bytes(case, device.l2_bytes) for case in found}
        if max(needs | {memory_bytes(library, device.l2_bytes)}) <= total:
            continue
        if len(needs) == 1 and needs.pop() > total:
            check_memory(found[:1], device)
        return


@dataclass
class Planned:
    """A run's cases with what the planner said of each pipeline case: (rank or None, prediction)."""
    cases: list[_cases.GemmCase]
    predicted: dict[str, tuple[int | None, object]]
    params: object


def plan(shapes: dict[Shape, list[_cases.GemmCase]], named: list[_cases.GemmCase], params, top: int = TOP) -> Planned:
    """For each shape (with its candidates) the first `top` by predicted throughput and the library; then each named
    case (with its problem's library), ranked where it is among its shape's candidates."""
    cases, predicted = [], {}
    for shape, found in shapes.items():
        ranked = _ranked(found, params, predicted)
        cases += ranked[:top] + [_configs.library(shape.dtype, (shape.m, shape.n, shape.k),
                                                  placement=found[0].placement)]
    for case in named:
        if isinstance(case, _cases.GemmCase):  # (the library's call has no prediction)
            if case.case_id not in predicted:
                _ranked(_configs.configurations(case.dtype, case.m, case.n, case.k), params, predicted)
            if case.case_id not in predicted:
                try:
                    predicted[case.case_id] = (None, predict_case(case, params))
                except Exception:  # noqa: BLE001  (a configuration the model has no term for: measured, not predicted)
                    predicted[case.case_id] = (None, None)
        cases += [case, _configs.library(case.dtype, (case.m, case.n, case.k), scaling=case.scaling,
                                         placement=case.placement)]
    return Planned(list(dict.fromkeys(cases)), predicted, params)


def _configuration(case: _cases.GemmCase | _cases.LibraryCase) -> dict[str, object]:
    """A row's configuration columns: the pipeline's, or the library's name in the tile's place."""
    if isinstance(case, _cases.LibraryCase):
        return {"tile": case.anchor.library, "stages": None, "wg": None, "cluster": None, "split": None, "grid": None,
                "epilogue": None, "promotion": None}
    return {"tile": f"{case.bm}x{case.bn}x{case.bk}", "stages": case.stages, "wg": case.consumers,
            "cluster": case.cluster, "split": case.splits,
            "grid": ("persistent-" if case.persistent else "grid-") + case.order,
            "epilogue": case.epilogue, "promotion": case.promotion if case.promote else None}


def _ranked(found: list[_cases.GemmCase], params, predicted: dict) -> list[_cases.GemmCase]:
    """`found` by predicted throughput, best first; each case's (rank, prediction) into `predicted` (ties, within
    TIE, share a rank, as in `bench plan`)."""
    ranked = sorted(((predict_case(c, params), c) for c in found), key=lambda pc: -pc[0].flops_per_cycle_sm)
    rank = 0
    for i, (prediction, case) in enumerate(ranked):
        if i == 0 or prediction.flops_per_cycle_sm < ranked[i - 1][0].flops_per_cycle_sm * (1 - TIE):
            rank = i + 1
        predicted[case.case_id] = (rank, prediction)
    return [case for _, case in ranked]


def ranking(planned: Planned, results, fit=None):
    """The table: per case of the run, its rank predicted, configuration, predicted TFLOPS (at the clock the run
    measured it at), measured TFLOPS and the bytes of A, B and C a second that makes, library_fraction and the miss (measured / predicted - 1); with a fit, what of
    each case the fit never saw (`out of fit`)."""
    import pandas as pd

    from harness.families.gemm.advice import _unseen
    from harness.families.gemm.fitting import measured_throughputs
    from harness.families.gemm.model import predict_case
    from harness.families.gemm.problem import footprint_bytes

    params = planned.params
    seen = [_ids.parse(cid) for cid in measured_throughputs(fit)] if fit is not None else []
    rows = []
    for result in results:
        case = result.case
        values = {m.name: m for m in result.metrics if m.value is not None}
        tflops = values.get("throughput_tflops")
        measured = tflops.value if tflops is not None and result.valid else None
        rank, prediction = planned.predicted.get(case.case_id, (None, None))
        clock = (tflops.sm_clock_mhz if tflops is not None else None) or params.clock_mhz or 1500.0
        # predicted again at that clock: the memory's part of a k-block is in seconds, not cycles, so a prediction
        # made at the prior's clock and rescaled would be off where B's bytes bound the problem (skinny M)
        expected = predict_case(case, params, clock).tflops(params.sm_count, clock) if prediction is not None else None
        fraction = values.get("library_fraction")
        pipeline = isinstance(case, _cases.GemmCase)
        rows.append({
            "shape": f"{case.m}x{case.n}x{case.k}", "dtype": case.dtype, "rank": rank, **_configuration(case),
            "predicted": None if expected is None else round(expected, 1),
            "measured": None if measured is None else round(measured, 1),
            # A and B read and C written once a call, at the measured rate: against the memory's, for skinny shapes
            "GB/s": None if measured is None else round(footprint_bytes(case) * measured * 1e3 / case.flops),
            "library_fraction": fraction.value if fraction is not None and result.valid else None,
            "miss": None if measured is None or not expected else f"{measured / expected - 1:+.1%}",
            **({"out of fit": _unseen(case, seen) if pipeline else ""} if fit is not None else {}),
            "status": result.status, "case_id": case.case_id})
    frame = pd.DataFrame(rows)
    if frame.promotion.isna().all():
        frame = frame.drop(columns="promotion")
    if not (frame.split > 1).any():  # split-K: shown where a case has it
        frame = frame.drop(columns="split")
    return frame
