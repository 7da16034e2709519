#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# lab-about: ibv_srq_pingpong server and client in the guest (16 QPs on one SRQ), -g <GID of 192.0.2.1> --chk, sizes 1 and 4096
# lab-timeout: 300
# lab-versions: 18
. "$LAB_DIR/lib.sh"

port=18515
for size in 1 4096; do
	lab_pingpong ibv_srq_pingpong "$size" "${LAB_ITERS:-500}" "$port" --chk -q 16
	port=$((port + 1))
done
