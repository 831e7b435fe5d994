#!/usr/bin/env bash
# Run the cluster workflow under a real Slurm on this machine: a one-node cluster (Debian's slurm-wlm:
# munged, slurmctld and slurmd on localhost, one simulated GPU as a gres), the array job of
# scripts/slurm/submit.sh over two suites on the simulated GPU (HOPPER_BENCH_BACKEND=fake), and its
# dependent merge job; then checks the merged database holds one complete run per suite.
# As root, on a machine where apt-get can install slurm-wlm (tests/test_slurm.py calls it).
#
#   scripts/slurm/local_cluster_test.sh [WORKDIR]
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
work=${1:-$(mktemp -d /tmp/hopper-bench-slurm.XXXXXX)}
mkdir -p "$work"
work=$(cd "$work" && pwd)
if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurm-wlm >/dev/null) \
    || { echo "skip: slurm-wlm cannot be installed here" >&2; exit 77; }
fi
host=$(hostname -s)
cpus=$(nproc)
memory=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 / 2 ))
mkdir -p "$work"/{state,spool,log,munge,run}
chmod 700 "$work/munge"
dd if=/dev/urandom of="$work/munge/munge.key" bs=1024 count=1 status=none
chmod 400 "$work/munge/munge.key"
munged --key-file="$work/munge/munge.key" --socket="$work/munge/socket" --pid-file="$work/munge/pid" \
       --log-file="$work/munge/log" --seed-file="$work/munge/seed" --force
export MUNGE_SOCKET="$work/munge/socket"  # not read by Slurm: AuthInfo below says where
cat > "$work/slurm.conf" <<CONF
ClusterName=hopperbench
SlurmctldHost=$host
AuthType=auth/munge
AuthInfo=socket=$work/munge/socket
CryptoType=crypto/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/run/slurmctld.pid
SlurmdPidFile=$work/run/slurmd.pid
SlurmctldLogFile=$work/log/slurmctld.log
SlurmdLogFile=$work/log/slurmd.log
SlurmctldPort=16817
SlurmdPort=16818
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
ReturnToService=2
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
GresTypes=gpu
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
NodeName=$host CPUs=$cpus RealMemory=$memory Gres=gpu:1 State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=60 State=UP OverSubscribe=EXCLUSIVE
CONF
echo "NodeName=$host Name=gpu File=/dev/null" > "$work/gres.conf"  # the simulated GPU: no device file
export SLURM_CONF="$work/slurm.conf"
stop() {
  [ -f "$work/run/slurmd.pid" ] && kill "$(cat "$work/run/slurmd.pid")" 2>/dev/null || true
  [ -f "$work/run/slurmctld.pid" ] && kill "$(cat "$work/run/slurmctld.pid")" 2>/dev/null || true
  [ -f "$work/munge/pid" ] && kill "$(cat "$work/munge/pid")" 2>/dev/null || true
}
trap stop EXIT
slurmctld -i
slurmd
# polled every 0.2 s (the node is up a second or two after slurmd starts), for at most 60 s
for _ in $(seq 300); do sinfo -h -o %T 2>/dev/null | grep -qE '^(idle|mixed)' && break; sleep 0.2; done
sinfo
cd "$work"
export HOPPER_BENCH_BACKEND=fake HOPPER_BENCH_VENV=${VIRTUAL_ENV:-$work/none} HOPPER_BENCH_OUT="$work/out"
# a compile cache given (tests/test_slurm.py passes the test session's) is used: a build is keyed by its source,
# options and NVRTC version, so sharing one changes no build
export HOPPER_BENCH_CACHE="${HOPPER_BENCH_CACHE:-$work/cache}" PYTHONPATH="$repo${PYTHONPATH:+:$PYTHONPATH}"
"$repo/scripts/slurm/submit.sh" tma-quick wgmma-quick
for _ in $(seq 1200); do [ -z "$(squeue -h)" ] && break; sleep 0.5; done  # every 0.5 s, at most 10 minutes
if [ -n "$(squeue -h)" ]; then squeue; echo "error: the jobs did not finish in 10 minutes" >&2; exit 1; fi
cat "$work"/hopper-bench-*.out || true
test -f "$work/out/merged.db" || { echo "error: no merged database" >&2; tail -n 20 "$work"/log/*.log; exit 1; }
bench sql --db "$work/out/merged.db" --format csv \
  "SELECT suite, status, (SELECT COUNT(DISTINCT case_pk) FROM measurement_rows m WHERE m.run_id = r.id) AS cases FROM runs r ORDER BY suite"
