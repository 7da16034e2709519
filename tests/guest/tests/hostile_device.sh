#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# lab-about: the driver against a device that lies (the patched model's fault injection, tools/qemu patch 16), one fault at a time: async events and CQ notifications naming no object, an interrupt storm, a command answered with another command's response code, a command answered 20 ms late (patch 25, as an asynchronous device answers: the command waits for the response interrupt and succeeds), a command answered 15 s and 60 s late, as a device whose host stalled answers (patch 30: the Rust driver waits, saying so after 10 s, the command and one waiting behind it succeed, and rping and ibv_rc_pingpong run after; the C driver fails the late command after its 10 s timeout), a response written front to back, its header before the rest (patch 30: the driver reads the slot only after the interrupt, and the port query finds the attributes a query without the fault finds), a stray kernel CQE of an unknown QP, two kernel CQEs of one queue in reverse order (as QEMU's backend reports a work request that fails at once while earlier ones are in flight), a kernel receive completion counting 64 KiB, far more than its MAD buffer holds (patch 26: the Rust driver fails it with a length error and rdma_cm sends the MAD again; the C driver passes it on, and the MAD layer reads an IB MAD's fixed size whatever the count), a kernel CQE with bits set above the low 16 of its 64-bit QP field (patch 26: the completion is the QP's that the low 16 bits name, as the C driver and rdma-core's provider read the field), a notification of a kernel CQ at its arm inside ib_alloc_cq(), a port down with MTUs of 0 at probe (patch 28: the device registers), capabilities out of range at probe, each survived with a clean error (the Rust driver counting the stale events and the wrong response in its hardware counters) and the device carrying ibv_rc_pingpong or rping after it; then a fault that leaves the device untrustworthy (by default a kernel CQE with a wr_id never posted): the device is declared dead, IBV_EVENT_DEVICE_FATAL reaches user space, rping and ibv_rc_pingpong fail cleanly within their limits, and removal completes; dmesg free of oops/WARN/KASAN
# lab-timeout: 600
# lab-runs-last: the device model is left faulted (its fault injection, a device declared dead), which the next test must not inherit
. "$LAB_DIR/lib.sh"

# LAB_HOSTILE_FAULTS: the faults survived in turn (default: all of them, in
# this order); LAB_HOSTILE_FATAL: the last fault, which kills the device
# (cqe-bad-wr-id, cq-ring-index, async-ring-index, cq-notify-ring-index,
# cmd-no-response; "none" for no such fault). A dead device is not told to
# forget its objects, so one boot can take one such fault: on-demand runs
# choose the others (Documentation/reliability.md).
#
# The C driver is run on the faults it survives, and on a command never
# answered as one it survives (it has no dead state). Those it does not
# survive (seen in on-demand runs: Documentation/reliability.md) would oops
# the guest, read out of bounds or hang: the kernel CQE faults (it takes the
# device's wr_id for the MAD layer's pointer, indexes its QP table with the
# low 16 bits of any QP handle, and stops polling a CQ at an entry it cannot
# use), and a notification of a kernel CQ the RDMA core is still setting up
# (it calls the CQ's handler, which queues work on the CQ's workqueue, not
# set yet: a NULL pointer dereference in __queue_work()).

name=hostile_device
if [ "$LAB_DRIVER" = c ]; then
	survivable_default="stale-events irq-storm cmd-wrong-response cmd-late-response cmd-late-15s cmd-late-60s cmd-resp-front-to-back cmd-no-response cqe-reorder cqe-byte-len cqe-qp-high-bits port-attrs caps"
	fatal_default=none
else
	# cqe-qp-high-bits before cqe-unknown-qp: the warning about a dropped
	# completion, which the first must not cause, is printed once per boot.
	survivable_default="stale-events irq-storm cmd-wrong-response cmd-late-response cmd-late-15s cmd-late-60s cmd-resp-front-to-back cqe-qp-high-bits cqe-unknown-qp cqe-reorder cqe-byte-len cq-arm-notify port-attrs caps"
	fatal_default=cqe-bad-wr-id
