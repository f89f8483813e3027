#!/usr/bin/env bash
# scale.sh: groupd at lab scale (issue 14: "256 namespaces: converge, heal
# and failover, each 3/3").
#
#   scripts/bench/scale.sh [--nodes LIST] [--trials K] [--out DIR] [--args FLAGS]
#
#   --nodes LIST  lab sizes, comma-separated (default 64,256)
#   --trials K    trials of each measure per size (default 3)
#   --out DIR     results directory (default /tmp/groupd-scale-YYYYmmdd-HHMMSS)
#   --args FLAGS  extra flags for every daemon of the lab, e.g. its timing
#                 ("--answer-timeout 400ms ..."); every raw line's note
#                 names them. Default: none (the lan profile).
#
# Its own lab: prefix sc, bridge sc-br0, subnet 10.94.0.0/23 (256 nodes need
# a /23), run dir /tmp/groupd-scale-lab. For each size: K cold starts with
# empty data dirs in two kinds, then with the lab up, K heals (a 10 s partition into halves
# 1..N/2 | rest, timed from heal.sh's return to one group) and K failovers
# (kill -9 of the coordinator, timed to the survivors' agreement), each by
# benchtool from the nodes' recorded events. Raw results in DIR/scale.ndjson,
# one line per trial (a failed trial is a line with its error).
#
# The two kinds of cold start:
#   - "together": every daemon is exec'd at once with --start-at a gate
#     2 s + 60 ms per node ahead, so the N protocols begin together as N
#     machines powering up would; timed from the gate. The note says how
#     many daemons were holding at the gate (a late one starts late, and
#     the figure includes it).
#   - "exec'd together": every daemon is exec'd at once and starts at once;
#     timed from the start call. On one host this includes starting N
#     processes on its cores (3-5 s for 64 on two), during which the early
#     ones form groups that the later, higher ones merge.
# The lab gives every namespace permanent neighbour entries (internal/lab,
# "Neighbour (ARP) tuning"), so no sysctl is changed. The lab is taken down
# on exit, even on failure. Needs root.
set -euo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
cd "$REPO"

sizes=64,256 trials=3 out="" args=""
while [ $# -gt 0 ]; do
  case "$1" in
    --nodes) sizes=$2; shift 2 ;;
    --trials) trials=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --args) args=$2; shift 2 ;;
    *) echo "scale: unknown argument $1" >&2; exit 2 ;;
  esac
done
[ "$(id -u)" -eq 0 ] || { echo "scale: must run as root (network namespaces)" >&2; exit 1; }
out=${out:-/tmp/groupd-scale-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$out/bin"

export GROUPD_LAB_PREFIX=sc GROUPD_LAB_SUBNET=10.94.0.0/23 GROUPD_LAB_DIR=/tmp/groupd-scale-lab
RUN=$GROUPD_LAB_DIR
LAB=scripts/netem/lab.sh
BT=$out/bin/benchtool
go build -o "$BT" ./internal/benchtool
go build -o "$out/bin/groupd" ./cmd/groupd
export GROUPD_BIN=$out/bin/groupd
read -ra extra <<<"$args"

cleanup() { "$LAB" down >/dev/null 2>&1 || true; }
trap cleanup EXIT
say() { printf 'scale: %s\n' "$*" >&2; }
command -v jq >/dev/null 2>&1 || { say "jq is missing (it writes the raw lines)"; exit 1; }
fail() { # KIND N TRIAL TEXT
  jq -cn --arg kind "$1" --argjson n "$2" --argjson trial "$3" --arg error "$4" \
    '{kind: $kind, n: $n, trial: $trial, error: $error}' >>"$out/scale.ndjson"
  say "$1 N=$2 trial $3 FAILED: $4"
}

for n in ${sizes//,/ }; do
  say "== N=$n == load $(cut -d' ' -f1-3 /proc/loadavg)"
  cleanup
  rm -rf "$RUN"
  "$LAB" up "$n" >/dev/null
  jq -cn --argjson n "$n" --arg args "$args" --arg load "$(cut -d' ' -f1-3 /proc/loadavg)" \
    '{kind: "config", n: $n, args: $args, load: $load}' >>"$out/scale.ndjson"
  ahead=$(awk -v n="$n" 'BEGIN{printf "%.2f", 2 + 0.06*n}')
  for kind in together execd; do
    for t in $(seq 1 "$trials"); do
      "$LAB" stop >/dev/null 2>&1 || true
      rm -rf "$RUN"/node*/data "$RUN/history.ndjson"
      held0=$(cat "$RUN"/node*/groupd.log 2>/dev/null | grep -c 'holding the protocol' || true)
      t0=$(date +%s.%N)
      if [ "$kind" = together ]; then
        since=$(awk -v t="$t0" -v a="$ahead" 'BEGIN{printf "%.6f", t + a}')
        "$LAB" start -- ${extra[@]+"${extra[@]}"} --start-at "$since" >/dev/null
        held=$(( $(cat "$RUN"/node*/groupd.log | grep -c 'holding the protocol' || true) - held0 ))
        note="cold start $t, together: all $n exec'd at once with --start-at ${ahead}s ahead, timed from the gate; $held of $n held at the gate"
      else
        since=$t0
        "$LAB" start -- ${extra[@]+"${extra[@]}"} >/dev/null
        note="cold start $t, exec'd together: all $n exec'd and started at once, timed from the start call"
      fi
      if "$BT" wait --run "$RUN" --nodes "$n" --timeout 180s >/dev/null; then
        "$BT" converge --run "$RUN" --nodes "$n" --since "$since" --note "$note" | tee -a "$out/scale.ndjson" >/dev/null
      else
        fail cold "$n" "$t" "$kind: no single group within 180 s of the start (load $(cut -d' ' -f1-3 /proc/loadavg))"
      fi
    done
  done
  sleep 5
  for t in $(seq 1 "$trials"); do
    "$BT" heal --run "$RUN" --netem scripts/netem --nodes "$n" --trial "$t" --hold 10s --timeout 120s >>"$out/scale.ndjson" ||
      { fail heal "$n" "$t" "no single group within 120 s of the heal"; scripts/netem/heal.sh >/dev/null 2>&1 || true; "$BT" wait --run "$RUN" --nodes "$n" --timeout 120s >/dev/null || true; }
  done
  for t in $(seq 1 "$trials"); do
    "$BT" failover --run "$RUN" --nodes "$n" --trial "$t" >>"$out/scale.ndjson" ||
      fail failover "$n" "$t" "no agreement on a new coordinator"
    "$LAB" start -- ${extra[@]+"${extra[@]}"} >/dev/null # the killed node comes back for the next trial
    "$BT" wait --run "$RUN" --nodes "$n" --timeout 120s >/dev/null || fail failover "$n" "$t" "the restarted node did not rejoin within 120 s"
  done
done
echo "scale: results in $out/scale.ndjson" >&2
