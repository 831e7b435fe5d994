"""One writer process of tests/test_concurrency.py: `python store_writer.py DB LABEL COUNT [GATE]`
stores COUNT measurements in a run of its own, one transaction each, like `bench run` does. With GATE (a
folder), it first says it is ready (GATE/LABEL.ready, once its imports are done) and waits for GATE/go, so
that every writer opens (or creates) the file and writes at the same moment, whatever each took to start."""

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from helpers import fake_device, fake_result  # noqa: E402
from harness.provenance import Provenance  # noqa: E402
from harness.db.store import Store  # noqa: E402

CASES = ("wgmma.mma_async.m64n8k16.f32.f16.f16.SS", "wgmma.mma_async.m64n64k16.f32.f16.f16.RS",
         "wgmma.mma_async.m64n256k16.f32.bf16.bf16.SS")


def main(db: str, label: str, count: int, gate: str | None = None) -> None:
    if gate is not None:
        (Path(gate) / f"{label}.ready").touch()
        while not (Path(gate) / "go").exists():
            time.sleep(0.01)
    store = Store.open(db, create=True)
    prov = Provenance(f"writer {label}", "testhost", "abc123", False, "0.1.0", "3.12", None, "13.0")
    run_id = store.start_run(fake_device(uuid=f"GPU-{label}"), prov, "wgmma", None)
    for i in range(count):
        result = fake_result(CASES[i % len(CASES)], 18.0 + i)
        result.metrics = result.metrics[:1]
        result.metrics[0].launch = {"ilp": i}  # one measurement per call, each a distinct row
        store.record_case(run_id, result)
    store.finish_run(run_id, "complete")
    print(f"writer {label}: run {run_id}, {count} measurements")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), *sys.argv[4:5])
