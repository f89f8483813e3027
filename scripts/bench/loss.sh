#!/usr/bin/env bash
# loss.sh: groupd under sustained packet loss (issue 14: "30 % loss for 60 s:
# at most 3 new numbers a minute, and convergence after").
#
#   scripts/bench/loss.sh [--nodes N] [--loss P] [--seconds S] [--trials K] [--out DIR]
#
#   --nodes N     lab size (default 5)
#   --loss P      loss on every sender's packets, percent (default 30)
#   --seconds S   how long the loss lasts (default 60)
#   --trials K    repetitions (default 1)
#   --out DIR     results directory (default /tmp/groupd-loss-YYYYmmdd-HHMMSS)
#
# Each trial brings up its own lab (prefix lb, bridge lb-br0, 10.92.0.0/24,
# run dir /tmp/groupd-loss-lab), starts N daemons with the lan profile,
# waits until they are one group, puts P % loss on every sender (netem where
# the kernel has it, iptables `-m statistic` otherwise: the fault script
# says which) for S seconds, removes it, and times convergence. From the
# recorded history it counts the group numbers first seen during the loss
# window (numbers created because of the loss), per minute. One JSON line
# per trial goes to DIR/loss.ndjson and a summary to stdout. The lab is
# taken down on exit, even on failure. Needs root.
set -euo pipefail
cd "$(dirname "$0")/../.."

nodes=5 loss=30 seconds=60 trials=1 out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --nodes) nodes=$2; shift 2 ;;
    --loss) loss=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --trials) trials=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) echo "loss: unknown argument $1" >&2; exit 2 ;;
  esac
done
[ "$(id -u)" -eq 0 ] || { echo "loss: must run as root (network namespaces)" >&2; exit 1; }
command -v jq >/dev/null || { echo "loss: jq is missing: apt-get install -y jq" >&2; exit 1; }
out=${out:-/tmp/groupd-loss-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$out"

export GROUPD_LAB_PREFIX=lb GROUPD_LAB_SUBNET=10.92.0 GROUPD_LAB_DIR=/tmp/groupd-loss-lab
lab=scripts/netem
cleanup() { "$lab/lab.sh" down >/dev/null 2>&1 || true; }
trap cleanup EXIT

for trial in $(seq 1 "$trials"); do
  cleanup
  rm -rf "$GROUPD_LAB_DIR" # a fresh history per trial
  "$lab/lab.sh" up "$nodes" >/dev/null
  "$lab/lab.sh" start >/dev/null
  "$lab/lab.sh" wait --timeout 60 >/dev/null
  sleep 2
  t0=$(date -u +%Y-%m-%dT%H:%M:%S.%NZ)
  mech=$("$lab/degrade.sh" --loss "${loss}%" 2>&1 | grep -o 'using [a-z]*' | head -1 || true)
  sleep "$seconds"
  t1=$(date -u +%Y-%m-%dT%H:%M:%S.%NZ)
  "$lab/heal.sh" >/dev/null
  ok=1
  "$lab/lab.sh" wait --timeout 120 >/dev/null || ok=0
  "$lab/lab.sh" export "$out/trial$trial" >/dev/null
  ev="$out/trial$trial/events.ndjson"
  # Convergence after the heal, from the recorded history: the last event
  # after the heal mark (0 when the group never changed), -1 if it never
  # converged.
  heal=$(jq -r 'select(.kind == "heal") | .time' "$out/trial$trial/faults.ndjson" | tail -1)
  last=$(jq -r --arg h "$heal" 'select(.time > $h) | .time' "$ev" | sort | tail -1)
  conv=-1
  if [ "$ok" = 1 ]; then
    conv=0
    [ -n "$last" ] && conv=$(( ($(date -d "$last" +%s%N) - $(date -d "$heal" +%s%N)) / 1000000 ))
  fi
  # Numbers seen before the loss, and the new ones first seen during it.
  # Times compare as strings once padded to nanoseconds (Go trims zeros).
  key='def key: if .[19:20] == "." then .[0:19] + ((.[20:] | rtrimstr("Z")) + "000000000")[0:9] else .[0:19] + "000000000" end;'
  before=$(jq -r --arg t0 "$t0" "$key"' select((.time | key) < ($t0 | key)) | .new.group' "$ev" | sort -u)
  during=$(jq -r --arg t0 "$t0" --arg t1 "$t1" "$key"' select((.time | key) >= ($t0 | key) and (.time | key) < ($t1 | key)) | .new.group' "$ev" | sort -u)
  fresh=$(comm -13 <(echo "$before") <(echo "$during") | grep -v '^0\.0$' | grep -c . || true)
  per_min=$(awk -v n="$fresh" -v s="$seconds" 'BEGIN { printf "%.2f", n * 60 / s }')
  printf '{"kind":"loss","n":%d,"loss_pct":%s,"seconds":%s,"trial":%d,"mechanism":"%s","new_numbers":%d,"per_minute":%s,"converge_ms_after_heal":%d}\n' \
    "$nodes" "$loss" "$seconds" "$trial" "${mech#using }" "$fresh" "$per_min" "$conv" | tee -a "$out/loss.ndjson"
done
echo "loss: results in $out/loss.ndjson" >&2
