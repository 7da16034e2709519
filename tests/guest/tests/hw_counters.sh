#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# lab-about: the port's hardware counters (sysfs ports/1/hw_counters/ and `rdma statistic`): the Rust driver's commands, command_errors, interrupts, async_events, cq_notifications, stale_events, read before and after an ibv_rc_pingpong (with completion events on the patched model): commands grow, interrupts by at least one per command (each response's), with events CQ notifications too, no command error or stale event, `rdma statistic` shows the same names and values as sysfs; the C driver keeps no counters (checked absent, noted)
# lab-timeout: 300
. "$LAB_DIR/lib.sh"

name=hw_counters
dir=/sys/class/infiniband/$LAB_DEV/ports/1/hw_counters
counters="commands command_errors interrupts async_events cq_notifications stale_events"

# counters_read FILE: "name value" lines of every counter, from sysfs.
counters_read() {
	for c in $counters; do
		[ -r "$dir/$c" ] || lab_fail "$name: no counter $dir/$c (has: $(ls "$dir" 2>/dev/null | tr '\n' ' '))"
		echo "$c $(cat "$dir/$c")"
	done >"$1"
}

# counter FILE NAME: the value of NAME in FILE.
counter() {
	awk -v n="$2" '$1 == n { print $2 }' "$1"
}

if [ "$LAB_DRIVER" = c ]; then
	# The C driver has no alloc_hw_port_stats: no directory, nothing for rdma statistic.
	[ ! -e "$dir" ] || lab_fail "$name: the C driver has hardware counters now ($(ls "$dir" | tr '\n' ' ')): check them too"
	out=$(timeout 30 rdma statistic show link "$LAB_DEV/1" 2>&1)
	for c in $counters; do
		case "$out" in *" $c "*) lab_fail "$name: rdma statistic shows $c for the C driver: $out" ;; esac
	done
	lab_summary "$name: the C driver keeps no hardware counters (no $dir, rdma statistic shows none)"
	exit 0
fi

before=$LAB_RESULTS/$name-before.txt
after=$LAB_RESULTS/$name-after.txt
counters_read "$before"
if [ "$LAB_MODEL" = stock ]; then
	# The stock model treats ARM as disarm: no completion events (see ibv_rc_pingpong_events).
	lab_pingpong ibv_rc_pingpong 64 100 18640 --chk
else
	lab_pingpong ibv_rc_pingpong 64 100 18640 --chk -e
fi
counters_read "$after"
lab_note "before: $(tr '\n' ' ' <"$before")"
lab_note "after:  $(tr '\n' ' ' <"$after")"

grew() {
	[ "$(counter "$after" "$1")" -gt "$(counter "$before" "$1")" ] ||
		lab_fail "$name: $1 did not grow during the pingpong ($(counter "$before" "$1") -> $(counter "$after" "$1"))"
}
same() {
	[ "$(counter "$after" "$1")" -eq "$(counter "$before" "$1")" ] ||
		lab_fail "$name: $1 changed during the pingpong ($(counter "$before" "$1") -> $(counter "$after" "$1"))"
}
# Each side creates a PD, a CQ, a QP and an MR and moves the QP through three
# states: at least 2 x 7 commands. Each command's response comes with an
# interrupt, which the driver waits for before it reads the response: at
# least one interrupt per command. With completion events (patched model),
# the CQ notifications' interrupts are counted as well.
cmds=$(($(counter "$after" commands) - $(counter "$before" commands)))
[ "$cmds" -ge 14 ] || lab_fail "$name: only $cmds commands counted for two pingpong ends (at least 14: PD, CQ, QP, MR, 3 QP state changes each)"
irqs=$(($(counter "$after" interrupts) - $(counter "$before" interrupts)))
[ "$irqs" -ge "$cmds" ] || lab_fail "$name: $irqs interrupts for $cmds commands (each command's response comes with one)"
same command_errors
same stale_events
if [ "$LAB_MODEL" != stock ]; then
	grew cq_notifications
fi

# rdma statistic reads the same counters through netlink.
stat=$LAB_RESULTS/$name-rdma-statistic.txt
timeout 30 rdma statistic show link "$LAB_DEV/1" >"$stat" 2>&1 ||
	lab_fail "$name: rdma statistic show link $LAB_DEV/1 failed: $(lab_tail "$stat")"
now=$LAB_RESULTS/$name-now.txt
counters_read "$now"
for c in $counters; do
	grep -qE " $c [0-9]+( |$)" "$stat" || lab_fail "$name: rdma statistic does not show $c: $(lab_tail "$stat")"
done
# Nothing runs now: both views must agree on the counters that only traffic moves.
for c in command_errors stale_events cq_notifications async_events; do
	v=$(sed -nE "s/.* $c ([0-9]+)( .*|$)/\1/p" "$stat")
	[ "$v" = "$(counter "$now" "$c")" ] || lab_fail "$name: rdma statistic says $c $v, sysfs $(counter "$now" "$c")"
done
lab_summary "$name: during an ibv_rc_pingpong: $cmds commands, $(($(counter "$after" interrupts) - $(counter "$before" interrupts))) interrupts, $(($(counter "$after" cq_notifications) - $(counter "$before" cq_notifications))) CQ notifications"
