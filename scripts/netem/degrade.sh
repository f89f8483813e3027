#!/usr/bin/env bash
# degrade.sh: make the lab's links lossy (and slow, where the kernel can).
#   degrade.sh --loss 20% [--delay 50ms [--jitter 10ms]] [--nodes 1,2]
# Loss and delay apply to the packets the selected nodes send (default: all
# nodes), so with every node selected a round trip loses 1-(1-p)^2 (36 % for
# 20 %). A new degrade.sh replaces the previous one; heal.sh removes it.
# Mechanism: tc netem on each selected node's eth0 when the kernel has
# sch_netem; otherwise iptables `-m statistic --mode random` DROP rules on
# INPUT of every receiver, matching the selected senders. Without netem,
# delay and jitter are reported as unsupported and not applied.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() {
	sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//' >&2
	exit 2
}

main() {
	local loss="" delay="" jitter="" nodes_spec="" n nodes i j rules prob applied=0 spec_nodes=""
	while (($# > 0)); do
		case $1 in
		--loss | --delay | --jitter | --nodes)
			(($# >= 2)) || usage
			case $1 in
			--loss) loss=$2 ;;
			--delay) delay=$2 ;;
			--jitter) jitter=$2 ;;
			--nodes) nodes_spec=$2 ;;
			esac
			shift 2
			;;
		-h | --help) usage ;;
		*) usage ;;
		esac
	done
	[[ -n $loss || -n $delay ]] || gd_die "nothing to do: give --loss P% and/or --delay D"
	if [[ -n $loss ]]; then
		loss=${loss%\%}
		if ! [[ $loss =~ ^[0-9]+(\.[0-9]+)?$ ]] || ! awk -v p="$loss" 'BEGIN{exit !(p > 0 && p <= 100)}'; then
			gd_die "--loss wants a percentage in (0, 100], e.g. 20%"
		fi
	fi
	local dur='^[0-9]+(\.[0-9]+)?(us|ms|s)$'
	[[ -z $delay || $delay =~ $dur ]] || gd_die "--delay wants a duration like 50ms"
	[[ -z $jitter || $jitter =~ $dur ]] || gd_die "--jitter wants a duration like 10ms"
	[[ -z $jitter || -n $delay ]] || gd_die "--jitter needs --delay"

	gd_need_root
	gd_need_lab
	gd_need_cmd iptables iptables
	n=$(gd_n)
	if [[ -n $nodes_spec ]]; then
		nodes=$(gd_list "$nodes_spec" "$n") || gd_die "bad --nodes '$nodes_spec' (want e.g. 1,2 or 3-5 within 1..$n)"
		spec_nodes=" from ${nodes// /,}"
	else
		nodes=$(seq -s ' ' 1 "$n")
	fi

	if gd_netem_available; then
		gd_say "faults: using tc netem (sch_netem available)"
		local args=()
		[[ -n $loss ]] && args+=(loss "$loss%")
		[[ -n $delay ]] && args+=(delay "$delay")
		[[ -n $jitter ]] && args+=("$jitter")
		for ((i = 1; i <= n; i++)); do
			gd_chains_flush "$i" "$GD_CHAIN_LOSS"
			if [[ " $nodes " == *" $i "* ]]; then
				tc -n "$(gd_ns "$i")" qdisc replace dev eth0 root netem "${args[@]}"
			elif tc -n "$(gd_ns "$i")" qdisc show dev eth0 root 2>/dev/null | grep -q netem; then
				tc -n "$(gd_ns "$i")" qdisc del dev eth0 root
			fi
		done
		if [[ -n $loss ]]; then
			gd_record_fault loss "$loss%$spec_nodes"
			gd_say "loss: $loss% on packets sent by node(s) ${nodes// /,}"
		fi
		if [[ -n $delay ]]; then
			gd_record_fault delay "$delay${jitter:+±$jitter}$spec_nodes"
			gd_say "delay: $delay${jitter:+ ± $jitter} on packets sent by node(s) ${nodes// /,}"
		fi
		return 0
	fi

	gd_say "faults: using iptables (no sch_netem in this kernel)"
	if [[ -n $loss ]]; then
		prob=$(awk -v p="$loss" 'BEGIN{printf "%.4f", p/100}')
		for ((j = 1; j <= n; j++)); do
			rules=""
			if [[ -z $nodes_spec ]]; then
				rules="-i eth0 -m statistic --mode random --probability $prob -j DROP"
			else
				for i in $nodes; do
					((i == j)) && continue
					rules+="-i eth0 -s $(gd_ip "$i")/32 -m statistic --mode random --probability $prob -j DROP"$'\n'
				done
			fi
			gd_chain_replace "$j" "$GD_CHAIN_LOSS" "$rules"
		done
		gd_record_fault loss "$loss%$spec_nodes"
		gd_say "loss: $loss% on packets sent by node(s) ${nodes// /,}"
		applied=1
	fi
	if [[ -n $delay ]]; then
		gd_say "delay: unsupported without sch_netem; not applied"
	fi
	((applied)) || exit 3
}

main "$@"
