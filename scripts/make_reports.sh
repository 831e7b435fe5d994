#!/usr/bin/env bash
# Regenerate the shipped reports/ from the runs of record in results.db: one report per run and the
# results site (reports/index.html). Reads results.db only; the reports name no folder of this machine.
#
#   scripts/make_reports.sh [RUN ...]      # default: every run
set -euo pipefail
cd "$(dirname "$0")/.."
db=${HOPPER_BENCH_REPORTS_DB:-results.db}  # a copy elsewhere works too: reports name only its file
runs=("$@")
if [ ${#runs[@]} -eq 0 ]; then
  mapfile -t runs < <(bench sql --db "$db" --format csv "SELECT id FROM runs ORDER BY id" | tail -n +2)
fi
failed=()
for run in "${runs[@]}"; do
  bench report --db "$db" --run "$run" --out reports || failed+=("$run")
done
if [ ${#failed[@]} -gt 0 ]; then echo "note: no report for runs ${failed[*]} (see the errors above)" >&2; fi
bench site --db "$db" --out reports --reports reports
