# shellcheck shell=bash
# lib.sh: what the scripts of scripts/netem and scripts/bench share.
# Source it, do not run it.
#
# The lab itself is Go: package internal/lab, driven by the command
# internal/cmd/lab (gd_run); the benchmarks are internal/benchtool
# (gd_bench). Each is built once into GD_BIN_DIR and run. The
# scripts only check what a shell checks best (root, the tools, installing
# a missing one) and keep their documented names and flags. See README.md.

GD_SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
GD_REPO_ROOT=$(cd "$GD_SCRIPT_DIR/../.." && pwd)
GD_PROG=$(basename "$0" .sh)

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
		printf '%s: installing %s (for %s)\n' "$GD_PROG" "$pkg" "$cmd" >&2
		if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$pkg" >/dev/null 2>&1; then
			DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null 2>&1 || true
			DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$pkg" >/dev/null 2>&1 || true
		fi
		command -v "$cmd" >/dev/null 2>&1 && return 0
	fi
	gd_die "$cmd is missing: install it with 'apt-get install -y $pkg'"
}

# GD_BIN_DIR: where gd_go keeps the commands it builds, one directory per
# repository (outside it: the repository's tests read its files).
GD_BIN_DIR=${TMPDIR:-/tmp}/groupd-bin-$(printf %s "$GD_REPO_ROOT" | cksum | cut -d' ' -f1)

# gd_go NAME PACKAGE ARGS...: build PACKAGE of this repository once into
# GD_BIN_DIR/NAME (again when a Go file of the repository, or a file of the
# page it embeds, ui/assets, is newer) and run it with ARGS (never returns).
gd_go() {
	local bin=$GD_BIN_DIR/$1 pkg=$2
	shift 2
	if [[ ! -x $bin ]] || [[ -n $(find "$GD_REPO_ROOT" \( -name '*.go' -o -name go.mod -o -name go.sum -o -path '*/ui/assets/*' \) -newer "$bin" -print -quit 2>/dev/null) ]]; then
		command -v go >/dev/null 2>&1 || gd_die "go is missing: it builds $pkg"
		mkdir -p "${bin%/*}" && (cd "$GD_REPO_ROOT" && go build -o "$bin" "$pkg") || gd_die "go build $pkg failed"
	fi
	export GROUPD_LAB_REPO=$GD_REPO_ROOT
	exec "$bin" "$@"
}

# gd_run SUBCOMMAND ARGS...: run the lab command (internal/cmd/lab, or
# GROUPD_LABCTL) (never returns).
gd_run() {
	if [[ -n ${GROUPD_LABCTL:-} ]]; then
		export GROUPD_LAB_REPO=$GD_REPO_ROOT
		exec "$GROUPD_LABCTL" "$@"
	fi
	gd_go labctl ./internal/cmd/lab "$@"
}

# gd_bench ARGS...: a script of scripts/bench: with -h/--help it prints the
# script's own header comment; otherwise it checks root and runs benchtool
# ARGS (internal/benchtool).
gd_bench() {
	local a
	for a in "$@"; do
		[[ $a == -- ]] && break
		if [[ $a == -h || $a == --help ]]; then
			awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"
			exit 0
		fi
	done
	gd_need_root
	gd_go benchtool ./internal/benchtool "$@"
}

# gd_script SUBCOMMAND HELP-LINES TOOL:PACKAGE... -- ARGS...: a fault script.
# Without arguments, or with -h/--help, it prints the script's own header
# (lines HELP-LINES, e.g. 2,9) and exits 2; otherwise it checks root and
# the tools and runs the lab command's SUBCOMMAND with ARGS.
gd_script() {
	local sub=$1 help=$2 tool
	local -a tools=()
	shift 2
	while (($# > 0)) && [[ $1 != -- ]]; do
		tools+=("$1")
		shift
	done
	(($# > 0)) && shift
	case ${1:-} in
	"" | -h | --help)
		sed -n "${help}p" "$0" | sed 's/^# \{0,1\}//' >&2
		exit 2
		;;
	esac
	gd_need_root
	for tool in "${tools[@]}"; do
		gd_need_cmd "${tool%%:*}" "${tool#*:}"
	done
	gd_run "$sub" "$@"
}