fi
faults=${LAB_HOSTILE_FAULTS:-$survivable_default}
fatal=${LAB_HOSTILE_FATAL:-$fatal_default}
fault=/tmp/pvrdma_fault
port=7700

lab_build_test pvrdma_fault

# mark: remembers where dmesg is, for slice.
mark() {
	dmesg_mark=$(dmesg | wc -l)
}
# slice FILE: the kernel messages since the last mark, into FILE.
slice() {
	dmesg | tail -n +"$((dmesg_mark + 1))" >"$1"
}

# arm KIND: arms fault KIND; fails the test if the model cannot inject it.
arm() {
	out=$LAB_RESULTS/fault-$1.txt
	"$fault" "$1" >"$out" 2>&1 || lab_fail "$name: cannot arm $1: $(lab_tail "$out")"
}

# happened KIND SECONDS: fails unless the armed fault KIND happened within SECONDS.
happened() {
	"$fault" --wait "$2" >>"$LAB_RESULTS/fault-$1.txt" 2>&1 ||
		lab_fail "$name: fault $1 did not happen within $2 s: $(lab_tail "$LAB_RESULTS/fault-$1.txt")"
}

# works WHAT: the device carries ibv_rc_pingpong after WHAT.
works() {
	port=$((port + 1))
	lab_pingpong ibv_rc_pingpong 4096 50 "$port" --chk
}

# rping_ok WHAT: the device carries rping (rdma_cm, whose MADs go through the
# kernel's GSI QP and CQ) after WHAT.
rping_ok() {
	port=$((port + 1))
	srv=$LAB_RESULTS/rping-$port-server.log
	cli=$LAB_RESULTS/rping-$port-client.log
	lab_server_start 120 "$srv" rping -s -v -V -a "$LAB_IP" -p "$port" -C 10 -S 64
	lab_wait_listen cm "$port" 60 "rping after $1" "$srv"
	lab_client_run 120 "$cli" rping -c -v -V -a "$LAB_IP" -p "$port" -C 10 -S 64
	lab_check_pair "rping after $1" 120 "$srv" "$cli"
	pings=$(grep -c "^ping data: rdma-ping-[0-9]*: " "$cli")
	[ "$pings" -eq 10 ] || lab_fail "$name: rping after $1: $pings pings, not 10: $(lab_tail "$cli")"
}

# probe_with KIND: the driver unloaded, fault KIND armed, the driver loaded
# again: the fault happens at that probe (within 10 s). Module output in
# $out ($LAB_RESULTS/KIND-modules.txt).
probe_with() {
	out=$LAB_RESULTS/$1-modules.txt
	timeout 60 rmmod "$LAB_MODULE_NAME" >"$out" 2>&1
	lab_check_exit "$1: rmmod $LAB_MODULE_NAME" $? "$out" 60
	arm "$1"
	timeout 60 insmod "$LAB_MODULE" >>"$out" 2>&1
	lab_check_exit "$1: insmod $LAB_MODULE" $? "$out" 60
	happened "$1" 10
}

# checked KIND: the kernel messages of fault KIND (since the mark) hold no report.
checked() {
	slice "$LAB_RESULTS/dmesg-$1.txt"
	lab_dmesg_check "$LAB_RESULTS/dmesg-$1.txt" "$name: fault $1"
}

# expect_dmesg KIND PATTERN WHAT: the driver said PATTERN about fault KIND.
expect_dmesg() {
	grep -qE "$2" "$LAB_RESULTS/dmesg-$1.txt" ||
		lab_fail "$name: fault $1: no kernel message matching '$2' ($3): $(lab_tail "$LAB_RESULTS/dmesg-$1.txt")"
}

# counter NAME: the Rust driver's hardware counter NAME (nothing for the C
# driver, which keeps none).
counter() {
	counter_file=/sys/class/infiniband/$LAB_DEV/ports/1/hw_counters/$1
	[ -r "$counter_file" ] && cat "$counter_file"
}

