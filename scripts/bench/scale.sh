#!/usr/bin/env bash
# scale.sh: groupd at lab scale (issue 14: "256 namespaces: converge, heal
# and failover, each 3/3").
#
#   scripts/bench/scale.sh [--nodes LIST] [--trials K] [--out DIR] [--args FLAGS]
#
#   --nodes LIST  lab sizes, comma-separated (default 64,256)
#   --trials K    trials of each measure per size (default 3)
#   --out DIR     results directory (default /tmp/groupd-scale-YYYYmmdd-HHMMSS)
#   --args FLAGS  extra flags for every daemon of the lab, e.g. its timing
#                 ("--answer-timeout 400ms ..."); every raw line's note
#                 names them. Default: none (the lan profile).
#
# `benchtool scale` (internal/benchtool/scale.go, the path the suite's
# labscale section takes too), on its own lab: prefix sc, subnet
# 10.94.0.0/23 (256 nodes need a /23), run dir /tmp/groupd-lab-sc
# (GROUPD_LAB_PREFIX, GROUPD_LAB_SUBNET and GROUPD_LAB_DIR rename it). For each size: K cold starts with empty data dirs in two
# kinds, then K heals (a 10 s partition into halves 1..N/2 | rest, timed from
# the heal to one group) and K failovers (kill -9 of the coordinator, timed
# to the survivors' agreement), each from the lab's recorded history. Raw
# results in DIR/scale.ndjson, one line per trial (a failed trial is a note).
#
# The two kinds of cold start:
#   - "together": every daemon is exec'd at once with --start-at a gate
#     2 s + 60 ms per node ahead, so the N protocols begin together as N
#     machines powering up would; timed from the gate. The note says how
#     many daemons were holding at the gate.
#   - "exec'd together": every daemon is exec'd at once and starts at once;
#     timed from the start call. On one host this includes starting N
#     processes on its cores.
# The lab is taken down on exit, even on failure. Needs root.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=../netem/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../netem/lib.sh"

gd_bench scale "$@"
