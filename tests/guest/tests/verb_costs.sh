#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# lab-about: verb_costs.c (built by the host's make guest-programs, else in the guest): what each control-path verb (PD, CQ, MR, QP create/modify to INIT, RTR, RTS/destroy, SRQ, AH) costs the kernel, counted over 64 calls each, not timed: device commands (the Rust driver's hardware counter; for the C driver, which keeps none, its response interrupts, with the device's interrupts and the program on CPU 0), interrupts, the caller's context switches (sleeps) and its kmalloc, kmem_cache and page allocations (perf counters on kmem tracepoints); exactly one command per call (creating an address handle: the provider's port query; destroying one: none), and one interrupt per command for both drivers (each waits for the response interrupt before it reads the response); the Rust driver's MRs, registered after CQs were destroyed, allocate no pages for their page directories (fewer than one page allocation per call)
# lab-timeout: 240
. "$LAB_DIR/lib.sh"

name=verb_costs
log=$LAB_RESULTS/$name.log
calls=64

lab_build_test "$name"
# perf counts tracepoints found through tracefs (the lab kernel has it; it
# is mounted here if debugfs did not bring it along).
[ -d /sys/kernel/tracing/events ] || mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null

# The device's interrupts and the program on CPU 0: an interrupt then comes
# before the next command (under TCG the other vCPU runs only at the round
# robin's turn, and interrupts waiting for it there merge), so the response
# interrupts of a driver that takes them count its commands exactly, whether
# it waits for them or not (the C driver's figure; the Rust driver counts its
# commands itself).
lab_device_irqs_to 0
timeout 180 taskset -c 0 "/tmp/$name" "$LAB_DEV" "$LAB_GID_INDEX" "$calls" >"$log" 2>&1
status=$?
cat "$log"
[ "$status" -eq 0 ] || lab_fail "$name exited with status $status: $(grep -m 1 '^FAIL' "$log" || lab_tail "$log")"
lab_expect "$log" "^all verbs counted \($calls calls each\)\$" "$name"

# field VERB NAME: the per-call figure NAME of VERB's line.
field() {
	sed -n "s/^cost: $1 n [0-9]* .*\<$2 \([0-9.]*\).*/\1/p" "$log"
}

# One device command per call, as the ABI has it and the C driver does, but
# for address handles, which are the driver's alone: creating one costs the
# port query that the provider library (vmw_pvrdma's pvrdma_create_ah) makes
# first, destroying one nothing.
summary=
for verb in alloc_pd dealloc_pd create_cq destroy_cq reg_mr dereg_mr create_qp \
	modify_qp_init modify_qp_rtr modify_qp_rts destroy_qp create_srq destroy_srq \
	create_ah destroy_ah; do
	case $verb in
	destroy_ah) expected=0.00 ;;
	*) expected=1.00 ;;
	esac
	commands=$(field "$verb" commands)
	interrupts=$(field "$verb" interrupts)
	[ -n "$commands" ] || lab_fail "$name: no line for $verb"
	[ "$commands" = "$expected" ] ||
		lab_fail "$name: $verb: $commands device commands per call, not $expected"
	# Both drivers take the response interrupt of every command: only the
	# interrupt says that the response is complete.
	expected_interrupts=$commands
	[ "$interrupts" = "$expected_interrupts" ] ||
		lab_fail "$name: $verb: $interrupts interrupts per call for $commands commands, not $expected_interrupts"
	# The Rust driver keeps the page directories of destroyed objects for the
	# next ones (drivers/infiniband/hw/pvrdma/pdir.rs, DirCache): the MRs,
	# registered after 64 CQs were destroyed, take theirs without allocating
	# (the C driver allocates two pages for each; what else a call allocates,
	# the program's and the core's, is about a quarter of a page).
	if [ "$LAB_DRIVER" = rust ] && [ "$verb" = reg_mr ]; then
		pages=$(field "$verb" pages)
		awk -v p="$pages" 'BEGIN { exit !(p < 1.00) }' ||
			lab_fail "$name: reg_mr: $pages page allocations per call: its page directory did not come from those of the CQs destroyed before"
	fi
	summary="$summary; $verb $commands cmd, $(field "$verb" switches) sleeps, $(field "$verb" kmalloc)+$(field "$verb" cache) allocs, $(field "$verb" pages) pages"
done
lab_summary "per call (64 calls each):${summary#;}"
