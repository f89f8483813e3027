#!/usr/bin/env bash
# experiment.sh: run one partition-healing scenario on a fresh lab and keep
# what happened: events.ndjson, faults.ndjson, summary.json, timeline.svg.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() {
	cat <<'EOF'
usage: experiment.sh SCENARIO [options] [-- GROUPD-RUN-ARGS...]
scenarios:
  split-heal         partition into 1..N/2 | rest, let each side settle, hold, heal
  coordinator-crash  kill -9 the coordinator (node N); survivors elect; then restart it
  flapping           partition and heal every --period seconds, --flaps times
  lossy              20% loss on every link, then a split-heal under that loss
  rolling-restart    restart nodes 1..N one at a time, waiting for convergence after each
  chaos              for --minutes M: rounds of 1-3 random faults (partitions into 2 or 3
                     sides, one-way cuts, loss, kill -9, restarts) held 2..--fault-max s, then
                     a quiet period: heal, restart the killed, wait --settle s (T_heal + slack),
                     then a check point where every node must be converged (L1), then --quiet s;
                     the recorded history must show no S1-S4 violation and L1 at every check
                     point (internal/cmd/checkhistory)
options:
  --nodes N          lab size (default 5; 8 for chaos)
  --out DIR          where results go (default /tmp/groupd-experiments/SCENARIO-TIMESTAMP)
  --timeout S        deadline for every convergence wait (default 60)
  --hold S           how long a fault stays once the sides settled (default 5)
  --flaps K          flapping: number of partition/heal cycles (default 4)
  --period S         flapping: seconds between partition and heal (default 3)
  --profile P        groupd interval profile, lan or fast (default $GROUPD_PROFILE or lan)
  --minutes M        chaos: how long to inject faults (default 10; the round running at
                     the deadline finishes)
  --seed S           chaos: seed of the fault schedule (default: random, printed)
  --fault-max S      chaos: longest a round's faults stay (default 8)
  --settle S         chaos: from the heal (and restarts) to the L1 check point (default:
                     T_heal + 2 s rounded up: 11 for lan, 4 for fast)
  --quiet S          chaos: quiet time after each check point (default 3)
  --keep             leave the lab up (and the daemons running) at the end
The lab (run dir $GROUPD_LAB_DIR, default /tmp/groupd-lab) is reset first: any
running lab is stopped and its node directories are removed.
EOF
}

LAB=$GD_SCRIPT_DIR/lab.sh
PARTITION=$GD_SCRIPT_DIR/partition.sh
HEAL=$GD_SCRIPT_DIR/heal.sh
DEGRADE=$GD_SCRIPT_DIR/degrade.sh

SCENARIO="" N="" OUT="" TIMEOUT=60 HOLD=5 FLAPS=4 PERIOD=3 KEEP=0
MINUTES=10 SEED="" FAULT_MAX=8 QUIET=3 ROUNDS=0 SETTLE=""
RUN_ARGS=()
NOTES=()
CONVERGED=true
T_FAULT="" T_RECOVER="" T_CONV="" T_STOP=""

parse_args() {
	while (($# > 0)); do
		case $1 in
		--nodes | --out | --timeout | --hold | --flaps | --period | --profile | --minutes | --seed | --fault-max | --quiet | --settle)
			(($# >= 2)) || gd_die "$1 needs a value"
			case $1 in
			--minutes) MINUTES=$2 ;;
			--seed) SEED=$2 ;;
			--fault-max) FAULT_MAX=$2 ;;
			--quiet) QUIET=$2 ;;
			--settle) SETTLE=$2 ;;
			--nodes) N=$2 ;;
			--out) OUT=$2 ;;
			--timeout) TIMEOUT=$2 ;;
			--hold) HOLD=$2 ;;
			--flaps) FLAPS=$2 ;;
			--period) PERIOD=$2 ;;
			--profile) export GROUPD_PROFILE=$2 ;;
			esac
			shift 2
			;;
		--keep)
			KEEP=1
			shift
			;;
		-h | --help)
			usage
			exit 0
			;;
		--)
			shift
			RUN_ARGS=("$@")
			break
			;;
		-*) gd_die "unknown option $1 (see --help)" ;;
		*)
			[[ -z $SCENARIO ]] || gd_die "one scenario at a time (got $SCENARIO and $1)"
			SCENARIO=$1
			shift
			;;
		esac
	done
	case $SCENARIO in
	split-heal | coordinator-crash | flapping | lossy | rolling-restart | chaos) ;;
	"")
		usage >&2
		exit 2
		;;
	*) gd_die "unknown scenario '$SCENARIO' (split-heal, coordinator-crash, flapping, lossy, rolling-restart, chaos)" ;;
	esac
	if [[ -z $N ]]; then
		N=5
		[[ $SCENARIO == chaos ]] && N=8
	fi
	[[ -n $SEED ]] || SEED=$(((RANDOM << 15) | RANDOM))
	if [[ -z $SETTLE ]]; then
		# T_heal (README, "The T_failover and T_heal bounds") plus slack.
		SETTLE=11
		[[ ${GROUPD_PROFILE:-lan} == fast ]] && SETTLE=4
	fi
	local v
	for v in N TIMEOUT HOLD FLAPS PERIOD MINUTES SEED FAULT_MAX QUIET SETTLE; do
		[[ ${!v} =~ ^[0-9]+$ ]] || gd_die "--${v,,} wants a whole number, got '${!v}'"
	done
	((N >= 2 && N <= GD_MAX_NODES)) || gd_die "--nodes must be 2..$GD_MAX_NODES"
	((FAULT_MAX >= 2)) || gd_die "--fault-max must be at least 2"
	[[ -n $OUT ]] || OUT=/tmp/groupd-experiments/$SCENARIO-$(date +%Y%m%d-%H%M%S)
}

