#!/bin/sh
# store.sh DIR TERM LINE... — a fenced store in a dozen lines: append LINE to
# DIR/data unless TERM (a groupd term, SEQ.ID) is below the highest term the
# store has seen, which it keeps in DIR/term. A writer that lost its
# leadership carries an older term than its successor, so once the new
# leader has written, the old one is refused (exit 3), however late its
# write arrives. Use it with groupd exec, which sets GROUPD_TERM:
#
#   groupd exec --repeat -- sh -c 'while store.sh /srv/app "$GROUPD_TERM" "tick $(date +%s)"; do sleep 1; done'
set -eu
dir=$1 term=$2
shift 2
mkdir -p "$dir"
exec 9>"$dir/lock"
flock 9
last=$(cat "$dir/term" 2>/dev/null || echo 0.0)
# Order SEQ.ID by SEQ, then ID, as groupd does.
newest=$(printf '%s\n%s\n' "$last" "$term" | sort -t. -k1,1n -k2,2n | tail -n 1)
if [ "$newest" != "$term" ]; then
	echo "store.sh: refused: term $term is below $last" >&2
	exit 3
fi
printf '%s\n' "$term" >"$dir/term"
printf '%s %s\n' "$term" "$*" >>"$dir/data"
