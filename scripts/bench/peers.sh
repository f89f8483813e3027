#!/usr/bin/env bash
# peers.sh: groupd beside its peers (issue 14). See scripts/bench/README.md, "Peers".
#
#   scripts/bench/peers.sh [--nodes LIST] [--peers LIST] [--trials K] [--idle S]
#                          [--out DIR] [--quick] [--force] [--no-install]
#
#   --nodes LIST   lab sizes, comma-separated (default 5; the full comparison is 5,16)
#   --peers LIST   groupd,corosync,serf,jgroups,keepalived (default: all, in that order)
#   --trials K     trials per measure: cold start, failover, heal (default 3)
#   --idle S       the quiet window for the idle cost, seconds (default 30)
#   --out DIR      results directory (default /tmp/groupd-peers-YYYYmmdd-HHMMSS)
#   --quick        N=3, 1 trial, 10 s idle window: checks the harness in a few minutes
#   --force        take down a lab of this prefix that is already up instead of refusing
#   --no-install   never apt-get install a missing peer; report it as not run
#
# The comparison is `benchtool peers run` (internal/benchtool/peers*.go). For
# each N it brings up a lab of its own (prefix pb, 10.91.0.0/24, run dir
# /tmp/groupd-lab-pb; GROUPD_LAB_PREFIX, GROUPD_LAB_SUBNET and GROUPD_LAB_DIR
# rename it), then runs each peer in turn on those
# namespaces, one daemon per namespace, bound to the lab's addresses only: a
# cold start of all N at once (K times), an idle window, K failovers (kill -9
# of the leader) and K heals (10 s partition into halves). Missing peers are
# installed with apt-get install -y (it says so). Raw results go to
# DIR/peers.ndjson, the table to DIR/peers.md. Every process it started is
# stopped on exit, and the lab is taken down. Needs root.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=../netem/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../netem/lib.sh"

gd_bench peers run "$@"
