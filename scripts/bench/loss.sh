#!/usr/bin/env bash
# loss.sh: groupd under sustained packet loss (issue 14: "30 % loss for 60 s:
# at most 3 new numbers a minute, and convergence after").
#
#   scripts/bench/loss.sh [--nodes N] [--loss P] [--seconds S] [--trials K] [--out DIR]
#
#   --nodes N     lab size (default 5)
#   --loss P      loss on every sender's packets, percent (default 30)
#   --seconds S   how long the loss lasts (default 60)
#   --trials K    repetitions (default 1)
#   --out DIR     results directory (default /tmp/groupd-loss-YYYYmmdd-HHMMSS)
#
# `benchtool loss` (internal/benchtool/scale.go). Each trial brings up its own
# lab (prefix lb, 10.92.0.0/24, run dir /tmp/groupd-lab-lb; GROUPD_LAB_PREFIX,
# GROUPD_LAB_SUBNET and GROUPD_LAB_DIR rename it),
# starts N daemons with the lan profile, waits until they are one group, puts
# P % loss on every sender (netem where the kernel has it, iptables
# `-m statistic` otherwise) for S seconds, removes it, and times convergence
# from the recorded history. It also counts the group numbers first seen
# during the loss (numbers created because of the loss), per minute. One JSON
# line per trial goes to DIR/loss.ndjson. The lab is taken down on exit.
# Needs root.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=../netem/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../netem/lib.sh"

gd_bench loss "$@"