note() {
	NOTES+=("$*")
	gd_say "note: $*"
}

# last_fault_time: the time of the newest faults.ndjson record.
last_fault_time() { tail -n 1 "$GD_LAB_DIR/faults.ndjson" | jq -r .time; }

# await LIST WHAT: wait for the nodes in LIST to converge; on timeout, note it
# and carry on so that the results are still collected.
await() {
	if ! "$LAB" wait --timeout "$TIMEOUT" "$1"; then
		CONVERGED=false
		note "nodes $1 did not converge within ${TIMEOUT}s $2"
		return 1
	fi
}

side_a() { seq -s, 1 $((N / 2)); }
side_b() { seq -s, $((N / 2 + 1)) "$N"; }
all() { seq -s, 1 "$N"; }

# ------------------------------------------------------------- scenarios

scenario_split_heal() {
	"$PARTITION" "$(side_a)|$(side_b)"
	T_FAULT=$(last_fault_time)
	await "$(side_a)" "(side A during the partition)" || true
	await "$(side_b)" "(side B during the partition)" || true
	sleep "$HOLD"
	"$HEAL"
	T_RECOVER=$(last_fault_time)
	await "$(all)" "after the heal" || true
	T_CONV=$(gd_now)
}

scenario_coordinator_crash() {
	"$LAB" kill "$N"
	T_FAULT=$(last_fault_time)
	T_RECOVER=$T_FAULT
	await "$(seq -s, 1 $((N - 1)))" "after the coordinator's crash" || true
	T_CONV=$(gd_now)
	note "time_to_converge_s is the failover: from the kill until nodes 1..$((N - 1)) agree on coordinator $((N - 1))"
	sleep "$HOLD"
	"$LAB" restart "$N"
	await "$(all)" "after node $N came back" || true
}

scenario_flapping() {
	local k
	for ((k = 1; k <= FLAPS; k++)); do
		"$PARTITION" "$(side_a)|$(side_b)"
		[[ -n $T_FAULT ]] || T_FAULT=$(last_fault_time)
		sleep "$PERIOD"
		"$HEAL"
		T_RECOVER=$(last_fault_time)
		if ((k < FLAPS)); then sleep "$PERIOD"; fi
	done
	await "$(all)" "after the last heal" || true
	T_CONV=$(gd_now)
}

scenario_lossy() {
	"$DEGRADE" --loss 20%
	sleep "$HOLD"
	"$PARTITION" "$(side_a)|$(side_b)"
	T_FAULT=$(last_fault_time)
	await "$(side_a)" "(side A, partition under 20% loss)" || true
	await "$(side_b)" "(side B, partition under 20% loss)" || true
	sleep "$HOLD"
	"$HEAL" --partitions
	T_RECOVER=$(last_fault_time)
	await "$(all)" "after the partition healed, under 20% loss" || true
	T_CONV=$(gd_now)
	note "20% loss on every link for the whole run; detection and convergence are measured for the partition and its heal under that loss"
	"$HEAL"
}