# counted KIND NAME BEFORE: the Rust driver's counter NAME grew past BEFORE
# during fault KIND (what the driver dropped or refused, it counted).
counted() {
	[ "$LAB_DRIVER" = rust ] || return 0
	after=$(counter "$2")
	for value in "$3" "$after"; do
		case "$value" in
		"" | *[!0-9]*) lab_fail "$name: fault $1: hardware counter $2 unreadable (before: '$3', after: '$after')" ;;
		esac
	done
	[ "$after" -gt "$3" ] || lab_fail "$name: fault $1: hardware counter $2 stayed at $3"
	lab_note "$1: $2 +$((after - $3))"
	counts="${counts:+$counts, }$2 +$((after - $3)) ($1)"
}

survived=
counts=
for kind in $faults; do
	mark
	stale_before=$(counter stale_events)
	errors_before=$(counter command_errors)
	case $kind in
	stale-events)
		# QP_FATAL, CQ_ERR, SRQ_LIMIT_REACHED and a CQ notification for handles
		# no object has: nothing to deliver them to.
		arm "$kind"
		happened "$kind" 10
		sleep 1
		works "$kind"
		;;
	irq-storm)
		# Interrupts on every vector with nothing behind them, while traffic runs.
		arm "$kind"
		happened "$kind" 10
		works "$kind"
		sleep 2
		works "the end of the $kind"
		;;
	cmd-wrong-response)
		# The next command fails, cleanly, with the driver's error for a wrong
		# answer; the next one works. That command is the CREATE_UC of the
		# user context that opening the device makes (ibv_open_device(), before
		# any query): pvrdma_fault --open prints the errno it fails with, which
		# ibv_devinfo would not. Per driver, as Documentation/reliability.md
		# has it: the Rust driver fails it with EIO (cmd.rs: the device
		# failed); the C driver with EFAULT (pvrdma_cmd_recv(), "unknown
		# response": -EFAULT for every wrong answer).
		case $LAB_DRIVER in
		rust) refused=EIO ;;
		*) refused=EFAULT ;;
		esac
		arm "$kind"
		out=$LAB_RESULTS/open-$kind.txt
		timeout 60 "$fault" --open "$LAB_DEV" >"$out" 2>&1
		status=$?
		case $status in
		1) ;;
		124 | 137) lab_fail "$name: $kind: opening $LAB_DEV hung on a command answered wrongly: $(lab_tail "$out")" ;;
		*) lab_fail "$name: $kind: opening $LAB_DEV exited $status, not 1 (refused), on a command answered wrongly: $(lab_tail "$out")" ;;
		esac
		grep -q "^open $LAB_DEV: refused with $refused " "$out" ||
			lab_fail "$name: $kind: opening $LAB_DEV was not refused with $refused (the $LAB_DRIVER driver's error for a wrong answer): $(lab_tail "$out")"
		lab_note "$kind: $(cat "$out")"
		happened "$kind" 10
		works "$kind"
		;;
	cmd-late-response)
		# The next command (ibv_devinfo's port query) is answered 20 ms late, as
		# a device that runs commands asynchronously answers, not inside the
		# register write: the driver waits for the response interrupt (the Rust
		# driver, which keeps it off while commands find their answer at once,
		# turns it on for the wait) and the command succeeds.
		interrupts_before=$(counter interrupts)
		arm "$kind"
		timeout 60 ibv_devinfo -v -d "$LAB_DEV" >"$LAB_RESULTS/devinfo-$kind.txt" 2>&1
		status=$?
		[ "$status" -eq 0 ] || lab_fail "$name: $kind: ibv_devinfo exited $status on a command answered late: $(lab_tail "$LAB_RESULTS/devinfo-$kind.txt")"
		grep -q "PORT_ACTIVE" "$LAB_RESULTS/devinfo-$kind.txt" ||
			lab_fail "$name: $kind: ibv_devinfo shows no active port: $(lab_tail "$LAB_RESULTS/devinfo-$kind.txt")"
		happened "$kind" 10
		works "$kind"
		;;
	cmd-late-15s | cmd-late-60s)
		# A command answered 15 or 60 s late, as a device whose host stalled
		# (contention, a migration's stun, the host adapter resetting)
		# answers: the first command of an ibv_devinfo, while a second
		# ibv_devinfo waits for the channel behind it. The Rust driver waits
		# for the answer (saying in the log, after 10 s, that the device is
		# slow), both succeed, and rdma_cm and the device carry on after; only
		# 100 s of silence makes a device dead. The C driver fails the late
		# command after its 10 s timeout (that ibv_devinfo exits with an
		# error) and runs the next one, which the device answers after the
		# late one.
		late_out=$LAB_RESULTS/devinfo-$kind-late.txt
		next_out=$LAB_RESULTS/devinfo-$kind-next.txt
		arm "$kind"
		timeout 150 ibv_devinfo -v -d "$LAB_DEV" >"$late_out" 2>&1 &
		late_pid=$!
		# The fault is taken when the command is written: the next waits behind it.
		happened "$kind" 10
		timeout 150 ibv_devinfo -v -d "$LAB_DEV" >"$next_out" 2>&1
		next_status=$?
		wait "$late_pid"
		late_status=$?
		[ "$next_status" -eq 0 ] && grep -q PORT_ACTIVE "$next_out" ||
			lab_fail "$name: $kind: the ibv_devinfo behind the late command exited $next_status: $(lab_tail "$next_out")"
		if [ "$LAB_DRIVER" = rust ]; then
			[ "$late_status" -eq 0 ] && grep -q PORT_ACTIVE "$late_out" ||
				lab_fail "$name: $kind: ibv_devinfo exited $late_status on a command answered late: $(lab_tail "$late_out")"
		else
			lab_note "$kind: the C driver: the ibv_devinfo whose command came late exited $late_status ($(lab_tail "$late_out")), the one behind it 0"
		fi
		rping_ok "$kind"
		works "$kind"
		;;
	cmd-resp-front-to-back)
		# The port query's response written front to back: its header, which
		# names the command, at once, the rest of the slot only 20 ms later,
		# with the interrupt. A driver that reads the slot before the
		# interrupt takes the half-written response for the answer. The port's
		# attributes must be what a query without the fault finds.
		base=$LAB_RESULTS/port-$kind-baseline.txt
		got=$LAB_RESULTS/port-$kind.txt
		timeout 60 "$fault" --query-port "$LAB_DEV" >"$base" 2>&1 ||
			lab_fail "$name: $kind: the port query without the fault failed: $(lab_tail "$base")"
		timeout 60 "$fault" --query-port "$LAB_DEV" "$kind" >"$got" 2>&1
		status=$?
		[ "$status" -eq 0 ] || lab_fail "$name: $kind: the port query answered front to back exited $status: $(lab_tail "$got")"
		grep -v '^armed ' "$got" | cmp -s - "$base" ||
			lab_fail "$name: $kind: the port query answered front to back differs from one without the fault: $(grep -v '^armed ' "$got" | diff "$base" - | tr '\n' ' ')"
		happened "$kind" 10
		works "$kind"
		;;
	cmd-no-response)
		# For the C driver, which has no dead state: the command times out (10 s),
		# the next one works. (The Rust driver declares the device dead: see below.)
		arm "$kind"
		timeout 60 ibv_devinfo -v -d "$LAB_DEV" >"$LAB_RESULTS/devinfo-$kind.txt" 2>&1
		status=$?
		[ "$status" -ne 124 ] && [ "$status" -ne 137 ] || lab_fail "$name: $kind: ibv_devinfo hung"
		lab_note "$kind: ibv_devinfo exited $status (one command never answered)"
		happened "$kind" 10
		works "$kind"
		;;
	cqe-unknown-qp)
		# A stray completion before a MAD completion of the kernel's GSI QP.
		arm "$kind"
		rping_ok "$kind"
		happened "$kind" 1
		;;
	cqe-reorder)
		# The first MAD completion of the kernel's GSI QP comes after the next one
		# of the same queue (rdma_cm's MADs: the REQ's send completion after the
		# REP's). Both are the MAD layer's, in either order: the connection is made.
		arm "$kind"
		rping_ok "$kind"
		happened "$kind" 10
		;;
	cqe-byte-len)
		# The first successful MAD receive completion of the kernel's GSI QP
		# (rping's: rdma_cm's connection request arriving) counts 0x10000 bytes, far more
		# than the MAD layer's receive buffer (a GRH and a MAD: 40 + 256 bytes);
		# a consumer reading as many bytes as the count says would read past it.
		# The Rust driver fails the completion with IB_WC_LOC_LEN_ERR: the MAD
		# layer takes a failed receive for a QP in error, neither reads nor
		# reposts it (one of its receives stays on its list until the port
		# closes, which frees it), and rdma_cm sends the lost MAD again: the
		# connection is made a few seconds later. The C driver hands the count
		# to the MAD layer, which on an IB (non-OPA) port uses only fixed sizes
		# (ib_mad_recv_done(): mad_len = sizeof(struct ib_mad); byte_len is read
		# for OPA MADs only), and rdma_cm's CM reads fixed-size MADs: it
		# survives, the MAD delivered as it came.
		arm "$kind"
		rping_ok "$kind"
		happened "$kind" 30
		;;
	cqe-qp-high-bits)
		# The first MAD completion of the kernel's GSI QP has bits set above the
		# low 16 of its 64-bit qp field (0x5a5a5a5a5a5a0000: bits in 16-31 and
		# in 32-63). The C driver and rdma-core's provider look the QP up by the
		# low 16 bits alone (cqe->qp & 0xffff), which name the GSI QP: the
		# completion is delivered and the connection made. The Rust driver must
		# trust the field as far as they do: no completion dropped as naming no
		# QP (a receive's MAD lost; a send's completion missing, which rdma_cm
		# waits for when it destroys the ID), no device declared dead for a
		# handle beyond 32 bits.
		arm "$kind"
		rping_ok "$kind"
		happened "$kind" 10
		;;
	cq-arm-notify)
		# A notification of the first kernel CQ the next probe arms (the MAD
		# layer's, in ib_alloc_cq(), which sets the CQ's workqueue only after
		# the arm returns), at the arm, with nothing in the CQ. The C driver
		# hands it to the CQ's handler at once, which queues work on the NULL
		# workqueue (an oops). The Rust driver reads no notification before its
		# device is registered (the CQ is set up by then; a kernel CQ made
		# later, still being set up, is nfs_rdma's). Then MADs flow through
		# that CQ (rping).
		probe_with "$kind"
		lab_wait_device 60 || lab_fail "$name: $kind: $LAB_WAIT_FAILURE"
		rping_ok "$kind"
		;;
	port-attrs)
		# The probe's port query (the RDMA core's, registering the device)
		# answers as a device whose link is down may: the port down, MTUs of
		# 0 (outside enum ib_mtu). The C driver passes them on; the Rust driver
		# takes them, its MTUs clamped into the enum's range, rather than
		# failing the probe. The device registers, and the next queries find
		# the port as it is.
		probe_with "$kind"
		lab_wait_device 60 || lab_fail "$name: $kind: no device after a probe whose port query reported no MTU: $LAB_WAIT_FAILURE"
		works "$kind"
		;;
	caps)
		# Probe against capabilities out of range: refused; then a clean probe.
		probe_with "$kind"
		sleep 2
		left=$(lab_first_device)
		[ -z "$left" ] || lab_fail "$name: $kind: RDMA device $left registered with capabilities out of range"
		timeout 60 rmmod "$LAB_MODULE_NAME" >>"$out" 2>&1
		lab_check_exit "$kind: rmmod after the refused probe" $? "$out" 60
		timeout 60 insmod "$LAB_MODULE" >>"$out" 2>&1
		lab_check_exit "$kind: insmod again" $? "$out" 60
		lab_wait_device 60 || lab_fail "$name: $kind: after a clean probe: $LAB_WAIT_FAILURE"
		works "$kind"
		;;
	*) lab_fail "$name: unknown survivable fault '$kind'" ;;
	esac
	checked "$kind"
	case $kind in
	stale-events) counted "$kind" stale_events "$stale_before" ;;
	cqe-unknown-qp)
		[ "$LAB_DRIVER" = c ] || expect_dmesg "$kind" "dropped a completion of QP handle 0xfffffff0" "the stray completion"
		counted "$kind" stale_events "$stale_before"
		;;
	cqe-reorder)
		! grep -q "declaring the device dead" "$LAB_RESULTS/dmesg-$kind.txt" ||
			lab_fail "$name: $kind: completions out of order taken for a lie: $(grep -m 1 'declaring the device dead' "$LAB_RESULTS/dmesg-$kind.txt")"
		;;
	cqe-byte-len)
		[ "$LAB_DRIVER" = c ] || expect_dmesg "$kind" "a completion counts more bytes than its request's buffers: failed" "the receive failed with a length error"
		;;
	cqe-qp-high-bits)
		if [ "$LAB_DRIVER" = rust ]; then
			for said in "dropped a completion of QP handle" "declaring the device dead"; do
				! grep -q "$said" "$LAB_RESULTS/dmesg-$kind.txt" ||
					lab_fail "$name: $kind: a completion whose QP the low 16 bits name was refused: $(grep -m 1 "$said" "$LAB_RESULTS/dmesg-$kind.txt")"
			done
			# The dropped-completion warning is printed once per boot.
			case " $survived " in
			*" cqe-unknown-qp "*) lab_note "$kind: run after cqe-unknown-qp, whose warning is printed once: a dropped completion would not show in dmesg" ;;
			esac
		fi
		;;
	cmd-wrong-response)
		expect_dmesg "$kind" "unexpected response|unknown response" "the wrong response"
		counted "$kind" command_errors "$errors_before"
		;;
	cmd-late-15s | cmd-late-60s)
		if [ "$LAB_DRIVER" = rust ]; then
			expect_dmesg "$kind" "no response yet after 1[0-9] s; waiting" "the slow device noticed"
			expect_dmesg "$kind" "answered after [0-9]+ ms" "the late answer taken"
			! grep -q "declaring the device dead" "$LAB_RESULTS/dmesg-$kind.txt" ||
				lab_fail "$name: $kind: a slow device declared dead: $(grep -m 1 'declaring the device dead' "$LAB_RESULTS/dmesg-$kind.txt")"
		fi
		;;
	cmd-late-response)
		if [ "$LAB_DRIVER" = rust ]; then
			# The late answer came with an interrupt, the only one a command
			# took, and no command failed.
			counted "$kind" interrupts "$interrupts_before"
			[ "$(counter command_errors)" = "$errors_before" ] ||
				lab_fail "$name: $kind: command errors $errors_before -> $(counter command_errors) around a command answered late"
		fi
		;;
	caps) expect_dmesg "$kind" "ports|GID|UAR|caps|capabilit" "the refused probe" ;;
	esac
	survived="$survived $kind"
