#!/usr/bin/env bash
# peers.sh: groupd beside its peers (issue 14). See scripts/bench/README.md, "Peers".
#
#   scripts/bench/peers.sh [--nodes LIST] [--peers LIST] [--trials K] [--idle S]
#                          [--out DIR] [--quick] [--force] [--no-install]
#
#   --nodes LIST   lab sizes, comma-separated (default 5; the full comparison is 5,16)
#   --peers LIST   groupd,corosync,serf,jgroups,keepalived (default: all, in that order)
#   --trials K     trials per measure: cold start, failover, heal (default 3)
#   --idle S       the quiet window for the idle cost, seconds (default 30)
#   --out DIR      results directory (default /tmp/groupd-peers-YYYYmmdd-HHMMSS)
#   --quick        N=3, 1 trial, 10 s idle window: checks the harness in a few minutes
#   --force        take down a pb-* lab that is already up instead of refusing
#   --no-install   never apt-get install a missing peer; report it as not run
#
# For each N it brings up the lab of scripts/netem with its own names
# (prefix pb, bridge pb-br0, 10.91.0.0/24, run dir /tmp/groupd-peers-lab),
# then runs each peer in turn on those namespaces, one daemon per
# namespace, bound to the lab's addresses only: a cold start of all N at
# once (K times), an idle window, K failovers (kill -9 of the leader) and
# K heals (10 s partition into halves). Missing peers are installed with
# apt-get install -y (it says so). Raw results go to DIR/peers.ndjson,
# the table to DIR/peers.md. Every process it started is stopped on exit
# (trap), and the lab is taken down. Needs root.
set -euo pipefail

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$BENCH_DIR/../.." && pwd)
SRC=$BENCH_DIR/peers
NETEM=$REPO/scripts/netem
LAB=$NETEM/lab.sh

# The lab's names for this suite: its own prefix, subnet and run dir, so it
# can run beside the default gd-* lab and the other engineers' labs.
export GROUPD_LAB_PREFIX=pb
export GROUPD_LAB_SUBNET=10.91.0
export GROUPD_LAB_DIR=/tmp/groupd-peers-lab
export GROUPD_PROFILE=lan
PREFIX=$GROUPD_LAB_PREFIX
SUBNET=$GROUPD_LAB_SUBNET
RUN=$GROUPD_LAB_DIR
PD=$RUN/peers
# keepalived's script security refuses notify scripts under a world-writable
# directory such as /tmp, so they live in a root-only directory.
NOTIFY_DIR=/run/groupd-peers-notify
ALL_PEERS=groupd,corosync,serf,jgroups,keepalived
JG_JAR=/usr/share/java/jgroups.jar
COROSYNC_MCAST=239.192.91.1
COROSYNC_PORT=5405
KA_VRID=91
KA_VIP=$SUBNET.250

SIZES=5
PEERS=$ALL_PEERS
TRIALS=3
IDLE=30
OUT=""
QUICK=0
FORCE=0
INSTALL=1
MADE_POLICY=0
while (($# > 0)); do
	case $1 in
	--nodes)
		SIZES=${2:?--nodes needs a list}
		shift
		;;
	--peers)
		PEERS=${2:?--peers needs a list}
		shift
		;;
	--trials)
		TRIALS=${2:?--trials needs a number}
		shift
		;;
	--idle)
		IDLE=${2:?--idle needs seconds}
		shift
		;;
	--out)
		OUT=${2:?--out needs a directory}
		shift
		;;
	--quick) QUICK=1 ;;
	--force) FORCE=1 ;;
	--no-install) INSTALL=0 ;;
	-h | --help)
		sed -n '2,28p' "$0" | sed 's/^# \{0,1\}//'
		exit 0
		;;
	*)
		echo "peers.sh: unknown argument '$1' (see --help)" >&2
		exit 2
		;;
	esac
	shift
done
if ((QUICK)); then
	SIZES=3
	TRIALS=1
	IDLE=10
