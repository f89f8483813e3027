#!/usr/bin/env bash
# partition.sh: cut the lab's network.
#   partition.sh '1,2|3,4,5'     symmetric partition: nodes on different sides exchange
#                                no packet at all (unicast, gossip, multicast). Replaces
#                                the previous symmetric partition; nodes named on no
#                                side keep talking to everyone.
#   partition.sh --oneway 1 3    drop every packet from node 1 to node 3 (3 still reaches
#                                1). Adds to earlier one-way cuts.
# Undo with heal.sh. Cuts are iptables DROP rules matching the source address
# on INPUT inside the receiving namespace (internal/lab): packets vanish
# silently, as on a broken link, and multicast from a cut peer is dropped too.
# The script says which mechanism the lab's faults use.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

gd_script partition 2,9 ip:iproute2 iptables:iptables -- "$@"