scenario_rolling_restart() {
	local i
	for ((i = 1; i <= N; i++)); do
		"$LAB" restart "$i"
		[[ -n $T_FAULT ]] || T_FAULT=$(last_fault_time)
		T_RECOVER=$(last_fault_time)
		await "$(all)" "after restarting node $i" || true
	done
	T_CONV=$(gd_now)
	note "time_to_converge_s is measured from the last restart command (node $N, the coordinator; includes its graceful stop)"
}

# chaos_shuffle: the nodes 1..N in a random order (Fisher-Yates on $RANDOM,
# so that --seed reproduces the schedule), one per line.
chaos_shuffle() {
	local -a a
	local i j t
	mapfile -t a < <(seq 1 "$N")
	for ((i = N - 1; i > 0; i--)); do
		j=$((RANDOM % (i + 1)))
		t=${a[i]} a[i]=${a[j]} a[j]=$t
	done
	printf '%s\n' "${a[@]}"
}

# chaos_fault: inject one random fault. Kills and restarts spare the nodes
# already killed in this round, and at most N/2 nodes are down at once.
chaos_fault() {
	local -a perm sides
	local k i from to pct nodes
	mapfile -t perm < <(chaos_shuffle)
	case $((RANDOM % 6)) in
	0 | 1) # a partition into 2 (or, from 4 nodes, 3) non-empty sides
		k=2
		((N >= 4 && RANDOM % 3 == 0)) && k=3
		sides=()
		for ((i = 0; i < N; i++)); do
			if ((i < k)); then
				sides[i]=${perm[i]}
			else
				sides[RANDOM % k]+=,${perm[i]}
			fi
		done
		"$PARTITION" "$(
			IFS='|'
			echo "${sides[*]}"
		)" >/dev/null || note "partition.sh failed"
		;;
	2) # a one-way cut
		from=${perm[0]} to=${perm[1]}
		"$PARTITION" --oneway "$from" "$to" >/dev/null || note "partition.sh --oneway failed"
		;;
	3) # loss on every node, or on some
		pct=$((5 * (1 + RANDOM % 6)))
		if ((RANDOM % 2)); then
			"$DEGRADE" --loss "$pct%" >/dev/null || note "degrade.sh failed"
		else
			nodes=$(printf '%s\n' "${perm[@]:0:$((1 + RANDOM % (N - 1)))}" | sort -n | paste -sd, -)
			"$DEGRADE" --loss "$pct%" --nodes "$nodes" >/dev/null || note "degrade.sh failed"
		fi
		;;
	4) # kill -9
		for i in "${perm[@]}"; do
			((${#CHAOS_KILLED[@]} < N / 2)) || break
			if [[ " ${CHAOS_KILLED[*]} " != *" $i "* ]]; then
				"$LAB" kill "$i" >/dev/null || note "lab.sh kill $i failed"
				CHAOS_KILLED+=("$i")
				break
			fi
		done
		;;
	5) # a graceful restart (SIGTERM, start again on the same data dir)
		for i in "${perm[@]}"; do
			if [[ " ${CHAOS_KILLED[*]} " != *" $i "* ]]; then
				"$LAB" restart "$i" >/dev/null || note "lab.sh restart $i failed"
				break
			fi
		done
		;;
	esac
}

scenario_chaos() {
	local deadline round=0 k nf hold i t0 t1 before
	CHAOS_KILLED=()
	RANDOM=$SEED
	deadline=$(($(date +%s) + MINUTES * 60))
	gd_say "chaos: seed $SEED, $MINUTES minute(s), faults held 2..${FAULT_MAX}s, L1 check ${SETTLE}s after each heal, then ${QUIET}s quiet"
	while (($(date +%s) < deadline)); do
		round=$((round + 1))
		CHAOS_KILLED=()
		before=$(wc -l <"$GD_LAB_DIR/faults.ndjson")
		nf=$((1 + RANDOM % 3))
		for ((k = 0; k < nf; k++)); do
			chaos_fault
		done
		[[ -n $T_FAULT ]] || T_FAULT=$(jq -r 'select(.kind != "heal" and .kind != "quiet") | .time' "$GD_LAB_DIR/faults.ndjson" | head -n 1)
		hold=$((2 + RANDOM % (FAULT_MAX - 1)))
		gd_say "chaos round $round: $(tail -n "+$((before + 1))" "$GD_LAB_DIR/faults.ndjson" | jq -r '.kind + " " + .spec' | paste -sd';' - | sed 's/;/; /g'); held ${hold}s"
		sleep "$hold"
		"$HEAL" >/dev/null
		T_RECOVER=$(last_fault_time)
		for i in "${CHAOS_KILLED[@]}"; do
			"$LAB" restart "$i" >/dev/null || note "round $round: node $i failed to restart"
		done
		# L1: connected and quiet for T_heal, every node is converged.
		t0=$(date +%s.%N)
		if "$LAB" wait --timeout "$TIMEOUT" "$(all)" >/dev/null; then
			t1=$(date +%s.%N)
			sleep "$(awk -v a="$t0" -v b="$t1" -v s="$SETTLE" 'BEGIN{d = s - (b - a); printf "%.3f", (d > 0 ? d : 0)}')"
			"$LAB" wait --timeout "$TIMEOUT" "$(all)" >/dev/null || note "round $round: converged after the heal, then not at the check point"
			gd_record_fault quiet "round $round"
			gd_say "chaos round $round: converged $(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.1f", b-a}')s after the heal and restarts; check point at +${SETTLE}s"
		else
			CONVERGED=false
			note "round $round: nodes $(all) did not converge within ${TIMEOUT}s of the heal"
			gd_record_fault quiet "round $round (timed out)"
		fi
		T_CONV=$(gd_now)
		sleep "$QUIET"
	done
	ROUNDS=$round
}