fi
[[ $SIZES =~ ^[0-9]+(,[0-9]+)*$ ]] || {
	echo "peers.sh: --nodes $SIZES: want sizes like 5 or 5,16" >&2
	exit 2
}
[[ $TRIALS =~ ^[1-9][0-9]*$ && $IDLE =~ ^[1-9][0-9]*$ ]] || {
	echo "peers.sh: --trials and --idle want positive whole numbers" >&2
	exit 2
}
for p in ${PEERS//,/ }; do
	[[ ,$ALL_PEERS, == *",$p,"* ]] || {
		echo "peers.sh: unknown peer '$p' (peers: $ALL_PEERS)" >&2
		exit 2
	}
done

OUT=${OUT:-/tmp/groupd-peers-$(date -u +%Y%m%d-%H%M%S)}
mkdir -p "$OUT/bin"
OUT=$(cd "$OUT" && pwd)
BT=$OUT/bin/benchtool
NDJSON=$OUT/peers.ndjson
T_START=$(date +%s)

say() { printf 'peers: %s\n' "$*"; }
die() {
	printf 'peers: %s\n' "$*" >&2
	exit 1
}
loadavg() { cut -d' ' -f1-3 /proc/loadavg; }
section() {
	say "== $* == $(date -u +%H:%M:%S) load $(loadavg)"
	printf '%s %s load %s\n' "$(date -u +%FT%TZ)" "$*" "$(loadavg)" >>"$OUT/loads.txt"
}
# note PEER N WHAT TEXT: something that did not run or failed, into the results.
note() {
	jq -cn --arg peer "$1" --argjson n "$2" --arg what "$3" --arg note "$4" --arg load "$(loadavg)" \
		'{kind:"note",peer:$peer,n:$n,what:$what,note:$note,load:($load|split(" ")|map(tonumber))}' >>"$NDJSON"
	say "NOTE: $1 N=$2 $3: $4"
}
bt() { "$BT" peers "$1" --dir "$PD" --lab "$RUN" --prefix "$PREFIX" --netem "$NETEM" "${@:2}"; }

[[ $EUID -eq 0 ]] || die "must run as root (network namespaces)"
for c in ip iptables jq go; do command -v "$c" >/dev/null 2>&1 || die "$c is missing"; done

# ---------------------------------------------------------------- processes

# pid_ok PID PATTERN: PID is alive and its command line contains PATTERN,
# so a pid file never makes us signal a recycled pid.
pid_ok() {
	local c
	[[ $1 =~ ^[0-9]+$ && -r /proc/$1/cmdline ]] || return 1
	# No pipeline into grep -q: under pipefail, grep leaving early can
	# fail the writer with SIGPIPE. The process may also be gone by now.
	c=$({ tr '\0' ' ' <"/proc/$1/cmdline"; } 2>/dev/null) || return 1
	[[ $c == *"$2"* ]]
}

# stop_pids SIGNAL-WAIT PATTERN PIDFILE...: SIGTERM to the live pids of the
# files, SIGKILL to any left after WAIT seconds.
stop_pids() {
	local wait=$1 pat=$2 f p t live=()
	shift 2
	for f in "$@"; do
		[[ -r $f ]] || continue
		p=$(<"$f")
		pid_ok "$p" "$pat" && live+=("$p")
	done
	((${#live[@]} > 0)) || return 0
	kill -TERM "${live[@]}" 2>/dev/null || true
	for ((t = 0; t < wait * 10; t++)); do
		local left=()
		for p in "${live[@]}"; do pid_ok "$p" "$pat" && left+=("$p"); done
		((${#left[@]} > 0)) || return 0
		sleep 0.1
	done
	kill -KILL "${live[@]}" 2>/dev/null || true
	return 0
}

# One line of the agent's output, stamped with the time it was read.
stamp() {
	local l
	while IFS= read -r l; do printf '%s %s\n' "$EPOCHREALTIME" "$l"; done
}

# ---------------------------------------------------------------- groupd

groupd_prepare() { :; }
groupd_start_all() { "$LAB" start >/dev/null; }
groupd_start() { "$LAB" restart "$1" >/dev/null; }
groupd_alive() { [[ -r $RUN/node$1/pid ]] && pid_ok "$(<"$RUN/node$1/pid")" "groupd"; }
groupd_stop_all() { "$LAB" stop >/dev/null 2>&1 || true; }

# ---------------------------------------------------------------- corosync

corosync_prepare() { # N
	local n=$1 i j d nodelist="" conf
	for ((j = 1; j <= n; j++)); do
		nodelist+=$(printf '\tnode {\n\t\tname: n%d\n\t\tnodeid: %d\n\t\tring0_addr: %s.%d\n\t}' "$j" "$j" "$SUBNET" "$j")
		((j < n)) && nodelist+=$'\n'
	done
	for ((i = 1; i <= n; i++)); do
		d=$PD/corosync/n$i
		mkdir -p "$d/run" "$d/state"
		conf=$(<"$SRC/corosync.conf.in")
		conf=${conf//@NODELIST@/$nodelist}
		conf=${conf//@MCAST@/$COROSYNC_MCAST}
		conf=${conf//@PORT@/$COROSYNC_PORT}
		conf=${conf//@DIR@/$d}
		conf=${conf//@I@/$i}
		conf=${conf//@N@/$n}
		printf '%s\n' "$conf" >"$d/corosync.conf"
	done
}
corosync_start() { # I
	local d=$PD/corosync/n$1
	rm -f "$d/pid"
	# corosync locks /run/corosync.pid, one per host: each node gets its
	# own /run, bind-mounted in the private mount namespace that ip netns
	# exec gives every command.
	# shellcheck disable=SC2016 # $1 and $2 are sh's, not ours
	ip netns exec "$PREFIX-$1" sh -c 'mount --bind "$1" /run && exec corosync -f -c "$2"' sh "$d/run" "$d/corosync.conf" \
		</dev/null >>"$d/stdout.log" 2>&1 &
	echo $! >"$d/pid"
	echo $! >>"$PD/corosync/started.pids"
	disown
}
corosync_alive() { [[ -r $PD/corosync/n$1/pid ]] && pid_ok "$(<"$PD/corosync/n$1/pid")" "$PD/corosync/n$1/corosync.conf"; }
corosync_stop_all() {
	stop_pids 5 "$PD/corosync/" "$PD"/corosync/n*/pid
	corosync_clean_shm
}
# A corosync killed with -9 leaves its blackbox in /dev/shm: remove those
# of the pids started here, and only once they are gone.
corosync_clean_shm() {
	local f p
	[[ -r $PD/corosync/started.pids ]] || return 0
	while read -r p; do
		[[ -d /proc/$p ]] && continue
		for f in /dev/shm/qb-corosync-"$p"-*; do [[ -e $f ]] && rm -f "$f"; done
	done <"$PD/corosync/started.pids"
	return 0
}

# ---------------------------------------------------------------- serf

serf_prepare() { # N
	local i
	for ((i = 1; i <= $1; i++)); do mkdir -p "$PD/serf/n$i"; done
	install -m 755 "$SRC/serf-event.sh" "$PD/serf/serf-event.sh"
}
serf_start() { # I
	local d=$PD/serf/n$1
	rm -f "$d/pid"
	printf '%s agent-start -\n' "$EPOCHREALTIME" >>"$d/events.log"
	# serf's defaults (profile lan), discovery by mDNS on the lab's eth0
	# (-discover: no seed addresses, as groupd's beacons), RPC on the
	# namespace's own loopback, and an event handler for member events.
	ip netns exec "$PREFIX-$1" serf agent -node="n$1" -bind="$SUBNET.$1:7946" -iface=eth0 \
		-rpc-addr=127.0.0.1:7373 -discover=groupd-peers -log-level=info \
		-event-handler="member-join,member-leave,member-failed,member-update,member-reap=$PD/serf/serf-event.sh $d/events.log" \
		</dev/null > >(stamp >>"$d/agent.log") 2>&1 &
	echo $! >"$d/pid"
	disown
}
serf_alive() { [[ -r $PD/serf/n$1/pid ]] && pid_ok "$(<"$PD/serf/n$1/pid")" "-node=n$1 "; }
serf_stop_all() { stop_pids 5 "serf agent" "$PD"/serf/n*/pid; }

# ---------------------------------------------------------------- JGroups

jgroups_prepare() { # N
	local i
	for ((i = 1; i <= $1; i++)); do mkdir -p "$PD/jgroups/n$i"; done
	if [[ ! -r $PD/jgroups/classes/PeersViewPrinter.class ]]; then
		mkdir -p "$PD/jgroups/classes"
		javac -nowarn -cp "$JG_JAR" -d "$PD/jgroups/classes" "$SRC/PeersViewPrinter.java"
	fi
}
jgroups_start() { # I
	local d=$PD/jgroups/n$1
	rm -f "$d/pid"
	# The packaged udp.xml (IP multicast, JGroups' defaults), bound to the
	# lab address; the JVM's defaults otherwise.
	ip netns exec "$PREFIX-$1" java -Djava.net.preferIPv4Stack=true -Djgroups.bind_addr="$SUBNET.$1" \
		-cp "$JG_JAR:$PD/jgroups/classes" PeersViewPrinter "n$1" groupd-peers \
		</dev/null >>"$d/view.log" 2>>"$d/java.log" &
	echo $! >"$d/pid"
	disown
}
jgroups_alive() { [[ -r $PD/jgroups/n$1/pid ]] && pid_ok "$(<"$PD/jgroups/n$1/pid")" "PeersViewPrinter n$1 "; }
jgroups_stop_all() { stop_pids 8 "PeersViewPrinter" "$PD"/jgroups/n*/pid; }

# ---------------------------------------------------------------- keepalived

keepalived_prepare() { # N
	local i d conf
	mkdir -p "$NOTIFY_DIR"
	chmod 700 "$NOTIFY_DIR"
	for ((i = 1; i <= $1; i++)); do
		d=$PD/keepalived/n$i
		mkdir -p "$d"
		cat >"$NOTIFY_DIR/notify-$i.sh" <<EOF
#!/bin/bash
# keepalived notify for lab node $i: \$1=INSTANCE \$2=name \$3=state \$4=priority
echo "\$EPOCHREALTIME \$3 \$4" >>$d/notify.log
EOF
		chmod 755 "$NOTIFY_DIR/notify-$i.sh"
		conf=$(<"$SRC/keepalived.conf.in")
		conf=${conf//@PREFIX@/$PREFIX}
		conf=${conf//@I@/$i}
		conf=${conf//@VRID@/$KA_VRID}
		conf=${conf//@PRIO@/$((100 + i))}
		conf=${conf//@VIP@/$KA_VIP}
		conf=${conf//@NOTIFY@/$NOTIFY_DIR/notify-$i.sh}
		printf '%s\n' "$conf" >"$d/keepalived.conf"
	done
}
keepalived_start() { # I
	local d=$PD/keepalived/n$1
	rm -f "$d/keepalived.pid" "$d/vrrp.pid"
	# Its console log (-l), stamped as it comes: the VRRP process writes
	# "Entering MASTER STATE" as it changes state, in order (the notify
	# scripts run detached and can be logged out of order under load).
	ip netns exec "$PREFIX-$1" keepalived -n -l -D -P -f "$d/keepalived.conf" \
		-p "$d/keepalived.pid" -r "$d/vrrp.pid" </dev/null > >(stamp >>"$d/keepalived.log") 2>&1 &
	disown
}
keepalived_alive() {
	local d=$PD/keepalived/n$1
	[[ -r $d/vrrp.pid && -r $d/keepalived.pid ]] &&
		pid_ok "$(<"$d/vrrp.pid")" "$d/keepalived.conf" && pid_ok "$(<"$d/keepalived.pid")" "$d/keepalived.conf"
}
keepalived_stop_all() { stop_pids 5 "$PD/keepalived/" "$PD"/keepalived/n*/keepalived.pid "$PD"/keepalived/n*/vrrp.pid; }

# ---------------------------------------------------------------- the harness

stop_everything() {
	local p
	for p in corosync serf jgroups keepalived; do "${p}_stop_all" || true; done
	groupd_stop_all
}

cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	say "cleaning up (peers, daemons, namespaces)"
	stop_everything
	"$NETEM/heal.sh" >/dev/null 2>&1 || true
	"$LAB" down >/dev/null 2>&1 || true
	rm -rf "$NOTIFY_DIR"
	((MADE_POLICY)) && rm -f /usr/sbin/policy-rc.d
	exit "$rc"
}

# start_all PEER N: every node at once (groupd: lab.sh start does it).
start_all() {
	local p=$1 n=$2 i
	if [[ $p == groupd ]]; then
		groupd_start_all
		return
	fi
	for ((i = 1; i <= n; i++)); do "${p}_start" "$i"; done
}

# revive PEER N: start the nodes whose process is gone (after a kill).
revive() {
	local p=$1 n=$2 i
	[[ $p == corosync ]] && corosync_clean_shm
	for ((i = 1; i <= n; i++)); do
		"${p}_alive" "$i" || "${p}_start" "$i"
	done
}

# clear_views PEER N: remove the view output of earlier processes, so a
# cold start reads only its own (groupd's recorder files are the lab's:
# benchtool ignores views older than the start instead).
clear_views() {
	local p=$1 n=$2 i
	[[ $p == groupd ]] && return 0
	for ((i = 1; i <= n; i++)); do
		rm -f "$PD/$p/n$i"/{corosync.log,agent.log,events.log,view.log,notify.log,keepalived.log}
	done
}

# wait_up PEER N: every process has started (pid files written).
wait_up() {
	local p=$1 n=$2 i t
	for ((t = 0; t < 200; t++)); do
		for ((i = 1; i <= n; i++)); do "${p}_alive" "$i" || break; done
		((i > n)) && return 0
		sleep 0.05
	done
	return 1
}

# STAGGER: the pause between two nodes' starts when a peer cannot start
# all at once (staggered_start).
STAGGER=0.5

# staggered_start PEER N: start one node every STAGGER seconds and wait
# for one view. For a peer whose cold start of all N at once failed (in
# these labs corosync 3.1.7 asserts at N = 16, totemsrp.c orf_token_rtr),
# so that its idle cost, failovers and heals are still measured in the same
# run; the notes say so.
staggered_start() {
	local p=$1 n=$2 i
	"${p}_stop_all"
	clear_views "$p" "$n"
	for ((i = 1; i <= n; i++)); do
		"${p}_start" "$i"
		sleep "$STAGGER"
	done
	if wait_up "$p" "$n" && bt wait --peer "$p" --nodes "$n" --timeout 180s; then
		note "$p" "$n" cold "started again one node every ${STAGGER} s: the idle window, failovers and heals below follow that start"
		return 0
	fi
	note "$p" "$n" cold "started one node every ${STAGGER} s: still no single view within 180 s (load $(loadavg))"
	"${p}_stop_all"
	return 1
}

peer_block() { # PEER N
	local p=$1 n=$2 t t0 out victim staggered=0
	section "$p N=$n: $TRIALS cold starts, ${IDLE}s idle, $TRIALS failovers, $TRIALS heals"
	"${p}_prepare" "$n"
	for ((t = 1; t <= TRIALS; t++)); do
		"${p}_stop_all"
		clear_views "$p" "$n"
		t0=$EPOCHREALTIME
		start_all "$p" "$n"
		if ! wait_up "$p" "$n"; then
			note "$p" "$n" cold "trial $t: not every process started or stayed up; see logs/N$n/$p/; no further cold starts"
		elif out=$(bt cold --peer "$p" --nodes "$n" --trial "$t" --since "$t0" --timeout 180s); then
			echo "$out" >>"$NDJSON"
			continue
		else
			note "$p" "$n" cold "trial $t: no single view within 180 s of the start (load $(loadavg)); no further cold starts"
		fi
		staggered_start "$p" "$n" || return 1
		staggered=1
		break
	done
	sleep 5
	if out=$(bt idle --peer "$p" --nodes "$n" --window "${IDLE}s"); then
		((staggered)) && out=$(jq -c --arg s "after a staggered start (one node every ${STAGGER} s)" \
			'.note = (if .note then $s + "; " + .note else $s end)' <<<"$out")
		echo "$out" >>"$NDJSON"
	else
		note "$p" "$n" idle "the idle window failed (load $(loadavg))"
	fi
	for ((t = 1; t <= TRIALS; t++)); do
		victim=""
		if out=$(bt failover --peer "$p" --nodes "$n" --trial "$t" --timeout 120s); then
			echo "$out" >>"$NDJSON"
			victim=$(jq -r .victim <<<"$out")
		else
			note "$p" "$n" failover "trial $t failed (load $(loadavg))"
		fi
		revive "$p" "$n"
		bt wait --peer "$p" --nodes "$n" --timeout 180s || {
			note "$p" "$n" failover "no single view within 180 s of restarting node ${victim:-?} (load $(loadavg))"
			"${p}_stop_all"
			return 1
		}
	done
	for ((t = 1; t <= TRIALS; t++)); do
		if out=$(bt heal --peer "$p" --nodes "$n" --trial "$t" --hold 10s --timeout 180s); then
			echo "$out" >>"$NDJSON"
		else
			note "$p" "$n" heal "trial $t failed (load $(loadavg))"
			"$NETEM/heal.sh" >/dev/null 2>&1 || true
			bt wait --peer "$p" --nodes "$n" --timeout 180s || {
				"${p}_stop_all"
				return 1
			}
		fi
	done
	"${p}_stop_all"
}

# ---------------------------------------------------------------- prepare

if ip netns list 2>/dev/null | awk '{print $1}' | grep -qE "^$PREFIX-[0-9]+\$"; then
	((FORCE)) || die "a $PREFIX-* lab is already up (another run?); take it down with GROUPD_LAB_PREFIX=$PREFIX scripts/netem/lab.sh down, or pass --force"
	say "a $PREFIX-* lab is up; --force: taking it down"
fi
trap cleanup EXIT
trap 'exit 130' INT TERM
"$LAB" down >/dev/null 2>&1 || true
rm -rf "$PD" "$RUN"/node* "$RUN/faults.ndjson"
mkdir -p "$PD"

# Which peers can run, installing what is missing.
declare -A PKG=([corosync]=corosync [serf]=serf [jgroups]=libjgroups-java [keepalived]=keepalived)
declare -A UNAVAILABLE=()
have_peer() { # PEER: its programs are here
	case $1 in
	groupd) return 0 ;;
	corosync) command -v corosync >/dev/null && command -v corosync-quorumtool >/dev/null ;;
	serf) command -v serf >/dev/null ;;
	jgroups) [[ -r $JG_JAR ]] && command -v java >/dev/null && command -v javac >/dev/null ;;
	keepalived) command -v keepalived >/dev/null ;;
	esac
}
# apt_install PACKAGE...: with services kept from starting: a package's
# postinst must not start a corosync or keepalived of its own (policy-rc.d,
# made here only if there is none, and removed after, or by the trap).
apt_install() {
	local rc=0
	if [[ ! -e /usr/sbin/policy-rc.d ]]; then
		printf '#!/bin/sh\n# peers.sh: no service starts during its apt-get install\nexit 101\n' >/usr/sbin/policy-rc.d
		chmod 755 /usr/sbin/policy-rc.d
		MADE_POLICY=1
	fi
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >>"$OUT/apt.log" 2>&1 ||
		{ apt-get update -qq >>"$OUT/apt.log" 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >>"$OUT/apt.log" 2>&1; } || rc=$?
	if ((MADE_POLICY)); then
		rm -f /usr/sbin/policy-rc.d
		MADE_POLICY=0
	fi
	return "$rc"
}
for p in ${PEERS//,/ }; do
	have_peer "$p" && continue
	pkgs=("${PKG[$p]}")
	[[ $p == jgroups ]] && ! command -v javac >/dev/null && pkgs+=(default-jdk-headless)
	if ((!INSTALL)); then
		UNAVAILABLE[$p]="not installed (${pkgs[*]}), and --no-install"
		continue
	fi
	say "installing ${pkgs[*]} with apt-get install -y (for $p)"
	if ! apt_install "${pkgs[@]}"; then
		UNAVAILABLE[$p]="apt-get install -y ${pkgs[*]} failed; see apt.log"
	elif ! have_peer "$p"; then
		UNAVAILABLE[$p]="installed ${pkgs[*]}, but its programs are still missing"
	fi
done

say "results in $OUT (N = $SIZES; peers $PEERS; $TRIALS trials; ${IDLE}s idle)"
say "building groupd and benchtool"
(cd "$REPO" && go build -o "$OUT/bin/groupd" ./cmd/groupd) || die "go build ./cmd/groupd failed"
(cd "$REPO" && go build -o "$BT" ./internal/benchtool) || die "go build ./internal/benchtool failed"
export GROUPD_BIN=$OUT/bin/groupd

version() { "$@" 2>&1 | head -n 1 || true; }
{
	echo "started:    $(date -u +%FT%TZ)"
	echo "command:    scripts/bench/peers.sh --nodes $SIZES --peers $PEERS --trials $TRIALS --idle $IDLE --out $OUT"
	echo "machine:    $(nproc) CPU ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), $(free -m | awk '/Mem:/{print $2}') MiB RAM"
	echo "kernel:     $(uname -r)"
	echo "lab:        prefix $PREFIX, bridge $PREFIX-br0, $SUBNET.0/24, run dir $RUN"
	echo "groupd:     $(cd "$REPO" && git rev-parse --short HEAD 2>/dev/null || echo '?') ($(cd "$REPO" && git status --porcelain 2>/dev/null | wc -l) uncommitted paths), profile lan"
	echo "go:         $(go version | cut -d' ' -f3-)"
	command -v corosync >/dev/null && echo "corosync:   $(version corosync -v) (Debian $(dpkg-query -W -f '${Version}' corosync 2>/dev/null)); transport udp (IP multicast) on $COROSYNC_MCAST:$COROSYNC_PORT"
	command -v serf >/dev/null && echo "serf:       $(version serf version) (Debian $(dpkg-query -W -f '${Version}' serf 2>/dev/null))"
	[[ -r $JG_JAR ]] && echo "jgroups:    Debian libjgroups-java $(dpkg-query -W -f '${Version}' libjgroups-java 2>/dev/null), udp.xml; $(version java -version)"
	command -v keepalived >/dev/null && echo "keepalived: $(version keepalived --version)"
	echo "load:       $(loadavg) at start (1, 5, 15 min)"
} >"$OUT/env.txt"
cat "$OUT/env.txt"

# ---------------------------------------------------------------- run

for n in ${SIZES//,/ }; do
	section "lab N=$n"
	"$LAB" down >/dev/null 2>&1 || true
	"$LAB" up "$n" >/dev/null
	for p in ${PEERS//,/ }; do
		if [[ -n ${UNAVAILABLE[$p]:-} ]]; then
			note "$p" "$n" unavailable "${UNAVAILABLE[$p]}"
			continue
		fi
		peer_block "$p" "$n" || say "$p N=$n stopped early (see the notes)"
		stop_everything
		"$NETEM/heal.sh" >/dev/null 2>&1 || true
	done
	# Keep the logs of this size for later reading.
	mkdir -p "$OUT/logs/N$n"
	cp -r "$PD"/. "$OUT/logs/N$n/" 2>/dev/null || true
	# (The lab records one history for all nodes, not a file per node; a
	# failed copy must not end the run under set -e.)
	for ((i = 1; i <= n; i++)); do
		if [[ -d $RUN/node$i ]]; then
			mkdir -p "$OUT/logs/N$n/groupd/n$i"
			cp "$RUN/node$i/groupd.log" "$OUT/logs/N$n/groupd/n$i/" 2>/dev/null || true
		fi
	done
	cp "$RUN/history.ndjson" "$OUT/logs/N$n/groupd/" 2>/dev/null || true
	rm -rf "$PD"/*/n* "$RUN"/node*
done

section "report"
T_END=$(date +%s)
printf 'finished:   %s (%d s in all); load %s\n' "$(date -u +%FT%TZ)" $((T_END - T_START)) "$(loadavg)" >>"$OUT/env.txt"
"$BT" peers report --dir "$OUT"
echo
cat "$OUT/peers.md"
say "done in $((T_END - T_START)) s: $OUT/peers.md, $OUT/peers.ndjson"
