#!/usr/bin/env bash
# heal.sh: remove the lab's faults.
#   heal.sh                 everything: partitions, one-way cuts, loss and delay
#   heal.sh --partitions    only partitions and one-way cuts (loss/delay stay)
# Recorded in the lab's history as kind "heal" (spec "all" or "partitions").
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

case ${1:-} in
-h | --help)
	sed -n '2,5p' "$0" | sed 's/^# \{0,1\}//'
	exit 0
	;;
"" | --partitions) ;;
*)
	sed -n '2,5p' "$0" | sed 's/^# \{0,1\}//' >&2
	exit 2
	;;
esac
gd_need_root
gd_need_cmd ip iproute2
gd_need_cmd iptables iptables
gd_run heal "$@"
