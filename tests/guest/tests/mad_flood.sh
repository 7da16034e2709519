#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# lab-about: a MAD flood at QP1: the mux delivers the first CM RTU it routes (the last MAD of an rdma_cm connect) 200 times while the guest's MAD layer keeps only 64 receives posted (ib_core.recv_queue_size=64), so most copies find no receive: the device must drop them (a port does; the sender retries), not stall the guest; ucmatose -P ib's connection is made and its messages exchanged both ways, then udaddy's SIDR and UD messages work after the flood; the mux's log shows the burst queued and all 200 RTUs written to QEMU; dmesg free of kernel reports
# lab-timeout: 300
# lab-mad-burst: 200 RTU
# lab-kernel-args: ib_core.recv_queue_size=64
. "$LAB_DIR/lib.sh"

# The receive queue the flood runs into: the kernel argument took effect.
q=$(cat /sys/module/ib_core/parameters/recv_queue_size 2>/dev/null)
[ "$q" = 64 ] || lab_fail "ib_core.recv_queue_size is '$q', not 64: the flood would not outrun the MAD layer's receives"

# The first RTU the mux routes is this connection's: 200 copies of it reach
# QP1 at once (ucmatose -P ib: the stock model's rd_atom limit does not stop
# it). The CM takes the first and drops every later one, whenever it comes
# (an RTU for a connection that is established, or gone, is dropped). Not the
# REQ: the CM recognises a duplicate REQ only while the connection lives, so a
# copy that the guest's MAD layer and CM work queues handle after the
# disconnect (seen once: 120 ms after the REQ, the 10 messages were done in
# 110) is a new connection request, which ucmatose's server, done with its
# one connection, fails (status -12).
t0=$(cut -d' ' -f1 /proc/uptime)
lab_ucmatose 1 10 7475 -P ib
lab_summary "a burst of 200 copies of the connect's CM RTU at 64 QP1 receives: ucmatose -P ib connected and exchanged 10 messages each way in $(awk -v a="$t0" -v b="$(cut -d' ' -f1 /proc/uptime)" 'BEGIN { printf "%.1f", b - a }') s"

# The flood was sent: without it, this test passes on an ordinary connect.
# The mux logs into this test's results directory, the guest's $LAB_RESULTS
# (a MAD burst gets a guest and a mux of its own: tools/pvrdma-lab,
# catalog.rs and session.rs). When it routes the RTU it queues the copies
# ahead of it, and says so (tools/pvrdma-mux/src/mad_conn.rs, route()); that
# happened before the RTU reached the guest, so before ucmatose connected.
burst=200 # the header's lab-mad-burst
mux_log=$LAB_RESULTS/mux.log
[ -r "$mux_log" ] || lab_fail "no mux.log in the results directory: cannot see whether the mux sent the burst"
lab_expect "$mux_log" "route: burst: $((burst - 1)) of $((burst - 1)) more copies queued for mad#" "the mux's burst of the RTU"

# After the flood, QP1 serves again: SIDR (udaddy) and its UD messages.
srv=$LAB_RESULTS/udaddy-server.log
cli=$LAB_RESULTS/udaddy-client.log
limit=${LAB_CM_TIMEOUT:-120}
lab_server_start "$limit" "$srv" udaddy -b "$LAB_IP" -c 1 -C 4
lab_wait_listen cm 7174 60 udaddy "$srv" # udaddy's fixed port
lab_client_run "$limit" "$cli" udaddy -s "$LAB_IP" -b "$LAB_IP" -c 1 -C 4
lab_check_pair udaddy "$limit" "$srv" "$cli"
for side in "$srv" "$cli"; do
	lab_reject "$side" "event: .*error|failed|failure|error:" udaddy
	lab_expect "$side" "^test complete\$" udaddy
	lab_expect "$side" "^return status 0\$" udaddy
done
lab_summary "after the flood: udaddy (SIDR over QP1, 4 UD messages) completed"

# Every copy went to QEMU: the mux writes its deliveries to a QEMU in order,
# one "(delivery)" line each, and udaddy's SIDR MADs were queued behind the
# copies, so once udaddy is done the mux has written all of them.
sent=$(grep -c 'attr=0x0014(RTU) .*(delivery)$' "$mux_log")
[ "$sent" -ge "$burst" ] ||
	lab_fail "the mux wrote $sent RTUs to QEMU, not the burst of $burst: $(grep -m 1 'route: burst:' "$mux_log")"
lab_summary "the mux's log: the burst queued and $sent deliveries of the RTU written to QEMU"
