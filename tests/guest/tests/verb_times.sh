#!/bin/sh
# lab-about: verb_costs.c in its timing mode (built in the guest): each control-path verb (PD, CQ, MR of 64 KiB, QP create, modify to INIT, RTR, RTS and destroy, SRQ, AH) 64 times in a phase of its own, the whole sequence 8 rounds over, wall time per call, the program where the scheduler puts it (no counters, no pinning); every call succeeds and every phase of every round reports a time; the figures are the benchmark's per-verb rows (make bench), not judged here
# lab-timeout: 240
. "$LAB_DIR/lib.sh"

name=verb_times
log=$LAB_RESULTS/$name.log
calls=64
rounds=8

lab_build_test verb_costs
timeout 180 /tmp/verb_costs "$LAB_DEV" "$LAB_GID_INDEX" "$calls" "$rounds" >"$log" 2>&1
status=$?
cat "$log"
lab_check_exit "$name" "$status" "$log" 180
lab_expect "$log" "^all verbs timed \($calls calls each, $rounds rounds\)\$" "$name"

# Every verb's phase reported a time in every round. The figures are the
# benchmark's to compare (tools/pvrdma-lab/src/bench/figures.rs: a verb's
# figure in a run is the median of its rounds after the first); here they are
# only summarised, each verb's median over those rounds in microseconds.
summary=
for verb in alloc_pd dealloc_pd create_cq destroy_cq reg_mr dereg_mr create_qp \
	modify_qp_init modify_qp_rtr modify_qp_rts destroy_qp create_srq destroy_srq \
	create_ah destroy_ah; do
	times=$(sed -n "s/^time: $verb round \([0-9]*\) n $calls us \([0-9.]*\)\$/\1 \2/p" "$log")
	seen=$(echo "$times" | grep -c .)
	[ "$seen" -eq "$rounds" ] || lab_fail "$name: $verb: $seen of $rounds rounds timed"
	median=$(echo "$times" | awk '$1 > 1 { print $2 }' | sort -n |
		awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.1f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }')
	summary="$summary, $verb $median"
done
lab_summary "us per call, median of rounds 2-$rounds ($calls calls each):${summary#,}"
