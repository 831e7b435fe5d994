#!/usr/bin/env bash
# Submit one array task per suite named (default: wgmma) and the merge job that waits for them all.
#
#   scripts/slurm/submit.sh wgmma mma loaders tma memory
#
# Extra sbatch options (a partition, an account) go in $HOPPER_BENCH_SBATCH, e.g. "-p gpu -A proj".
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
suites=("${@:-wgmma}")
export HOPPER_BENCH_SUITES="${suites[*]}"
array=$(sbatch --parsable ${HOPPER_BENCH_SBATCH:-} --array=0-$((${#suites[@]} - 1)) --export=ALL \
        "$here/bench-array.sbatch")
array=${array%%;*}
export HOPPER_BENCH_OUT=${HOPPER_BENCH_OUT:-$PWD/slurm-$array}
merge=$(sbatch --parsable ${HOPPER_BENCH_SBATCH:-} --dependency=afterany:"$array" --export=ALL \
        "$here/merge.sbatch")
echo "array job $array (${#suites[@]} tasks: ${suites[*]}), merge job ${merge%%;*} -> $HOPPER_BENCH_OUT/merged.db"