done
lab_summary "survived, the device working after each:${survived:- none}${counts:+; counted: $counts}"

[ "$fatal" = none ] && exit 0

# --- A fault the device does not come back from -----------------------------------------
kind=$fatal
stop_pids=
mark
watch_log=$LAB_RESULTS/asyncwatch.log
timeout -k 5 300 stdbuf -oL ibv_asyncwatch -d "$LAB_DEV" >"$watch_log" 2>&1 &
watch=$!
sleep 1
lab_alive "$watch" || lab_fail "$name: ibv_asyncwatch exited at once: $(lab_tail "$watch_log")"

arm "$kind"
case $kind in
cqe-bad-wr-id | cq-ring-index)
	# rdma_cm's MADs give the kernel's GSI QP completions: the first one (the
	# client's connection request sent) lies. rping would then wait for rdma_cm's
	# response timeout (about 80 s); it is stopped once the device is dead, which
	# destroys its rdma_cm ID with MADs outstanding (rdma_cm waits for their
	# completions: without the flush, for ever).
	trigger="an rping connection (rdma_cm MADs)"
	port=$((port + 1))
	srv=$LAB_RESULTS/fatal-rping-server.log
	cli=$LAB_RESULTS/fatal-rping-client.log
	lab_server_start 120 "$srv" rping -s -v -a "$LAB_IP" -p "$port" -C 10 -S 64
	lab_wait_listen cm "$port" 60 "rping with $kind armed" "$srv"
	timeout -k 5 120 stdbuf -oL rping -c -v -a "$LAB_IP" -p "$port" -C 10 -S 64 >"$cli" 2>&1 </dev/null &
	stop_pids="$! $LAB_SERVER_PID"
	;;
