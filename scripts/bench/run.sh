#!/usr/bin/env bash
# run.sh: groupd's benchmark suite (issue 6). See scripts/bench/README.md and BENCHMARKS.md.
#
#   scripts/bench/run.sh [--quick] [--out DIR] [--only LIST] [--trials K] [--force]
#
#   --quick       fewer trials and sizes; finishes in under 5 minutes
#   --out DIR     results directory (default /tmp/groupd-bench-YYYYmmdd-HHMMSS)
#   --only LIST   comma-separated sections: failover,heal,steady,sim,scale,labscale
#                 (default: all; --quick skips labscale)
#   --trials K    failover trials per N and implementation (default 20; quick 3)
#   --force       take down a gd-* lab that is already up instead of refusing
#
# It drives the namespace lab of scripts/netem (internal/lab; prefix gd-,
# bridge gd-br0, 10.77.0.0/24, run dir $GROUPD_LAB_DIR or /tmp/groupd-lab) and keepalived
# (installed with apt-get when missing) in the same namespaces, writes raw
# results as NDJSON into DIR, then `benchtool report` writes DIR/summary.md
# and DIR/plots/*.svg. Figures are printed as they come. Everything it
# starts is stopped on exit (trap), keepalived included. Needs root.
set -euo pipefail

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$BENCH_DIR/../.." && pwd)
NETEM=$REPO/scripts/netem
LAB=$NETEM/lab.sh
# The suite uses the lab's default names (gd-I namespaces, gd-vI veths,
# 10.77.0.I): another lab may run beside it under another prefix and subnet.
unset GROUPD_LAB_PREFIX GROUPD_LAB_SUBNET
export GROUPD_LAB_DIR=${GROUPD_LAB_DIR:-/tmp/groupd-lab}
RUN=$GROUPD_LAB_DIR
KA=$RUN/keepalived
# keepalived's script security refuses notify scripts under a world-writable
# directory such as /tmp, so they live in a root-only directory.
NOTIFY_DIR=/run/groupd-bench-notify
VIP=10.77.0.250

QUICK=0
OUT=""
ONLY=""
TRIALS=""
FORCE=0
while (($# > 0)); do
	case $1 in
	--quick) QUICK=1 ;;
	--out)
		OUT=${2:?--out needs a directory}
		shift
		;;
	--only)
		ONLY=${2:?--only needs a list}
		shift
		;;
	--trials)
		TRIALS=${2:?--trials needs a number}
		shift
		;;
	--force) FORCE=1 ;;
	-h | --help)
		sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'
		exit 0
		;;
	*)
		echo "run.sh: unknown argument '$1' (see --help)" >&2
		exit 2
		;;
	esac
	shift
done

if ((QUICK)); then
	FO_SIZES=(3 5)
	FO_TRIALS=${TRIALS:-3}
	FO_RING=0
	HEAL_SIZES=(5)
	HEAL_TRIALS=3
	STEADY_WINDOW=10
	SIM_TRIALS=20
	SIM_SCALE=100,1000
	SIM_LIMIT=60s
	SIM_MEM_GIB=4
	DEFAULT_SECTIONS=failover,heal,steady,sim,scale
else
	FO_SIZES=(3 5 16)
	FO_TRIALS=${TRIALS:-20}
	FO_RING=1
	HEAL_SIZES=(5 16 32)
	HEAL_TRIALS=15
	STEADY_WINDOW=60
	SIM_TRIALS=200
	SIM_SCALE=100,1000,2000,5000
	SIM_LIMIT=15m
	SIM_MEM_GIB=8
	DEFAULT_SECTIONS=failover,heal,steady,sim,scale,labscale
fi
SECTIONS=${ONLY:-$DEFAULT_SECTIONS}
OUT=${OUT:-/tmp/groupd-bench-$(date -u +%Y%m%d-%H%M%S)}
mkdir -p "$OUT/bin"
OUT=$(cd "$OUT" && pwd)
BT=$OUT/bin/benchtool
T_START=$(date +%s)

say() { printf 'bench: %s\n' "$*"; }
die() {
	printf 'bench: %s\n' "$*" >&2
	exit 1
}
want() { [[ ,$SECTIONS, == *",$1,"* ]]; }
loadavg() { cut -d' ' -f1-3 /proc/loadavg; }
# note WHAT N TEXT: record something that did not run or failed.
note() {
	jq -cn --arg what "$1" --argjson n "$2" --arg note "$3" '{kind: "note", what: $what, n: $n, note: $note}' >>"$OUT/notes.ndjson"
	say "NOTE: $1 N=$2: $3"
}
section() {
	say "== $* == $(date -u +%H:%M:%S) load $(loadavg)"
	printf '%s %s load %s\n' "$(date -u +%FT%TZ)" "$*" "$(loadavg)" >>"$OUT/loads.txt"
}

