#!/usr/bin/env bash
# partition.sh: cut the lab's network.
#   partition.sh '1,2|3,4,5'     symmetric partition: nodes on different sides exchange
#                                no packet at all (unicast, gossip, multicast). Replaces
#                                the previous symmetric partition; nodes named on no
#                                side keep talking to everyone.
#   partition.sh --oneway 1 3    drop every packet from node 1 to node 3 (3 still reaches
#                                1). Adds to earlier one-way cuts.
# Undo with heal.sh. Cuts are iptables DROP rules matching the source address
# on INPUT inside the receiving namespace: packets vanish silently, as on a
# broken link (the sender sees no error), and multicast from a cut peer is
# dropped too.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() {
	sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//' >&2
	exit 2
}

mechanism_line() {
	if gd_netem_available; then
		gd_say "faults: using iptables for cuts (tc netem is used only for loss/delay)"
	else
		gd_say "faults: using iptables (no sch_netem in this kernel)"
	fi
}

# apply_partition I: install node I's rules from part_rules (empty: none).
apply_partition() {
	if [[ -n ${part_rules[$1]} ]]; then
		gd_chain_replace "$1" "$GD_CHAIN_PART" "${part_rules[$1]}"
	else
		gd_chains_flush "$1" "$GD_CHAIN_PART"
	fi
}

symmetric() {
	local spec=$1 n side i j k rules nsides=0 norm="" named=" " unnamed=()
	local -a sides=() raw=()
	part_rules=() # global: apply_partition reads it in gd_parallel's subshells
	local other
	n=$(gd_n)
	[[ $spec == *"|"* ]] || gd_die "a partition needs at least two sides separated by '|', e.g. '1,2|3,4,5'"
	IFS='|' read -r -a raw <<<"$spec"
	for side in "${raw[@]}"; do
		local list
		list=$(gd_list "$side" "$n") || gd_die "bad side '$side' in '$spec' (want node numbers 1..$n, e.g. 1,2 or 3-5)"
		for i in $list; do
			[[ $named == *" $i "* ]] && gd_die "node $i is on two sides of '$spec'"
			named+="$i "
		done
		sides+=("$list")
		norm+="${norm:+|}${list// /,}"
		nsides=$((nsides + 1))
	done
	((nsides >= 2)) || gd_die "a partition needs at least two non-empty sides"

	mechanism_line
	# Build every node's rules first, then apply them in all namespaces at
	# once (gd_parallel), so the cut lands everywhere within milliseconds.
	for ((k = 0; k < nsides; k++)); do
		for i in ${sides[k]}; do
			rules=""
			for ((j = 0; j < nsides; j++)); do
				((j == k)) && continue
				for other in ${sides[j]}; do
					rules+="-s $GD_SUBNET.$other/32 -j DROP"$'\n'
				done
			done
			part_rules[i]=$rules
		done
	done
	for ((i = 1; i <= n; i++)); do
		if [[ $named != *" $i "* ]]; then
			part_rules[i]=""
			unnamed+=("$i")
		fi
	done
	gd_parallel apply_partition "${!part_rules[@]}" || gd_die "partition '$spec' was not applied everywhere (see above); run heal.sh"
	gd_record_fault partition "$norm"
	gd_say "partition: ${norm//|/ | } (nodes on different sides exchange no packets)"
	if ((${#unnamed[@]} > 0)); then
		gd_say "note: node(s) ${unnamed[*]} are on no side and still reach every node"
	fi
}

oneway() {
	local from=$1 to=$2 n rules
	n=$(gd_n)
	if ! [[ $from =~ ^[0-9]+$ && $to =~ ^[0-9]+$ ]] || ((from < 1 || from > n || to < 1 || to > n)); then
		gd_die "--oneway wants two node numbers 1..$n, e.g. --oneway 1 3"
	fi
	((from != to)) || gd_die "--oneway needs two different nodes"
	mechanism_line
	# Keep the receiver's earlier cuts, add this one (once).
	rules=$(gd_ipt "$to" -S "$GD_CHAIN_CUT" 2>/dev/null | sed -n "s/^-A $GD_CHAIN_CUT //p" || true)
	if ! grep -qx -- "-s $(gd_ip "$from")/32 -j DROP" <<<"$rules"; then
		rules+=$'\n'"-s $(gd_ip "$from")/32 -j DROP"
	fi
	gd_chain_replace "$to" "$GD_CHAIN_CUT" "$rules"
	gd_record_fault oneway "$from->$to"
	gd_say "one-way cut: packets from node $from to node $to are dropped ($to -> $from still flows)"
}

main() {
	(($# > 0)) || usage
	gd_need_root
	gd_need_lab
	gd_need_cmd iptables iptables
	case $1 in
	-h | --help) usage ;;
	--oneway)
		(($# == 3)) || usage
		oneway "$2" "$3"
		;;
	*)
		(($# == 1)) || usage
		symmetric "$1"
		;;
	esac
}

main "$@"
