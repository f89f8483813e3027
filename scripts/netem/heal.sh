#!/usr/bin/env bash
# heal.sh: remove the lab's faults.
#   heal.sh                 everything: partitions, one-way cuts, loss and delay
#   heal.sh --partitions    only partitions and one-way cuts (loss/delay stay)
# Recorded in faults.ndjson as kind "heal" (spec "all" or "partitions").
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# heal_node I: remove node I's faults (heal_what: all or partitions).
heal_node() {
	local i=$1 qdisc chains=("$GD_CHAIN_PART" "$GD_CHAIN_CUT")
	[[ $heal_what == all ]] && chains+=("$GD_CHAIN_LOSS")
	gd_chains_flush "$i" "${chains[@]}"
	if [[ $heal_what == all && $heal_netem == yes ]]; then
		qdisc=$(tc -n "$(gd_ns "$i")" qdisc show dev eth0 root 2>/dev/null || true)
		if [[ $qdisc == *netem* ]]; then
			tc -n "$(gd_ns "$i")" qdisc del dev eth0 root
		fi
	fi
}

main() {
	local what=all n
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
	heal_what=$what
	# A netem qdisc can only be there if this kernel has sch_netem (the
	# probe's cached answer; no cache: netem was never tried).
	heal_netem=no
	if [[ -r $GD_LAB_DIR/netem ]]; then
		heal_netem=$(<"$GD_LAB_DIR/netem")
	fi
	# Every namespace at once: the heal reaches all nodes within
	# milliseconds, not one namespace after another.
	gd_parallel heal_node $(seq 1 "$n") || gd_die "heal failed in some namespace (see above)"
	gd_record_fault heal "$what"
	if [[ $what == all ]]; then
		gd_say "healed: no partitions, cuts, loss or delay on $n node(s)"
	else
		gd_say "healed partitions and one-way cuts on $n node(s) (loss/delay kept)"
	fi
}

main "$@"
