#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# lab-about: perftest ib_send_bw (64 KiB) and ib_send_lat (64 B), RC, -x <GID of 192.0.2.1>, server and client in the guest: two-sided SEND/RECV run to completion and report figures (in notes.txt; latencies in TSC cycles)
# lab-timeout: 600
# lab-versions: 18
. "$LAB_DIR/lib.sh"

# The two-sided half of perftest, apart from perftest_rdma so that the stock
# device model (which executes SENDs only) keeps running it.
lab_note "guest TSC: $(lab_tsc_mhz) MHz"
lab_perftest_bw ib_send_bw 18745 -s 65536 -n "${LAB_BW_ITERS:-1000}"
lab_perftest_lat ib_send_lat 18755 -C -s 64 -n "${LAB_LAT_ITERS:-1000}"
