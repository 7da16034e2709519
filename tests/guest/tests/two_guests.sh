#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# lab-about: two guests, one fabric, one-sided RDMA and events: the server guest (192.0.2.1) and the client guest (192.0.2.2), each with its own QEMU, pvrdma and driver, joined by the mux: rping -V (rdma_cm; the server RDMA-READs the client's buffer and RDMA-WRITEs it back; 10 pings of 65000 bytes), ibv_rc_pingpong -e --chk, ib_write_bw and ib_read_lat, data verified on both sides
# lab-timeout: 400
# lab-versions: 18
# lab-guests: 2
. "$LAB_DIR/lib.sh"

[ -n "$LAB_ROLE" ] || lab_fail "a two-guest test run on one guest (no lab.role)"

lab_pair_step rping cm 7480 rping -s -v -V -a "$LAB_IP" -p 7480 -C 10 -S 65000 -- \
	rping -c -v -V -a "$LAB_PEER_IP" -p 7480 -C 10 -S 65000
lab_reject "$LAB_STEP_LOG" "data mismatch|error|failed|Failed|bogus" rping
if [ "$LAB_ROLE" = server ]; then
	n=$(grep -c "^server ping data: rdma-ping-[0-9]*: " "$LAB_STEP_LOG")
else
	n=$(grep -c "^ping data: rdma-ping-[0-9]*: " "$LAB_STEP_LOG")
fi
[ "$n" -eq 10 ] || lab_fail "rping: the $LAB_ROLE reported $n pings, not 10: $(lab_tail "$LAB_STEP_LOG")"
lab_summary "rping -S 65000 -C 10 with $LAB_PEER_IP: 10 pings, data verified (-V)"

# Polled, then event-driven completions on both sides (-e); each side checks what it receives (--chk).
lab_pair_pingpong ibv_rc_pingpong 4096 200 18514 --chk
lab_pair_pingpong ibv_rc_pingpong 4096 200 18515 -e --chk

# ucmatose: rdma_cm connections across the guests (CM MADs through the mux),
# 2 connections x 10 messages each way.
lab_pair_step ucmatose cm 7471 ucmatose -b "$LAB_IP" -p 7471 -c 2 -C 10 -- \
	ucmatose -s "$LAB_PEER_IP" -b "$LAB_IP" -p 7471 -c 2 -C 10
lab_reject "$LAB_STEP_LOG" "event: .*error|failed|failure|error:" ucmatose
for line in "data transfers complete" "test complete" "return status 0"; do
	lab_expect "$LAB_STEP_LOG" "^$line\$" ucmatose
done
lab_summary "ucmatose -c 2 -C 10 with $LAB_PEER_IP: connected, transferred and disconnected"

# perftest's one-sided tools: the client writes (reads) the server's memory;
# the same sizes and counts as perftest_rdma's single-guest runs.
lab_pair_perftest ib_write_bw 18600 -s 65536 -n 1000
lab_pair_perftest ib_read_bw 18601 -s 65536 -n 1000
lab_pair_perftest ib_write_lat 18602 -C -s 64 -n 1000
lab_pair_perftest ib_read_lat 18603 -C -s 64 -n 1000
