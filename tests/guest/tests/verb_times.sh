#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# lab-about: verb_costs.c in its timing mode (built by the host's make guest-programs, else in the guest): each control-path verb (PD, CQ, MR of 64 KiB, QP create, modify to INIT, RTR, RTS and destroy, SRQ, AH) 64 times in a phase of its own, the whole sequence 2 rounds over (LAB_VERB_TIMES_ROUNDS; make bench 8), wall time per call, twice with the device's interrupts on CPU 1: the program pinned to CPU 1 ("near": it takes the command interrupts itself) and to CPU 0 ("far": the other vCPU takes them); every call succeeds and every phase of every round reports a time; the figures are the benchmark's per-verb rows (make bench), not judged here
# lab-timeout: 360
. "$LAB_DIR/lib.sh"

name=verb_times
calls=64
# Rounds (LAB_VERB_TIMES_ROUNDS): make check proves every verb is timed in
# every round, which two show; make bench takes its figures from rounds 2-8.
rounds=${LAB_VERB_TIMES_ROUNDS:-2}
case "$rounds" in
'' | *[!0-9]* | 0*) lab_fail "LAB_VERB_TIMES_ROUNDS '$rounds' must be a number, as verb_costs prints it (no leading 0)" ;;
esac
[ "$rounds" -ge 2 ] || lab_fail "LAB_VERB_TIMES_ROUNDS must be at least 2 (the first round is left out of the figures), not $rounds"

# Where the caller runs against the CPU that takes the command's interrupt
# decides what a command costs: on the same CPU the interrupt is taken right
# after the register write (the device answers inside it); on the other one,
# under TCG, only at that vCPU's next turn, which a driver that waits for the
# interrupt waits for. Left to the scheduler, the placement changes from run
# to run and the figures with it, so each placement is timed on its own.
lab_placements "$name"

lab_build_test verb_costs
for placement in near far; do
	lab_placement_cpu "$name" "$placement"
	log=$LAB_RESULTS/$name-$placement.log
	timeout 180 taskset -c "$placement_cpu" /tmp/verb_costs "$LAB_DEV" "$LAB_GID_INDEX" "$calls" "$rounds" >"$log" 2>&1
	status=$?
	cat "$log"
	lab_check_exit "$name ($placement)" "$status" "$log" 180
	lab_expect "$log" "^all verbs timed \($calls calls each, $rounds rounds\)\$" "$name ($placement)"

	# Every verb's phase reported a time in every round. The figures are the
	# benchmark's to compare (tools/pvrdma-lab/src/bench/figures.rs: a verb's
	# figure in a run is the median of its rounds after the first); here they
	# are only summarised, each verb's median over those rounds in
	# microseconds.
	times=
	for verb in alloc_pd dealloc_pd create_cq destroy_cq reg_mr dereg_mr create_qp \
		modify_qp_init modify_qp_rtr modify_qp_rts destroy_qp create_srq destroy_srq \
		create_ah destroy_ah; do
		rows=$(sed -n "s/^time: $verb round \([0-9]*\) n $calls us \([0-9.]*\)\$/\1 \2/p" "$log")
		seen=$(echo "$rows" | grep -c .)
		[ "$seen" -eq "$rounds" ] || lab_fail "$name ($placement): $verb: $seen of $rounds rounds timed"
		median=$(echo "$rows" | awk '$1 > 1 { print $2 }' | sort -n |
			awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.1f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }')
		times="$times, $verb $median"
	done
	lab_summary "$placement (program on CPU $placement_cpu, the device's interrupts on CPU 1): us per call, median of rounds 2-$rounds ($calls calls each):${times#,}"
done
