#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# lab-about: async events seen by ibv_asyncwatch: the vmxnet3 link down and up gives exactly one IBV_EVENT_PORT_ERR then one IBV_EVENT_PORT_ACTIVE and the port's state follows (DOWN, then ACTIVE); an IPv4 address added to and removed from the vmxnet3 gives IBV_EVENT_GID_CHANGE and its GID appears in and leaves the GID table; dmesg free of oops/WARN
# lab-timeout: 240
. "$LAB_DIR/lib.sh"
# (lib.sh's lab_alive uses the variable "state": the port's file is port_state.)

name=async_events
log=$LAB_RESULTS/ibv_asyncwatch.log
port_state=/sys/class/infiniband/$LAB_DEV/ports/1/state
extra_ip=192.0.2.77

# wait_for SECONDS WHAT CMD...: polls CMD every 0.2 s until it succeeds.
wait_for() {
	n=$(($1 * 5))
	what=$2
	shift 2
	while ! "$@"; do
		n=$((n - 1))
		[ "$n" -gt 0 ] || lab_fail "$name: $what did not happen within the time limit (port state: $(cat "$port_state"); asyncwatch: $(lab_tail "$log"))"
		sleep 0.2
	done
}
port_is() {
	grep -q ": $1\$" "$port_state"
}
has_gid() {
	lab_gid_index "$LAB_DEV" "$extra_ip" >/dev/null
}
no_gid() {
	! has_gid
}
# events NAME: how many NAME events ibv_asyncwatch printed.
events() {
	grep -c "$1" "$log"
}

timeout -k 5 120 stdbuf -oL ibv_asyncwatch -d "$LAB_DEV" >"$log" 2>&1 &
watch=$!
sleep 2
lab_alive "$watch" || lab_fail "$name: ibv_asyncwatch exited at once: $(lab_tail "$log")"
port_is ACTIVE || lab_fail "$name: port 1 is not ACTIVE before the test: $(cat "$port_state")"

# once NAME WHAT: exactly one NAME event was printed (a second one would come
# within a second: both the RDMA core and a driver's own notifier reporting
# the link is a bug that consumers see as a flapping port).
once() {
	sleep 1
	[ "$(events "$1")" -eq 1 ] || lab_fail "$name: $(events "$1") $1 events $2, expected one: $(grep -c . "$log") lines: $(lab_tail "$log")"
}

ip link set dev "$LAB_NETDEV" down
wait_for 20 "port 1 DOWN after the link went down" port_is DOWN
wait_for 20 "IBV_EVENT_PORT_ERR after the link went down" grep -q IBV_EVENT_PORT_ERR "$log"
once IBV_EVENT_PORT_ERR "after the link went down"
ip link set dev "$LAB_NETDEV" up
wait_for 30 "port 1 ACTIVE after the link came up" port_is ACTIVE
wait_for 20 "IBV_EVENT_PORT_ACTIVE after the link came up" grep -q IBV_EVENT_PORT_ACTIVE "$log"
once IBV_EVENT_PORT_ACTIVE "after the link came up"
# The link's own address comes back with the link: the lab's GID again.
wait_for 30 "the GID of $LAB_IP back in the table" lab_gid_index "$LAB_DEV" "$LAB_IP" >/dev/null

gid_changes=$(events IBV_EVENT_GID_CHANGE)
ip addr add "$extra_ip/24" dev "$LAB_NETDEV"
wait_for 20 "the GID of $extra_ip in the table" has_gid
wait_for 20 "IBV_EVENT_GID_CHANGE after $extra_ip was added" [ "$(events IBV_EVENT_GID_CHANGE)" -gt "$gid_changes" ]
gid_changes=$(events IBV_EVENT_GID_CHANGE)
ip addr del "$extra_ip/24" dev "$LAB_NETDEV"
wait_for 20 "the GID of $extra_ip gone from the table" no_gid
wait_for 20 "IBV_EVENT_GID_CHANGE after $extra_ip was removed" [ "$(events IBV_EVENT_GID_CHANGE)" -gt "$gid_changes" ]

kill "$watch" 2>/dev/null
wait "$watch" 2>/dev/null
lab_summary "$name: ibv_asyncwatch saw $(events IBV_EVENT_PORT_ERR) PORT_ERR, $(events IBV_EVENT_PORT_ACTIVE) PORT_ACTIVE, $(events IBV_EVENT_GID_CHANGE) GID_CHANGE; port state DOWN and ACTIVE with the link"
