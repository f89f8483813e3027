#!/usr/bin/env bash
# lab.sh: a LAN of N network namespaces on a private bridge, running one
# groupd per namespace. See README.md in this directory.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() {
	cat <<EOF
usage: lab.sh COMMAND [ARGS]
  up N                      create namespaces $GD_PREFIX-1..$GD_PREFIX-N on bridge $GD_BRIDGE ($GD_SUBNET.I/24); idempotent
  down                      stop everything and remove every $GD_PREFIX-* namespace, veth and the bridge
  status                    show the lab, the daemons and their views
  start [-- RUN-ARGS...]    start groupd (and a \`groupd watch\` recorder) in every namespace
  stop                      stop all daemons (SIGTERM, SIGKILL after 3 s) and recorders
  kill I                    kill -9 node I's daemon (recorded as a fault)
  restart I                 stop node I and start it again with its data dir (recorded as a fault)
  exec I CMD...             run CMD inside node I's namespace
  wait [--timeout S] [LIST] wait until the nodes in LIST (default: all) are normal in one group
                            whose coordinator is the highest of them; exit 1 after S s (default 60)
environment: GROUPD_LAB_DIR (run dir, default /tmp/groupd-lab), GROUPD_BIN (groupd binary; default:
  built from this repository into the run dir), GROUPD_PROFILE (lan|fast, default lan)
EOF
	if [[ $GD_PREFIX != gd || $GD_SUBNET != 10.77.0 ]]; then
		cat <<EOF
  GROUPD_LAB_PREFIX (name prefix, default gd; now $GD_PREFIX), GROUPD_LAB_SUBNET (default 10.77.0;
  now $GD_SUBNET); run dir now $GD_LAB_DIR
EOF
	fi
}

# ---------------------------------------------------------------- up / down

cmd_up() {
	local n=${1:-} i ns veth
	if ! [[ $n =~ ^[0-9]+$ ]] || ((n < 1 || n > GD_MAX_NODES)); then
		gd_die "up needs a node count 1..$GD_MAX_NODES, got '${n}'"
	fi
	gd_need_root
	gd_need_cmd ip iproute2
	mkdir -p "$GD_LAB_DIR"

	# Nodes beyond N from an earlier, larger lab go away.
	for ns in $(list_namespaces); do
		i=${ns#"$GD_PREFIX"-}
		if ((i > n)); then
			stop_node "$i" quiet
			remove_namespace "$ns"
		fi
	done

	if ! ip link show "$GD_BRIDGE" >/dev/null 2>&1; then
		ip link add "$GD_BRIDGE" type bridge
	fi
	# Multicast snooping off: beacons flood to every port. No STP delay.
	ip link set "$GD_BRIDGE" type bridge mcast_snooping 0 stp_state 0 forward_delay 0
	ip link set "$GD_BRIDGE" up

	for ((i = 1; i <= n; i++)); do
		ns=$(gd_ns "$i")
		veth=$(gd_veth "$i")
		gd_ns_exists "$ns" || ip netns add "$ns"
		if ! ip link show "$veth" >/dev/null 2>&1; then
			# A stale eth0 in the namespace would block the new pair's name.
			ip -n "$ns" link del eth0 2>/dev/null || true
			ip link add "$veth" type veth peer name eth0 netns "$ns"
		fi
		ip link set "$veth" master "$GD_BRIDGE"
		ip link set "$veth" up
		ip -n "$ns" link set lo up
		ip -n "$ns" addr replace "$(gd_ip "$i")/24" dev eth0
		ip -n "$ns" link set eth0 up
		ip -n "$ns" route replace 224.0.0.0/4 dev eth0
	done
	printf '%s\n' "$n" >"$GD_LAB_DIR/n"
	host_firewall_check
	gd_say "up: $n node(s) $(gd_ns 1)..$(gd_ns "$n") on $GD_BRIDGE, addresses $(gd_ip 1)..$(gd_ip "$n")/24, run dir $GD_LAB_DIR"
}

# host_firewall_check warns when bridged lab traffic would meet a DROP policy
# in the host's FORWARD chain (br_netfilter + docker, typically).
host_firewall_check() {
	local nf
	nf=$(sysctl -n net.bridge.bridge-nf-call-iptables 2>/dev/null || echo 0)
	if [[ $nf == 1 ]] && command -v iptables >/dev/null 2>&1 &&
		iptables -w -S FORWARD 2>/dev/null | grep -qx -- '-P FORWARD DROP'; then
		gd_warn "the host's FORWARD policy is DROP and bridge-nf-call-iptables=1: packets between lab nodes may be dropped; allow them with: iptables -I FORWARD -i $GD_BRIDGE -o $GD_BRIDGE -j ACCEPT"
	fi
}

# list_namespaces prints the lab's node namespaces (gd-<number>, with the
# default prefix).
list_namespaces() {
	local ns
	for ns in $(ip netns list 2>/dev/null | awk '{print $1}'); do
		[[ $ns =~ ^$GD_PREFIX-[0-9]+$ ]] && printf '%s\n' "$ns"
	done
	return 0
}

# remove_namespace NS: kill what still runs in it, then delete it.
remove_namespace() {
	local ns=$1 pids
	pids=$(ip netns pids "$ns" 2>/dev/null | tr '\n' ' ')
	if [[ -n ${pids// /} ]]; then
		# shellcheck disable=SC2086 # pids is a list
		kill -KILL $pids 2>/dev/null || true
	fi
	ip netns del "$ns" 2>/dev/null || true
}

cmd_down() {
	local ns link n=0 i d
	gd_need_root
	gd_need_cmd ip iproute2
	# Processes first (daemons, recorders), from their pid files.
	for d in "$GD_LAB_DIR"/node*; do
		[[ -d $d ]] || continue
		i=${d##*/node}
		[[ $i =~ ^[0-9]+$ ]] && stop_node "$i" quiet
		[[ $i =~ ^[0-9]+$ ]] && stop_watch "$i"
	done
	for ns in $(list_namespaces) $(ip netns list 2>/dev/null | awk -v p="$GD_PREFIX" '$1 ~ ("^" p "-probe-[0-9]+$") {print $1}'); do
		remove_namespace "$ns"
		n=$((n + 1))
	done
	for link in $(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | sed 's/@.*//'); do
		if [[ $link =~ ^$GD_PREFIX-v[0-9]+$ ]]; then
			ip link del "$link" 2>/dev/null || true
		fi
	done
	local br=""
	if ip link show "$GD_BRIDGE" >/dev/null 2>&1; then
		ip link del "$GD_BRIDGE"
		br=" and bridge $GD_BRIDGE"
	fi
	rm -f "$GD_LAB_DIR/n" "$GD_LAB_DIR/netem"
	gd_say "down: removed $n namespace(s) with their veths$br (logs kept in $GD_LAB_DIR)"
}

# ---------------------------------------------------------------- processes

build_bin() {
	if [[ -n ${GROUPD_BIN:-} ]]; then
		[[ -x $GROUPD_BIN ]] || gd_die "GROUPD_BIN=$GROUPD_BIN is not an executable"
		printf '%s\n' "$GROUPD_BIN" >"$GD_LAB_DIR/bin"
		return
	fi
	command -v go >/dev/null 2>&1 || gd_die "go is missing: install Go or set GROUPD_BIN to a groupd binary"
	gd_say "building $GD_LAB_DIR/groupd from $GD_REPO_ROOT"
	(cd "$GD_REPO_ROOT" && go build -o "$GD_LAB_DIR/groupd" ./cmd/groupd) ||
		gd_die "go build ./cmd/groupd failed (set GROUPD_BIN to use another binary)"
	printf '%s\n' "$GD_LAB_DIR/groupd" >"$GD_LAB_DIR/bin"
}

# start_node I: start node I's daemon unless it runs.
start_node() {
	local i=$1 d bin args=() extra=() t
	d=$(gd_node_dir "$i")
	bin=$(gd_bin)
	mkdir -p "$d/data"
	if gd_pid_alive "$d/pid" "$d/data"; then
		return 0
	fi
	rm -f "$d/api.sock" "$d/pid"
	if [[ -s $GD_LAB_DIR/run-args ]]; then
		mapfile -d '' -t extra <"$GD_LAB_DIR/run-args"
	fi
	args=(run --id "$i" --bind "$(gd_ip "$i")" --interface eth0 --data-dir "$d/data"
		--api "unix:$d/api.sock" --profile "${GROUPD_PROFILE:-lan}" "${extra[@]}")
	printf '%s starting: %s %s\n' "$(gd_now)" "$bin" "${args[*]}" >>"$d/groupd.log"
	# setsid: its own session, so a Ctrl-C in a terminal reaches only the
	# scripts, which stop the daemons in order. The shell writes its pid and
	# becomes groupd by exec.
	# shellcheck disable=SC2016 # $$ and $@ belong to the inner shell
	ip netns exec "$(gd_ns "$i")" setsid bash -c 'echo $$ >"$1"; shift; exec "$@"' gd-start \
		"$d/pid" "$bin" "${args[@]}" </dev/null >>"$d/groupd.log" 2>&1 &
	# Wait for its pid, then briefly for the API socket, to catch start failures.
	for ((t = 0; t < 50; t++)); do
		[[ -s $d/pid ]] && break
		sleep 0.02
	done
	for ((t = 0; t < 100; t++)); do
		[[ -S $d/api.sock ]] && return 0
		if ! gd_pid_alive "$d/pid"; then
			gd_warn "node $i exited at start; last lines of $d/groupd.log:"
			tail -n 5 "$d/groupd.log" >&2
			return 1
		fi
		sleep 0.05
	done
	gd_warn "node $i: no API socket after 5 s (still starting?), see $d/groupd.log"
}

# start_watch I: record node I's events, reconnecting whenever the daemon
# goes away (kill, restart), into RUN/nodeI/events.ndjson.
start_watch() {
	local i=$1 d bin
	d=$(gd_node_dir "$i")
	bin=$(gd_bin)
	gd_pid_alive "$d/watch.pid" gd-watch && return 0
	# shellcheck disable=SC2016 # the variables belong to the inner shell
	setsid bash -c 'echo $$ >"$1"; while :; do "$2" watch --json --api "$3" >>"$4" 2>>"$5" || true; sleep 0.2; done' gd-watch \
		"$d/watch.pid" "$bin" "unix:$d/api.sock" "$d/events.ndjson" "$d/watch.log" </dev/null >/dev/null 2>&1 &
}

# stop_node I [quiet]: SIGTERM node I's daemon, SIGKILL after 3 s.
stop_node() {
	local i=$1 d pid t
	d=$(gd_node_dir "$i")
	gd_pid_alive "$d/pid" "$d/data" || return 0
	pid=$(<"$d/pid")
	kill -TERM "$pid" 2>/dev/null || true
	for ((t = 0; t < 60; t++)); do
		gd_running "$pid" || break
		sleep 0.05
	done
	if gd_running "$pid"; then
		[[ ${2:-} == quiet ]] || gd_warn "node $i did not stop within 3 s of SIGTERM; sending SIGKILL"
		kill -KILL "$pid" 2>/dev/null || true
	fi
	rm -f "$d/pid"
}

stop_watch() {
	local d pid
	d=$(gd_node_dir "$1")
	gd_pid_alive "$d/watch.pid" gd-watch || return 0
	pid=$(<"$d/watch.pid")
	kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
	rm -f "$d/watch.pid"
}

cmd_start() {
	local n i failed=0
	gd_need_root
	gd_need_lab
	n=$(gd_n)
	if [[ ${1:-} == -- ]]; then
		shift
		printf '%s\0' "$@" >"$GD_LAB_DIR/run-args"
	elif [[ $# -gt 0 ]]; then
		gd_die "start: extra groupd run arguments go after --, e.g. lab.sh start -- --log-level debug"
	fi
	gd_need_cmd jq jq
	build_bin
	# Every daemon at once, as machines powering up together would: one
	# by one (each waiting for its API socket) took 14.7 s at N = 64 and
	# made a cold start a staggered one.
	gd_parallel start_node $(seq 1 "$n") || failed=1
	for ((i = 1; i <= n; i++)); do
		start_watch "$i"
	done
	((failed == 0)) || gd_die "some nodes failed to start (see warnings above)"
	gd_say "started $n node(s) (profile ${GROUPD_PROFILE:-lan}); logs, events and data in $GD_LAB_DIR/nodeI/"
}

cmd_stop() {
	local i pids=() d
	gd_need_root
	# SIGTERM to all at once, then wait up to 3 s, then SIGKILL.
	for d in "$GD_LAB_DIR"/node*; do
		[[ -d $d ]] || continue
		i=${d##*/node}
		[[ $i =~ ^[0-9]+$ ]] || continue
		if gd_pid_alive "$d/pid" "$d/data"; then
			pids+=("$(<"$d/pid")")
		fi
	done
	if ((${#pids[@]} > 0)); then
		kill -TERM "${pids[@]}" 2>/dev/null || true
		for ((i = 0; i < 60; i++)); do
			local alive=0 p
			for p in "${pids[@]}"; do gd_running "$p" && alive=1; done
			((alive)) || break
			sleep 0.05
		done
		for p in "${pids[@]}"; do
			if gd_running "$p"; then
				gd_warn "pid $p did not stop within 3 s of SIGTERM; sending SIGKILL"
				kill -KILL "$p" 2>/dev/null || true
			fi
		done
	fi
	for d in "$GD_LAB_DIR"/node*; do
		[[ -d $d ]] || continue
		i=${d##*/node}
		[[ $i =~ ^[0-9]+$ ]] || continue
		rm -f "$d/pid"
		stop_watch "$i"
	done
	gd_say "stopped ${#pids[@]} daemon(s)"
}

node_arg() {
	local i=${1:-} n
	n=$(gd_n)
	if ! [[ $i =~ ^[0-9]+$ ]] || ((i < 1 || i > n)); then
		gd_die "need a node number 1..$n, got '$i'"
	fi
	printf '%s' "$i"
}

cmd_kill() {
	local i d
	gd_need_root
	i=$(node_arg "${1:-}")
	d=$(gd_node_dir "$i")
	gd_pid_alive "$d/pid" "$d/data" || gd_die "node $i is not running"
	kill -KILL "$(<"$d/pid")"
	gd_record_fault kill "$i"
	rm -f "$d/pid"
	gd_say "killed node $i (SIGKILL)"
}

cmd_restart() {
	local i
	gd_need_root
	gd_need_lab
	i=$(node_arg "${1:-}")
	gd_record_fault restart "$i"
	stop_node "$i"
	start_node "$i" || gd_die "node $i failed to restart"
	start_watch "$i"
	gd_say "restarted node $i"
}

cmd_exec() {
	local i
	gd_need_root
	i=$(node_arg "${1:-}")
	shift
	(($# > 0)) || gd_die "exec needs a command"
	exec ip netns exec "$(gd_ns "$i")" "$@"
}

cmd_wait() {
	local timeout=60 n nodes start now
	while (($# > 0)); do
		case $1 in
		--timeout)
			timeout=${2:-}
			shift 2
			;;
		--timeout=*)
			timeout=${1#*=}
			shift
			;;
		*) break ;;
		esac
	done
	[[ $timeout =~ ^[0-9]+$ ]] || gd_die "wait: --timeout wants whole seconds"
	n=$(gd_n)
	if (($# > 0)); then
		nodes=$(gd_list "$1" "$n") || gd_die "wait: bad node list '$1' (want e.g. 1,2,4-6 within 1..$n)"
	else
		nodes=$(seq -s ' ' 1 "$n")
	fi
	gd_need_cmd jq jq
	start=$(date +%s.%N)
	# shellcheck disable=SC2086 # nodes is a list
	while ! gd_converged $nodes; do
		now=$(date +%s.%N)
		if awk -v a="$start" -v b="$now" -v t="$timeout" 'BEGIN{exit !(b-a >= t)}'; then
			gd_warn "nodes $nodes did not converge within ${timeout}s; their views (state group coordinator members):"
			for i in $nodes; do printf '  node %s: %s\n' "$i" "$(gd_view "$i")" >&2; done
			return 1
		fi
		sleep 0.2
	done
	now=$(date +%s.%N)
	local first
	first=${nodes%% *}
	gd_say "converged: nodes ${nodes// /,} in group $(gd_view "$first" | awk '{print $2 " coordinator " $3}') after $(awk -v a="$start" -v b="$now" 'BEGIN{printf "%.1f", b-a}')s"
}

cmd_status() {
	local n i d ns state daemon view mech
	if [[ ! -r $GD_LAB_DIR/n ]]; then
		echo "lab: not up (run dir $GD_LAB_DIR)"
		return 0
	fi
	n=$(gd_n)
	echo "lab: $n node(s), run dir $GD_LAB_DIR, binary $(gd_bin)"
	if ip link show "$GD_BRIDGE" >/dev/null 2>&1; then
		echo "bridge $GD_BRIDGE: $(ip -br link show "$GD_BRIDGE" | awk '{print $2}'), multicast snooping $(cat "/sys/class/net/$GD_BRIDGE/bridge/multicast_snooping" 2>/dev/null || echo '?')"
	else
		echo "bridge $GD_BRIDGE: missing (run lab.sh up $n)"
	fi
	if [[ -r $GD_LAB_DIR/netem ]]; then
		mech=$([[ $(<"$GD_LAB_DIR/netem") == yes ]] && echo "tc netem for loss/delay, iptables for cuts" || echo "iptables (no sch_netem in this kernel)")
		echo "faults: $mech"
	fi
	printf '%-5s %-6s %-13s %-5s %-14s %-7s %s\n' node ns address eth0 daemon faults "view (state group coordinator members)"
	for ((i = 1; i <= n; i++)); do
		ns=$(gd_ns "$i")
		d=$(gd_node_dir "$i")
		if gd_ns_exists "$ns"; then
			state=$(ip -n "$ns" -br link show eth0 2>/dev/null | awk '{print $2}')
		else
			state=missing
		fi
		if gd_pid_alive "$d/pid" "$d/data"; then
			daemon="pid $(<"$d/pid")"
			view=$(gd_view "$i")
		else
			daemon=stopped
			view=-
		fi
		local rules=0
		if gd_ns_exists "$ns" && command -v iptables >/dev/null 2>&1; then
			rules=$(ip netns exec "$ns" iptables -w -S 2>/dev/null | grep -c -E "^-A ($GD_CHAIN_PART|$GD_CHAIN_CUT|$GD_CHAIN_LOSS) " || true)
		fi
		printf '%-5s %-6s %-13s %-5s %-14s %-7s %s\n' "$i" "$ns" "$(gd_ip "$i")/24" "${state:-?}" "$daemon" "$rules" "$view"
	done
}

main() {
	local cmd=${1:-}
	(($# > 0)) && shift
	case $cmd in
	up) cmd_up "$@" ;;
	down) cmd_down "$@" ;;
	status) cmd_status "$@" ;;
	start) cmd_start "$@" ;;
	stop) cmd_stop "$@" ;;
	kill) cmd_kill "$@" ;;
	restart) cmd_restart "$@" ;;
	exec) cmd_exec "$@" ;;
	wait) cmd_wait "$@" ;;
	-h | --help | help) usage ;;
	*)
		usage >&2
		exit 2
		;;
	esac
}

main "$@"
