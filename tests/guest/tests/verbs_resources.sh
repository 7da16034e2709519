#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# lab-about: verbs_resources.c (built by the host's make guest-programs, else in the guest): 256 CQs, 256 QPs (224 RC connected pairwise, 32 UD) and MRs from 4 KiB doubling to the device's max_mr_size, all used with SEND/RECV checked byte by byte, destroyed (every destroy returns 0), twice; then PDs, CQs, MRs churned past the device's limits; no kernel objects left (rdma resource), kmemleak clean, dmesg free of oops/WARN; with LAB_RESOURCES_PLACEMENTS (make bench) the rounds again with the program pinned near and far from the device's interrupts
# lab-timeout: 420
. "$LAB_DIR/lib.sh"

name=verbs_resources
bin=/tmp/$name
log=$LAB_RESULTS/$name.log
limit=${LAB_RESOURCES_TIMEOUT:-300}

lab_build_test "$name"

# lab_res_counts: sets res_counts to the device's object counts (pd, cq, qp,
# mr, ...) kept by the RDMA core (`rdma resource show`); the kernel's own
# objects (QP1, the MAD layer's CQs and PD) stay, the test's must all be gone
# afterwards. Fails the test without the rdma tool, when it fails, or when its
# answer has no line for the device: two empty answers would compare equal.
lab_res_counts() {
	command -v rdma >/dev/null || lab_fail "$name: no rdma tool (iproute2): cannot count the kernel's RDMA objects"
	res_out=$(timeout 30 rdma resource show "$LAB_DEV" 2>&1)
	res_status=$?
	[ "$res_status" -eq 0 ] || lab_fail "$name: rdma resource show $LAB_DEV exited with status $res_status: $res_out"
	case "$res_out" in
	*"$LAB_DEV: "*) ;;
	*) lab_fail "$name: rdma resource show $LAB_DEV has no line for the device: '$res_out'" ;;
	esac
	res_counts=$(printf '%s\n' "$res_out" | sed 's/^[0-9]*: *//')
}

kmemleak=/sys/kernel/debug/kmemleak
if [ -w "$kmemleak" ]; then
	# Forget what was found before the test (boot), so the scan below reports
	# only what this test leaked.
	echo clear >"$kmemleak"
fi
lab_res_counts
before=$res_counts
dmesg_before=$(dmesg | wc -l)

timeout -k 5 "$limit" stdbuf -oL "$bin" "$LAB_DEV" "$LAB_GID_INDEX" "${LAB_RESOURCES_ROUNDS:-2}" "${LAB_RESOURCES_CHURN:-1}" >"$log" 2>&1
status=$?
cat "$log"
lab_check_exit "$name" "$status" "$log" "$limit"
lab_expect "$log" "^all checks passed" "$name"
lab_expect "$log" "^largest MR: " "$name"

# LAB_RESOURCES_PLACEMENTS (make bench: near:far; colons, commas or spaces
# between the words): the rounds run again for each placement, pinned near or
# far from the device's interrupts (lab_placements), without the churn, into
# $name-<placement>.log. Left to the scheduler, the placement changes from run
# to run and the figures of a driver that waits for the interrupt with it
# (verb_times says the same per verb).
if [ -n "${LAB_RESOURCES_PLACEMENTS:-}" ]; then
	lab_placements "$name"
	for placement in $(echo "$LAB_RESOURCES_PLACEMENTS" | tr ',:' '  '); do
		lab_placement_cpu "$name" "$placement"
		placed=$LAB_RESULTS/$name-$placement.log
		timeout -k 5 "$limit" taskset -c "$placement_cpu" stdbuf -oL "$bin" "$LAB_DEV" "$LAB_GID_INDEX" \
			"${LAB_RESOURCES_ROUNDS:-2}" 0 >"$placed" 2>&1
		status=$?
		cat "$placed"
		lab_check_exit "$name ($placement)" "$status" "$placed" "$limit"
		lab_expect "$placed" "^all checks passed" "$name ($placement)"
	done
fi

# Every object the program made is gone from the core's tracking.
lab_res_counts
after=$res_counts
lab_note "rdma resource before: $before"
lab_note "rdma resource after:  $after"
[ "$before" = "$after" ] || lab_fail "kernel RDMA objects left after the program exited: before '$before', after '$after'"

# What the kernel said while the program ran, kept beside the test's log. The
# runner judges it, with the whole dmesg and the console: any report fails the
# test, except the C driver's own command-completion race, which it recognises
# as one report (tools/pvrdma-lab/known-failures.toml). Rejecting it here as
# well would fail the test on the reference driver's bug before the runner
# could name it.
dmesg | tail -n +"$((dmesg_before + 1))" >"$LAB_RESULTS/$name-dmesg.txt"

if [ -w "$kmemleak" ]; then
	# kmemleak reports an object only once it is at least 5 s old and was
	# unreferenced in two scans.
	sleep 6
	echo scan >"$kmemleak"
	echo scan >"$kmemleak"
	cat "$kmemleak" >"$LAB_RESULTS/$name-kmemleak.txt" 2>&1
	leaks=$(grep -c "^unreferenced object" "$LAB_RESULTS/$name-kmemleak.txt")
	[ "$leaks" -eq 0 ] || lab_fail "kmemleak: $leaks unreferenced objects after every object was destroyed: $(grep -m 1 -A 12 "^unreferenced object" "$LAB_RESULTS/$name-kmemleak.txt" | grep -m 3 -E '\[<|comm' | tr '\n' ' ')"
	lab_note "kmemleak: no leak after the rounds"
else
	lab_note "no kmemleak in this kernel: leaks are not checked here"
fi
lab_note "$name: $(grep '^largest MR' "$log")"
