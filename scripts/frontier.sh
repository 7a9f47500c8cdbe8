#!/usr/bin/env bash
# The accuracy/cost frontier of one dataset: greedy, sc at 4/8/16/32 samples
# and the tree search at 2/4/8/16 rollouts, each run resumable in
# OUT/<method>-<budget>, then `iesr report --out OUT`: EX against generated
# tokens and against wall seconds per method, and every pair of runs
# compared question by question with a 95% interval.
#
# Usage: scripts/frontier.sh OUT [bench arguments...]
#   e.g. scripts/frontier.sh runs/frontier-spider --dataset spider \
#          --data-dir ../shared/datasets/spider \
#          --subset ../shared/datasets/subsets/spider_dev_random100.json
# Env: SC_BUDGETS (default "4 8 16 32"), IESR_BUDGETS (default "2 4 8 16"),
#      METHODS, IESR as for scripts/sweep_rollouts.sh.
set -euo pipefail
export SC_BUDGETS=${SC_BUDGETS:-4 8 16 32}
export IESR_BUDGETS=${IESR_BUDGETS:-2 4 8 16}
exec "$(dirname "$0")/sweep_rollouts.sh" "$@"
