#!/usr/bin/env bash
# experiment.sh: run one partition-healing scenario on a fresh lab and keep
# what happened: events.ndjson, faults.ndjson, summary.json, timeline.svg
# (and, for chaos, the invariant check of the whole history). The scenarios
# are Go (internal/cmd/lab, on internal/lab); `experiment.sh --help` lists
# them and their options. See README.md in this directory.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

case ${1:-} in
"" | -h | --help) ;;
*)
	gd_need_root
	gd_need_cmd ip iproute2
	gd_need_cmd iptables iptables
	;;
esac
gd_run experiment "$@"
