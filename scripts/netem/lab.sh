#!/usr/bin/env bash
# lab.sh: a LAN of N network namespaces on a private bridge, running one
# groupd per namespace: up, down, status, start, stop, kill, restart, exec,
# wait, export. See README.md in this directory; `lab.sh help` lists them.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

case ${1:-} in
"" | -h | --help | help) ;;
*)
	gd_need_root
	gd_need_cmd ip iproute2
	;;
esac
gd_run lab "$@"
