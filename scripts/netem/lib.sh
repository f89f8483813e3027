# shellcheck shell=bash
# lib.sh: helpers shared by the groupd network lab scripts (lab.sh,
# partition.sh, heal.sh, degrade.sh, experiment.sh). Source it, do not run it.
#
# Everything the lab creates carries the prefix P (default "gd"), so that down
# can find it again after a crash:
#   bridge     P-br0                       (root namespace, no address)
#   namespaces P-1 .. P-N                  (eth0 = SUBNET.I/24, default 10.77.0.I)
#   veths      P-v1 .. P-vN                (root side, enslaved to P-br0)
#   probe      P-probe-PID                 (short-lived, to detect sch_netem)
#   iptables   chains P-PART, P-CUT, P-LOSS (P in capitals) inside each P-I namespace
# State and logs live in the run directory, $GROUPD_LAB_DIR (default
# /tmp/groupd-lab, or /tmp/groupd-lab-P with a prefix other than gd).
#
# Two labs can run side by side when they differ in all three of
# GROUPD_LAB_PREFIX (P: a lower-case letter, then up to 7 lower-case letters
# or digits), GROUPD_LAB_SUBNET (SUBNET: the first three octets of a /24,
# default 10.77.0) and GROUPD_LAB_DIR. Without them every name is as above
# with P=gd.

GD_PREFIX=${GROUPD_LAB_PREFIX:-gd}
if ! [[ $GD_PREFIX =~ ^[a-z][a-z0-9]{0,7}$ ]]; then
	printf '%s: GROUPD_LAB_PREFIX=%s: want a lower-case letter, then up to 7 lower-case letters or digits\n' \
		"$(basename "$0" .sh)" "$GD_PREFIX" >&2
	exit 1
