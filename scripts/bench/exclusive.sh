#!/usr/bin/env bash
# exclusive.sh: exclusive leadership under faults, groupd and its peers
# (corosync + votequorum, keepalived). See scripts/bench/README.md,
# "Exclusive leadership".
#
#   scripts/bench/exclusive.sh [--peers LIST] [--faults LIST] [--rounds K]
#                              [--nodes N] [--hold S] [--freeze S]
#                              [--loss P] [--loss-for S] [--out DIR]
#                              [--force] [--no-install] [-- GROUPD-ARGS...]
#
#   --peers LIST    groupd,corosync,keepalived (default: all three)
#   --faults LIST   partition,freeze,asym-out,asym-in,kill (the default), and
#                   loss (only when named: a bare quorum under random loss;
#                   issue 33's figure: --nodes 3 --faults loss)
#   --rounds K      rounds per peer and fault (default 5)
#   --nodes N       lab size, and --expect N (default 5)
#   --hold S        seconds a partition, cut or kill lasts (default 20)
#   --freeze S      seconds the leader is stopped (default 3)
#   --loss P        loss fault: percent of packets dropped between the live
#                   nodes, each direction (default 10)
#   --loss-for S    loss fault: seconds the loss lasts (default 60)
#   --out DIR       results: DIR/exclusive.ndjson (appended), DIR/exclusive.md
#                   (default /tmp/groupd-exclusive-YYYYmmdd-HHMMSS)
#   --force         take down a lab of this prefix that is already up
#   --no-install    never apt-get install a missing peer
#   -- ARGS         more `groupd run` arguments (after --profile lan --expect N)
#
# The measuring is `benchtool exclusive run` (internal/benchtool/exclusive*.go).
# The lab: GROUPD_LAB_PREFIX (default px), GROUPD_LAB_SUBNET (default
# 10.96.0), GROUPD_LAB_DIR (default /tmp/groupd-lab-px). Needs root. Every
# process of the run is stopped and the lab taken down on exit, also on Ctrl-C.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=../netem/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../netem/lib.sh"

gd_bench exclusive run "$@"
