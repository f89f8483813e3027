#!/usr/bin/env bash
# exclusive.sh: exclusive leadership under faults, groupd and its peers
# (corosync + votequorum, keepalived). See scripts/bench/README.md,
# "Exclusive leadership". The measuring is `benchtool exclusive`
# (internal/benchtool/exclusive*.go); this script only reads its
# arguments, builds, installs a missing peer and calls it.
#
#   scripts/bench/exclusive.sh [--peers LIST] [--faults LIST] [--rounds K]
#                              [--hold S] [--freeze S] [--out DIR]
#                              [--force] [--no-install] [-- GROUPD-ARGS...]
#
#   --peers LIST    groupd,corosync,keepalived (default: all three)
#   --faults LIST   partition,freeze,asym-out,asym-in,kill (default: all)
#   --rounds K      rounds per peer and fault (default 5)
#   --hold S        seconds a partition, cut or kill lasts (default 20)
#   --freeze S      seconds the leader is stopped (default 3)
#   --out DIR       results: DIR/exclusive.ndjson (appended), DIR/exclusive.md
#                   (default /tmp/groupd-exclusive-YYYYmmdd-HHMMSS)
#   --force         take down a lab of this prefix that is already up
#   --no-install    never apt-get install a missing peer
#   -- ARGS         more `groupd run` arguments (after --profile lan --expect 5)
#
# The lab: GROUPD_LAB_PREFIX (default px), GROUPD_LAB_SUBNET (default
# 10.96.0), GROUPD_LAB_DIR (default /tmp/groupd-px-lab). Needs root. A trap
# stops every process of the run and takes the lab down, also on Ctrl-C.
set -euo pipefail

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$BENCH_DIR/../.." && pwd)
export GROUPD_LAB_PREFIX=${GROUPD_LAB_PREFIX:-px}
export GROUPD_LAB_SUBNET=${GROUPD_LAB_SUBNET:-10.96.0}
export GROUPD_LAB_DIR=${GROUPD_LAB_DIR:-/tmp/groupd-px-lab}

PEERS=groupd,corosync,keepalived
FAULTS=partition,freeze,asym-out,asym-in,kill
ROUNDS=5
HOLD=20
FREEZE=3
OUT=""
FORCE=()
INSTALL=1
while (($# > 0)); do
	case $1 in
	--peers) PEERS=${2:?--peers needs a list} && shift ;;
	--faults) FAULTS=${2:?--faults needs a list} && shift ;;
	--rounds) ROUNDS=${2:?--rounds needs a number} && shift ;;
	--hold) HOLD=${2:?--hold needs seconds} && shift ;;
	--freeze) FREEZE=${2:?--freeze needs seconds} && shift ;;
	--out) OUT=${2:?--out needs a directory} && shift ;;
	--force) FORCE=(--force) ;;
	--no-install) INSTALL=0 ;;
	--)
		shift
		break
		;;
	-h | --help)
		sed -n '2,26p' "$0" | sed 's/^# \{0,1\}//'
		exit 0
		;;
	*)
		echo "exclusive.sh: unknown argument '$1' (see --help)" >&2
		exit 2
		;;
	esac
	shift
done
[[ $EUID -eq 0 ]] || {
	echo "exclusive.sh: must run as root (network namespaces)" >&2
	exit 1
}

OUT=${OUT:-/tmp/groupd-exclusive-$(date -u +%Y%m%d-%H%M%S)}
mkdir -p "$OUT/bin"
OUT=$(cd "$OUT" && pwd)
BT=$OUT/bin/benchtool

# A missing peer: apt-get install, with its own service kept from starting.
declare -A PKG=([corosync]=corosync [keepalived]=keepalived)
for p in ${PEERS//,/ }; do
	[[ -n ${PKG[$p]:-} ]] && ! command -v "$p" >/dev/null && ((INSTALL)) || continue
	echo "exclusive: installing ${PKG[$p]} with apt-get install -y"
	made=0
	[[ -e /usr/sbin/policy-rc.d ]] || { printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod 755 /usr/sbin/policy-rc.d && made=1; }
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${PKG[$p]}" >>"$OUT/apt.log" 2>&1 || echo "exclusive: apt-get install ${PKG[$p]} failed; see $OUT/apt.log"
	((made)) && rm -f /usr/sbin/policy-rc.d
done

(cd "$REPO" && go build -o "$OUT/bin/groupd" ./cmd/groupd && go build -o "$BT" ./internal/benchtool)
trap '"$BT" exclusive cleanup --dir "$GROUPD_LAB_DIR" --prefix "$GROUPD_LAB_PREFIX" || true' EXIT
trap 'exit 130' INT TERM

COMMIT="$(cd "$REPO" && git rev-parse --short HEAD) ($(cd "$REPO" && git status --porcelain | wc -l) uncommitted paths)"
echo "$(date -u +%FT%TZ) start $PEERS $FAULTS x$ROUNDS: $(uptime)" >>"$OUT/loads.txt"
"$BT" exclusive run --peers "$PEERS" --faults "$FAULTS" --rounds "$ROUNDS" --hold "${HOLD}s" --freeze "${FREEZE}s" \
	--bin "$OUT/bin/groupd" --src "$BENCH_DIR/peers" --commit "$COMMIT" --out "$OUT/exclusive.ndjson" "${FORCE[@]}" -- "$@"
echo "$(date -u +%FT%TZ) end: $(uptime)" >>"$OUT/loads.txt"
"$BT" exclusive report --in "$OUT/exclusive.ndjson" -o "$OUT/exclusive.md"
cat "$OUT/exclusive.md"