fi
GD_SUBNET=${GROUPD_LAB_SUBNET:-10.77.0}
if ! [[ $GD_SUBNET =~ ^([0-9]{1,3})\.([0-9]{1,3})\.([0-9]{1,3})$ ]] ||
	((10#${BASH_REMATCH[1]} > 255 || 10#${BASH_REMATCH[2]} > 255 || 10#${BASH_REMATCH[3]} > 255)); then
	printf '%s: GROUPD_LAB_SUBNET=%s: want the first three octets of a /24, e.g. 10.77.0\n' \
		"$(basename "$0" .sh)" "$GD_SUBNET" >&2
	exit 1
fi
# shellcheck disable=SC2034 # used by the scripts that source this file
GD_BRIDGE=$GD_PREFIX-br0
# Fault chains: GD-PART, GD-CUT and GD-LOSS with the default prefix.
# shellcheck disable=SC2034
GD_CHAIN_PART=${GD_PREFIX^^}-PART
# shellcheck disable=SC2034
GD_CHAIN_CUT=${GD_PREFIX^^}-CUT
# shellcheck disable=SC2034
GD_CHAIN_LOSS=${GD_PREFIX^^}-LOSS
# shellcheck disable=SC2034
GD_MAX_NODES=200
if [[ $GD_PREFIX == gd ]]; then
	GD_LAB_DIR=${GROUPD_LAB_DIR:-/tmp/groupd-lab}
else
	GD_LAB_DIR=${GROUPD_LAB_DIR:-/tmp/groupd-lab-$GD_PREFIX}
fi
GD_SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck disable=SC2034
GD_REPO_ROOT=$(cd "$GD_SCRIPT_DIR/../.." && pwd)
GD_PROG=$(basename "$0" .sh)

gd_say() { printf '%s: %s\n' "$GD_PROG" "$*"; }
gd_warn() { printf '%s: warning: %s\n' "$GD_PROG" "$*" >&2; }
gd_die() {
	printf '%s: %s\n' "$GD_PROG" "$*" >&2
	exit 1
}

# gd_need_root refuses to go on without root, in one line.
gd_need_root() {
	if [[ $EUID -ne 0 ]]; then
		gd_die "must run as root (network namespaces need CAP_NET_ADMIN); try: sudo $0"
	fi
}

# gd_need_cmd CMD PACKAGE: make sure CMD exists, installing PACKAGE with
# apt-get when possible (set GROUPD_NO_INSTALL=1 to forbid that).
gd_need_cmd() {
	local cmd=$1 pkg=$2
	command -v "$cmd" >/dev/null 2>&1 && return 0
	if [[ -z ${GROUPD_NO_INSTALL:-} && $EUID -eq 0 ]] && command -v apt-get >/dev/null 2>&1; then
		gd_say "installing $pkg (for $cmd)" >&2
		if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$pkg" >/dev/null 2>&1; then
			DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null 2>&1 || true
			DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$pkg" >/dev/null 2>&1 || true
		fi
		command -v "$cmd" >/dev/null 2>&1 && return 0
	fi
	gd_die "$cmd is missing: install it with 'apt-get install -y $pkg'"
}

gd_now() { date -u +%Y-%m-%dT%H:%M:%S.%NZ; }

gd_ns() { printf '%s-%s' "$GD_PREFIX" "$1"; }
gd_veth() { printf '%s-v%s' "$GD_PREFIX" "$1"; }
gd_ip() { printf '%s.%s' "$GD_SUBNET" "$1"; }
gd_node_dir() { printf '%s/node%s' "$GD_LAB_DIR" "$1"; }
gd_sock() { printf '%s/node%s/api.sock' "$GD_LAB_DIR" "$1"; }
gd_ns_exists() { [[ -e /run/netns/$1 || -e /var/run/netns/$1 ]]; }

# gd_n prints the lab's node count, or fails when no lab is up.
gd_n() {
	local n
	[[ -r $GD_LAB_DIR/n ]] || gd_die "no lab is up (no $GD_LAB_DIR/n): run lab.sh up N first"
	n=$(<"$GD_LAB_DIR/n")
	[[ $n =~ ^[0-9]+$ ]] || gd_die "corrupt $GD_LAB_DIR/n: $n"
	printf '%s' "$n"
}

# gd_need_lab checks that the lab's namespaces exist.
gd_need_lab() {
	local n i
	n=$(gd_n)
	for ((i = 1; i <= n; i++)); do
		gd_ns_exists "$(gd_ns "$i")" || gd_die "namespace $(gd_ns "$i") is missing: run lab.sh up $n"
	done
}

# gd_list SPEC N: expand "1,2,5-7" into "1 2 5 6 7", checking 1 <= i <= N and
# no duplicates. Prints nothing and fails on a bad list.
gd_list() {
	local spec=$1 n=$2 part a b i out=() seen=" " parts=()
	[[ -n $spec ]] || return 1
	IFS=, read -r -a parts <<<"$spec"
	for part in "${parts[@]}"; do
		part=${part// /}
		if [[ $part =~ ^([0-9]+)-([0-9]+)$ ]]; then
			a=$((10#${BASH_REMATCH[1]})) b=$((10#${BASH_REMATCH[2]}))
		elif [[ $part =~ ^[0-9]+$ ]]; then
			a=$((10#$part)) b=$a
		else
			return 1
		fi
		((a >= 1 && b <= n && a <= b)) || return 1
		for ((i = a; i <= b; i++)); do
			[[ $seen == *" $i "* ]] && return 1
			seen+="$i "
			out+=("$i")
		done
	done
	printf '%s\n' "${out[*]}"
}

# gd_json_str S: S as a JSON string.
gd_json_str() {
	local s=$1
	s=${s//\\/\\\\}
	s=${s//\"/\\\"}
	s=${s//$'\n'/\\n}
	s=${s//$'\t'/\\t}
	printf '"%s"' "$s"
}

# gd_record_fault KIND SPEC: append a fault to the run's faults.ndjson, read
# by experiment.sh and `groupd timeline --faults`.
gd_record_fault() {
	mkdir -p "$GD_LAB_DIR"
	printf '{"time":"%s","kind":%s,"spec":%s}\n' "$(gd_now)" "$(gd_json_str "$1")" "$(gd_json_str "$2")" >>"$GD_LAB_DIR/faults.ndjson"
}

# gd_netem_available: does this kernel have sch_netem? Probed once by adding
# a netem qdisc to a veth inside a throwaway namespace; cached in the run
# dir. GROUPD_FAULTS=iptables forces the fallback, GROUPD_FAULTS=netem
# insists on netem.
gd_netem_available() {
	case ${GROUPD_FAULTS:-} in
	iptables) return 1 ;;
	netem | "") ;;
	*) gd_die "GROUPD_FAULTS must be netem or iptables, not '$GROUPD_FAULTS'" ;;
	esac
	local cache=$GD_LAB_DIR/netem ns result=no
	if [[ ! -r $cache ]]; then
		command -v tc >/dev/null 2>&1 || gd_need_cmd tc iproute2
		ns=$GD_PREFIX-probe-$$
		if ip netns add "$ns" 2>/dev/null; then
			if ip -n "$ns" link add p0 type veth peer name p1 2>/dev/null &&
				ip -n "$ns" link set p0 up 2>/dev/null &&
				tc -n "$ns" qdisc add dev p0 root netem delay 1ms 2>/dev/null; then
				result=yes
			fi
			ip netns del "$ns" 2>/dev/null || true
		fi
		mkdir -p "$GD_LAB_DIR"
		printf '%s\n' "$result" >"$cache"
	fi
	if [[ $(<"$cache") == yes ]]; then
		return 0
	fi
	if [[ ${GROUPD_FAULTS:-} == netem ]]; then
		gd_die "GROUPD_FAULTS=netem but this kernel has no sch_netem"
	fi
	return 1
}

# gd_ipt I ARGS...: iptables inside node I's namespace.
gd_ipt() {
	local i=$1
	shift
	ip netns exec "$(gd_ns "$i")" iptables -w "$@"
}

# gd_chain_replace I CHAIN RULES: atomically replace CHAIN's rules in node I
# (creating the chain and its jump from INPUT when missing). RULES holds one
# iptables rule spec per line ("-s SUBNET.3 -j DROP"); empty flushes.
gd_chain_replace() {
	local i=$1 chain=$2 rules=$3 input line
	input="*filter"$'\n'":$chain - [0:0]"$'\n'
	while IFS= read -r line; do
		[[ -n $line ]] && input+="-A $chain $line"$'\n'
	done <<<"$rules"
	input+="COMMIT"$'\n'
	ip netns exec "$(gd_ns "$i")" iptables-restore -w --noflush <<<"$input" ||
		gd_die "iptables-restore failed in $(gd_ns "$i") for chain $chain"
	gd_ipt "$i" -C INPUT -j "$chain" 2>/dev/null || gd_ipt "$i" -A INPUT -j "$chain"
}

# gd_parallel FUNC I...: run FUNC I for every node I at once, each in a
# subshell, and wait for all of them; fails if any failed. A fault applied
# one namespace at a time reaches the last node of a 32-node lab a second
# after the first, which blurs what an experiment measures.
gd_parallel() {
	local fn=$1 i pid failed=0
	local -a pids=()
	shift
	for i in "$@"; do
		"$fn" "$i" &
		pids+=("$!")
	done
	for pid in "${pids[@]}"; do
		wait "$pid" || failed=1
	done
	return "$failed"
}

# gd_chains_flush I CHAIN...: empty the CHAINs in node I with one
# iptables-restore (declaring a chain flushes it; a missing one is created
# empty, which matches nothing until a jump to it is added).
gd_chains_flush() {
	local i=$1 chain input="*filter"$'\n'
	shift
	for chain in "$@"; do
		input+=":$chain - [0:0]"$'\n'
	done
	input+="COMMIT"$'\n'
	ip netns exec "$(gd_ns "$i")" iptables-restore -w --noflush <<<"$input" ||
		gd_die "iptables-restore failed in $(gd_ns "$i") flushing ${*}"
}

# gd_bin prints the groupd binary the lab runs.
gd_bin() {
	if [[ -n ${GROUPD_BIN:-} ]]; then
		printf '%s' "$GROUPD_BIN"
	elif [[ -r $GD_LAB_DIR/bin ]]; then
		cat "$GD_LAB_DIR/bin"
	else
		printf '%s' "$GD_LAB_DIR/groupd"
	fi
}

# gd_running PID: is PID a live process? A zombie counts as gone: in
# containers PID 1 may take seconds to reap the daemons it inherited.
gd_running() {
	local stat
	kill -0 "$1" 2>/dev/null || return 1
	stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
	stat=${stat##*) }
	[[ ${stat:0:1} != Z ]]
}

# gd_pid_alive PIDFILE [NAME]: is the process in PIDFILE alive (and, when
# NAME is given, is NAME in its command line)? Guards against reused pids.
gd_pid_alive() {
	local pidf=$1 name=${2:-} pid
	[[ -r $pidf ]] || return 1
	pid=$(<"$pidf")
	[[ $pid =~ ^[0-9]+$ ]] || return 1
	gd_running "$pid" || return 1
	[[ -z $name ]] && return 0
	tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q -- "$name"
}

# gd_status I: node I's status JSON (empty and failing when it does not answer).
gd_status() {
	"$(gd_bin)" status --json --api "unix:$(gd_sock "$1")" 2>/dev/null
}

# gd_view I: one line "state group coordinator members" for node I, or "down".
gd_view() {
	local s
	if s=$(gd_status "$1") && [[ -n $s ]]; then
		jq -r '[.state // "?", .group // "?", (.coordinator // 0 | tostring), ((.members // []) | map(tostring) | join(","))] | join(" ")' <<<"$s" 2>/dev/null || echo "unparsable"
	else
		echo "down"
	fi
}

# gd_converged NODES...: do these nodes all report state normal, the same
# group, coordinator = the highest of them and exactly them as members?
gd_converged() {
	local want_coord=0 want_members i v group="" state g c m
	for i in "$@"; do ((i > want_coord)) && want_coord=$i; done
	want_members=$(printf '%s\n' "$@" | sort -n | paste -sd, -)
	for i in "$@"; do
		v=$(gd_view "$i")
		read -r state g c m <<<"$v"
		[[ $state == normal && $c == "$want_coord" && $m == "$want_members" ]] || return 1
		[[ -z $group ]] && group=$g
		[[ $g == "$group" ]] || return 1
	done
	return 0
}
