#!/usr/bin/env bash
# heal.sh: remove the lab's faults.
#   heal.sh                 everything: partitions, one-way cuts, loss and delay
#   heal.sh --partitions    only partitions and one-way cuts (loss/delay stay)
# Recorded in faults.ndjson as kind "heal" (spec "all" or "partitions").
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

main() {
	local what=all n i qdisc
	case ${1:-} in
	"") ;;
	--partitions) what=partitions ;;
	-h | --help)
		sed -n '2,5p' "$0" | sed 's/^# \{0,1\}//'
		exit 0
		;;
	*)
		sed -n '2,5p' "$0" | sed 's/^# \{0,1\}//' >&2
		exit 2
		;;
	esac
	gd_need_root
	gd_need_lab
	gd_need_cmd iptables iptables
	n=$(gd_n)
	for ((i = 1; i <= n; i++)); do
		gd_chain_flush "$i" "$GD_CHAIN_PART"
		gd_chain_flush "$i" "$GD_CHAIN_CUT"
		if [[ $what == all ]]; then
			gd_chain_flush "$i" "$GD_CHAIN_LOSS"
			qdisc=$(tc -n "$(gd_ns "$i")" qdisc show dev eth0 root 2>/dev/null || true)
			if [[ $qdisc == *netem* ]]; then
				tc -n "$(gd_ns "$i")" qdisc del dev eth0 root
			fi
		fi
	done
	gd_record_fault heal "$what"
	if [[ $what == all ]]; then
		gd_say "healed: no partitions, cuts, loss or delay on $n node(s)"
	else
		gd_say "healed partitions and one-way cuts on $n node(s) (loss/delay kept)"
	fi
}

main "$@"