[[ $EUID -eq 0 ]] || die "must run as root (network namespaces)"

# ---------------------------------------------------------------- keepalived

ka_conf() { # I N
	local i=$1 d=$KA/n$1
	mkdir -p "$d" "$NOTIFY_DIR"
	cat >"$NOTIFY_DIR/notify-$i.sh" <<EOF
#!/bin/bash
# keepalived notify for lab node $i: \$1=INSTANCE \$2=name \$3=state \$4=priority
echo "\$EPOCHREALTIME \$3 \$4" >>$d/notify.log
EOF
	chmod 755 "$NOTIFY_DIR/notify-$i.sh"
	# Defaults everywhere except what VRRP needs: advert_int 1 s (the
	# default), priority by node index so node N is the MASTER, preemption on
	# (the default) so a restarted node N takes over again.
	cat >"$d/keepalived.conf" <<EOF
global_defs {
  router_id gd-$i
  script_user root
  enable_script_security
}
vrrp_instance VI_1 {
  state BACKUP
  interface eth0
  virtual_router_id 77
  priority $((100 + i))
  advert_int 1
  virtual_ipaddress {
    $VIP/24
  }
  notify $NOTIFY_DIR/notify-$i.sh
}
EOF
}

ka_start() { # I
	local i=$1 d=$KA/n$1
	rm -f "$d/keepalived.pid" "$d/vrrp.pid"
	ip netns exec "gd-$i" setsid keepalived -n -l -D -P -f "$d/keepalived.conf" \
		-p "$d/keepalived.pid" -r "$d/vrrp.pid" </dev/null >>"$d/keepalived.log" 2>&1 &
	disown # its kill -9 in a trial is expected: no "Killed" message from bash
	local t
	for ((t = 0; t < 100; t++)); do
		[[ -s $d/vrrp.pid ]] && return 0
		sleep 0.05
	done
	die "keepalived on node $i did not start; see $d/keepalived.log"
}

ka_state() { tail -n 1 "$KA/n$1/notify.log" 2>/dev/null | awk '{print $2}'; }

# ka_wait_master N: node N MASTER, every other node BACKUP.
ka_wait_master() {
	local n=$1 t i ok
	for ((t = 0; t < 300; t++)); do
		ok=1
		[[ $(ka_state "$n") == MASTER ]] || ok=0
		for ((i = 1; i < n; i++)); do
			[[ $(ka_state "$i") == BACKUP ]] || ok=0
		done
		((ok)) && return 0
		sleep 0.1
	done
	return 1
}

# ka_pids: pids of every keepalived this script started (pid files, then
# any process whose command line names a config under $KA).
ka_pids() {
	local f p
	{
		for f in "$KA"/n*/keepalived.pid "$KA"/n*/vrrp.pid; do
			[[ -r $f ]] || continue
			p=$(<"$f")
			if [[ $p =~ ^[0-9]+$ && -r /proc/$p/cmdline ]] && tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -q -- "-f $KA/"; then
				echo "$p"
			fi
		done
		# Any keepalived whose command line names a config of ours (e.g. a
		# pid file lost to a crash). Only ids are killed, never names.
		pgrep -f -- "^keepalived .*-f $KA/" || true
	} | sort -u
	return 0
}

