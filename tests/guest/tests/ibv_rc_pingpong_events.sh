#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# lab-about: ibv_rc_pingpong -e (completion events: the CQ is armed with ibv_req_notify_cq and the tool sleeps in ibv_get_cq_event) server and client in the guest, --chk, sizes 1, 4096 and 65536
# lab-timeout: 420
. "$LAB_DIR/lib.sh"

port=18615
for size in 1 4096 65536; do
	lab_pingpong ibv_rc_pingpong "$size" "${LAB_ITERS:-500}" "$port" --chk -e
	port=$((port + 1))
done
