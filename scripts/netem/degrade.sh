#!/usr/bin/env bash
# degrade.sh: make the lab's links lossy (and slow, where the kernel can).
#   degrade.sh --loss 20% [--delay 50ms [--jitter 10ms]] [--nodes 1,2]
# Loss and delay apply to the packets the selected nodes send (default: all
# nodes), so with every node selected a round trip loses 1-(1-p)^2 (36 % for
# 20 %). A new degrade.sh replaces the previous one; heal.sh removes it.
# Mechanism (the script says which): tc netem on each selected node's eth0
# when the kernel has sch_netem; otherwise iptables `-m statistic --mode
# random` DROP rules on INPUT of every receiver, matching the selected
# senders, and delay and jitter are reported as unsupported and not applied.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

gd_script degrade 2,10 ip:iproute2 tc:iproute2 iptables:iptables -- "$@"
