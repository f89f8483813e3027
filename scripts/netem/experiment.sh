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
options:
  --nodes N          lab size (default 5)
  --out DIR          where results go (default /tmp/groupd-experiments/SCENARIO-TIMESTAMP)
  --timeout S        deadline for every convergence wait (default 60)
  --hold S           how long a fault stays once the sides settled (default 5)
  --flaps K          flapping: number of partition/heal cycles (default 4)
  --period S         flapping: seconds between partition and heal (default 3)
  --profile P        groupd interval profile, lan or fast (default $GROUPD_PROFILE or lan)
  --keep             leave the lab up (and the daemons running) at the end
The lab (run dir $GROUPD_LAB_DIR, default /tmp/groupd-lab) is reset first: any
running lab is stopped and its node directories are removed.
EOF
}

LAB=$GD_SCRIPT_DIR/lab.sh
PARTITION=$GD_SCRIPT_DIR/partition.sh
HEAL=$GD_SCRIPT_DIR/heal.sh
DEGRADE=$GD_SCRIPT_DIR/degrade.sh

SCENARIO="" N=5 OUT="" TIMEOUT=60 HOLD=5 FLAPS=4 PERIOD=3 KEEP=0
RUN_ARGS=()
NOTES=()
CONVERGED=true
T_FAULT="" T_RECOVER="" T_CONV="" T_STOP=""

parse_args() {
	while (($# > 0)); do
		case $1 in
		--nodes | --out | --timeout | --hold | --flaps | --period | --profile)
			(($# >= 2)) || gd_die "$1 needs a value"
			case $1 in
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
	split-heal | coordinator-crash | flapping | lossy | rolling-restart) ;;
	"")
		usage >&2
		exit 2
		;;
	*) gd_die "unknown scenario '$SCENARIO' (split-heal, coordinator-crash, flapping, lossy, rolling-restart)" ;;
	esac
	local v
	for v in N TIMEOUT HOLD FLAPS PERIOD; do
		[[ ${!v} =~ ^[0-9]+$ ]] || gd_die "--${v,,} wants a whole number, got '${!v}'"
	done
	((N >= 2 && N <= GD_MAX_NODES)) || gd_die "--nodes must be 2..$GD_MAX_NODES"
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
	gd_say "results in $OUT:"
	local f
	for f in "$OUT"/*; do printf '  %s\n' "${f##*/}"; done
	jq . "$OUT/summary.json"
	if [[ $CONVERGED != true ]]; then
		gd_die "FAILED: some convergence wait timed out (see notes in summary.json)"
	fi
}

main "$@"
