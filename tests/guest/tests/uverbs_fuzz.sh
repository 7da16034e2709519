#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# lab-about: uverbs_fuzz.c (built by the host's make guest-programs, else in the guest): a seeded fuzzer writes random uverbs commands (PD, CQ, QP, SRQ, MR, AH: create, modify, query, destroy; random sizes, handles, flags, states, ring buffers and truncated udata) from two threads per process, each process ending cleanly (every destroy must succeed), by exit or by SIGKILL mid-command; no process may crash, every kind of object must have been created, no object may be left in `rdma res` afterwards, the device must still carry an ibv_rc_pingpong, dmesg free of oops/WARN
# lab-timeout: 600
. "$LAB_DIR/lib.sh"

# The budget (LAB_FUZZ_* on the guest's command line to change it): ROUNDS processes of 2
# threads × OPS commands each, from SEED. The suite's budget is fixed so that a run is
# reproducible; an on-demand run gives a longer one, or another seed.
seed=${LAB_FUZZ_SEED:-1}
rounds=${LAB_FUZZ_ROUNDS:-24}
ops=${LAB_FUZZ_OPS:-1000}
limit=${LAB_FUZZ_TIMEOUT:-420}

name=uverbs_fuzz
bin=/tmp/$name
log=$LAB_RESULTS/$name.log

# counts TAG: the device's line of `rdma res show` (objects by kind) into $LAB_RESULTS/$name-TAG.txt
# and $counts, without the kernel's own QP1 and its CQ and PD (their counts do not change).
counts() {
	f=$LAB_RESULTS/$name-res-$1.txt
	timeout 30 rdma resource show >"$f" 2>&1 || lab_fail "$name: rdma resource show failed: $(lab_tail "$f")"
	counts=$(grep -E "^[0-9]+: $LAB_DEV: " "$f" | cut -d: -f3- | sed 's/^ *//')
	[ -n "$counts" ] || lab_fail "$name: rdma resource show lists no $LAB_DEV: $(lab_tail "$f")"
}

lab_build_test "$name"

counts before
before=$counts
lab_run_program "$name" "$limit" "$log" "$bin" "$LAB_DEV" "$LAB_GID_INDEX" "$seed" "$rounds" "$ops"
summary=$LAB_PROGRAM_SUMMARY
status=$LAB_STATUS
lab_reject "$log" "FAIL:" "$name"
echo "$summary" | grep -qE ', 0 FAIL$' || lab_fail "$name: $summary"
lab_check_exit "$name" "$status" "$log" "$limit"

# Every kind of object was created at least once, and QPs changed state: the fuzzer got past
# the argument checks into the driver and the device. (Not AHs: the pvrdma provider makes them
# in user space, neither driver offers create_user_ah, so the core refuses CREATE_AH; it is
# still tried.)
created=$(grep '^created: ' "$log")
for kind in QP SRQ CQ MR PD; do
	echo "$created" | grep -qE " $kind [1-9]" || lab_fail "$name: no $kind was ever created ($created)"
done
took=$(grep '^accepted/tried by command: ' "$log")
echo "$took" | grep -qE " MODIFY_QP [1-9][0-9]*/" || lab_fail "$name: no MODIFY_QP was accepted ($took)"

# Nothing is left behind: the kernel tore every context down, whatever its end.
counts after
[ "$counts" = "$before" ] || lab_fail "$name: objects left behind: before '$before', after '$counts'"

# The device still works.
lab_pingpong ibv_rc_pingpong 4096 50 18790

lab_summary "$name: seed $seed, $rounds rounds x 2 threads x $ops; ${summary#summary: }; $created; rdma res unchanged ($counts)"
lab_summary "$name: ${took}"