async-ring-index | cq-notify-ring-index)
	trigger="the interrupt that came with it"
	;;
cmd-no-response)
	# ibv_devinfo's command waits for its answer as long as the driver waits
	# for a slow device (100 s), then the device is declared dead.
	trigger="ibv_devinfo's command, never answered"
	timeout 150 ibv_devinfo -v -d "$LAB_DEV" >"$LAB_RESULTS/devinfo-$kind.txt" 2>&1
	status=$?
	[ "$status" -ne 124 ] && [ "$status" -ne 137 ] || lab_fail "$name: $kind: ibv_devinfo hung"
	;;
*) lab_fail "$name: unknown fatal fault '$kind'" ;;
esac
happened "$kind" 30

# The device is dead: user space heard it, and new work fails at once.
n=150
while ! grep -q IBV_EVENT_DEVICE_FATAL "$watch_log"; do
	n=$((n - 1))
	[ "$n" -gt 0 ] || lab_fail "$name: $kind: no IBV_EVENT_DEVICE_FATAL within 30 s of $trigger: $(lab_tail "$watch_log")"
	sleep 0.2
done
out=$LAB_RESULTS/dead-pingpong.log
timeout -k 5 60 ibv_rc_pingpong -d "$LAB_DEV" -g "$LAB_GID_INDEX" -p $((port + 1)) >"$out" 2>&1
status=$?
case $status in
0) lab_fail "$name: $kind: ibv_rc_pingpong server ran on a dead device: $(lab_tail "$out")" ;;
124 | 137) lab_fail "$name: $kind: ibv_rc_pingpong hung on a dead device: $(lab_tail "$out")" ;;
esac
kill "$watch" 2>/dev/null
wait "$watch"

# Processes that used the device exit when told, within 30 s: nothing waits for
# the dead device in the kernel.
if [ -n "$stop_pids" ]; then
	# shellcheck disable=SC2086 # a list of PIDs
	kill $stop_pids 2>/dev/null
	n=150
	for pid in $stop_pids; do
		while lab_alive "$pid"; do
			n=$((n - 1))
			if [ "$n" -le 0 ]; then
				child=$(pgrep -P "$pid" | head -n 1)
				lab_fail "$name: $kind: a process of $trigger did not exit within 30 s of SIGTERM: $(cat "/proc/${child:-$pid}/stack" 2>&1 | tr '\n' ' ')"
			fi
			sleep 0.2
		done
		wait "$pid"
	done
	lab_note "$kind: the rping client and server exited on SIGTERM ($(lab_tail "$cli"))"
fi
checked "$kind"
expect_dmesg "$kind" "declaring the device dead" "the verdict"
lab_note "$kind: $(grep -m 1 'declaring the device dead' "$LAB_RESULTS/dmesg-$kind.txt")"
lab_summary "fatal $kind after $trigger: device declared dead, IBV_EVENT_DEVICE_FATAL delivered, ibv_rc_pingpong refused (exit $status); removal is the teardown's"
