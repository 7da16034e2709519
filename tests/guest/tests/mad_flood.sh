#!/bin/sh
# lab-about: a MAD flood at QP1 (issue 11): the mux delivers the first CM RTU it routes (the last MAD of an rdma_cm connect) 200 times while the guest's MAD layer keeps only 64 receives posted (ib_core.recv_queue_size=64), so most copies find no receive: the device must drop them (a port does; the sender retries), not stall the guest; ucmatose -P ib's connection is made and its messages exchanged both ways, then udaddy's SIDR and UD messages work after the flood; dmesg free of kernel reports
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
