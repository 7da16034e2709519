#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# lab-about: ibv_rc_pingpong server and client in the guest, -g <GID of 192.0.2.1> --chk, sizes 1, 4096 and 65536
# lab-timeout: 420
# lab-versions: 17,18
. "$LAB_DIR/lib.sh"

port=18515
for size in 1 4096 65536; do
	lab_pingpong ibv_rc_pingpong "$size" "${LAB_ITERS:-500}" "$port" --chk
	port=$((port + 1))
done
