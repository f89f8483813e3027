#!/usr/bin/env bash
# check.sh: model-check model/invitation.pml (the invitation merge, 3 nodes,
# one partition and heal, a lossy network) with spin, and print the result.
#
#   model/check.sh [quick|retransmit|cover|mutants|all]    (default: quick)
#
#   quick       exhaustive: MAXSEQ=3 MAXLOSS=2 QSZ=2 MAXVER=2, no retransmissions
#   retransmit  with invitation and Ready retransmissions (MAXRETX=2), MAXLOSS=1;
#               hash-compacted state storage (-DHC4): about 1.5e8 states, 8 GB
#               and 10-15 minutes
#   cover       the converged state after the heal is reachable (non-vacuity)
#   mutants     three deliberate bugs, each of which must be caught
#   all         all of the above
#
# Needs spin (apt-get install -y spin) and a C compiler. Exit status 0 when
# every run gave the expected answer. Environment: SPIN_MEMLIM (MB, default
# 6000; 10000 for retransmit), SPIN_HASH (-w, default 27; 28 for retransmit).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
model=$here/invitation.pml
memlim=${SPIN_MEMLIM:-6000}
hashw=${SPIN_HASH:-27}

command -v spin >/dev/null 2>&1 || { echo "check: spin is missing: apt-get install -y spin" >&2; exit 2; }
command -v cc >/dev/null 2>&1 || { echo "check: a C compiler is missing: apt-get install -y gcc" >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$model" "$work/"
failed=0

# run NAME EXPECT STORAGE DEFINES...: EXPECT is "hold" (no error, search
# complete) or "error" (an assertion must fail); STORAGE is the pan
# compile option (-DCOLLAPSE or -DHC4).
run() {
	local name=$1 expect=$2 storage=$3 out states trans depth secs errors verdict
	shift 3
	(
		cd "$work"
		spin "$@" -a invitation.pml >/dev/null
		cc -O2 -w -DSAFETY "$storage" -DMEMLIM="$memlim" -o pan pan.c
		./pan -m200000 -w"$hashw" >pan.out 2>&1 || true
	)
	out=$work/pan.out
	states=$(awk '/states, stored/ {print $1; exit}' "$out")
	trans=$(awk '/transitions \(= stored\+matched\)/ {print $1; exit}' "$out")
	depth=$(sed -n 's/.*depth reached \([0-9]*\).*/\1/p' "$out" | head -n 1)
	errors=$(sed -n 's/.*errors: \([0-9]*\).*/\1/p' "$out" | head -n 1)
	secs=$(sed -n 's/^pan: elapsed time \([0-9.e+]*\).*/\1/p' "$out" | head -n 1)
	if grep -q "reached -DMEMLIM bound\|max search depth too small" "$out"; then
		verdict="INCOMPLETE (memory or depth bound reached; raise SPIN_MEMLIM)"
		[[ $expect == hold ]] && failed=1
	elif [[ $expect == hold && ${errors:-1} == 0 ]]; then
		verdict="hold"
	elif [[ $expect == error && ${errors:-0} != 0 ]]; then
		verdict="caught: $(grep -m1 -o 'assertion violated.*\|invalid end state' "$out" || echo error)"
	else
		verdict="UNEXPECTED ($errors errors)"
		failed=1
		grep -m3 "pan:" "$out" >&2 || true
	fi
	printf '%-11s %-44s %s\n' "$name" "[$*]" "$verdict"
	printf '%-11s %s states, %s transitions, depth %s, %ss (%s)\n' "" "${states:-?}" "${trans:-?}" "${depth:-?}" "${secs:-?}" \
		"$([[ $storage == -DHC4 ]] && echo "hash-compacted storage" || echo "exhaustive")"
}

what=${1:-quick}
case $what in
quick | retransmit | cover | mutants | all) ;;
*)
	sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//' >&2
	exit 2
	;;
esac
echo "spin $(spin -V | sed -n 's/^Spin Version \([^ ]*\).*/\1/p'): S1-S4 and R (role) on model/invitation.pml"
if [[ $what == quick || $what == all ]]; then
	run quick hold -DCOLLAPSE -DMAXSEQ=3 -DMAXLOSS=2 -DQSZ=2 -DMAXVER=2
fi
if [[ $what == retransmit || $what == all ]]; then
	memlim=${SPIN_MEMLIM:-10000} hashw=${SPIN_HASH:-28} \
		run retransmit hold -DHC4 -DMAXSEQ=3 -DMAXLOSS=1 -DQSZ=2 -DMAXVER=2 -DRETRANSMIT -DMAXRETX=2
fi
if [[ $what == cover || $what == all ]]; then
	run cover error -DCOLLAPSE -DCOVER -DMAXSEQ=3 -DMAXLOSS=2 -DQSZ=2 -DMAXVER=2
fi
if [[ $what == mutants || $what == all ]]; then
	run nopersist error -DCOLLAPSE -DMUTANT_NOPERSIST -DMAXSEQ=3 -DMAXLOSS=1 -DQSZ=2 -DMAXVER=2
	run staleseq error -DCOLLAPSE -DMUTANT_STALE_SEQ -DMAXSEQ=3 -DMAXLOSS=1 -DQSZ=2 -DMAXVER=2
	run noversion error -DCOLLAPSE -DMUTANT_NOVERSION -DMAXSEQ=3 -DMAXLOSS=1 -DQSZ=2 -DMAXVER=2
fi
if ((failed)); then
	echo "RESULT: FAILED"
	exit 1
fi
echo "RESULT: OK"