# check_history: replay the recorded history through the invariant checker
# (internal/cmd/checkhistory); its report goes to check.json and check.txt
# and into summary.json. Fails when it found a violation.
CHECKER=""
build_checker() {
	if [[ -n ${GROUPD_CHECKHISTORY:-} ]]; then
		CHECKER=$GROUPD_CHECKHISTORY
		return
	fi
	command -v go >/dev/null 2>&1 || gd_die "go is missing: needed to build internal/cmd/checkhistory (or set GROUPD_CHECKHISTORY)"
	(cd "$GD_REPO_ROOT" && go build -o "$GD_LAB_DIR/checkhistory" ./internal/cmd/checkhistory) ||
		gd_die "go build ./internal/cmd/checkhistory failed"
	CHECKER=$GD_LAB_DIR/checkhistory
}

check_history() {
	local rc=0
	"$CHECKER" -events "$OUT/events.ndjson" -faults "$OUT/faults.ndjson" >"$OUT/check.txt" 2>&1 || rc=$?
	"$CHECKER" -json -events "$OUT/events.ndjson" -faults "$OUT/faults.ndjson" >"$OUT/check.json" 2>/dev/null || true
	sed 's/^/check: /' "$OUT/check.txt"
	jq --slurpfile c "$OUT/check.json" --argjson rounds "$ROUNDS" --argjson seed "$SEED" --argjson minutes "$MINUTES" \
		'. + {rounds: $rounds, seed: $seed, minutes: $minutes, check: $c[0]}' "$OUT/summary.json" >"$OUT/summary.json.new" &&
		mv "$OUT/summary.json.new" "$OUT/summary.json"
	return "$rc"
}

# ------------------------------------------------------------- results

# shellcheck disable=SC2016 # jq, not shell, variables
JQ_EPOCH='def epoch: capture("^(?<d>[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2})(?<f>[.][0-9]+)?(?<z>Z|[+-][0-9]{2}:[0-9]{2})$") as $m
  | ($m.d + "Z" | fromdateiso8601) + (if $m.f then ("0" + $m.f | tonumber) else 0 end)
  - (if $m.z == "Z" then 0 else (($m.z[1:3] | tonumber) * 3600 + ($m.z[4:6] | tonumber) * 60) * (if $m.z[0:1] == "+" then 1 else -1 end) end);
