"""The cluster workflow under a real Slurm (issue 25): scripts/slurm/local_cluster_test.sh starts a
one-node cluster of Debian's slurm-wlm on this machine (installing it where it is missing and
apt-get can), submits the array job over two suites on the simulated GPU and the dependent merge
job, and checks the merged database. Skips, saying why, where Slurm cannot be had (not root, no
apt-get, no package)."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "slurm" / "local_cluster_test.sh"


def test_the_array_and_its_merge_run_under_a_real_slurm(tmp_path):
    if os.geteuid() != 0 and shutil.which("slurmctld") is None:
        pytest.skip("Slurm is not installed and only root can install it and run its daemons here")
    if shutil.which("apt-get") is None and shutil.which("slurmctld") is None:
        pytest.skip("no Slurm and no apt-get to install it")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    env.pop("HOPPER_BENCH_DB", None)
    result = subprocess.run(["bash", str(SCRIPT), str(tmp_path / "cluster")], capture_output=True, text=True,
                            timeout=900, env=env)
    if result.returncode == 77:
        pytest.skip(result.stderr.strip().splitlines()[-1])
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    lines = result.stdout.strip().splitlines()
    table = lines[lines.index("suite,status,cases") + 1:]
    # One run per simulated GPU (two) and suite, every one complete with every case: the array's two
    # tasks each ran `bench run --gpus all`, and the merge job (afterany) brought their files together.
    assert sorted(table) == sorted(["tma-quick,complete,4"] * 2 + ["wgmma-quick,complete,12"] * 2)
