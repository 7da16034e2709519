#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# lab-about: perftest ib_write_bw, ib_read_bw (64 KiB), ib_write_lat, ib_read_lat (64 B), RC, -x <GID of 192.0.2.1>, server and client in the guest: one-sided RDMA WRITE and READ run to completion and report figures (in notes.txt; latencies in TSC cycles)
# lab-timeout: 900
# lab-versions: 17,18
. "$LAB_DIR/lib.sh"

# Both ends share one 2-vCPU TCG guest: the figures measure the emulator and
# the software device, not a network; what is checked is that the tools run
# to completion (every iteration completed, no error) and print their table.
lab_note "guest TSC: $(lab_tsc_mhz) MHz"
# Fixed ports (the helpers use globals), with room for the bandwidth reruns.
lab_perftest_bw ib_write_bw 18715 -s 65536 -n "${LAB_BW_ITERS:-1000}"
lab_perftest_bw ib_read_bw 18725 -s 65536 -n "${LAB_BW_ITERS:-1000}"
lab_perftest_lat ib_write_lat 18735 -C -s 64 -n "${LAB_LAT_ITERS:-1000}"
lab_perftest_lat ib_read_lat 18736 -C -s 64 -n "${LAB_LAT_ITERS:-1000}"
