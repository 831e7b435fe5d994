"""The planner's fits minimise with Nelder and Mead's simplex (fitting.py): a few parameters, a loss that is cheap
but not smooth where a bound changes (max() terms), so no gradients."""

from __future__ import annotations

import numpy as np


def nelder_mead(f, x0: np.ndarray, step: np.ndarray, iterations: int = 600, xtol: float = 1e-3,
                ftol: float = 1e-6) -> np.ndarray:
    """Minimise f from x0 (a simplex of x0 and x0 + step along each axis), for at most `iterations` steps: it
    stops once the simplex has collapsed (every vertex within xtol of the best, relative to its size, and
    their values within ftol of the best's, relative)."""
    simplex = [x0] + [x0 + np.eye(len(x0))[i] * step[i] for i in range(len(x0))]
    values = [f(x) for x in simplex]
    for _ in range(iterations):
        order = np.argsort(values)
        simplex, values = [simplex[i] for i in order], [values[i] for i in order]
        spread = max(np.max(np.abs(v - simplex[0]) / (np.abs(simplex[0]) + 1.0)) for v in simplex[1:])
        if spread <= xtol and values[-1] - values[0] <= ftol * (abs(values[0]) + 1e-12):
            break
        centre = np.mean(simplex[:-1], axis=0)
        reflected = centre + (centre - simplex[-1])
        fr = f(reflected)
        if fr < values[0]:
            expanded = centre + 2 * (centre - simplex[-1])
            fe = f(expanded)
            simplex[-1], values[-1] = (expanded, fe) if fe < fr else (reflected, fr)
        elif fr < values[-2]:
            simplex[-1], values[-1] = reflected, fr
        else:
            contracted = centre + 0.5 * (simplex[-1] - centre)
            fc = f(contracted)
            if fc < values[-1]:
                simplex[-1], values[-1] = contracted, fc
            else:
                simplex = [simplex[0]] + [simplex[0] + 0.5 * (s - simplex[0]) for s in simplex[1:]]
                values = [values[0]] + [f(s) for s in simplex[1:]]
    return simplex[int(np.argmin(values))]
