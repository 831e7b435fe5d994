"""The families' analytical models fitted to a stored run (Family.model.fit), for `bench model --run`."""

from __future__ import annotations

from harness.analysis.compare import measured
from harness.db.store import Store
from harness.errors import SpecError
from harness.registry import FAMILIES


def fit_run(store: Store, run_id: int, include_flagged: bool = False) -> dict:
    """{family name: its fit report} for every family of the run that has a model and data for it."""
    frame = measured(store, run_id, include_flagged)
    gpu = store.run_info(run_id).gpu_name or "unknown GPU"
    fits = {}
    for name, rows in frame.groupby("family"):
        family = FAMILIES.get(name)  # None: a family this version no longer has
        model = family.model if family is not None else None
        report = model.fit(rows, gpu, f"fitted to run {run_id}") if model else None
        if report is not None:
            fits[name] = report
    if not fits:
        raise SpecError(f"run {run_id} has no measurements that a family's model fits "
                        f"(models: {', '.join(n for n, f in FAMILIES.items() if f.model) or 'none'})")
    return fits
