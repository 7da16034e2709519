#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# lab-about: perftest beyond the defaults, server and client in the guest: ib_send_bw over rdma_cm (-R, connection through QP1 and the mux), ib_send_bw and ib_send_lat sleeping on CQ events (-e), ib_send_bw on UD QPs (-c UD), bidirectional ib_send_bw (-b), ib_write_bw on 4 QPs (-q 4): each runs to completion with no error and reports figures (in notes.txt)
# lab-timeout: 900
. "$LAB_DIR/lib.sh"

lab_note "guest TSC: $(lab_tsc_mhz) MHz"
iters=${LAB_BW_ITERS:-500}
# mode WHAT: names the run whose figures follow in notes.txt.
mode() {
	lab_summary "-- $*"
}
# rdma_cm resolves the server's address to the RDMA device: the lab's address.
LAB_PERFTEST_SERVER=$LAB_IP
mode "rdma_cm (-R)"
lab_perftest_bw ib_send_bw 18760 -R -s 4096 -n "$iters"
unset LAB_PERFTEST_SERVER
mode "CQ events (-e)"
lab_perftest_bw ib_send_bw 18770 -e -s 4096 -n "$iters"
lab_perftest_lat ib_send_lat 18780 -e -C -s 64 -n "${LAB_LAT_ITERS:-500}"
# UD messages fit the path MTU (1024 on the lab's RoCE port).
mode "UD (-c UD)"
lab_perftest_bw ib_send_bw 18790 -c UD -s 1024 -n "$iters"
mode "bidirectional (-b)"
lab_perftest_bw ib_send_bw 18800 -b -s 4096 -n "$iters"
mode "4 QPs (-q 4)"
lab_perftest_bw ib_write_bw 18810 -q 4 -s 4096 -n "$iters"