def t: ((try (.time | epoch) catch null) // null);'

# messages_sent: set MSGS to the sum of groupd_messages_sent_total over the
# live nodes, or to null with a note.
MSGS=null
messages_sent() {
	local i sock sum=0 got=0 v
	for ((i = 1; i <= N; i++)); do
		sock=$(gd_sock "$i")
		[[ -S $sock ]] || continue
		if v=$(curl -s --max-time 3 --unix-socket "$sock" http://groupd/metrics |
			awk '$1 ~ /^groupd_messages_sent_total([{]|$)/ {s += $NF; n++} END {if (n) printf "%.0f", s; else exit 1}'); then
			sum=$((sum + v))
			got=$((got + 1))
		fi
	done
	if ((got == 0)); then
		note "messages_sent omitted: no node served groupd_messages_sent_total at /metrics"
		return
	fi
	((got == N)) || note "messages_sent sums $got of $N nodes (the others did not answer /metrics)"
	if [[ $SCENARIO == coordinator-crash || $SCENARIO == rolling-restart ]]; then
		note "messages_sent counts only the processes alive at the end: a killed or restarted daemon's counters start again from 0"
	fi
	MSGS=$sum
}

collect() {
	local d i
	mkdir -p "$OUT/logs"
	# All nodes' events, malformed lines dropped, sorted by time.
	for ((i = 1; i <= N; i++)); do
		d=$(gd_node_dir "$i")
		[[ -r $d/events.ndjson ]] && cp "$d/events.ndjson" "$OUT/logs/node$i.events.ndjson"
		[[ -r $d/groupd.log ]] && cp "$d/groupd.log" "$OUT/logs/node$i.log"
	done
	# Events caused by the final stop (nodes leaving) are left out: they are
	# the shutdown, not the experiment (logs/ keeps them).
	cat "$GD_LAB_DIR"/node*/events.ndjson 2>/dev/null |
		jq -cR 'fromjson? | select(type == "object" and (.time | type) == "string")' |
		jq -cs --arg stop "$T_STOP" "$JQ_EPOCH"' ({time: $stop} | t) as $s
			| map(select(t != null and ($s == null or t < $s))) | sort_by(t) | .[]' >"$OUT/events.ndjson"
	cp "$GD_LAB_DIR/faults.ndjson" "$OUT/faults.ndjson" 2>/dev/null || : >"$OUT/faults.ndjson"
}

write_summary() {
	local msgs=$1 notes
	notes=$(printf '%s\n' "${NOTES[@]}" | jq -R 'select(length > 0)' | jq -s .)
	jq -n --slurpfile ev "$OUT/events.ndjson" \
		--arg scenario "$SCENARIO" --argjson nodes "$N" --argjson msgs "$msgs" \
		--arg fault "$T_FAULT" --arg recover "$T_RECOVER" --arg conv "$T_CONV" \
		--argjson converged "$CONVERGED" --argjson notes "$notes" \
		--arg mechanism "$(mechanism)" --arg profile "${GROUPD_PROFILE:-lan}" "$JQ_EPOCH"'
		def tt: {time: .} | t;
		def r3: . * 1000 | round / 1000;
		[$ev[] | select(.reason != "snapshot") | . + {_t: t}] as $e
		| ($fault | tt) as $f | ($recover | tt) as $r | ($conv | tt) as $c
		| ([$e[] | select($f != null and ._t > $f) | ._t] | min) as $first
		| ([$e[] | select($r != null and $c != null and ._t > $r and ._t <= $c) | ._t] | max) as $last
		| ([$ev[] | .new.group?, .old.group? | select(type == "string" and . != "" and . != "0.0")] | unique
		   | sort_by(split(".") | map(tonumber? // 0))) as $groups
		| {
			scenario: $scenario,
			nodes: $nodes,
			time_to_detect_s: (if $first then ($first - $f | r3) else null end),
			time_to_converge_s: (if $last then ($last - $r | r3) elif ($r != null and $c != null) then 0 else null end),
			groups_seen: ($groups | length),
			messages_sent: $msgs,
			converged: $converged,
			groups: $groups,
			fault_time: $fault, recover_time: $recover, converged_time: $conv,
			profile: $profile, fault_mechanism: $mechanism,
			notes: ($notes + (if $first == null and $f != null then ["no event after the fault: nothing detected"] else [] end))
		  }
		| if .messages_sent == null then del(.messages_sent) else . end' >"$OUT/summary.json"
}

mechanism() {
	if gd_netem_available 2>/dev/null; then
		echo "tc netem (loss/delay) + iptables (cuts)"
	else
		echo "iptables (no sch_netem in this kernel)"
	fi
}

# render_timeline: `groupd timeline`; when this binary has no timeline
# command yet, the same Go package through a throwaway module.
render_timeline() {
	local bin tmp
	bin=$(gd_bin)
	local title="groupd $SCENARIO, $N nodes (profile ${GROUPD_PROFILE:-lan})"
	if "$bin" timeline "$OUT/events.ndjson" --faults "$OUT/faults.ndjson" --title "$title" -o "$OUT/timeline.svg" 2>"$OUT/timeline.err" ||
		"$bin" timeline "$OUT/events.ndjson" --faults "$OUT/faults.ndjson" -o "$OUT/timeline.svg" 2>"$OUT/timeline.err"; then
		[[ -s $OUT/timeline.err ]] && sed 's/^/timeline: /' "$OUT/timeline.err" >&2
		rm -f "$OUT/timeline.err"
		return 0
	fi
	if ! "$bin" timeline --help >/dev/null 2>&1 && command -v go >/dev/null 2>&1; then
		tmp=$(mktemp -d)
		cat >"$tmp/go.mod" <<EOF
module groupdtimeline

go 1.26

require github.com/groupd/groupd v0.0.0

replace github.com/groupd/groupd => $GD_REPO_ROOT
EOF
		cat >"$tmp/main.go" <<'EOF'
// Fallback for binaries without `groupd timeline`: renders with the repository's timeline package.
package main

import (
	"fmt"
	"os"

	"github.com/groupd/groupd/timeline"
)

func main() {
	ev, err := os.Open(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fs, err := os.Open(os.Args[2])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var out = os.Stdout
	opts := timeline.Options{Title: os.Args[3], Warn: func(m string) { fmt.Fprintln(os.Stderr, m) }}
	if err := timeline.Render(out, ev, fs, opts); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
EOF
		if (cd "$tmp" && GOFLAGS=-mod=mod go run . "$OUT/events.ndjson" "$OUT/faults.ndjson" "$title") >"$OUT/timeline.svg" 2>"$OUT/timeline.err"; then
			note "timeline.svg drawn by the timeline package directly: this groupd binary has no timeline command"
			rm -rf "$tmp" "$OUT/timeline.err"
			return 0
		fi
		rm -rf "$tmp"
	fi
	rm -f "$OUT/timeline.svg"
	gd_warn "no timeline: $(head -n 1 "$OUT/timeline.err" 2>/dev/null)"
	return 1
}

cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	if ((KEEP)); then
		gd_say "--keep: lab left up (lab.sh status; lab.sh stop; lab.sh down)"
	else
		"$LAB" stop >/dev/null 2>&1 || true
		"$LAB" down >/dev/null 2>&1 || gd_warn "lab.sh down failed; run it by hand"
	fi
	exit "$rc"
}

main() {
	parse_args "$@"
	gd_need_root
	gd_need_cmd ip iproute2
	gd_need_cmd iptables iptables
	gd_need_cmd jq jq
	gd_need_cmd curl curl
	mkdir -p "$OUT"
	OUT=$(cd "$OUT" && pwd)
	trap cleanup EXIT
	trap 'exit 130' INT TERM

	gd_say "scenario $SCENARIO with $N nodes (profile ${GROUPD_PROFILE:-lan}); results in $OUT"
	[[ $SCENARIO == chaos ]] && build_checker
	# A fresh lab: no old data dirs, events or faults.
	"$LAB" stop >/dev/null 2>&1 || true
	"$LAB" down >/dev/null
	[[ $GD_LAB_DIR == /* && $GD_LAB_DIR != / ]] || gd_die "GROUPD_LAB_DIR must be an absolute path other than /"
	rm -rf "$GD_LAB_DIR"/node[0-9]* "$GD_LAB_DIR/faults.ndjson" "$GD_LAB_DIR/run-args"
	"$LAB" up "$N"
	if ((${#RUN_ARGS[@]} > 0)); then
		"$LAB" start -- "${RUN_ARGS[@]}"
	else
		"$LAB" start
	fi
	: >>"$GD_LAB_DIR/faults.ndjson"
	await "$(all)" "at start" || true
	sleep 1

	"scenario_${SCENARIO//-/_}"

	messages_sent
	T_STOP=$(gd_now)
	"$LAB" stop
	sleep 0.3
	collect
	render_timeline || true
	write_summary "$MSGS"
	local checked=0
	if [[ $SCENARIO == chaos ]]; then
		check_history || checked=$?
	fi
	gd_say "results in $OUT:"
	local f
	for f in "$OUT"/*; do printf '  %s\n' "${f##*/}"; done
	if [[ $SCENARIO == chaos ]]; then
		jq 'del(.groups) | .check |= del(.bad_lines)' "$OUT/summary.json"
	else
		jq . "$OUT/summary.json"
	fi
	if [[ $CONVERGED != true ]]; then
		gd_die "FAILED: some convergence wait timed out (see notes in summary.json)"
	fi
	if ((checked != 0)); then
		gd_die "FAILED: the invariant checker found violations (see check.txt)"
	fi
}

main "$@"
