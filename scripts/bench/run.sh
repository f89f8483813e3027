#!/usr/bin/env bash
# run.sh: groupd's benchmark suite (issue 6). See scripts/bench/README.md and BENCHMARKS.md.
#
#   scripts/bench/run.sh [--quick] [--out DIR] [--only LIST] [--trials K] [--force]
#
#   --quick       fewer trials and sizes; finishes in under 5 minutes
#   --out DIR     results directory (default /tmp/groupd-bench-YYYYmmdd-HHMMSS)
#   --only LIST   comma-separated sections: failover,heal,steady,sim,scale,labscale
#                 (default: all; --quick skips labscale)
#   --trials K    failover trials per N and implementation (default 20; quick 3)
#   --force       take down a lab of this prefix that is already up instead of refusing
#
# The suite is `benchtool suite` (internal/benchtool/suite.go): it drives the
# namespace lab (internal/lab; prefix gd, 10.77.0.0/24, run dir
# /tmp/groupd-lab, or GROUPD_LAB_PREFIX, GROUPD_LAB_SUBNET, GROUPD_LAB_DIR)
# and keepalived (installed with apt-get when missing) in the same
# namespaces, writes raw results as NDJSON into DIR, then `benchtool report`
# writes DIR/summary.md and DIR/plots/*.svg. Everything it starts is stopped
# on exit, also on Ctrl-C. Needs root.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=../netem/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../netem/lib.sh"

gd_bench suite "$@"
