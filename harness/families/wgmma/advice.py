"""`bench advise swapab` (Family.advisors): issue C = A.B^T with a small m directly, or swapped, by the
model of model.py with a datasheet's or a run's fitted parameters."""

from __future__ import annotations

from harness.families.base import AdviceOption, Advisor
import harness.families.wgmma.model as perfmodel

DEFAULT_GPU = "H100 SXM5"


def _swapab(values: dict, fit, gpu: str | None) -> list[str]:
    params = fit.params_for("f16") if fit is not None else perfmodel.datasheet(gpu or DEFAULT_GPU)
    m, n, k, operands = values["m"], values["n"], values["k"], values["operands"]
    advice = perfmodel.swapab(m, n, k, params, operands=operands)
    lines = [f"C = A.B^T, m={m} n={n} k={k}, f16 {operands}, model of {params.gpu} ({params.source}):"]
    for choice in (advice.direct, advice.swapped):
        lines.append(f"  {choice.name:<8} {choice.count} x wgmma {choice.instruction}: {choice.cycles:g} cycles "
                     f"({choice.bound} bound)")
    lines.append(f"  -> {advice.recommendation} (direct / swapped = {advice.speedup:.2f})")
    return lines


SWAPAB = Advisor(
    "swapab",
    f"""C = A.B^T with a small m: issue wgmma directly (M = m, padded to 64) or swapped (C^T = B.A^T)?
    Parameters: --gpu's datasheet (default {DEFAULT_GPU}), or those fitted to --run's f16 issue intervals.

    \b
    Examples:
      bench advise swapab --m 16 --n 64 --k 16 --gpu H20
      bench advise swapab --m 16 --n 64 --k 4096 --run 4
    """,
    (AdviceOption("m", "rows of A and C", high=65536),
     AdviceOption("n", "rows of B, columns of C"),
     AdviceOption("k", "the reduction dimension"),
     AdviceOption("operands", "A from shared memory (SS) or registers (RS)", choices=("SS", "RS"), default="SS")),
    _swapab,
)