ka_stop_all() {
	local pids t
	pids=$(ka_pids | sort -u | tr '\n' ' ')
	[[ -n ${pids// /} ]] || return 0
	# shellcheck disable=SC2086
	kill -TERM $pids 2>/dev/null || true
	for ((t = 0; t < 40; t++)); do
		pids=$(ka_pids | tr '\n' ' ')
		[[ -n ${pids// /} ]] || return 0
		sleep 0.1
	done
	# shellcheck disable=SC2086
	kill -KILL $pids 2>/dev/null || true
}

# ---------------------------------------------------------------- lab

lab_reset() { # N
	ka_stop_all
	"$LAB" stop >/dev/null 2>&1 || true
	"$LAB" down >/dev/null 2>&1 || true
	rm -rf "$RUN"/node* "$RUN/history.ndjson" "$KA"
	"$LAB" up "$1" >/dev/null
}

# lab_start PROFILE [GROUPD-RUN-ARGS...]: (re)start every daemon, with
# exactly these run arguments (`start --` with none clears the last ones,
# which the lab keeps for restarts).
lab_start() {
	local profile=$1
	shift
	"$LAB" stop >/dev/null 2>&1 || true
	GROUPD_PROFILE=$profile "$LAB" start -- "$@" >/dev/null
}

bt_wait() { # N [TIMEOUT]
	"$BT" wait --run "$RUN" --nodes "$1" --timeout "${2:-60}s"
}

cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	say "cleaning up (keepalived, daemons, namespaces)"
	ka_stop_all || true
	"$LAB" stop >/dev/null 2>&1 || true
	"$LAB" down >/dev/null 2>&1 || true
	rm -rf "$NOTIFY_DIR"
	if [[ -n $(ka_pids) ]]; then
		say "WARNING: keepalived still running: $(ka_pids | tr '\n' ' ')"
	fi
	exit "$rc"
}

# ---------------------------------------------------------------- prepare

netns=$(ip netns list 2>/dev/null | awk '{print $1}')
if grep -qE '^gd-[0-9]+$' <<<"$netns"; then
	if ((FORCE)); then
		say "a gd-* lab is up; --force: taking it down"
	else
		die "a gd-* lab is already up (another run?); take it down with scripts/netem/lab.sh down, or pass --force"
	fi
fi
trap cleanup EXIT
trap 'exit 130' INT TERM

command -v keepalived >/dev/null 2>&1 || {
	say "installing keepalived"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq keepalived >/dev/null 2>&1 ||
		{ apt-get update -qq >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq keepalived >/dev/null 2>&1; } ||
		die "keepalived is missing and apt-get could not install it"
}
for c in jq curl ping ip iptables; do command -v "$c" >/dev/null 2>&1 || die "$c is missing"; done

say "results in $OUT ($( ((QUICK)) && echo quick || echo full) mode; sections $SECTIONS)"
say "building groupd and benchtool"
if [[ -n ${GROUPD_BIN:-} ]]; then
	cp "$GROUPD_BIN" "$OUT/bin/groupd"
else
	(cd "$REPO" && go build -o "$OUT/bin/groupd" ./cmd/groupd) || die "go build ./cmd/groupd failed"
fi
(cd "$REPO" && go build -o "$BT" ./internal/benchtool) || die "go build ./internal/benchtool failed"
export GROUPD_BIN=$OUT/bin/groupd

{
	echo "started:    $(date -u +%FT%TZ)"
	echo "mode:       $( ((QUICK)) && echo quick || echo full); sections $SECTIONS"
	echo "command:    scripts/bench/run.sh$( ((QUICK)) && echo ' --quick') --out $OUT${ONLY:+ --only $ONLY}${TRIALS:+ --trials $TRIALS}"
	echo "machine:    $(nproc) CPU ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), $(free -m | awk '/Mem:/{print $2}') MiB RAM"
	echo "kernel:     $(uname -r)"
	echo "go:         $(go version | cut -d' ' -f3-)"
	echo "groupd:     $(cd "$REPO" && git rev-parse --short HEAD 2>/dev/null || echo '?') ($(cd "$REPO" && git status --porcelain 2>/dev/null | wc -l) uncommitted paths in the work tree at build time)"
	echo "keepalived: $(keepalived --version 2>&1 | head -n1)"
	echo "load:       $(loadavg) at start (1, 5, 15 min)"
} >"$OUT/env.txt"
cat "$OUT/env.txt"

# ---------------------------------------------------------------- failover

failover_block() { # N
	local n=$1 t
	section "failover N=$n: groupd lan + keepalived (interleaved), then fast$( ((FO_RING)) && echo ', then ring')"
	lab_reset "$n"
	for ((t = 1; t <= n; t++)); do ka_conf "$t"; done
	lab_start lan
	for ((t = 1; t <= n; t++)); do ka_start "$t"; done
	bt_wait "$n" 60 || die "lab did not converge at N=$n"
	if [[ ! -s $OUT/rtt.json ]]; then
		# RTT between two lab nodes, with the daemons running.
		local line
		line=$(ip netns exec gd-1 ping -q -c 100 -i 0.02 10.77.0.2 | grep -E '^(rtt|round-trip)')
		echo "$line" | awk -F'[ /]+' '{printf "{\"min_ms\":%s,\"avg_ms\":%s,\"max_ms\":%s,\"count\":100}\n", $7, $8, $9}' >"$OUT/rtt.json"
		say "RTT node 1 -> node 2: $line"
	fi
	ka_wait_master "$n" || die "keepalived: node $n did not become the only MASTER"
	for ((t = 1; t <= FO_TRIALS; t++)); do
		if ! "$BT" failover --run "$RUN" --nodes "$n" --impl groupd-lan --trial "$t" >>"$OUT/failover.ndjson"; then
			note failover-groupd-lan "$n" "trial $t failed (see stderr above)"
		fi
		"$LAB" restart "$n" >/dev/null
		bt_wait "$n" 60 || die "lab did not converge after restarting node $n"
		if ! "$BT" vrrp-failover --ka "$KA" --nodes "$n" --trial "$t" >>"$OUT/failover.ndjson"; then
			note failover-keepalived "$n" "trial $t failed"
		fi
		ka_start "$n"
		ka_wait_master "$n" || die "keepalived: node $n did not take over again"
	done
	lab_start fast
	bt_wait "$n" 60 || die "fast profile did not converge at N=$n"
	for ((t = 1; t <= FO_TRIALS; t++)); do
		GROUPD_PROFILE=fast "$BT" failover --run "$RUN" --nodes "$n" --impl groupd-fast --trial "$t" --phase 200ms >>"$OUT/failover.ndjson" ||
			note failover-groupd-fast "$n" "trial $t failed"
		GROUPD_PROFILE=fast "$LAB" restart "$n" >/dev/null
		bt_wait "$n" 60 || die "fast: lab did not converge after restarting node $n"
	done
	if ((FO_RING)); then
		# Not `groupd run --help | grep -q`: with pipefail, grep exiting at
		# the first match can kill the writer with SIGPIPE and fail the
		# test (it skipped the N = 16 ring trials once).
		local help
		help=$("$GROUPD_BIN" run --help 2>&1 || true)
		if [[ $help == *--election* ]]; then
			lab_start lan --election ring
			bt_wait "$n" 60 || die "ring: lab did not converge at N=$n"
			for ((t = 1; t <= FO_TRIALS; t++)); do
				"$BT" failover --run "$RUN" --nodes "$n" --impl groupd-ring --trial "$t" >>"$OUT/failover.ndjson" ||
					note failover-groupd-ring "$n" "trial $t failed"
				"$LAB" restart "$n" >/dev/null
				bt_wait "$n" 60 || die "ring: lab did not converge after restarting node $n"
			done
		else
			note failover-groupd-ring "$n" "this groupd has no --election flag"
		fi
	fi
	ka_stop_all
}

if want failover; then
	for n in "${FO_SIZES[@]}"; do failover_block "$n"; done
fi

# ---------------------------------------------------------------- heal

heal_block() { # N TRIALS OUTFILE
	local n=$1 k=$2 f=$3 t
	section "heal N=$n ($k trials, partition halves for 10 s)"
	lab_reset "$n"
	lab_start lan
	bt_wait "$n" 180 || {
		note heal "$n" "the lab did not converge within 180 s after start"
		return 1
	}
	for ((t = 1; t <= k; t++)); do
		"$BT" heal --run "$RUN" --netem "$NETEM" --nodes "$n" --trial "$t" --hold 10s --timeout 90s >>"$f" ||
			{
				note heal "$n" "trial $t failed"
				"$NETEM/heal.sh" >/dev/null 2>&1 || true
				bt_wait "$n" 120 || return 1
			}
	done
}

if want heal; then
	for n in "${HEAL_SIZES[@]}"; do heal_block "$n" "$HEAL_TRIALS" "$OUT/heal.ndjson" || true; done
fi

# ---------------------------------------------------------------- steady state, footprint

if want steady; then
	n=5
	section "steady state and footprint, N=$n, windows of ${STEADY_WINDOW}s"
	lab_reset $n
	for ((t = 1; t <= n; t++)); do ka_conf "$t"; done
	lab_start lan
	bt_wait $n 60 || die "steady: no convergence"
	sleep 5
	gp() { cat "$RUN/node$1/pid"; }
	kp() { echo "$(<"$KA/n$1/keepalived.pid"),$(<"$KA/n$1/vrrp.pid")"; }
	"$BT" sample --run "$RUN" --nodes $n --label "groupd only" --window "${STEADY_WINDOW}s" \
		--proc "groupd coordinator (node $n)=$(gp $n)" --proc "groupd participant (node 1)=$(gp 1)" >>"$OUT/steady.ndjson"
	for ((t = 1; t <= n; t++)); do ka_start "$t"; done
	ka_wait_master $n || die "steady: keepalived did not settle"
	sleep 2
	"$BT" sample --run "$RUN" --nodes $n --label "groupd + keepalived" --window "${STEADY_WINDOW}s" \
		--proc "groupd coordinator (node $n)=$(gp $n)" --proc "groupd participant (node 1)=$(gp 1)" \
		--proc "keepalived MASTER (node $n, all processes)=$(kp $n)" --proc "keepalived BACKUP (node 1, all processes)=$(kp 1)" >>"$OUT/steady.ndjson"
	"$LAB" stop >/dev/null
	sleep 2
	"$BT" sample --nodes $n --label "keepalived only" --window "${STEADY_WINDOW}s" \
		--proc "keepalived MASTER (node $n, all processes)=$(kp $n)" --proc "keepalived BACKUP (node 1, all processes)=$(kp 1)" >>"$OUT/steady.ndjson"
	ka_stop_all
fi

# ---------------------------------------------------------------- lab at scale

# labscale_diag N LABEL: what limits the lab at N: the daemons' CPU over 10 s,
# UDP receive errors, memberlist's complaints and groupd's dropped packets.
labscale_diag() {
	local n=$1 label=$2 pids i f=$OUT/labscale-$1-$2.txt
	pids=$(for ((i = 1; i <= n; i++)); do cat "$RUN/node$i/pid" 2>/dev/null; done | paste -sd, -)
	"$BT" sample --run "$RUN" --nodes "$n" --label "N=$n $label" --window 10s --proc "all $n groupd daemons=$pids" >>"$OUT/lab-scale.ndjson" 2>>"$f" || true
	{
		echo "== load: $(loadavg)"
		for i in 1 "$n"; do
			echo "== UDP counters in gd-$i (/proc/net/snmp)"
			ip netns exec "gd-$i" grep '^Udp:' /proc/net/snmp
		done
		echo "== memberlist and groupd warnings, all nodes (count message)"
		cat "$RUN"/node*/groupd.log | grep -E '"level":"(warn|error)"' | grep -o '"message":"[^"]*"' |
			sed -E 's/[0-9]+/N/g' | sort | uniq -c | sort -rn | head -n 15
		echo "== groupd_dropped_packets_total by reason, summed over nodes"
		for ((i = 1; i <= n; i++)); do
			curl -s --max-time 2 --unix-socket "$RUN/node$i/api.sock" http://groupd/metrics | grep '^groupd_dropped_packets_total' || true
		done | awk '{s[$1]+=$2} END {for (k in s) if (s[k] > 0) print k, s[k]}'
		echo "== views (lab.sh status)"
		"$LAB" status 2>&1 | tail -n +5
	} >>"$f" 2>&1
}

# labscale_block N: cold start of N daemons at once; if that does not
# converge, grow the lab 8 nodes at a time instead (lab.sh up K adds
# namespaces, lab.sh start starts only the new daemons). Then idle CPU, two
# heals and two failovers at N.
labscale_block() {
	local n=$1 t0 t1 pids k ok=1
	section "lab scale N=$n"
	lab_reset "$n"
	t0=$(date +%s.%N)
	if ! lab_start lan; then
		note labscale "$n" "lab.sh start failed"
		return 1
	fi
	t1=$(date +%s.%N)
	say "lab.sh start of $n daemons took $(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.1f", b-a}') s"
	if bt_wait "$n" 120; then
		"$BT" converge --run "$RUN" --nodes "$n" --since "$t0" --note "cold start of all $n at once; lab.sh start took $(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.1f", b-a}') s" >>"$OUT/lab-scale.ndjson" || true
	else
		labscale_diag "$n" cold-start
		note labscale "$n" "cold start of all $n daemons at once: no single group within 120 s (load $(loadavg)); see labscale-$n-cold-start.txt; growing 8 nodes at a time instead"
		lab_reset 8
		for ((k = 8; k <= n; k += 8)); do
			"$LAB" up "$k" >/dev/null
			t1=$(date +%s.%N)
			"$LAB" start >/dev/null || {
				ok=0
				break
			}
			if ! bt_wait "$k" 90; then
				labscale_diag "$k" grown
				note labscale "$n" "grown 8 at a time: no single group at $k nodes within 90 s (load $(loadavg)); see labscale-$k-grown.txt"
				ok=0
				break
			fi
			"$BT" converge --run "$RUN" --nodes "$k" --since "$t1" --impl groupd-lan-grown --note "grown from $((k - 8)) to $k" >>"$OUT/lab-scale.ndjson" || true
		done
		((ok)) || return 1
	fi
	pids=$(for ((t = 1; t <= n; t++)); do cat "$RUN/node$t/pid"; done | paste -sd, -)
	"$BT" sample --run "$RUN" --nodes "$n" --label "N=$n idle" --window 20s --proc "all $n groupd daemons=$pids" >>"$OUT/lab-scale.ndjson"
	for t in 1 2; do
		if ! "$BT" heal --run "$RUN" --netem "$NETEM" --nodes "$n" --trial "$t" --hold 10s --timeout 120s >>"$OUT/lab-scale.ndjson"; then
			labscale_diag "$n" "heal-$t"
			note labscale-heal "$n" "trial $t: no single group within 120 s of the heal (load $(loadavg)); see labscale-$n-heal-$t.txt"
			"$NETEM/heal.sh" >/dev/null 2>&1 || true
			bt_wait "$n" 60 || return 1
		fi
	done
	for t in 1 2; do
		if ! "$BT" failover --run "$RUN" --nodes "$n" --trial "$t" >>"$OUT/lab-scale.ndjson"; then
			labscale_diag "$n" "failover-$t"
			note labscale-failover "$n" "trial $t failed (load $(loadavg)); see labscale-$n-failover-$t.txt"
		fi
		"$LAB" restart "$n" >/dev/null
		bt_wait "$n" 60 || return 1
	done
}

if want labscale; then
	for n in 32 48 64; do
		labscale_block "$n" || {
			say "lab scale stops at N=$n"
			break
		}
	done
	# Nothing of the lab may run during the simulator's wall-clock figures.
	"$LAB" stop >/dev/null 2>&1 || true
	"$LAB" down >/dev/null 2>&1 || true
fi

# ---------------------------------------------------------------- simulator

if want sim; then
	section "simulator: failover (bully lan/fast, ring) and heal counts (N=3,5,16,32; $SIM_TRIALS seeds), standalone bully, ring tests"
	"$BT" sim-msgs --n 3,5,16,32 --trials "$SIM_TRIALS" --profile lan >>"$OUT/sim.ndjson" || note sim-msgs 0 "lan failed"
	"$BT" sim-msgs --n 3,5,16 --trials "$SIM_TRIALS" --profile fast --what failover >>"$OUT/sim.ndjson" || note sim-msgs 0 "fast failed"
	"$BT" sim-msgs --n 3,5,16,32 --trials "$SIM_TRIALS" --election ring --what failover >>"$OUT/sim.ndjson" || note sim-msgs 0 "ring failed"
	"$BT" bully --n 2,4,15 >"$OUT/bully.ndjson"
	(cd "$REPO" && go test ./ring -count=1 -run 'TestSeedFormulas|TestGroupdMode' -v 2>&1) |
		grep -vE '^(=== RUN|=== PAUSE|=== CONT)' >"$OUT/ring-test.txt" || note ring-test 0 "go test ./ring failed; see ring-test.txt"
fi

if want scale; then
	section "simulator scale: N=$SIM_SCALE (limit $SIM_LIMIT and $SIM_MEM_GIB GiB per N)"
	# One process per N, so each peak RSS is its own, and a memory guard
	# (default 8 GiB) ends a size cleanly before the kernel's OOM killer
	# would (N=5000 passed 19 GiB on this machine and was OOM-killed).
	for n in ${SIM_SCALE//,/ }; do
		"$BT" sim-scale --n "$n" --limit "$SIM_LIMIT" --mem "$SIM_MEM_GIB" >>"$OUT/sim-scale.ndjson" ||
			note sim-scale "$n" "benchtool sim-scale exited with status $? (killed?)"
	done
fi

# ---------------------------------------------------------------- report

section "report"
T_END=$(date +%s)
printf 'finished:   %s (%d s in all); load %s\n' "$(date -u +%FT%TZ)" $((T_END - T_START)) "$(loadavg)" >>"$OUT/env.txt"
"$BT" report --dir "$OUT"
echo
sed -n '/^## Failover (lab)/,/^### Failover in the simulator/p;/^## Heal (lab)/,/^Documented anchors/p' "$OUT/summary.md" | grep -v '^### Failover in the simulator'
say "done in $((T_END - T_START)) s: $OUT/summary.md and $OUT/plots/"
