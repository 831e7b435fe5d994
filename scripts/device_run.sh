#!/usr/bin/env bash
# One call on a GPU node: the GPU tests, the crash-isolation self-test (suite `faults`, into its own
# database), then the real suite into a new database, $OUT/new.db.gz: bring its runs home with
# `bench merge new.db --into results.db` (the whole results.db is too large to come back), then
# `python scripts/runs_of_record.py export` writes the run's runs/run-NNNN.db.xz: commit that, not results.db.
# Usage: scripts/device_run.sh [SUITE] [EXTRA bench run ARGS...]   (here first: scripts/device_run.sh --stamp)
# A run of record of `wgmma` also runs `wgmma-energy` (its N = 256 input, energy and burst points, left out
# of the main job), as a second run into the same database after the timed passes; ALSO="" leaves it out,
# ALSO="suite ..." names others.
# Carried wheels in .whl/ (packages the device image lacks) are installed first.
set -uo pipefail
export PYTHONUNBUFFERED=1
if [ "${1:-}" = --stamp ]; then  # here, before a device call: the tree's commit and whether it is dirty
  cd "$(dirname "$0")/.." && { git rev-parse HEAD; [ -z "$(git status --porcelain --untracked-files=no -- harness ptx scripts pyproject.toml)" ] && echo 0 || echo 1; } > .git-state
  echo "wrote .git-state: $(tr '\n' ' ' < .git-state)"; exit 0
fi
suite=${1:-wgmma}; shift || true
also=${ALSO-$([ "$suite" = wgmma ] && echo wgmma-energy)}
out=${OUT:-/tmp/hopper-bench-out}; mkdir -p "$out"
if compgen -G ".whl/*.whl" >/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
# A copy of the working tree may carry a .git that is not the tree's (the lent machine's holds the session's
# first commit): the runs would name that commit. `scripts/device_run.sh --stamp`, run here before the call,
# writes .git-state (commit, dirty); there it names the runs' commit unless HOPPER_BENCH_GIT_COMMIT is set.
# .git-state is git-ignored: the call must carry it (run's carry: [".git-state", ...]), or the runs name the wrong commit.
if [ ! -f .git-state ] && [ -z "${HOPPER_BENCH_GIT_COMMIT:-}" ]; then
  echo "warning: no .git-state here (carry it): the runs will name this copy's .git, not the tree's commit" >&2
fi
if [ -f .git-state ] && [ -z "${HOPPER_BENCH_GIT_COMMIT:-}" ]; then
  { read -r HOPPER_BENCH_GIT_COMMIT; read -r HOPPER_BENCH_GIT_DIRTY; } < .git-state
  export HOPPER_BENCH_GIT_COMMIT HOPPER_BENCH_GIT_DIRTY
  echo "runs name commit $HOPPER_BENCH_GIT_COMMIT (dirty $HOPPER_BENCH_GIT_DIRTY), from .git-state"
fi
export HOPPER_BENCH_CACHE=${HOPPER_BENCH_CACHE:-/tmp/hopper-bench-cache}
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu --format=csv | tee "$out/gpu.txt"
nvidia-smi --query-compute-apps=pid,name,used_memory --format=csv | tee -a "$out/gpu.txt"
if [ "${SKIP_TESTS:-0}" != 1 ]; then
  # runs of record validate every case (--full-sweep, about 15 min on an H100); SAMPLE=1 takes the
  # default sample of tests/gpu/sample.py instead (a few minutes)
  sweep=$([ "${SAMPLE:-0}" = 1 ] || echo --full-sweep)
  start=$(date +%s)
  python3 -m pytest -m gpu tests/gpu -q -x -p no:cacheprovider $sweep 2>&1 | tee "$out/gpu-tests.log" | tail -25
  echo "gpu tests ${sweep:-(sample)}: $(( $(date +%s) - start )) s wall" | tee -a "$out/timings.txt"
fi
if [ "${SKIP_FAULTS:-0}" != 1 ]; then
  python3 -m harness run --suite faults --db "$out/faults.db" --watchdog 20 2>&1 | tee "$out/run-faults.log" | grep -v "^\s*$" | tail -6
  nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv,noheader | tee -a "$out/gpu.txt"
fi
for pass in ${PASSES:-cold}; do
  [ "$pass" = cold ] && rm -rf "$HOPPER_BENCH_CACHE"
  start=$(date +%s)
  python3 -m harness run --suite "$suite" --db "$out/new.db" "$@" 2>&1 | tee "$out/run-$pass.log" | grep -v "^\s*$" | tail -8
  echo "$pass pass: $(( $(date +%s) - start )) s wall" | tee -a "$out/timings.txt"
done
for extra in $also; do
  start=$(date +%s)
  python3 -m harness run --suite "$extra" --db "$out/new.db" "$@" 2>&1 | tee "$out/run-$extra.log" | grep -v "^\s*$" | tail -8
  echo "$extra: $(( $(date +%s) - start )) s wall" | tee -a "$out/timings.txt"
done
gzip -c "$out/new.db" > "$out/new.db.gz" && rm -f "$out/new.db" "$out/new.db-wal" "$out/new.db-shm"
