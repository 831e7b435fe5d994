"""Write tests/fixtures/schema_v<N>.db for the current schema N (run once per schema change):

    python tests/make_fixtures.py
"""

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from helpers import fake_device, fake_result, make_db  # noqa: E402
from harness.measure.measurement import unmeasured  # noqa: E402
from harness.provenance import Provenance  # noqa: E402
from harness.registry import parse_case_id  # noqa: E402
from harness.db.store import Store  # noqa: E402
from harness.db.tables import SCHEMA_VERSION  # noqa: E402
from harness.measure.telemetry import GpuState  # noqa: E402


def main() -> None:
    path = HERE / "fixtures" / f"schema_v{SCHEMA_VERSION}.db"
    path.unlink(missing_ok=True)
    make_db(path, status="interrupted")
    store = Store.open(str(path))
    prov = Provenance("bench run --suite faults", "testhost", "abc123", False, "0.1.0", "3.12", "14.2", "13.0")
    run_id = store.start_run(fake_device(), prov, "faults", None)
    result = fake_result("wgmma.mma_async.m64n64k16.f32.f16.f16.SS", 32.0)
    for metric in result.metrics:
        metric.gpu_state = GpuState(4, 1755.0, 2619.0, 612.5, 61.0, ("sw_power_cap",), 0)
    store.record_case(run_id, result)
    store.record_case(run_id, unmeasured(parse_case_id("wgmma.mma_async.m64n16k16.f32.f16.f16.SS+trap"),
                                         "CUDA error: simulated", fault=True,
                                         metrics=[("issue_interval_cycles", "cycles")]))
    store.finish_run(run_id, "complete")
    store.engine.dispose()
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
