#!/usr/bin/env bash
# serf-event.sh LOG: serf event handler for scripts/bench/peers.sh.
#
# serf runs it for every member event (member-join, -leave, -failed,
# -update, -reap) with the members concerned on stdin, one per line
# ("NAME<TAB>ADDRESS<TAB>ROLE<TAB>TAGS"). It appends one line to LOG:
#
#   EPOCHREALTIME EVENT NAME[,NAME...]
#
# The time is taken first, before reading stdin, so it is as close as a
# handler can be to the moment serf decided.
set -euo pipefail
t=$EPOCHREALTIME
log=${1:?usage: serf-event.sh LOG}
names=""
while IFS=$'\t' read -r name _; do
	[[ -n $name ]] || continue
	names+=${names:+,}$name
done
printf '%s %s %s\n' "$t" "${SERF_EVENT:-unknown}" "${names:--}" >>"$log"
