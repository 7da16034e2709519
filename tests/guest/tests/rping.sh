#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# lab-about: rping -v -V (rdma_cm, RC; RDMA READ and WRITE, event-driven CQs) server and client in the guest on 192.0.2.1: 1 ping of 32 bytes, 100 of 64, 20 of 4096, 10 of 65000, data verified
# lab-timeout: 300
# lab-versions: 17,18
. "$LAB_DIR/lib.sh"

port=7480
limit=${LAB_CM_TIMEOUT:-120}
# SIZE:COUNT; rping's buffers are 23 (its minimum: the ping text) to 65535 bytes.
for run in 32:1 64:100 4096:20 65000:10; do
	size=${run%:*}
	count=${run#*:}
	tag="rping-S$size-C$count"
	srv=$LAB_RESULTS/$tag-server.log
	cli=$LAB_RESULTS/$tag-client.log
	lab_server_start "$limit" "$srv" rping -s -v -V -a "$LAB_IP" -p "$port" -C "$count" -S "$size"
	lab_wait_listen cm "$port" 60 "$tag" "$srv"
	lab_client_run "$limit" "$cli" rping -c -v -V -a "$LAB_IP" -p "$port" -C "$count" -S "$size"
	lab_check_pair "$tag" "$limit" "$srv" "$cli"

	# -V: the client compares what came back (the server RDMA-READ the
	# client's buffer, then RDMA-WRITE it back) with what it sent, and says
	# "data mismatch" otherwise; -v prints each ping.
	for side in "$srv" "$cli"; do
		lab_reject "$side" "data mismatch|error|failed|Failed|bogus" "$tag"
	done
	pings=$(grep -c "^ping data: rdma-ping-[0-9]*: " "$cli")
	[ "$pings" -eq "$count" ] || lab_fail "$tag: the client reported $pings pings, not $count: $(lab_tail "$cli")"
	last=$((count - 1))
	lab_expect "$cli" "^ping data: rdma-ping-$last: " "$tag"
	served=$(grep -c "^server ping data: rdma-ping-[0-9]*: " "$srv")
	[ "$served" -eq "$count" ] || lab_fail "$tag: the server reported $served pings, not $count: $(lab_tail "$srv")"
	lab_summary "rping -S $size -C $count: $count pings of $size bytes, data verified (-V)"
	port=$((port + 1))
done
lab_check_gid_types rping
