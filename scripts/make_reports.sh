#!/usr/bin/env bash
# Regenerate the shipped reports/ from the runs of record in results.db: one report per run and the
# results site (reports/index.html). Reads results.db only; the reports name no folder of this machine.
#
#   scripts/make_reports.sh [RUN ...]      # default: every run
set -euo pipefail
cd "$(dirname "$0")/.."
runs=("$@")
if [ ${#runs[@]} -eq 0 ]; then
  mapfile -t runs < <(bench sql --db results.db --format csv "SELECT id FROM runs ORDER BY id" | tail -n +2)
fi
for run in "${runs[@]}"; do
  bench report --db results.db --run "$run" --out reports
done
bench site --db results.db --out reports --reports reports
